"""Missing values in ranking data files: value tokens such as LETOR 4.0's ``NULL`` read as NaN.

LETOR 4.0's rank-aggregation sets (MQ2007-agg, MQ2008-agg) write ``NULL`` where a feature has no
value (``1 qid:10 1:107 2:NULL ...``). :func:`sklearn.datasets.load_svmlight_file` parses numbers
only (``nan`` among them), so the readers substitute every value field ``:<token>`` of a missing
value token by ``:nan`` in the bytes, block by block, before it parses them: a block without a
token is parsed as it is, and memory stays one block of :data:`BLOCK_BYTES` beside the parser's
arrays. Only whole value fields are replaced (``:NULL`` followed by a space, a tab, the end of the
line or a ``#`` comment); a label or a ``qid:`` of that spelling stays an error.

:data:`MISSING_VALUES` is the default of every reader's ``missing_values``; ``()`` or None reads
numbers only. The writers write NaN as ``NULL`` (:data:`WRITTEN_MISSING_VALUE`), which these
readers, and LightGBM's own text parser, read back as missing.
"""

from __future__ import annotations

import io
import math

import numpy as np

__all__ = [
    "BLOCK_BYTES", "MISSING_VALUES", "WRITTEN_MISSING_VALUE", "check_missing_values", "encode_missing", "looks_missing",
    "missing_values_text", "nan_lines", "substitute_missing", "whole_line_blocks",
]

#: The tokens every reader reads as NaN unless told otherwise: LETOR 4.0's ``NULL``.
MISSING_VALUES = ("NULL",)
#: The token the writers write for NaN.
WRITTEN_MISSING_VALUE = "NULL"
#: Bytes of text read, substituted and handed to the parser at a time.
BLOCK_BYTES = 1 << 24
#: What may follow a value field: whitespace (``str.split``'s, as the parser's) or a ``#`` comment.
_ENDS = (b" ", b"\t", b"\n", b"\r", b"\x0b", b"\x0c", b"#")
#: Value tokens that look like a missing-value marker (compared lowercased): an error on one of them
#: names the ``missing_values`` option.
_LOOKS_MISSING = frozenset({"null", "na", "n/a", "n.a.", "none", "nil", "missing", "undefined", "empty", "?", "-",
                            "--", ".", "nul", "#n/a"})


def check_missing_values(missing_values, *, name="missing_values"):
    """The missing value tokens of ``missing_values`` as bytes, checked; ``()`` for None or an empty sequence.

    Parameters
    ----------
    missing_values : str, sequence of str or None
        One token or several, each a non-empty word without whitespace, ``:`` or ``#``. A
        number is refused (it would be read as that number elsewhere in the file); ``nan``
        is read as NaN anyway and needs no token.
    name : str, default="missing_values"
        The option, for messages.

    Returns
    -------
    tokens : tuple of bytes
        UTF-8 encoded, duplicates and NaN spellings left out.

    Examples
    --------
    >>> from sklearn_ltr.datasets import check_missing_values
    >>> check_missing_values(("NULL", "NA")), check_missing_values(None), check_missing_values("?")
    ((b'NULL', b'NA'), (), (b'?',))
    """
    if missing_values is None:
        return ()
    if isinstance(missing_values, (str, bytes)):
        missing_values = (missing_values,)
    try:
        values = tuple(missing_values)
    except TypeError:
        raise TypeError(f"{name} must be a string, a sequence of strings or None; got "
                        f"{type(missing_values).__name__}.") from None
    tokens = []
    for value in values:
        token = value.decode("utf-8", errors="replace") if isinstance(value, bytes) else value
        if not isinstance(token, str):
            raise TypeError(f"{name} must hold strings, the tokens a file writes for a missing value; got "
                            f"{value!r}.")
        if not token or any(c.isspace() for c in token) or ":" in token or "#" in token:
            raise ValueError(f"{name} holds {token!r}: a missing value token must be a non-empty word without "
                             f"whitespace, ':' or '#', as it appears after '<index>:' in the file (e.g. 'NULL').")
        try:
            number = float(token)
        except ValueError:
            number = None
        if number is not None and not math.isnan(number):
            raise ValueError(f"{name} holds {token!r}, a number: numbers in a file are read as numbers, and only "
                             f"a word (such as NULL, NA or ?) marks a missing value. To treat a number as missing, "
                             f"set it to NaN after reading: X[X == {number:g}] = np.nan.")
        if number is None and token.encode() not in tokens:  # 'nan' is read as NaN without a token
            tokens.append(token.encode())
    return tuple(tokens)


def missing_values_text(tokens):
    """How messages show a tuple of tokens: ``('NULL', 'NA')``."""
    return repr(tuple(token.decode("utf-8", errors="replace") for token in tokens))


def looks_missing(text):
    """Whether a value token ``text`` looks like a missing-value marker (``NA``, ``null``, ``?``, ``-``, ...)."""
    return text.strip().lower() in _LOOKS_MISSING


def substitute_missing(block, tokens, replacement=b"nan"):
    """``block`` (bytes of whole lines) with each value field ``:<token>`` of ``tokens`` written ``:nan``.

    ``replacement`` replaces the tokens instead of ``nan``.

    Examples
    --------
    >>> from sklearn_ltr.datasets._missing import substitute_missing
    >>> substitute_missing(b"1 qid:3 1:NULL 2:0.5 3:NULL#c\\n0 qid:3 1:NULLX 2:NULL", (b"NULL",))
    b'1 qid:3 1:nan 2:0.5 3:nan#c\\n0 qid:3 1:NULLX 2:nan'
    """
    for token in tokens:
        field = b":" + token
        if field not in block:
            continue
        for end in _ENDS:
            block = block.replace(field + end, b":" + replacement + end)
        if block.endswith(field):  # the last line of a file without a final newline
            block = block[:-len(field)] + b":" + replacement
    return block


def whole_line_blocks(f, size=BLOCK_BYTES):
    """Blocks of about ``size`` bytes of a binary file object, each ending with a newline (one is added at the end)."""
    rest = b""
    while True:
        data = f.read(size)
        if not data:
            break
        data = rest + data
        cut = data.rfind(b"\n") + 1
        if cut == 0:
            rest = data
            continue
        yield data[:cut]
        rest = data[cut:]
    if rest:
        yield rest + b"\n"


class _SubstitutedStream(io.RawIOBase):
    """A binary stream of the blocks of ``f`` with their missing value tokens substituted."""

    def __init__(self, f, tokens):
        self._blocks = (substitute_missing(block, tokens) for block in whole_line_blocks(f))
        self._block, self._offset = memoryview(b""), 0

    def readable(self):
        return True

    def readinto(self, buffer):
        while self._offset >= len(self._block):
            block = next(self._blocks, None)
            if block is None:
                return 0
            self._block, self._offset = memoryview(block), 0
        n = min(len(buffer), len(self._block) - self._offset)
        buffer[:n] = self._block[self._offset:self._offset + n]
        self._offset += n
        return n


def nan_lines(f, tokens):
    """A buffered binary stream of the lines of the open binary file ``f``, its ``tokens`` read as ``nan``.

    :func:`sklearn.datasets.load_svmlight_file` reads it like the file itself.

    Examples
    --------
    >>> import io
    >>> from sklearn.datasets import load_svmlight_file
    >>> from sklearn_ltr.datasets._missing import nan_lines
    >>> X, y = load_svmlight_file(nan_lines(io.BytesIO(b"1 1:NULL 2:3\\n0 1:2 2:NA\\n"), (b"NULL", b"NA")))
    >>> X.toarray()
    array([[nan,  3.],
           [ 2., nan]])
    """
    return io.BufferedReader(_SubstitutedStream(f, tokens), buffer_size=1 << 16)


#: Values that stand for NaN while scikit-learn's writer (which refuses NaN) writes a file: powers of
#: two that float32 and float64 hold exactly, tried in turn until one is not among the features.
_SENTINELS = tuple(-(2.0 ** e) for e in range(126, 100, -1))


class _TokenWriter:
    """A binary file whose written lines get ``token`` for every value field ``:<sentinel text>``."""

    def __init__(self, f, text, token):
        self._f, self._text, self._token = f, (text,), token

    def write(self, data):
        return self._f.write(substitute_missing(bytes(data), self._text, self._token))


def encode_missing(X, missing_value, *, owner):
    """``(X, wrap)`` for scikit-learn's writer, which refuses NaN: NaN replaced by a sentinel value.

    ``wrap(f)`` is the file to give the writer: it writes the sentinel's value fields as
    ``missing_value``. ``X`` without NaN is returned as it is, with ``wrap`` returning ``f``.
    ``X`` is a finite-or-NaN ndarray or CSR matrix (float32 or float64).
    """
    values = X.data if not isinstance(X, np.ndarray) else X
    if values.dtype.kind != "f" or not np.isnan(values).any():
        return X, lambda f: f
    if missing_value is None:
        count = int(np.count_nonzero(np.isnan(values)))
        raise ValueError(f"X contains NaN ({count} value{'s' if count > 1 else ''}), and {owner} was given "
                         f"missing_value=None, which refuses them; pass missing_value='NULL' (LETOR 4.0's token, "
                         f"read back as NaN) or impute them first.")
    tokens = check_missing_values(missing_value, name="missing_value")
    token = tokens[0] if tokens else b"nan"  # missing_value='nan': scikit-learn's own reader reads it
    if len(tokens) > 1:
        raise ValueError(f"missing_value is the one token written for NaN; got {missing_value!r}.")
    finite = values[~np.isnan(values)]
    sentinel = next((s for s in _SENTINELS if not np.isclose(finite, s, rtol=1e-6, atol=0).any()), None)
    if sentinel is None:  # features at every one of 26 powers of two: not seen in practice
        raise ValueError(f"{owner} cannot write NaN for these features; impute them first.")
    X = X.copy()
    values = X.data if not isinstance(X, np.ndarray) else X
    values[np.isnan(values)] = sentinel
    from sklearn.datasets import dump_svmlight_file

    probe = io.BytesIO()
    dump_svmlight_file(np.array([[sentinel]], dtype=values.dtype), [0], probe, zero_based=True)
    text = probe.getvalue().split(b"0:", 1)[1].strip()
    return X, lambda f: _TokenWriter(f, text, token)

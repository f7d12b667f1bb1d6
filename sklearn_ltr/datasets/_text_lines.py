"""The lines of a libsvm-style ranking file: opening it (``.gz``, ``.bz2``), its data lines, the first bad one.

The SVMlight/LETOR and LightGBM formats share one line syntax, ``<label> [qid:<id>] <index>:<value> ...
[# comment]``. :func:`sklearn.datasets.load_svmlight_file` parses whole files fast but says little about
where a file goes wrong; this module reads the lines again, only after such a failure, to name the line
and the reason, and reads the first data line that tells the formats apart. The one home of line-level
diagnosis: the readers of :mod:`sklearn_ltr.datasets._formats` and the registry of
:mod:`sklearn_ltr.datasets._file_formats` use it; nothing else parses these lines.
"""

from __future__ import annotations

import bz2
import gzip
import os
import zlib

from sklearn_ltr.datasets._missing import looks_missing

__all__ = ["data_lines", "decompression_error", "first_bad_line", "first_data_line", "libsvm_line_problem"]

#: Compressed files that :func:`sklearn.datasets.load_svmlight_file` decompresses, by file name suffix.
COMPRESSION = {".gz": "gzip", ".bz2": "bzip2"}

#: What reading a file can raise besides a parse error: I/O errors, and a .gz/.bz2 file that does not decompress.
READ_ERRORS = (OSError, EOFError, zlib.error)


def file_name(path):
    """How error messages name a file: its path, or a file object's ``name``."""
    return os.fspath(path) if isinstance(path, (str, os.PathLike)) else getattr(path, "name", repr(path))


def compression(path):
    """``"gzip"`` or ``"bzip2"`` when ``path`` is a file name that is read decompressed, else None."""
    if not isinstance(path, (str, os.PathLike)):
        return None
    return COMPRESSION.get(os.path.splitext(os.fspath(path))[1].lower())


def decompression_error(path, err):
    """The ValueError naming ``path`` for a ``.gz``/``.bz2`` file that does not decompress, else None.

    gzip and bz2 report a truncated stream as :class:`EOFError`, a file that is not
    compressed or is corrupt as an :class:`OSError` without an ``errno`` (``BadGzipFile``,
    bz2's "Invalid data stream") or a :class:`zlib.error`. An ``OSError`` with an ``errno``
    (permission denied, an I/O error) is a real I/O error, left as it is.
    """
    kind = compression(path)
    if kind is None or (isinstance(err, OSError) and err.errno is not None):
        return None
    suffix = os.path.splitext(os.fspath(path))[1]
    if isinstance(err, EOFError):
        why = "it ends before its compressed data does (truncated: a partial download or copy?)"
    else:
        why = (f"it is not valid {kind} data (a file that was never compressed? then remove the {suffix!r} "
               f"from its name)")
    return ValueError(f"could not decompress {file_name(path)!r}, read as {kind} for its {suffix!r} name: {why}: "
                      f"{err}.")


def data_lines(path):
    """``(line_number, fields)`` of the lines of ``path`` that hold data (``#`` comments and blank lines skipped).

    A ``.gz``/``.bz2`` file (by its suffix) is read decompressed; one that does not
    decompress raises a ``ValueError`` that says so; other I/O errors (``OSError``) propagate.

    Parameters
    ----------
    path : str or path-like
        A text file of whitespace-separated fields, optionally gzip- or bzip2-compressed.

    Yields
    ------
    number : int
        1-based line number.
    fields : list of str
        The line's fields before any ``#``.

    Examples
    --------
    >>> import os, tempfile
    >>> from sklearn_ltr.datasets import data_lines
    >>> path = os.path.join(tempfile.mkdtemp(), "positions.txt")
    >>> _ = open(path, "w").write("# display positions\\n1\\n\\n2  # second row\\n")
    >>> list(data_lines(path))
    [(2, ['1']), (4, ['2'])]
    """
    opener = {"gzip": gzip.open, "bzip2": bz2.open}.get(compression(path), open)
    try:
        with opener(path, "rt", encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, 1):
                fields = line.split("#", 1)[0].split()
                if fields:
                    yield number, fields
    except READ_ERRORS as err:
        error = decompression_error(path, err)
        if error is None:
            raise
        raise error from err


def first_data_line(path):
    """The fields of the first data line of ``path``; a ValueError naming the file when it has none."""
    for _, fields in data_lines(path):
        return fields
    raise ValueError(f"{file_name(path)!r} holds no data rows (only blank or '#' comment lines).")


def _short(text, limit=30):
    return repr(text if len(text) <= limit else text[:limit] + "...")


def libsvm_line_problem(fields, missing_values=()):
    """Why a data line's fields are not ``<label> [qid:<id>] <index>:<value> ...``, or None.

    A value among ``missing_values`` (tokens, as bytes) is a missing value, not a problem. A
    value that looks like a missing-value marker (``NA``, ``?``) is named with the option that
    reads it as one.
    """
    tokens = [token.decode("utf-8", errors="replace") for token in missing_values]
    try:
        float(fields[0])
    except ValueError:
        return f"the label {_short(fields[0])} is not a number"
    for field in fields[1:]:
        key, sep, value = field.partition(":")
        try:
            if not sep:
                raise ValueError
            if key == "qid":
                int(value)
            elif int(key) < 0:
                raise ValueError
            elif value not in tokens:
                float(value)
        except ValueError:
            reason = f"{_short(field)} is not '<index>:<value>' (or 'qid:<integer>')"
            if sep and key != "qid" and looks_missing(value):
                reason += (f"; if {value!r} marks a missing value, read it as NaN with "
                           f"missing_values={(*tokens, value)!r}")
            return reason
    return None


def _lone_carriage_return(path):
    """The number of the first line of ``path``, lines ended at ``\\n`` as the parser ends them, with a lone ``\\r``."""
    opener = {"gzip": gzip.open, "bzip2": bz2.open}.get(compression(path), open)
    with opener(path, "rb") as f:
        for number, line in enumerate(f, 1):
            line = line.removesuffix(b"\n").removesuffix(b"\r")
            if b"\r" in line.split(b"#", 1)[0]:
                return number
    return None


def first_bad_line(path, problem=libsvm_line_problem, missing_values=None):
    """``(line_number, reason)`` of the first data line of ``path`` that ``problem`` rejects, else None.

    None too when ``path`` is not a file name or cannot be read to the end (the caller's own
    error then stands). ``missing_values`` (tokens, as bytes) is passed on to ``problem``.
    A file whose lines end in a lone ``\\r`` (classic Mac OS) reads well here, line by line, but
    not in the parser, which ends lines at ``\\n`` only: its first such line is named instead.
    """
    if not isinstance(path, (str, os.PathLike)):
        return None
    try:
        for number, fields in data_lines(path):
            reason = problem(fields) if missing_values is None else problem(fields, missing_values)
            if reason:
                return number, reason
        # Text mode ends lines at a lone \r too, the parser does not: it reads the lines that follow as more
        # fields of this one, and would fail with no line to name.
        number = _lone_carriage_return(path)
        if number is not None:
            return number, ("a carriage return ('\\r') ends a line without a newline ('\\n') after it, and lines "
                            "must end in '\\n' or '\\r\\n'; convert the line endings, e.g. with "
                            "tr '\\r' '\\n' < FILE > FIXED")
    except (ValueError, *READ_ERRORS):
        return None
    return None

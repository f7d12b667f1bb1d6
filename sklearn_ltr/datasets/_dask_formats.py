"""Out-of-core reader of SVMlight/LETOR ranking files into Dask collections, one block per byte range.

The file is cut into byte ranges of about ``blocksize``; each cut is then moved forward to the start
of the next line whose query id differs from the line before it, so no query of a file whose queries
are contiguous (every LETOR, MSLR and Yahoo! file) is split between two blocks. Finding a cut reads
only the lines of the query it falls into, on the client; each block is then parsed on a worker by
:func:`sklearn.datasets.load_svmlight_file` on the block's bytes. Nothing is read into memory at once.

A query whose rows are scattered through the file ends up in several blocks; ``LambdaMARTRanker.fit``
notices it (query ids in more than one partition) and shuffles rows by query before training.
"""

from __future__ import annotations

import io
import itertools
import os
import re

import numpy as np

from sklearn_ltr.datasets._missing import MISSING_VALUES, check_missing_values, substitute_missing
from sklearn_ltr.datasets._text_lines import first_data_line
from sklearn_ltr.utils._optional import require_dask

__all__ = ["read_svmlight_ranking_dask"]

_QID = re.compile(rb"(?:^|\s)qid:(\S+)")


def _qid_of(line):
    """Query id of a data line, or None for a blank or comment line."""
    found = _QID.search(line.split(b"#", 1)[0])
    return None if found is None else found.group(1)


def _parse_size(blocksize):
    if isinstance(blocksize, str):
        from dask.utils import parse_bytes

        blocksize = parse_bytes(blocksize)
    if not isinstance(blocksize, (int, np.integer)) or isinstance(blocksize, bool) or blocksize < 1:
        raise ValueError(f"blocksize must be a positive number of bytes or a string like '64MiB'; got {blocksize!r}.")
    return int(blocksize)


def _next_query_start(f, offset, size):
    """First line start at or after ``offset`` where the query id changes (or ``size``)."""
    f.seek(offset - 1)
    f.readline()  # finish the line holding byte offset - 1: now at a line start >= offset
    previous = None
    while True:
        pos = f.tell()
        line = f.readline()
        if not line:
            return size
        qid = _qid_of(line)
        if qid is None:
            continue
        if previous is not None and qid != previous:
            return pos
        previous = qid


def block_offsets(path, blocksize):
    """Byte offsets ``[0, c_1, ..., size]`` of blocks that split no contiguous query."""
    size = os.path.getsize(path)
    cuts = [0]
    with open(path, "rb") as f:
        for offset in range(blocksize, size, blocksize):
            if offset <= cuts[-1]:
                continue  # the previous cut moved past this one (a query longer than a block)
            cut = _next_query_start(f, offset, size)
            if cut >= size:
                break
            cuts.append(cut)
    cuts.append(size)
    return cuts


def _parse_block(path, start, stop, *, n_features, dtype, zero_based, tokens=()):
    from sklearn.datasets import load_svmlight_file

    with open(path, "rb") as f:
        f.seek(start)
        data = substitute_missing(f.read(stop - start), tokens)
    try:
        X, y, qid = load_svmlight_file(
            io.BytesIO(data), n_features=n_features, dtype=dtype, zero_based=zero_based, query_id=True
        )
    except ValueError as err:
        raise ValueError(f"could not parse bytes {start}..{stop} of {os.fspath(path)!r}: {err}") from err
    return X.toarray(), y.astype(np.float64, copy=False), qid.astype(np.int64, copy=False)


def _max_index(path, start, stop, zero_based, tokens):
    X, _, _ = _parse_block(path, start, stop, n_features=None, dtype=np.float32, zero_based=zero_based, tokens=tokens)
    return X.shape[1]


def _frame(block, n_features):
    import pandas as pd

    X, y, qid = block
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(n_features)])
    frame["label"] = y
    frame["qid"] = qid
    return frame


def read_svmlight_ranking_dask(
    path, *, n_features=None, blocksize="64MiB", dtype=np.float32, zero_based=False, as_frame=False,
    missing_values=MISSING_VALUES,
):
    """Read a LETOR / SVMlight ranking file lazily into Dask collections, one block per byte range.

    Blocks end at query boundaries, so every query of a file whose queries are contiguous lies whole
    in one partition, and :class:`~sklearn_ltr.rankers.LambdaMARTRanker` trains on the result with
    no shuffle. Needs the ``dask`` extra (``pip install sklearn-ltr[dask]``).

    Parameters
    ----------
    path : str or path-like
        An uncompressed file on a file system every worker can read (same path on each).
    n_features : int, default=None
        Number of feature columns. ``None`` finds the largest index with one extra parsing pass
        over the whole file; pass it (136 for MSLR, 46 for LETOR 4.0) to skip that pass.
    blocksize : int or str, default="64MiB"
        Approximate bytes per block (one partition, one task); a dense block holds about
        ``blocksize / bytes_per_line * n_features * itemsize`` bytes of features.
    dtype : numpy dtype, default=np.float32
        Dtype of the features.
    zero_based : bool, default=False
        Whether feature indices start at 0. LETOR files are one-based. ("auto" is not offered:
        blocks could disagree.)
    as_frame : bool, default=False
        Return one Dask DataFrame with columns ``f0 .. f{n-1}``, ``label`` and ``qid`` instead of arrays.
    missing_values : str, sequence of str or None, default=("NULL",)
        Value tokens read as NaN (LETOR 4.0's ``1:NULL``); ``()`` or None reads numbers only.

    Returns
    -------
    X : dask.array.Array of shape (n_samples, n_features)
        Dense features; row chunk sizes are unknown until computed.
    y : dask.array.Array of shape (n_samples,), float64
    groups : dask.array.Array of shape (n_samples,), int64
        Query ids. With ``as_frame=True`` a single Dask DataFrame is returned instead.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        If ``path`` is compressed, or holds no data rows (empty, or blank and ``#`` comment
        lines only), as every other reader of the format says.

    Examples
    --------
    Four queries of three rows each; with a 40-byte ``blocksize`` every cut moves on to
    the next query boundary, so no query is split between partitions:

    >>> import tempfile
    >>> from pathlib import Path
    >>> from sklearn_ltr.datasets import read_svmlight_ranking_dask
    >>> rows = "".join(f"{(q + d) % 3} qid:{q} 1:{d} 2:{q}\\n" for q in range(4) for d in range(3))
    >>> print(rows[:48], end="")  # the first query
    0 qid:0 1:0 2:0
    1 qid:0 1:1 2:0
    2 qid:0 1:2 2:0
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = Path(tmp) / "train.txt"
    ...     _ = path.write_text(rows)
    ...     X, y, qid = read_svmlight_ranking_dask(path, n_features=2, blocksize=40)
    ...     partitions = [block.compute(scheduler="sync").tolist() for block in qid.blocks]
    ...     X = X.compute(scheduler="sync")
    >>> partitions
    [[0, 0, 0, 1, 1, 1], [2, 2, 2], [3, 3, 3]]
    >>> X.shape, X.dtype
    ((12, 2), dtype('float32'))

    The arrays (or the frame with ``as_frame=True``) go straight to a Dask-aware
    ranker: ``LambdaMARTRanker().fit(X, y, groups=qid)``.
    """
    require_dask("read_svmlight_ranking_dask")
    import dask
    import dask.array as da

    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a file path; got {type(path).__name__}.")
    if not os.path.exists(path):
        raise FileNotFoundError(f"no such ranking data file: {os.fspath(path)!r}")
    if os.fspath(path).endswith((".gz", ".bz2", ".xz", ".zip")):
        raise ValueError(
            f"{os.fspath(path)!r} is compressed and cannot be split into byte ranges; decompress it, "
            f"or read it whole with load_svmlight_ranking."
        )
    if zero_based not in (True, False):
        raise ValueError(f"zero_based must be True or False; got {zero_based!r}.")
    tokens = check_missing_values(missing_values)
    # A file without a data row is an error, as in load_svmlight_ranking and convert_ranking, not an empty
    # collection without columns. Reads up to the first data line only.
    first_data_line(path)
    offsets = block_offsets(path, _parse_size(blocksize))
    ranges = list(itertools.pairwise(offsets))
    if n_features is None:
        sizes = dask.compute(*[dask.delayed(_max_index)(path, a, b, zero_based, tokens) for a, b in ranges])
        n_features = max(sizes)
    parse = dask.delayed(_parse_block, pure=True)
    blocks = [parse(path, a, b, n_features=n_features, dtype=dtype, zero_based=zero_based, tokens=tokens)
              for a, b in ranges]
    if as_frame:
        import dask.dataframe as dd

        meta = _frame((np.zeros((0, n_features), dtype), np.zeros(0), np.zeros(0, np.int64)), n_features)
        parts = [dask.delayed(_frame)(block, n_features) for block in blocks]
        return dd.from_delayed(parts, meta=meta, verify_meta=False)
    X = da.concatenate(
        [da.from_delayed(b[0], shape=(np.nan, n_features), dtype=np.dtype(dtype)) for b in blocks], axis=0
    )
    y = da.concatenate([da.from_delayed(b[1], shape=(np.nan,), dtype=np.float64) for b in blocks])
    groups = da.concatenate([da.from_delayed(b[2], shape=(np.nan,), dtype=np.int64) for b in blocks])
    return X, y, groups

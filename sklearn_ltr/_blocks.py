"""How rows are cut into batches for scoring: shared by the rankers' ``predict`` and :class:`OnnxScorer`.

Two cuts and one order, NumPy only (no torch):

- :func:`query_blocks` (:func:`query_block_bounds`): consecutive blocks of whole queries of
  about ``documents`` rows, so that only one block at a time is copied into float32 (memory
  stays bounded);
- :func:`padded_batches`: inside a block, queries sorted by length and cut so that each
  batch pads to at most ``documents`` slots (a list that alone is longer is a batch of its
  own), and optionally at most ``max_queries`` lists;
- :func:`canonical_order`: the order in which a list-context model sees each list's rows,
  a function of the rows' bytes alone, so that predict is exactly invariant to the input
  row order;
- :func:`canonical_query_order`: the order in which training sees the rows (every ranker's
  ``fit``): by query, each query's rows sorted by their values (:func:`order_keys`), so that
  a model does not depend on the order of the rows within a query.

:func:`check_finite_scores` is the one error for a model that scored NaN or infinity.
"""

from __future__ import annotations

import itertools

import numpy as np

__all__ = [
    "canonical_order", "canonical_query_order", "check_finite_scores", "order_keys", "padded_batches",
    "query_block_bounds", "query_blocks", "sparse_row_keys",
]

#: Passes that sort tied rows by one more 8-byte word before the rest of their bytes are compared at once.
_WORD_PASSES = 4


def query_block_bounds(query_groups, documents):
    """Query numbers where consecutive blocks of whole queries of about ``documents`` rows start and end.

    A query starts a new block when its first row would lie past a multiple of
    ``documents``: a block holds at most ``documents`` rows plus one query's.

    Parameters
    ----------
    query_groups : QueryGroups
        The rows' queries.
    documents : int
        Rows per block.

    Returns
    -------
    ndarray of int
        ``bounds[b]:bounds[b + 1]`` are the queries of block ``b``.

    Examples
    --------
    >>> from sklearn_ltr._groups import QueryGroups
    >>> query_block_bounds(QueryGroups([0, 0, 0, 1, 2, 2, 3]), documents=3).tolist()
    [0, 1, 3, 4]
    """
    starts = query_groups.offsets[:-1]
    block_of_query = starts // documents
    edges = np.flatnonzero(np.diff(block_of_query)) + 1
    return np.concatenate(([0], edges, [query_groups.n_queries]))


def query_blocks(query_groups, documents):
    """Input-row indices and query sizes of consecutive blocks of whole queries, each of about ``documents`` rows.

    The blocks of :func:`query_block_bounds`, as rows.

    Parameters
    ----------
    query_groups : QueryGroups
        The rows' queries.
    documents : int
        Rows per block.

    Returns
    -------
    list of (ndarray, ndarray)
        For each block, its row indices query by query, and the rows of each of its queries.
    """
    offsets, order, sizes = query_groups.offsets, query_groups.order, query_groups.sizes
    bounds = query_block_bounds(query_groups, documents)
    return [(order[offsets[lo]:offsets[hi]], sizes[lo:hi]) for lo, hi in itertools.pairwise(bounds)]


def padded_batches(sizes, documents, max_queries=None, max_padding=None):
    """Query numbers of each batch: queries by length, each batch padding to at most ``documents`` slots.

    A batch pads its lists to its longest, so sorting by length keeps padding small. Walking
    the queries from the shortest, a batch takes the next query while it still fits: at most
    ``documents`` padded slots (a list longer than that is a batch of its own), at most
    ``max_queries`` lists, and at most a ``max_padding`` share of padded slots (a long list
    joining many short ones would otherwise pad them all to its length: with attention the
    cost of a list grows with the square of its padded length).

    Parameters
    ----------
    sizes : array-like of int
        Documents of each query.
    documents : int
        Padded slots per batch (a longer list is a batch of its own).
    max_queries : int, default=None
        At most this many lists per batch.
    max_padding : float, default=None
        At most this share of a batch's slots may be padding (``None``: no limit).

    Returns
    -------
    list of ndarray
        Query numbers of each batch, shortest lists first.

    Examples
    --------
    >>> [b.tolist() for b in padded_batches([3, 1, 2, 5], documents=6)]  # 2 x 2 slots, 1 x 3, 1 x 5
    [[1, 2], [0], [3]]
    >>> [b.tolist() for b in padded_batches([1, 1, 8, 8], documents=100, max_padding=0.25)]
    [[0, 1], [2, 3]]
    """
    sizes = np.asarray(sizes)
    order = np.argsort(sizes, kind="stable")
    sorted_sizes = sizes[order].tolist()
    limit = len(order) if max_queries is None else int(max_queries)
    bounds, start, real = [0], 0, 0
    for end, size in enumerate(sorted_sizes):
        count = end - start + 1  # the batch [start, end] with this query; its longest list is `size`
        fits = count <= limit and count * size <= documents
        if fits and max_padding is not None:
            fits = real + size >= (1.0 - max_padding) * count * size
        if end > start and not fits:
            bounds.append(end)
            start, real = end, 0
        real += size
    bounds.append(len(order))
    return [order[lo:hi] for lo, hi in itertools.pairwise(bounds)]


def _byte_rows(values):
    """Each row of ``values`` as bytes, ``[n, row_bytes]`` uint8 (a view when ``values`` is C-contiguous)."""
    values = np.ascontiguousarray(values)
    return values.reshape(values.shape[0], int(np.prod(values.shape[1:]))).view(np.uint8)


class _Numbers:
    """Rows of numbers compared as numbers: their bytes are those of :func:`order_keys`, made where read.

    ``take`` (default: all rows in order) are the rows of ``values`` compared, so that only the
    columns read of the rows read are gathered, never whole rows that one word already orders.
    """

    def __init__(self, values, take=None):
        values = np.asarray(values)
        self.values = values.reshape(values.shape[0], -1)
        self.take = np.arange(values.shape[0]) if take is None else take
        self.itemsize = values.dtype.itemsize
        self.shape = (len(self.take), self.values.shape[1] * self.itemsize)

    def bytes(self, index, k=None):
        """The key bytes of the rows ``index``: all of them, or bytes ``8k:8k + 8``."""
        per_word = 8 // self.itemsize
        rows = self.take[index]
        values = self.values[rows] if k is None else self.values[rows, k * per_word:(k + 1) * per_word]
        keys = order_keys(values)
        return keys.view(np.uint8).reshape(keys.shape[0], -1)


def _row_bytes(source, index):
    return source.bytes(index) if isinstance(source, _Numbers) else source[index]


def _word(source, k, index):
    """Bytes ``8k:8k + 8`` of the rows ``index`` of ``source`` as big-endian uint64: their ``memcmp`` order.

    A row shorter than ``8k + 8`` bytes is padded with zero bytes, the same for every row,
    so the padding never decides an order.
    """
    chunk = source.bytes(index, k) if isinstance(source, _Numbers) else source[index, 8 * k:8 * k + 8]
    if chunk.shape[1] < 8:
        chunk = np.concatenate([chunk, np.zeros((chunk.shape[0], 8 - chunk.shape[1]), np.uint8)], axis=1)
    return np.ascontiguousarray(chunk).view(">u8").ravel().astype(np.uint64)


def canonical_order(rows, sizes, *tie_breakers, numeric=False):
    """Order of each list's rows by their bytes (``memcmp``), identical rows in their given order.

    A list-context model is permutation equivariant, but in float32 the order in which
    attention sums over a list's documents changes the last bits of a score (~1e-7). Scoring
    each list in an order that depends only on its rows' contents makes predict exactly
    invariant to the input row order. Any fixed order would do; this one is cheap: one sort
    of a 64-bit key per row (the list's number in the high bits, the row's first bytes
    below), and only rows that tie on it compare further bytes.

    Parameters
    ----------
    rows : ndarray of shape (n_rows, ...)
        The rows, list after list (``sizes[0]`` rows of the first list, then the next...).
    sizes : array-like of int
        Rows of each list.
    *tie_breakers : ndarray of shape (n_rows, ...)
        Further per-row values (e.g. initial ranks), compared after the bytes of ``rows``.
    numeric : bool, default=False
        Compare the values as numbers, first column first, instead of their bytes: the bytes
        of their :func:`order_keys`, made only for the columns and rows compared.

    Returns
    -------
    order : ndarray of int
        ``rows[order]`` holds each list's rows sorted by their bytes, lists in place: the
        positions ``offsets[i]:offsets[i + 1]`` of list ``i`` are a permutation of that range.

    Examples
    --------
    >>> import numpy as np
    >>> rows = np.array([[1.0], [2.0], [1.0], [5.0], [3.0]], dtype=np.float32)
    >>> canonical_order(rows, [3, 2]).tolist()  # bytes 00 00 00 40 (2.0) before 00 00 80 3f (1.0)
    [1, 0, 2, 4, 3]
    """
    sources = [(_Numbers if numeric else _byte_rows)(values) for values in (rows, *tie_breakers)]
    return _source_order(sources, sizes)


def _source_order(sources, sizes):
    """:func:`canonical_order` of rows whose bytes ``sources`` give (byte rows or :class:`_Numbers`)."""
    sizes = np.asarray(sizes, dtype=np.int64)
    if int(sizes.sum()) == 0:
        return np.zeros(0, dtype=np.intp)
    words = [(source, k) for source in sources for k in range(-(-source.shape[1] // 8))]
    # The first key: the list's number in the high bits, the first word's leading bits below.
    bits = int(len(sizes) - 1).bit_length()
    first = _word(*words[0], slice(None))
    if bits:
        lists = np.repeat(np.arange(len(sizes), dtype=np.uint64), sizes)
        first = (lists << np.uint64(64 - bits)) | (first >> np.uint64(bits))
    order = np.argsort(first, kind="quicksort")  # ties are resolved below, so no stable sort
    first = first[order]
    tied = first[1:] == first[:-1]  # tied[i]: the rows at positions i and i + 1 compare equal so far
    # Refine runs of tied rows by one more word (the first word again if its low bits were cut off).
    next_words = words[(0 if bits else 1):]
    for source, k in next_words[:_WORD_PASSES]:
        if not tied.any():
            return order
        positions, run = _tied_runs(tied)
        word = _word(source, k, order[positions])
        # By word, then by run: rows tied on both stay tied and are ordered later, so neither sort
        # need be stable, and run numbers that fit 16 bits sort by radix.
        by = np.argsort(word, kind="quicksort")
        by = by[np.argsort(_compact(run[by]), kind="stable")]
        order[positions] = order[positions][by]
        word = word[by]
        link = tied[positions[:-1]]
        still = link & (word[1:] == word[:-1])
        if np.array_equal(still, link):  # no progress (identical rows?): compare whole rows below
            break
        tied[positions[:-1]] = still
    if tied.any():
        # Rows still tied: by run, then all their bytes at once (memcmp), then their given order.
        positions, run = _tied_runs(tied)
        index = order[positions]
        by = np.argsort(index)
        run_bytes = run[by].astype(">u8").view(np.uint8).reshape(-1, 8)  # memcmp puts the run first
        whole = np.concatenate([run_bytes, *(_row_bytes(source, index[by]) for source in sources)], axis=1)
        order[positions] = index[by[np.argsort(whole.view(np.dtype((np.void, whole.shape[1]))).ravel(),
                                               kind="stable")]]
    return order


#: Dense bytes of one block of sparse rows compared at a time, and of one query beyond which
#: sparse rows are compared by a hash of their entries instead.
_SPARSE_BLOCK_BYTES, _SPARSE_QUERY_BYTES = 1 << 26, 1 << 28


def canonical_query_order(query_groups, X, *tie_breakers, documents=1 << 16):
    """Rows sorted by query, each query's rows in their canonical order: the order training sees them in.

    Queries come in the order of their sorted ids (as :attr:`QueryGroups.order`); inside a
    query the rows are sorted by their features compared as numbers, the first feature first
    (lexicographically), then by each tie breaker (labels, display positions, ...), identical
    rows in input order (they are interchangeable). The result is a function of each query's
    *set* of rows: shuffling the rows within a query, or interleaving the queries differently,
    gives the same rows in the same order, so a model trained on them is the same model, bit for
    bit. Numbers, not bytes, are compared, so that a strictly increasing transformation of a
    feature (``log1p``, a standardisation) and another float dtype of the same values keep the
    order: a model trained behind such a step sees its rows in the order it would see without
    it. NaN sorts after every number, -0.0 before 0.0. Sparse rows compare by their dense form,
    so that sparse and dense input of the same values give the same order (blocks are made
    dense one at a time, of at most about 64 MB); where one query's rows would take more than
    256 MB dense, sparse rows compare by :func:`sparse_row_keys` instead (a 64-bit hash of their
    entries: two different rows of one query with the same hash and tie breakers would keep
    their input order, a chance of about 2**-64 per pair).

    Cost: :func:`canonical_order` sorts one 64-bit key per row (the first values, mapped to
    unsigned keys whose byte order is their numeric order by :func:`order_keys`) and maps and
    compares more values only for rows that tie on it, reading ``X`` where it lies: only the
    values compared are gathered, whole rows only for rows that still tie after a few words.
    It runs in blocks of whole queries of about ``documents`` rows, which bounds that memory
    (and, for sparse ``X``, the block made dense).

    Parameters
    ----------
    query_groups : QueryGroups
        The rows' queries.
    X : ndarray or sparse matrix of shape (n_samples, n_features)
        The features, in input row order.
    *tie_breakers : ndarray of shape (n_samples, ...)
        Further per-row numbers in input row order, compared after the features.
    documents : int, default=65536
        Rows per block.

    Returns
    -------
    order : ndarray of int
        ``X[order]`` holds the rows by query, each query's in canonical order.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ltr._groups import QueryGroups
    >>> X = np.array([[2.0], [1.0], [3.0], [1.0], [np.nan]], dtype=np.float32)
    >>> y = np.array([0.0, 2.0, 1.0, 0.0, 0.0])
    >>> canonical_query_order(QueryGroups([7, 5, 7, 5, 7]), X, y).tolist()  # query 5: rows 3, 1 by label
    [3, 1, 0, 2, 4]
    """
    import scipy.sparse as sp

    sparse = sp.issparse(X)
    if sparse:
        X = sp.csr_matrix(X)
        row_bytes = max(1, X.shape[1] * X.dtype.itemsize)
        if query_groups.max_size * row_bytes > _SPARSE_QUERY_BYTES:
            X, sparse = sparse_row_keys(X), False
        else:
            documents = max(1, min(documents, _SPARSE_BLOCK_BYTES // row_bytes))
    order = query_groups.order
    canonical = np.empty_like(order)
    offsets = query_groups.offsets
    bounds = query_block_bounds(query_groups, documents)
    for lo, hi in itertools.pairwise(bounds):
        rows = order[offsets[lo]:offsets[hi]]
        first, last = int(rows[0]), int(rows[-1])
        contiguous = last - first + 1 == len(rows) and (len(rows) < 2 or bool((np.diff(rows) == 1).all()))
        if sparse:  # this block's rows, dense
            features = _Numbers((X[first:last + 1] if contiguous else X[rows]).toarray())
        else:  # read in place: only the values compared are gathered
            features = _Numbers(X, rows)
        within = _source_order([features, *(_Numbers(values, rows) for values in tie_breakers)],
                               query_groups.sizes[lo:hi])
        canonical[offsets[lo]:offsets[hi]] = rows[within]
    return canonical


def order_keys(values):
    """Per-row unsigned big-endian keys whose bytes compare (``memcmp``) as the values do as numbers.

    The usual map of IEEE floats to unsigned integers: a positive number gets its sign bit set,
    a negative one all its bits flipped, so that the keys' order is the numbers' (-inf < ... <
    -0.0 < 0.0 < ... < inf < NaN); signed integers get their sign bit flipped. Written
    big-endian, row after row, the keys of a row compare byte by byte as its values compare
    number by number, first column first.

    Parameters
    ----------
    values : ndarray of shape (n_rows, ...)
        Numbers: float, integer or boolean.

    Returns
    -------
    keys : ndarray of shape (n_rows, ...)
        Big-endian unsigned integers of the values' width.

    Examples
    --------
    >>> import numpy as np
    >>> values = np.array([2.0, -1.0, np.nan, -0.0, 0.0, -np.inf], dtype=np.float32)
    >>> keys = order_keys(values)
    >>> values[np.argsort(keys.view(np.uint8).reshape(6, 4).view(">u4").ravel(), kind="stable")].tolist()
    [-inf, -1.0, -0.0, 0.0, 2.0, nan]
    """
    values = np.ascontiguousarray(values)
    if values.dtype.kind == "b":
        values = values.astype(np.uint8)
    if values.dtype.kind not in "fiu":
        raise TypeError(f"order_keys compares numbers; got dtype {values.dtype}.")
    unsigned = np.dtype(f"u{values.dtype.itemsize}")
    bits = values.view(unsigned)
    top = unsigned.type(1 << (8 * unsigned.itemsize - 1))
    if values.dtype.kind == "f":
        bits = np.where((bits & top) != 0, ~bits, bits | top)
    elif values.dtype.kind == "i":
        bits = bits ^ top
    return bits.astype(unsigned.newbyteorder(">"))


#: Odd 64-bit constants of the row hash (SplitMix64's).
_GOLDEN, _MIX1, _MIX2 = np.uint64(0x9E3779B97F4A7C15), np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


def _mix64(values):
    """SplitMix64's finaliser of uint64 ``values`` (wrapping arithmetic): a good 64-bit hash."""
    values = (values ^ (values >> np.uint64(30))) * _MIX1
    values = (values ^ (values >> np.uint64(27))) * _MIX2
    return values ^ (values >> np.uint64(31))


def sparse_row_keys(X):
    """One 64-bit key per row of a sparse matrix, a function of the row's non-zero entries alone.

    The key sums a hash of each entry's (column, value bits) pair, so it does not depend on the
    order of the entries in storage; stored zeros count as absent. Two equal rows get equal keys;
    two different rows equal keys with a chance of about 2**-64. Vectorised: one pass over the
    stored entries.

    Parameters
    ----------
    X : sparse matrix of shape (n_samples, n_features)

    Returns
    -------
    keys : ndarray of uint64, shape (n_samples,)

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> X = sp.csr_matrix(np.array([[0.0, 1.0], [0.0, 1.0], [1.0, 0.0]]))
    >>> keys = sparse_row_keys(X)
    >>> bool(keys[0] == keys[1]), bool(keys[0] == keys[2])
    (True, False)
    """
    import scipy.sparse as sp

    X = sp.csr_matrix(X)
    data = np.ascontiguousarray(X.data)
    bits = data.view(np.uint32 if data.dtype.itemsize == 4 else np.uint64).astype(np.uint64)
    with np.errstate(over="ignore"):
        columns = X.indices.astype(np.uint64) * _GOLDEN
        entries = _mix64(_mix64(bits + _GOLDEN) ^ columns)
        entries[data == 0] = 0  # stored zeros count as absent (-0.0 too)
        totals = np.concatenate(([np.uint64(0)], np.cumsum(entries, dtype=np.uint64)))
        return totals[X.indptr[1:]] - totals[X.indptr[:-1]]


def _compact(run):
    """Run numbers as uint16 when they fit (NumPy sorts them stably by radix), else as they are."""
    return run.astype(np.uint16) if len(run) and run[-1] < 1 << 16 else run


def _tied_runs(tied):
    """Positions of the rows in runs of tied rows, and each one's run number (runs in position order)."""
    in_run = np.zeros(len(tied) + 1, dtype=bool)
    in_run[:-1] |= tied
    in_run[1:] |= tied
    positions = np.flatnonzero(in_run)
    run = np.concatenate(([0], np.cumsum(~tied[positions[:-1]])))
    return positions, run


def check_finite_scores(scores, owner):
    """Raise ``ValueError`` when a model scored NaN or infinity: never return such a score."""
    bad = ~np.isfinite(scores)
    if bad.any():
        raise ValueError(
            f"{owner} produced {int(bad.sum())} non-finite scores of {len(scores)}: these rows' features are "
            f"probably far outside the training data's range (scale the features, e.g. with StandardScaler or "
            f"Log1pTransformer, in a Pipeline for both fit and predict)."
        )
    return scores

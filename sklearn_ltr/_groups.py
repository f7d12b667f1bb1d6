"""All query-group logic: validation, sorting by query, run lengths, padding.

A *query group* is the set of rows that share a query id. ``groups`` holds one id
per row, of any integer or string dtype, in any order: the rows of a query need
not be contiguous and the queries need not be sorted. Every other module goes
through :class:`QueryGroups` instead of re-implementing this logic.

Queries are numbered ``0 .. n_queries - 1`` in the order of their sorted ids
(``np.unique`` order); rows keep their input order inside a query ("stable").
"""

from __future__ import annotations

from functools import cached_property

import numpy as np

__all__ = ["QueryGroups", "as_query_groups", "check_groups", "check_query_weights", "order_within_groups"]


def check_groups(groups, n_samples, *, name="groups", against="X"):
    """Validate query ids against the number of rows.

    Parameters
    ----------
    groups : array-like of shape (n_samples,)
        One query id per row: integers or strings. Floats are accepted when every
        value is a whole number (as read from a CSV file); NaN and None are not.
    n_samples : int
        Number of rows the ids must describe.
    name : str, default="groups"
        Argument name used in error messages.
    against : str, default="X"
        Name of the array whose rows the ids describe, for error messages.

    Returns
    -------
    groups : ndarray of shape (n_samples,)
        The ids as an integer or string NumPy array.
    """
    if groups is None:
        raise ValueError(f"{name} is None; pass one query id per row.")
    if hasattr(groups, "to_numpy"):  # pandas Series / Index
        groups = groups.to_numpy()
    groups = np.asarray(groups)
    if groups.ndim != 1:
        if groups.ndim == 2 and groups.shape[1] == 1:
            groups = groups.ravel()
        else:
            raise ValueError(f"{name} must be 1-D, one query id per row; got shape {groups.shape}.")
    if groups.shape[0] != n_samples:
        raise ValueError(
            f"{name} has {groups.shape[0]} entries but {against} has {n_samples} rows; "
            f"pass exactly one query id per row of {against}."
        )
    kind = groups.dtype.kind
    if kind in "iu":
        return groups
    if kind in "US":
        return groups
    if kind == "b":
        raise ValueError(f"{name} must hold integer or string query ids, not booleans.")
    if kind == "f":
        if not np.all(np.isfinite(groups)):
            raise ValueError(f"{name} contains NaN or infinite query ids; every row needs a query id.")
        as_int = groups.astype(np.int64)
        if not np.array_equal(as_int, groups):
            raise ValueError(f"{name} holds non-integral floats; query ids must be integers or strings.")
        return as_int
    if kind == "O":
        if any(g is None or (isinstance(g, float) and g != g) for g in groups):
            raise ValueError(f"{name} contains None or NaN query ids; every row needs a query id.")
        types = {type(g) for g in groups}
        if types <= {str}:
            return groups.astype(str)
        if all(issubclass(t, (int, np.integer)) and not issubclass(t, (bool, np.bool_)) for t in types):
            return groups.astype(np.int64)
        raise ValueError(
            f"{name} must hold only integers or only strings; got a mix of {sorted(t.__name__ for t in types)}."
        )
    raise ValueError(f"{name} must hold integer or string query ids; got dtype {groups.dtype}.")


def _encode(groups):
    """Return ``(ids, codes)`` with ``ids[codes] == groups`` and ``ids`` sorted."""
    if groups.dtype.kind in "iu" and groups.size:
        low, high = groups.min(), groups.max()
        span = int(high) - int(low) + 1
        # Dense integer ids (the usual qid columns) are encoded in O(n) without a sort.
        if span <= 4 * groups.size + 1024:
            offset = groups - low
            present = np.bincount(offset, minlength=span) > 0
            code_of = np.cumsum(present) - 1
            ids = (np.flatnonzero(present) + low).astype(groups.dtype)
            return ids, code_of[offset]
    ids, codes = np.unique(groups, return_inverse=True)
    return ids, codes.reshape(-1)


def _compact(codes, n_queries):
    """Smallest unsigned dtype for the codes: NumPy radix-sorts 8- and 16-bit ints stably in O(n)."""
    for dtype in (np.uint8, np.uint16, np.uint32):
        if n_queries <= np.iinfo(dtype).max + 1:
            return codes.astype(dtype, copy=False)
    return codes


def order_within_groups(codes, key, *, stable=True):
    """Permutation sorting rows by query code, then by ``key`` descending.

    Parameters
    ----------
    codes : ndarray of shape (n_samples,)
        Query code of each row, as given by :attr:`QueryGroups.codes`.
    key : ndarray of shape (n_samples,)
        Sort key, larger first (scores or labels).
    stable : bool, default=True
        Keep input row order among equal keys. ``False`` allows a faster
        unstable sort when the caller does not care how ties are ordered.

    Returns
    -------
    order : ndarray of shape (n_samples,)
    """
    by_key = np.argsort(-key, kind="stable" if stable else "quicksort")
    return by_key[np.argsort(codes[by_key], kind="stable")]


class QueryGroups:
    """Index of the query groups of a set of rows.

    Parameters
    ----------
    groups : array-like of shape (n_samples,)
        One query id per row (integers or strings, any order).
    n_samples : int, default=None
        Expected number of rows; defaults to ``len(groups)``.
    against : str, default="X"
        Name of the array whose rows the ids describe, for error messages.

    Attributes
    ----------
    ids : ndarray of shape (n_queries,)
        Sorted unique query ids; query ``q`` has id ``ids[q]``.
    codes : ndarray of shape (n_samples,)
        Query number of each row, in input order (compact unsigned dtype).
    order : ndarray of shape (n_samples,)
        Stable permutation that sorts rows by query: ``X[order]`` holds each
        query's rows contiguously, queries in ``ids`` order, input order inside.
    sizes : ndarray of shape (n_queries,)
        Rows per query (LightGBM's ``group`` run lengths after sorting by ``order``).
    offsets : ndarray of shape (n_queries + 1,)
        ``offsets[q]:offsets[q + 1]`` is query ``q``'s slice of sorted rows.
    positions : ndarray of shape (n_samples,)
        Index of each row (input order) inside its query's sorted slice; together
        with ``codes`` it addresses the row's cell in :meth:`pad`'s output.

    Examples
    --------
    >>> from sklearn_ltr._groups import QueryGroups
    >>> qg = QueryGroups(["b", "a", "b", "a", "a"])
    >>> qg.ids.tolist(), qg.sizes.tolist(), qg.order.tolist()
    (['a', 'b'], [3, 2], [1, 3, 4, 0, 2])
    """

    def __init__(self, groups, n_samples=None, *, against="X"):
        if n_samples is None:
            n_samples = len(groups)
        groups = check_groups(groups, n_samples, against=against)
        if n_samples == 0:
            raise ValueError("groups is empty: there are no rows to rank.")
        self.ids, codes = _encode(groups)
        self.codes = _compact(codes, len(self.ids))
        self.sizes = np.bincount(self.codes, minlength=len(self.ids))
        self.offsets = np.concatenate(([0], np.cumsum(self.sizes)))

    # Metrics need only codes and sizes: the permutations are computed on first use.
    @cached_property
    def order(self):
        return np.argsort(self.codes, kind="stable")

    @cached_property
    def positions(self):
        positions = np.empty(self.n_samples, dtype=np.intp)
        positions[self.order] = np.arange(self.n_samples) - self.offsets[self.codes[self.order]]
        return positions

    @property
    def n_samples(self):
        return self.codes.shape[0]

    @property
    def n_queries(self):
        return self.ids.shape[0]

    @property
    def max_size(self):
        return int(self.sizes.max())

    def sort(self, *arrays):
        """Return each array's rows in query order (``array[self.order]``)."""
        sorted_arrays = tuple(None if a is None else a[self.order] for a in arrays)
        return sorted_arrays[0] if len(arrays) == 1 else sorted_arrays

    def unsort(self, values):
        """Put values given in query order (as from :meth:`sort`) back in input row order."""
        values = np.asarray(values)
        if values.shape[0] != self.n_samples:
            raise ValueError(f"expected {self.n_samples} values in query order, got {values.shape[0]}.")
        out = np.empty_like(values)
        out[self.order] = values
        return out

    def pad(self, values, *, fill_value=0):
        """Lay rows out as ``[n_queries, max_size, ...]`` with a boolean mask.

        Parameters
        ----------
        values : ndarray of shape (n_samples, ...)
            Per-row values in input order (features, labels, ...). Dense only.
        fill_value : scalar, default=0
            Value of the padding cells.

        Returns
        -------
        padded : ndarray of shape (n_queries, max_size, ...)
            Row ``i`` lands at ``padded[codes[i], positions[i]]``: queries in
            ``ids`` order, rows in input order inside each query.
        mask : ndarray of bool, shape (n_queries, max_size)
            ``True`` on real rows, ``False`` on padding.
        """
        values = np.asarray(values)
        if values.shape[0] != self.n_samples:
            raise ValueError(f"values has {values.shape[0]} rows but groups has {self.n_samples}.")
        shape = (self.n_queries, self.max_size, *values.shape[1:])
        padded = np.full(shape, fill_value, dtype=values.dtype)
        padded[self.codes, self.positions] = values
        mask = np.zeros(shape[:2], dtype=bool)
        mask[self.codes, self.positions] = True
        return padded, mask

    def unpad(self, padded):
        """Inverse of :meth:`pad`: one entry per row, in input row order."""
        return padded[self.codes, self.positions]

    def take(self, query_index):
        """Row indices (input order, ascending) of the queries numbered ``query_index``."""
        selected = np.zeros(self.n_queries, dtype=bool)
        selected[np.asarray(query_index)] = True
        return np.flatnonzero(selected[self.codes])


def as_query_groups(groups, n_samples, *, name="groups", against="y_true"):
    """The :class:`QueryGroups` of ``groups``: per-row ids, or a grouping built once and reused.

    Parameters
    ----------
    groups : array-like of shape (n_samples,), QueryGroups or object with a ``query_groups`` attribute
        Per-row query ids (validated and encoded now), or a prebuilt :class:`QueryGroups`
        (or an evaluator holding one), used as it is when it describes ``n_samples`` rows.
    n_samples : int
        Number of rows the grouping must describe.
    name : str, default="groups"
        Argument name used in error messages.
    against : str, default="y_true"
        Name of the array whose rows the ids describe, for error messages.

    Returns
    -------
    query_groups : QueryGroups
    """
    prebuilt = groups if isinstance(groups, QueryGroups) else getattr(groups, "query_groups", None)
    if not isinstance(prebuilt, QueryGroups):
        return QueryGroups(groups, n_samples, against=against)
    if prebuilt.n_samples != n_samples:
        raise ValueError(
            f"{name} is a grouping built for {prebuilt.n_samples} rows but {against} has {n_samples} rows; "
            f"build it from the query ids of these rows."
        )
    return prebuilt


def check_query_weights(sample_weight, query_groups):
    """Per-query weights (in query order) from per-row ``sample_weight``, constant within each query."""
    if hasattr(sample_weight, "to_numpy"):
        sample_weight = sample_weight.to_numpy()
    weights = np.asarray(sample_weight)
    if weights.ndim != 1 or weights.shape[0] != query_groups.n_samples:
        raise ValueError(
            f"sample_weight must be 1-D with one weight per row of X ({query_groups.n_samples}); "
            f"got shape {weights.shape}."
        )
    if weights.dtype.kind not in "biuf" or not np.isfinite(weights).all() or (weights < 0).any():
        raise ValueError("sample_weight must hold finite, non-negative numbers.")
    sorted_weights = weights.astype(np.float64)[query_groups.order]
    starts = query_groups.offsets[:-1]
    low = np.minimum.reduceat(sorted_weights, starts)
    high = np.maximum.reduceat(sorted_weights, starts)
    if (low != high).any():
        query = query_groups.ids[np.flatnonzero(low != high)[0]].item()  # a Python value for the message
        raise ValueError(
            f"sample_weight must be the same for every row of a query (ranking losses weight whole "
            f"queries); query {query!r} has weights from {low[low != high][0]:g} to {high[low != high][0]:g}."
        )
    if not (high > 0).any():
        raise ValueError("sample_weight: every query has a weight of zero; nothing to learn from.")
    return high

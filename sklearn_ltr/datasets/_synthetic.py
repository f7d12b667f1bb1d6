"""Synthetic ranking data shaped like web-search benchmarks (MSLR-WEB10K/30K)."""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.utils import check_random_state

__all__ = ["make_ranking"]

_MSLR_LABELS = (0.51, 0.33, 0.13, 0.02, 0.01)
_DEFAULTS = {
    "n_queries": 100,
    "n_features": 20,
    "mean_list_length": 30.0,
    "list_length_sigma": 0.75,
    "max_list_length": 300,
    "n_informative": 10,
    "label_proportions": _MSLR_LABELS,
    "noise": 1.0,
}
_MSLR = {
    "n_queries": 2000,
    "n_features": 136,
    "mean_list_length": 120.0,
    "list_length_sigma": 0.75,
    "max_list_length": 1250,
    "n_informative": 40,
    "label_proportions": _MSLR_LABELS,
    "noise": 1.0,
}
PRESETS = {"mslr": _MSLR, "mslr-web30k": {**_MSLR, "n_queries": 18919}}

_BLOCK = 1 << 16  # rows generated at a time: bounded memory, and the same draws whatever the size


def _generator(random_state):
    """A NumPy ``Generator`` from an int, None (global RandomState), RandomState or Generator."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    seed = check_random_state(random_state).randint(np.iinfo(np.int32).max)
    return np.random.default_rng(seed)


def _check_int(value, name, low):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}; got {value!r}.")
    return int(value)


def _check_real(value, name, low, *, strict=False):
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and np.isfinite(value)
    if not ok or value < low or (strict and value == low):
        raise ValueError(f"{name} must be a finite number {'>' if strict else '>='} {low}; got {value!r}.")
    return float(value)


def _check_proportions(proportions):
    p = np.asarray(proportions, dtype=np.float64) if np.ndim(proportions) == 1 else None
    if p is None or p.size < 2 or not np.isfinite(p).all() or (p < 0).any() or abs(p.sum() - 1) > 1e-3:
        raise ValueError(
            "label_proportions must be a 1-D sequence of at least 2 non-negative numbers summing to 1 "
            f"(the share of labels 0, 1, 2, ...); got {proportions!r}."
        )
    return p / p.sum()


def _resolve(preset, explicit):
    if preset is None:
        base = _DEFAULTS
    elif preset in PRESETS:
        base = PRESETS[preset]
    else:
        raise ValueError(f"unknown preset {preset!r}; choose None or one of {sorted(PRESETS)}.")
    params = {k: base[k] if v is None else v for k, v in explicit.items()}
    if explicit["n_informative"] is None:  # a default never exceeds the number of features
        params["n_informative"] = min(base["n_informative"], params["n_features"])
    return params


def _transform(h, kind, a, b):
    """Monotone heavy-tailed views of the Gaussian latent ``h`` (columns share a kind)."""
    if kind == 0:  # count-like (term frequencies): many zeros, long right tail
        return np.maximum(np.floor(np.expm1(a * h + b)), 0)
    if kind == 1:  # lognormal (link counts, PageRank-like): strictly positive, heavy tail
        return np.exp(a * h) * 10**b
    if kind == 2:  # bounded in (0, 1) (normalised scores)
        return 1 / (1 + np.exp(-a * h))
    return a * h * 10**b  # light-tailed, signed


def make_ranking(
    n_queries=None,
    n_features=None,
    *,
    preset=None,
    mean_list_length=None,
    list_length_sigma=None,
    max_list_length=None,
    n_informative=None,
    label_proportions=None,
    noise=None,
    shuffle=False,
    dtype=np.float32,
    random_state=None,
):
    """Generate synthetic learning-to-rank data shaped like web-search benchmarks.

    Each query gets a lognormal number of documents,
    ``clip(rint(lognormal(mean=ln(mean_list_length) - sigma**2 / 2, sigma)), 1, max_list_length)``
    (so the mean length is about ``mean_list_length``). Documents have Gaussian latent
    relevance factors; ``n_informative`` features are noisy views of them, the rest are
    noise, and every feature gets a per-query offset (queries differ in scale, as
    BM25 or link counts do). Each column is then a monotone heavy-tailed transform of its
    latent value: count-like, lognormal, bounded in (0, 1), or plain, so that a ``log1p``
    transform helps. Columns are in random order.

    The latent relevance of a document is a linear function of its factors, plus products
    of pairs of factors (interactions), plus a list-context term (its percentile rank
    within its query on one informative feature, which a model that sees only the row
    cannot compute from the raw, query-offset value), plus a per-query offset, plus Gaussian
    noise of standard deviation ``noise`` (the signal is scaled to about unit variance).
    Labels ``0 .. len(label_proportions) - 1`` come from thresholding it at its quantiles,
    so the label shares match ``label_proportions``. Everything is vectorised (no loop
    over queries): millions of rows take seconds.

    Parameters
    ----------
    n_queries : int, default=None
        Number of queries; None means 100, or the preset's (2,000 for "mslr").
    n_features : int, default=None
        Number of features; None means 20, or the preset's (136 for "mslr").
    preset : {None, "mslr", "mslr-web30k"}, default=None
        "mslr" is the MSLR-shaped benchmark of the design notes: 2,000 queries,
        136 features, list lengths with mean 120, sigma 0.75, max 1,250, 40 informative
        features, label proportions 0.51 / 0.33 / 0.13 / 0.02 / 0.01. "mslr-web30k" is the
        same with 18,919 queries (Web30K's training size). Arguments given explicitly
        (not None) override the preset's values.
    mean_list_length : float, default=None
        Mean documents per query before clipping; None means 30 (120 for the presets).
    list_length_sigma : float, default=None
        Sigma of the lognormal list lengths; None means 0.75. 0 gives equal lengths.
    max_list_length : int, default=None
        Longest list; None means 300 (1,250 for the presets).
    n_informative : int, default=None
        Features that carry signal; None means ``min(10, n_features)`` (40 for the presets).
    label_proportions : sequence of float, default=None
        Share of each grade 0, 1, 2, ...; None means 0.51 / 0.33 / 0.13 / 0.02 / 0.01.
    noise : float, default=None
        Standard deviation of the label noise relative to the (about unit-variance) signal;
        None means 1.0. 0 makes the labels a deterministic function of the features.
    shuffle : bool, default=False
        Shuffle the rows so queries interleave; otherwise each query's rows are
        contiguous and ``groups`` is sorted.
    dtype : floating dtype, default=np.float32
        Dtype of ``X``.
    random_state : int, RandomState or Generator, default=None
        Seed; the same seed gives identical arrays.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
        Features.
    y : ndarray of shape (n_samples,), int64
        Graded relevance labels.
    groups : ndarray of shape (n_samples,), int64
        Query id of each row, ``0 .. n_queries - 1``.

    References
    ----------
    T. Qin and T.-Y. Liu, "Introducing LETOR 4.0 Datasets", arXiv:1306.2597, 2013
    (MSLR-WEB10K/30K's shape and label distribution).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ltr.datasets import make_ranking
    >>> X, y, groups = make_ranking(n_queries=50, n_features=8, random_state=0)
    >>> X.shape[1], X.dtype, len(np.unique(groups))
    (8, dtype('float32'), 50)
    >>> sorted(np.unique(y).tolist())
    [0, 1, 2, 3, 4]

    The same seed gives the same arrays; ``list_length_sigma=0`` gives equal lengths:

    >>> X_again, _, _ = make_ranking(n_queries=50, n_features=8, random_state=0)
    >>> bool(np.array_equal(X, X_again))
    True
    >>> _, _, groups = make_ranking(n_queries=3, mean_list_length=5, list_length_sigma=0, random_state=0)
    >>> groups.tolist()
    [0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2]

    The MSLR-shaped preset, with fewer queries than its 2,000:

    >>> X, y, groups = make_ranking(n_queries=20, preset="mslr", random_state=0)
    >>> X.shape[1], len(np.unique(groups)), bool(np.bincount(groups).max() <= 1250)
    (136, 20, True)
    """
    p = _resolve(preset, {
        "n_queries": n_queries, "n_features": n_features, "mean_list_length": mean_list_length,
        "list_length_sigma": list_length_sigma, "max_list_length": max_list_length,
        "n_informative": n_informative, "label_proportions": label_proportions, "noise": noise,
    })  # fmt: skip
    n_queries = _check_int(p["n_queries"], "n_queries", 1)
    n_features = _check_int(p["n_features"], "n_features", 1)
    n_informative = _check_int(p["n_informative"], "n_informative", 1)
    if n_informative > n_features:
        raise ValueError(f"n_informative={n_informative} exceeds n_features={n_features}.")
    mean_len = _check_real(p["mean_list_length"], "mean_list_length", 0, strict=True)
    sigma = _check_real(p["list_length_sigma"], "list_length_sigma", 0)
    max_len = _check_int(p["max_list_length"], "max_list_length", 1)
    proportions = _check_proportions(p["label_proportions"])
    noise = _check_real(p["noise"], "noise", 0)
    dtype = np.dtype(dtype)
    if dtype.kind != "f":
        raise ValueError(f"dtype must be a floating dtype; got {dtype}.")
    rng = _generator(random_state)

    lengths = np.clip(np.rint(rng.lognormal(np.log(mean_len) - sigma**2 / 2, sigma, n_queries)), 1, max_len)
    lengths = lengths.astype(np.int64)
    codes = np.repeat(np.arange(n_queries, dtype=np.int64), lengths)
    n = codes.size

    # Design, in a canonical column order: informative columns first (column 0 drives the list
    # context), each part grouped by transform kind so that every step works on contiguous slices;
    # the columns are put in random order only when written to X.
    n_factors = max(1, (n_informative + 1) // 2)
    factor_of = np.arange(n_informative) % n_factors
    loading = rng.uniform(0.7, 0.95, n_informative).astype(np.float32)
    kind_p = [0.45, 0.25, 0.2, 0.1]
    kinds = np.concatenate([np.sort(rng.choice(4, n_informative, p=kind_p)),
                            np.sort(rng.choice(4, n_features - n_informative, p=kind_p))])  # fmt: skip
    kinds[0] = 1  # the context column: lognormal, so its query offset rescales it
    cuts = np.flatnonzero(np.diff(kinds)) + 1
    segments = [(a, b, kinds[a]) for a, b in zip(np.r_[0, cuts], np.r_[cuts, n_features], strict=True)]
    scale_a = rng.uniform(0.6, 1.4, n_features).astype(np.float32)
    shift_b = rng.uniform(0.0, 2.5, n_features).astype(np.float32)
    offset_sd = np.full(n_features, 0.7, dtype=np.float32)
    offset_sd[0] = 2.0
    query_offset = rng.standard_normal((n_queries, n_features), dtype=np.float32) * offset_sd
    weights = rng.uniform(0.5, 1.5, n_factors)
    n_pairs = max(1, n_factors // 2)
    pair_a, pair_b = rng.integers(0, n_factors, n_pairs), rng.integers(0, n_factors, n_pairs)
    pair_w = rng.choice([-1.0, 1.0], n_pairs) * rng.uniform(0.5, 1.0, n_pairs)
    lin_sd = np.sqrt(np.sum(weights**2))
    inter_sd = np.sqrt(np.sum(pair_w**2) + np.sum(pair_w[pair_a == pair_b] ** 2))
    to_column = np.argsort(rng.permutation(n_features))  # X[:, j] is canonical column to_column[j]
    noise_part = np.sqrt(1 - loading**2)

    X = np.empty((n, n_features), dtype=dtype)
    signal = np.empty(n, dtype=np.float64)
    context_value = np.empty(n, dtype=np.float32)
    for start in range(0, n, _BLOCK):
        rows = slice(start, min(start + _BLOCK, n))
        code = codes[rows]
        factors = rng.standard_normal((code.size, n_factors), dtype=np.float32)
        h = rng.standard_normal((code.size, n_features), dtype=np.float32)
        h[:, :n_informative] *= noise_part
        h[:, :n_informative] += loading * factors[:, factor_of]
        h += query_offset[code]
        context_value[rows] = h[:, 0]
        products = factors[:, pair_a] * factors[:, pair_b] - (pair_a == pair_b)
        signal[rows] = factors @ weights / lin_sd + 0.6 * (products @ pair_w) / inter_sd
        for a, b, kind in segments:
            h[:, a:b] = _transform(h[:, a:b], kind, scale_a[a:b], shift_b[a:b])
        X[rows] = h[:, to_column]

    # List context: the context feature standardised within its query (mean and spread of the
    # query's own documents), through a saturating function: exact for a list-aware model, while
    # the raw column mixes it with the query's offset (a scale factor once exponentiated).
    sizes = lengths.astype(np.float64)
    value = context_value.astype(np.float64)  # latent of a lognormal column: log of the feature, affinely
    mean = np.bincount(codes, value, n_queries) / sizes
    centred = value - mean[codes]
    spread = np.sqrt(np.bincount(codes, centred**2, n_queries) / sizes) + 0.25
    context = np.tanh(1.5 * centred / spread[codes])
    signal += 0.6 * context / max(context.std(), 1e-12)
    signal /= np.sqrt(1 + 0.36 + 0.36)
    latent = signal + rng.normal(0, 0.5, n_queries)[codes] + noise * rng.standard_normal(n)
    thresholds = np.quantile(latent, np.cumsum(proportions)[:-1])
    y = np.searchsorted(thresholds, latent, side="right").astype(np.int64)

    if shuffle:
        perm = rng.permutation(n)
        return X[perm], y[perm], codes[perm]
    return X, y, codes

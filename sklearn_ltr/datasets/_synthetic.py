"""Synthetic ranking data shaped like web-search benchmarks (MSLR-WEB10K/30K).

:func:`make_ranking` runs in named steps, each drawing from one NumPy ``Generator`` in a
fixed order (so a seed gives the same arrays): list lengths, the feature design, the
relevance design, the column order, the rows in blocks (features and the row-wise part
of the relevance), the list context, and the labels.
"""

from __future__ import annotations

import numbers
from typing import NamedTuple

import numpy as np
from sklearn.utils import check_random_state

from sklearn_ltr._params import check_int

__all__ = ["make_ranking"]

#: Share of each grade 0 .. 4 in MSLR-WEB10K/30K (Qin and Liu, 2013).
_MSLR_LABELS = (0.51, 0.33, 0.13, 0.02, 0.01)
#: Values of the arguments left None without a preset: small and quick.
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
#: The MSLR-shaped benchmark of the design notes (Web10K's 136 features, its list lengths and labels).
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
#: Presets by name; "mslr-web30k" has Web30K's number of training queries.
PRESETS = {"mslr": _MSLR, "mslr-web30k": {**_MSLR, "n_queries": 18919}}

_BLOCK = 1 << 16  # rows generated at a time: bounded memory, and the same draws whatever the size

# Features.
#: Informative columns per latent factor (noisy views of the same factor).
_COLUMNS_PER_FACTOR = 2
#: Canonical column whose within-query rank is the list context (informative, lognormal).
_CONTEXT_COLUMN = 0
#: Kinds of column transform (:func:`_transform`): count-like, lognormal, bounded in (0, 1), plain.
_COUNT, _LOGNORMAL, _BOUNDED, _PLAIN = range(4)
#: Probability of each kind for a column (count-like most often, like LETOR's term-frequency features).
_KIND_SHARES = [0.45, 0.25, 0.2, 0.1]
#: Range of an informative column's loading: its latent is ``loading * factor + sqrt(1 - loading**2) * noise``.
_LOADING_RANGE = (0.7, 0.95)
#: Ranges of each column's transform scale ``a`` and shift ``b`` (:func:`_transform`).
_SCALE_RANGE = (0.6, 1.4)
_SHIFT_RANGE = (0.0, 2.5)
#: Standard deviation of each feature's per-query offset (queries differ in scale, as BM25 does).
_QUERY_OFFSET_SD = 0.7
#: The same for the context column: large, so its raw value says little across queries.
_CONTEXT_OFFSET_SD = 2.0

# Relevance.
#: Range of the weight of each factor in the linear part of the relevance.
_FACTOR_WEIGHT_RANGE = (0.5, 1.5)
#: Factors per interaction (product of two factors) in the relevance.
_FACTORS_PER_INTERACTION = 2
#: Range of the magnitude of each interaction's weight (its sign is drawn too).
_PAIR_WEIGHT_RANGE = (0.5, 1.0)
#: Weights of the (unit-variance) interaction and list-context terms; the linear term has weight 1.
_INTERACTION_WEIGHT = 0.6
_CONTEXT_WEIGHT = 0.6
#: Added to a query's spread of the context latent: short or uniform lists do not blow it up.
_CONTEXT_SPREAD_FLOOR = 0.25
#: Slope of the ``tanh`` that saturates the standardised context value.
_CONTEXT_SLOPE = 1.5
#: Floor of the standard deviation the context term is divided by (a constant context stays 0).
_MIN_CONTEXT_SD = 1e-12
#: Standard deviation of the per-query offset of the latent relevance (queries differ in easiness).
_QUERY_RELEVANCE_SD = 0.5


class _FeatureDesign(NamedTuple):
    """How the latent of each column is made and transformed, in canonical column order.

    Informative columns come first (:data:`_CONTEXT_COLUMN` drives the list context), each part grouped by
    transform kind so that every step works on contiguous slices.
    """

    n_factors: int
    factor_of: np.ndarray  # factor of each informative column
    loading: np.ndarray  # its loading on that factor
    segments: list  # (start, stop, kind) of the runs of columns of one transform kind
    scale: np.ndarray  # transform scale ``a`` of each column
    shift: np.ndarray  # transform shift ``b`` of each column
    query_offset: np.ndarray  # (n_queries, n_features) offset of each query's latents

    @property
    def noise_part(self):
        """Coefficient of an informative column's own noise, ``sqrt(1 - loading**2)``: unit-variance latents."""
        return np.sqrt(1 - self.loading**2)


class _RelevanceDesign(NamedTuple):
    """The row-wise part of the latent relevance: linear in the factors plus pairwise products."""

    weights: np.ndarray  # linear weight of each factor
    pair_a: np.ndarray  # first factor of each interaction
    pair_b: np.ndarray  # second factor (may equal the first: a square)
    pair_w: np.ndarray  # weight of each interaction

    def row_signal(self, factors):
        """Linear plus interaction terms of rows of ``factors``, each term scaled to unit variance."""
        lin_sd = np.sqrt(np.sum(self.weights**2))
        same = self.pair_a == self.pair_b
        inter_sd = np.sqrt(np.sum(self.pair_w**2) + np.sum(self.pair_w[same] ** 2))
        products = factors[:, self.pair_a] * factors[:, self.pair_b] - same  # a square centred: x**2 - 1
        return factors @ self.weights / lin_sd + _INTERACTION_WEIGHT * (products @ self.pair_w) / inter_sd


def _generator(random_state):
    """A NumPy ``Generator`` from an int, None (global RandomState), RandomState or Generator."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    seed = check_random_state(random_state).randint(np.iinfo(np.int32).max)
    return np.random.default_rng(seed)


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
    if kind == _COUNT:  # count-like (term frequencies): many zeros, long right tail
        return np.maximum(np.floor(np.expm1(a * h + b)), 0)
    if kind == _LOGNORMAL:  # lognormal (link counts, PageRank-like): strictly positive, heavy tail
        return np.exp(a * h) * 10**b
    if kind == _BOUNDED:  # bounded in (0, 1) (normalised scores)
        return 1 / (1 + np.exp(-a * h))
    return a * h * 10**b  # light-tailed, signed


def _check_params(preset, explicit, dtype):
    """The preset's values overridden by the ``explicit`` ones that are not None, checked."""
    p = _resolve(preset, explicit)
    params = {
        "n_queries": check_int(p["n_queries"], "n_queries", 1),
        "n_features": check_int(p["n_features"], "n_features", 1),
        "n_informative": check_int(p["n_informative"], "n_informative", 1),
    }
    if params["n_informative"] > params["n_features"]:
        raise ValueError(f"n_informative={params['n_informative']} exceeds n_features={params['n_features']}.")
    params["mean_list_length"] = _check_real(p["mean_list_length"], "mean_list_length", 0, strict=True)
    params["list_length_sigma"] = _check_real(p["list_length_sigma"], "list_length_sigma", 0)
    params["max_list_length"] = check_int(p["max_list_length"], "max_list_length", 1)
    params["label_proportions"] = _check_proportions(p["label_proportions"])
    params["noise"] = _check_real(p["noise"], "noise", 0)
    dtype = np.dtype(dtype)
    if dtype.kind != "f":
        raise ValueError(f"dtype must be a floating dtype; got {dtype}.")
    return params, dtype


def _list_lengths(rng, n_queries, mean_length, sigma, max_length):
    """Lognormal documents per query with mean about ``mean_length``, clipped to ``1 .. max_length``."""
    lengths = np.clip(np.rint(rng.lognormal(np.log(mean_length) - sigma**2 / 2, sigma, n_queries)), 1, max_length)
    return lengths.astype(np.int64)


def _feature_design(rng, n_queries, n_features, n_informative):
    """Draw the :class:`_FeatureDesign`: factors of the informative columns, kinds, transforms, offsets."""
    n_factors = max(1, (n_informative + _COLUMNS_PER_FACTOR - 1) // _COLUMNS_PER_FACTOR)
    factor_of = np.arange(n_informative) % n_factors
    loading = rng.uniform(*_LOADING_RANGE, n_informative).astype(np.float32)
    n_kinds = len(_KIND_SHARES)
    kinds = np.concatenate([np.sort(rng.choice(n_kinds, n_informative, p=_KIND_SHARES)),
                            np.sort(rng.choice(n_kinds, n_features - n_informative, p=_KIND_SHARES))])  # fmt: skip
    kinds[_CONTEXT_COLUMN] = _LOGNORMAL  # so that its query offset rescales it
    cuts = np.flatnonzero(np.diff(kinds)) + 1
    segments = [(a, b, kinds[a]) for a, b in zip(np.r_[0, cuts], np.r_[cuts, n_features], strict=True)]
    scale = rng.uniform(*_SCALE_RANGE, n_features).astype(np.float32)
    shift = rng.uniform(*_SHIFT_RANGE, n_features).astype(np.float32)
    offset_sd = np.full(n_features, _QUERY_OFFSET_SD, dtype=np.float32)
    offset_sd[_CONTEXT_COLUMN] = _CONTEXT_OFFSET_SD
    query_offset = rng.standard_normal((n_queries, n_features), dtype=np.float32) * offset_sd
    return _FeatureDesign(n_factors, factor_of, loading, segments, scale, shift, query_offset)


def _relevance_design(rng, n_factors):
    """Draw the :class:`_RelevanceDesign`: a weight per factor, one interaction per two factors (at least 1)."""
    weights = rng.uniform(*_FACTOR_WEIGHT_RANGE, n_factors)
    n_pairs = max(1, n_factors // _FACTORS_PER_INTERACTION)
    pair_a, pair_b = rng.integers(0, n_factors, n_pairs), rng.integers(0, n_factors, n_pairs)
    pair_w = rng.choice([-1.0, 1.0], n_pairs) * rng.uniform(*_PAIR_WEIGHT_RANGE, n_pairs)
    return _RelevanceDesign(weights, pair_a, pair_b, pair_w)


def _rows(rng, codes, design, relevance, to_column, dtype):
    """Features, row-wise relevance signal and latent of the context column of every row, block by block.

    The canonical columns are put in random order (``X[:, j]`` is canonical column
    ``to_column[j]``) only when written to ``X``.
    """
    n, n_features = codes.size, design.scale.size
    n_informative = design.loading.size
    noise_part = design.noise_part
    X = np.empty((n, n_features), dtype=dtype)
    signal = np.empty(n, dtype=np.float64)
    context_value = np.empty(n, dtype=np.float32)
    for start in range(0, n, _BLOCK):
        rows = slice(start, min(start + _BLOCK, n))
        code = codes[rows]
        factors = rng.standard_normal((code.size, design.n_factors), dtype=np.float32)
        h = rng.standard_normal((code.size, n_features), dtype=np.float32)
        h[:, :n_informative] *= noise_part
        h[:, :n_informative] += design.loading * factors[:, design.factor_of]
        h += design.query_offset[code]
        context_value[rows] = h[:, _CONTEXT_COLUMN]
        signal[rows] = relevance.row_signal(factors)
        for a, b, kind in design.segments:
            h[:, a:b] = _transform(h[:, a:b], kind, design.scale[a:b], design.shift[a:b])
        X[rows] = h[:, to_column]
    return X, signal, context_value


def _list_context(codes, lengths, context_value):
    """The context latent standardised within its query, through a saturating function.

    Uses the mean and spread of the query's own documents: exact for a list-aware model,
    while the raw column mixes it with the query's offset (a scale factor once exponentiated).
    """
    n_queries = lengths.size
    sizes = lengths.astype(np.float64)
    value = context_value.astype(np.float64)  # latent of a lognormal column: log of the feature, affinely
    mean = np.bincount(codes, value, n_queries) / sizes
    centred = value - mean[codes]
    spread = np.sqrt(np.bincount(codes, centred**2, n_queries) / sizes) + _CONTEXT_SPREAD_FLOOR
    return np.tanh(_CONTEXT_SLOPE * centred / spread[codes])


def _labels(rng, signal, codes, n_queries, noise, proportions):
    """Grades from the latent relevance (signal, query offset, noise) cut at its quantiles."""
    latent = signal + rng.normal(0, _QUERY_RELEVANCE_SD, n_queries)[codes] + noise * rng.standard_normal(codes.size)
    thresholds = np.quantile(latent, np.cumsum(proportions)[:-1])
    return np.searchsorted(thresholds, latent, side="right").astype(np.int64)


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
    p, dtype = _check_params(preset, {
        "n_queries": n_queries, "n_features": n_features, "mean_list_length": mean_list_length,
        "list_length_sigma": list_length_sigma, "max_list_length": max_list_length,
        "n_informative": n_informative, "label_proportions": label_proportions, "noise": noise,
    }, dtype)  # fmt: skip
    n_queries, n_features = p["n_queries"], p["n_features"]
    rng = _generator(random_state)
    lengths = _list_lengths(rng, n_queries, p["mean_list_length"], p["list_length_sigma"], p["max_list_length"])
    codes = np.repeat(np.arange(n_queries, dtype=np.int64), lengths)
    design = _feature_design(rng, n_queries, n_features, p["n_informative"])
    relevance = _relevance_design(rng, design.n_factors)
    to_column = np.argsort(rng.permutation(n_features))  # X[:, j] is canonical column to_column[j]
    X, signal, context_value = _rows(rng, codes, design, relevance, to_column, dtype)
    context = _list_context(codes, lengths, context_value)
    signal += _CONTEXT_WEIGHT * context / max(context.std(), _MIN_CONTEXT_SD)  # the context term at unit variance
    signal /= np.sqrt(1 + _INTERACTION_WEIGHT**2 + _CONTEXT_WEIGHT**2)  # back to about unit variance
    y = _labels(rng, signal, codes, n_queries, p["noise"], p["label_proportions"])
    if shuffle:
        perm = rng.permutation(codes.size)
        return X[perm], y[perm], codes[perm]
    return X, y, codes

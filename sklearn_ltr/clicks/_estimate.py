r"""What both propensity estimators share: the click log's validation, the result object, the bootstrap.

A click log is one row per shown document: its click (0/1), its 1-based display position and its
query. Positions are bucketed into ``1 .. max_position``: every position at or beyond
``max_position`` falls into the last bucket. The confidence band is a percentile bootstrap over
queries: a replicate draws as many queries as the log holds, with replacement, and weights each
row by how often its query was drawn, so that the sessions of a query stay together.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field

import numpy as np

from sklearn_ltr._groups import check_groups
from sklearn_ltr._params import check_int
from sklearn_ltr.clicks._checks import check_clicks, check_positions, position_counts

__all__ = ["PropensityEstimate"]


@dataclass(frozen=True, repr=False)
class PropensityEstimate:
    r"""Examination propensity per display position, estimated from a click log.

    ``propensity[k - 1]`` is :math:`\theta_k / \theta_1`: the probability that a user examines
    the result at position :math:`k`, relative to position 1 (so ``propensity[0] == 1``). These are
    propensities, not weights: the inverse-propensity weight of a click at position :math:`k` is
    ``1 / propensity[k - 1]`` (clipped: :func:`~sklearn_ltr.clicks.inverse_propensity_weights`).

    Attributes
    ----------
    method : str
        ``"regression_em"`` or ``"intervention_harvesting"``.
    positions : ndarray of int64 of shape (max_position,)
        ``1 .. max_position``; the last one stands for every position at or beyond it.
    propensity : ndarray of float64 of shape (max_position,)
        Estimated relative examination propensity of each position; ``propensity[0] == 1``.
    lower, upper : ndarray of float64 of shape (max_position,) or None
        Percentile bootstrap band at level ``confidence`` (over queries); None when
        ``n_bootstrap=0``.
    confidence : float
        Level of the band (e.g. 0.95: the 2.5th and 97.5th percentiles of the replicates).
    n_shown, n_clicks : ndarray of float64 of shape (max_position,)
        Rows shown and clicks at each position (weighted by ``sample_weight`` when given).
    n_iter : int
        Iterations run (EM); 1 for the closed-form harvesting estimate.
    converged : bool
        Whether the EM met its tolerance within ``n_iter`` iterations (always True for harvesting).
    bootstrap : ndarray of float64 of shape (n_bootstrap, max_position)
        The replicates behind the band (a row of NaN for a replicate the estimator could not fit:
        see ``n_bootstrap_failed``).
    n_bootstrap_failed : int
        Replicates left out of the band because their resampled log could not be estimated
        (e.g. a position without clicks).
    details : dict
        Method-specific diagnostics: the EM's log-likelihood per iteration, the harvesting's
        number of documents shown at each pair of positions, ...

    See Also
    --------
    estimate_propensity_em, estimate_propensity_harvesting : The estimators that return it.

    Examples
    --------
    >>> from sklearn_ltr.clicks import estimate_propensity_harvesting
    >>> clicks = [1, 1, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0]
    >>> positions = [1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3]
    >>> estimate = estimate_propensity_harvesting(clicks, positions, [0] * 12, [5] * 12, max_position=3,
    ...                                           n_bootstrap=0)
    >>> estimate.positions, estimate.propensity
    (array([1, 2, 3]), array([1. , 0.5, 0.5]))
    >>> estimate.n_shown, estimate.n_clicks
    (array([4., 4., 4.]), array([2., 1., 1.]))

    Per-row propensities for training (positions at or beyond ``max_position`` share its value):

    >>> estimate.propensity_of([3, 1, 7])
    array([0.5, 1. , 0.5])
    """

    method: str
    positions: np.ndarray
    propensity: np.ndarray
    lower: np.ndarray | None
    upper: np.ndarray | None
    confidence: float
    n_shown: np.ndarray
    n_clicks: np.ndarray
    n_iter: int
    converged: bool
    bootstrap: np.ndarray
    n_bootstrap_failed: int = 0
    details: dict = field(default_factory=dict)

    @property
    def max_position(self):
        """The last position bucket (every position at or beyond it shares its value)."""
        return int(self.positions[-1])

    def propensity_of(self, positions):
        r"""Examination propensity of each row from its display position: what IPS training takes.

        Positions at or beyond :attr:`max_position` get the last estimated value. The values are
        clipped to at most 1 (an estimate above position 1's, which only noise produces under a
        position-based model, would otherwise give a weight below 1). They are propensities,
        not inverse-propensity weights: pass them as ``propensity=`` to a fit, which inverts and
        clips them (:func:`~sklearn_ltr.clicks.inverse_propensity_weights`).

        Parameters
        ----------
        positions : array-like of int of shape (n_samples,)
            1-based display position of each row.

        Returns
        -------
        propensity : ndarray of float64 of shape (n_samples,)
            Values in (0, 1].
        """
        bucket = bucket_positions(check_positions(positions), self.max_position)
        return np.minimum(self.propensity[bucket - 1], 1.0)

    def __repr__(self):
        band = "" if self.lower is None else f", {self.confidence:.0%} band"
        values = ", ".join(f"{v:.3g}" for v in self.propensity[:5])
        more = ", ..." if len(self.propensity) > 5 else ""
        return (f"PropensityEstimate(method={self.method!r}, positions 1..{self.max_position}: "
                f"[{values}{more}]{band}, n_iter={self.n_iter}, converged={self.converged})")


# ------------------------------------------------------------------------------ validation


def _as_1d(values, name, n_samples):
    if hasattr(values, "to_numpy"):
        values = values.to_numpy()
    values = np.asarray(values)
    if values.ndim != 1:
        raise ValueError(f"{name} must be 1-D, one value per row of the click log; got shape {values.shape}.")
    if n_samples is not None and values.shape[0] != n_samples:
        raise ValueError(f"{name} has {values.shape[0]} entries but clicks has {n_samples}; pass one value per "
                         f"row of the click log (one shown document per row).")
    return values


def check_sample_weight(sample_weight, n_samples):
    """Non-negative finite row weights (ones when None)."""
    if sample_weight is None:
        return np.ones(n_samples)
    values = _as_1d(sample_weight, "sample_weight", n_samples)
    if values.dtype.kind not in "biuf":
        raise ValueError(f"sample_weight must hold numbers; got dtype {values.dtype}.")
    values = values.astype(np.float64)
    if not np.isfinite(values).all() or (values < 0).any():
        raise ValueError("sample_weight must hold finite weights >= 0 (e.g. 1 / keep for the non-clicked rows "
                         "kept by a down-sampling with probability keep).")
    return values


def check_confidence(confidence):
    if isinstance(confidence, bool) or not isinstance(confidence, numbers.Real) or not 0 < confidence < 1:
        raise ValueError(f"confidence must be a number in (0, 1), the level of the bootstrap band; got "
                         f"{confidence!r}.")
    return float(confidence)


def bucket_positions(positions, max_position):
    """Positions clipped to ``1 .. max_position``: the last bucket holds every position at or beyond it."""
    return np.minimum(positions, max_position)


def check_log(clicks, positions, groups, *, max_position, sample_weight=None):
    """The validated click log: ``(clicks, buckets, query codes, n_queries, weights)``.

    Also refuses a log whose positions ``1 .. max_position`` are not all shown and clicked: their
    propensity (relative to position 1) cannot be estimated.
    """
    clicks = check_clicks(clicks)
    n = clicks.shape[0]
    positions = check_positions(positions, n, against="clicks")
    groups = check_groups(groups, n, against="clicks")
    max_position = check_int(max_position, "max_position", 1)
    weights = check_sample_weight(sample_weight, n)
    buckets = bucket_positions(positions, max_position)
    shown, clicked = position_counts(buckets, clicks, weights, max_position=max_position)
    missing = np.flatnonzero(clicked == 0) + 1
    if missing.size:
        what = "never shown" if (shown[missing - 1] == 0).all() else "shown but never clicked"
        last = int(missing[0]) - 1
        fix = (f"lower max_position to {last} (positions beyond it then share one value)" if last >= 1 else
               "the log needs clicks at position 1, the reference of relative propensities")
        raise ValueError(f"positions {_listing(missing)} of 1..{max_position} were {what} in the log (or have "
                         f"zero weight): their examination propensity cannot be estimated from it. Collect more "
                         f"sessions, or {fix}.")
    codes, n_queries = _query_codes(groups)
    return clicks, buckets, codes, n_queries, weights


def _listing(values, limit=8):
    shown = ", ".join(str(int(v)) for v in values[:limit])
    return shown + (", ..." if len(values) > limit else "")


def _query_codes(groups):
    ids, codes = np.unique(groups, return_inverse=True)
    return codes.reshape(-1), len(ids)


# ------------------------------------------------------------------------------- bootstrap


def bootstrap_weights(codes, n_queries, rng):
    """Row weights of one bootstrap replicate: how often each row's query was drawn (with replacement)."""
    counts = rng.multinomial(n_queries, np.full(n_queries, 1.0 / n_queries))
    return counts[codes].astype(np.float64)


def percentile_band(replicates, confidence):
    """``(lower, upper, n_failed)``: percentiles of the replicates that could be fitted (rows without NaN)."""
    ok = np.isfinite(replicates).all(axis=1)
    if not ok.any():
        return None, None, int(replicates.shape[0])
    alpha = (1 - confidence) / 2
    lower, upper = np.quantile(replicates[ok], [alpha, 1 - alpha], axis=0)
    return lower, upper, int((~ok).sum())


def run_bootstrap(fit, codes, n_queries, weights, *, n_bootstrap, rng, max_position):
    """The replicates of ``fit(row_weights) -> propensity`` (NaN where a replicate's log cannot be fitted)."""
    replicates = np.full((n_bootstrap, max_position), np.nan)
    for b in range(n_bootstrap):
        try:
            replicates[b] = fit(weights * bootstrap_weights(codes, n_queries, rng))
        except ReplicateError:
            continue
    return replicates


class ReplicateError(ValueError):
    """A bootstrap replicate whose resampled log cannot be estimated (e.g. a position lost its clicks)."""

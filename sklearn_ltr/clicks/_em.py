r"""Regression EM for the position-based click model (Wang et al., WSDM 2018).

The position-based model says that a document with features :math:`x` shown at position
:math:`k` is clicked when it is examined (probability :math:`\theta_k`, the position's
propensity) and relevant (probability :math:`\gamma(x)`), independently:
:math:`P(C = 1 \mid x, k) = \theta_k \, \gamma(x)`. Regression EM alternates

- E-step: the posteriors of the hidden examination :math:`E` and relevance :math:`R` of each
  row; a click means :math:`E = R = 1`, and a non-click gives

  .. math::

      P(E = 1 \mid C = 0) = \frac{\theta_k (1 - \gamma(x))}{1 - \theta_k \gamma(x)}, \qquad
      P(R = 1 \mid C = 0) = \frac{(1 - \theta_k) \gamma(x)}{1 - \theta_k \gamma(x)};

- M-step: :math:`\theta_k` in closed form, the (weighted) mean over the rows shown at
  :math:`k` of :math:`c + (1 - c) P(E = 1 \mid C = 0)`, and :math:`\gamma` by a regression of the
  soft targets :math:`c + (1 - c) P(R = 1 \mid C = 0)` on the features: gradient-boosted trees
  with LightGBM's ``cross_entropy`` objective, which takes labels in [0, 1] and maximises the
  expected log-likelihood of :math:`R` exactly as the M-step asks (the paper samples binary
  labels from the posteriors instead; the soft labels are that sampling's expectation).

The closed-form update of :math:`\theta` is repeated with :math:`\gamma` fixed until it settles
(an expectation-conditional maximisation): it costs a few array passes and saves regression fits.
The regression is cross-fitted over folds of queries (:class:`LightGBMRelevance`): a relevance
model that fits the very clicks it explains drifts towards a flat curve (measured on simulated logs:
in-sample trees gave 0.72 at position 2 where the truth is 0.5). The estimate refits it from
scratch at each iteration, as the paper does (a model of fixed size: EM then has a fixed point;
boosting continued across iterations adds trees without end, and its curve drifts with them: on
a slow simulated log, curve ``1 / sqrt(k)`` with 0.71 at position 2, refitting gave 0.72 there and
continued boosting 0.67 after 30 iterations, 0.54 after 200). The bootstrap
replicates start from the estimate instead (its propensities, relevance and trees) and continue
its boosting with a few trees per M-step (:class:`BoostedRelevance`) for at most
:data:`REPLICATE_ITER` iterations: a replicate costs one to three small M-steps instead of a whole
EM, and the band on simulated logs matched the one of replicates rerun from the cold start
(``tests/clicks/test_propensity_em_speed.py``).
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_array

from sklearn_ltr._params import check_int
from sklearn_ltr._validation import check_features
from sklearn_ltr.clicks._checks import position_counts
from sklearn_ltr.clicks._estimate import (
    PropensityEstimate,
    ReplicateError,
    check_confidence,
    check_log,
    percentile_band,
    run_bootstrap,
)

__all__ = ["estimate_propensity_em"]

#: LightGBM settings of the relevance regression; ``relevance_params`` overrides them one by one.
RELEVANCE_PARAMS = {"objective": "cross_entropy", "num_iterations": 20, "learning_rate": 0.3, "num_leaves": 31,
                    "min_data_in_leaf": 20, "verbosity": -1, "deterministic": True, "force_row_wise": True}
_EPS = 1e-6
#: Most EM iterations of a bootstrap replicate started from the estimate (``replicate_trees``).
REPLICATE_ITER = 12


def e_step(clicks, theta_rows, gamma):
    """Posterior examination and relevance of each row: ``(P(E = 1 | c), P(R = 1 | c))``."""
    denominator = 1.0 - theta_rows * gamma
    examined = np.where(clicks == 1, 1.0, theta_rows * (1.0 - gamma) / denominator)
    relevant = np.where(clicks == 1, 1.0, (1.0 - theta_rows) * gamma / denominator)
    return examined, relevant


def log_likelihood(clicks, theta_rows, gamma, weights):
    """Weighted mean log-likelihood of the clicks under :math:`P(C = 1) = \\theta_k \\gamma(x)`."""
    p = theta_rows * gamma
    values = np.where(clicks == 1, np.log(p), np.log1p(-p))
    return float(np.average(values, weights=weights))


def update_theta(clicks, buckets, weights, theta, gamma, *, shown, max_steps=200, tol=1e-9):
    """:math:`\\theta` at its maximum given :math:`\\gamma`: the closed-form M-step, repeated (no regression involved).

    One E-step and closed-form update is EM's step; repeating it with :math:`\\gamma` fixed (an
    expectation-conditional maximisation) reaches :math:`\\theta`'s conditional maximum, which
    costs a few array passes and saves regression fits.
    """
    for _ in range(max_steps):
        examined = e_step(clicks, theta[buckets - 1], gamma)[0]
        new = np.clip(np.bincount(buckets - 1, weights * examined, minlength=theta.shape[0]) / shown, _EPS, 1.0)
        if np.max(np.abs(new - theta)) < tol:
            return new
        theta = new
    return theta


def run_em(clicks, buckets, weights, fit_relevance, theta, gamma, *, n_iter, tol, theta_steps=200):
    """Regression EM from ``(theta, gamma)``; ``fit_relevance(targets, weights) -> gamma`` is the M-step's regression.

    ``theta_steps`` closed-form updates of :math:`\\theta` run per iteration (1: plain EM, for a
    relevance M-step as cheap as the update of :math:`\\theta`).

    Returns ``(theta, gamma, iterations, converged, log_likelihoods)``; converged when no relative
    propensity :math:`\\theta_k / \\theta_1` moved by more than ``tol`` in an iteration (after the first).
    """
    max_position = theta.shape[0]
    shown, clicked = position_counts(buckets, clicks, weights, max_position=max_position)
    if (clicked == 0).any():
        raise ReplicateError("a position has no click")
    history = []
    for iteration in range(1, n_iter + 1):
        new_theta = update_theta(clicks, buckets, weights, theta, gamma, shown=shown, max_steps=theta_steps)
        theta_rows = new_theta[buckets - 1]
        history.append(log_likelihood(clicks, theta_rows, gamma, weights))
        change = np.max(np.abs(new_theta / new_theta[0] - theta / theta[0]))
        theta = new_theta
        if iteration > 1 and change < tol:  # the first update saw only the starting gamma
            # Checked before the regression: a settled theta needs no further fit of gamma.
            return theta, gamma, iteration, True, history
        relevant = e_step(clicks, theta_rows, gamma)[1]
        gamma = np.clip(fit_relevance(relevant, weights), _EPS, 1.0 - _EPS)
    return theta, gamma, n_iter, False, history


class LightGBMRelevance:
    """The M-step's regression of the soft relevance targets, cross-fitted over folds of queries.

    The relevance of the rows of one fold is predicted by trees fitted on the other folds, so a
    row's own click never enters its :math:`\\gamma`: a relevance model that fits the clicks
    themselves explains non-clicks by low relevance instead of low examination and flattens the
    curve (in the limit :math:`\\gamma = c`, every :math:`\\theta_k` is 1). With ``n_folds=1`` the
    trees are fitted and evaluated on all rows (the paper's set-up). The features are binned once
    per fold (``lightgbm.Dataset``, shared by every EM iteration and bootstrap replicate); each fit
    changes only the labels (the soft targets) and the weights. Calling the object refits
    ``num_iterations`` trees from scratch; :meth:`boost` adds trees to models given by their scores.
    Call :meth:`boost` only after the last refit: it sets the datasets' ``init_score``.
    """

    def __init__(self, X, params, folds):
        import lightgbm  # imported on use: the rest of sklearn_ltr.clicks needs no LightGBM

        self._lightgbm = lightgbm
        self.params = dict(params)
        self.rounds = int(self.params.pop("num_iterations"))
        n = X.shape[0]
        self.X = X
        self.parts = []
        for fold in np.unique(folds):
            fit_rows = np.flatnonzero(folds != fold) if folds.max() > 0 else np.arange(n)
            predict_rows = np.flatnonzero(folds == fold)
            data = lightgbm.Dataset(X[fit_rows], label=np.zeros(len(fit_rows)), weight=np.ones(len(fit_rows)),
                                    free_raw_data=False, params={"verbosity": -1, **self.params}).construct()
            self.parts.append((fit_rows, predict_rows, data, X[predict_rows]))

    def __call__(self, targets, weights):
        gamma = np.empty(targets.shape[0])
        self.boosters = []
        for fit_rows, predict_rows, data, X_predict in self.parts:
            data.set_label(targets[fit_rows])
            data.set_weight(weights[fit_rows])
            booster = self._lightgbm.train(self.params, data, num_boost_round=self.rounds)
            gamma[predict_rows] = booster.predict(X_predict)
            self.boosters.append(booster)
        return gamma

    def scores(self):
        """Raw scores (log-odds) of the last call's models on every row, one array per fold, for :meth:`boost`."""
        return [booster.predict(self.X, raw_score=True) for booster in self.boosters]

    def boost(self, targets, weights, raw, rounds):
        """Add ``rounds`` trees to each fold's model, fitted to new targets: ``(gamma, raw)``.

        ``raw`` holds one array per fold: that fold's model's raw score (log-odds) on every row,
        the sum of its trees so far (or a constant start). The new trees start from it (LightGBM's
        ``init_score``) instead of from scratch, and the returned ``raw`` includes them; the input
        arrays are not modified.
        """
        gamma = np.empty(targets.shape[0])
        new_raw = []
        for (fit_rows, predict_rows, data, X_predict), score in zip(self.parts, raw, strict=True):
            data.set_label(targets[fit_rows])
            data.set_weight(weights[fit_rows])
            data.set_init_score(score[fit_rows])
            booster = self._lightgbm.train(self.params, data, num_boost_round=rounds, keep_training_booster=True)
            score = score.copy()
            if fit_rows.shape[0] < score.shape[0]:  # cross-fitted: predict the held-out fold
                score[predict_rows] += booster.predict(X_predict, raw_score=True)
            # The training rows' scores (init_score plus the new trees) without a second prediction pass.
            score[fit_rows] = _logit(_training_predictions(booster))
            gamma[predict_rows] = 1.0 / (1.0 + np.exp(-score[predict_rows]))
            new_raw.append(score)
        return gamma, new_raw


def _training_predictions(booster):
    """LightGBM's own probabilities of a booster's training rows (init_score plus trees), without a prediction pass."""
    captured = []

    def capture(predictions, _):
        captured.append(np.asarray(predictions, dtype=np.float64))
        return "captured", 0.0, True

    booster.eval_train(feval=capture)
    return captured[0]


def _logit(p):
    p = np.clip(p, 1e-15, 1.0 - 1e-15)
    return np.log(p) - np.log1p(-p)


class BoostedRelevance:
    """The M-step's regression as boosting continued across EM iterations: ``fit(targets, weights) -> gamma``.

    Each call adds ``rounds`` trees (``first_rounds`` on the first call) to every fold's model of
    :class:`LightGBMRelevance` and fits them to the current soft targets, starting from the
    models' raw scores ``raw`` (one array of log-odds per fold, over every row); ``raw`` is then
    the models' state, from which a bootstrap replicate may continue.
    """

    def __init__(self, relevance, raw, rounds, first_rounds=None):
        self.relevance = relevance
        self.raw = raw
        self.rounds = int(rounds)
        self.first_rounds = self.rounds if first_rounds is None else int(first_rounds)
        self.calls = 0

    def __call__(self, targets, weights):
        rounds = self.first_rounds if self.calls == 0 else self.rounds
        gamma, self.raw = self.relevance.boost(targets, weights, self.raw, rounds)
        self.calls += 1
        return gamma


def _start(clicks, buckets, weights, max_position):
    """Initial ``(theta, gamma)``: click rates relative to the highest one, and a constant relevance."""
    shown, clicked = position_counts(buckets, clicks, weights, max_position=max_position)
    ctr = clicked / shown
    theta = np.clip(ctr / ctr.max(), _EPS, 1.0)
    gamma = np.full(clicks.shape[0], np.clip(ctr.max(), 1e-3, 1 - 1e-3))
    return theta, gamma


def _relevance_params(relevance_params, seed, n_jobs):
    params = {**RELEVANCE_PARAMS, "seed": seed, "num_threads": 0 if n_jobs is None else int(n_jobs)}
    if relevance_params is not None:
        if not isinstance(relevance_params, dict):
            raise ValueError(f"relevance_params must be a dict of LightGBM parameters; got {relevance_params!r}.")
        if relevance_params.get("objective", "cross_entropy") not in ("cross_entropy", "xentropy"):
            raise ValueError("relevance_params cannot change the objective: the M-step fits probabilities (soft "
                             "targets in [0, 1]) with LightGBM's 'cross_entropy' objective.")
        for alias in ("n_estimators", "num_boost_round", "num_trees", "num_round"):
            if alias in relevance_params:
                raise ValueError(f"relevance_params: give the number of trees as 'num_iterations', not {alias!r}.")
        params.update(relevance_params)
    return params


def estimate_propensity_em(X, clicks, positions, groups, *, max_position=20, n_iter=30, tol=1e-3,
                           relevance_params=None, n_folds=2, sample_weight=None, n_bootstrap=20, confidence=0.95,
                           random_state=None, n_jobs=None, replicate_trees=3):
    r"""Examination propensity per position by regression EM of the position-based model.

    Fits :math:`P(C = 1 \mid x, k) = \theta_k \gamma(x)` to a click log (Wang et al., 2018):
    E-step posteriors of examination :math:`E` and relevance :math:`R` for the non-clicks,

    .. math::

        P(E = 1 \mid C = 0) = \frac{\theta_k (1 - \gamma(x))}{1 - \theta_k \gamma(x)}, \qquad
        P(R = 1 \mid C = 0) = \frac{(1 - \theta_k) \gamma(x)}{1 - \theta_k \gamma(x)},

    then :math:`\theta_k` in closed form (the mean of :math:`c + (1 - c) P(E = 1 \mid C = 0)` over
    the rows at :math:`k`, repeated to its maximum given :math:`\gamma`) and :math:`\gamma(x)` by
    gradient-boosted trees refitted on the features with the soft targets
    :math:`c + (1 - c) P(R = 1 \mid C = 0)` (LightGBM's ``cross_entropy`` objective). The module
    docstring of ``sklearn_ltr.clicks._em`` says why. The scale of :math:`\theta` is not identified
    (:math:`\theta_k c` and :math:`\gamma / c` click alike), so the estimate is relative to
    position 1: ``propensity = theta / theta[0]``.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features)
        Features of each shown document, for the relevance regression :math:`\gamma(x)`. NaN is
        a missing value (LightGBM's).
    clicks : array-like of shape (n_samples,)
        1 if the row's document was clicked, else 0; one row per document per result page.
    positions : array-like of int of shape (n_samples,)
        1-based display position of each row.
    groups : array-like of shape (n_samples,)
        Query (or session) id of each row: the unit the bootstrap resamples. Result pages of the
        same query may share an id.
    max_position : int, default=20
        Last position estimated on its own: every position at or beyond it shares one value
        (so choose it beyond the positions you need exactly). Each of ``1 .. max_position`` must
        have clicks.
    n_iter : int, default=30
        Most EM iterations (each refits the relevance regression). EM is slow where clicks are
        rare: ``details["log_likelihood"]`` shows whether it still rises.
    tol : float, default=1e-3
        Stop when no relative propensity moved by more than ``tol`` in an iteration; a
        :class:`~sklearn.exceptions.ConvergenceWarning` says when ``n_iter`` ran out first.
    relevance_params : dict, default=None
        LightGBM parameters of the relevance regression, over the defaults
        (``num_iterations`` 20, ``learning_rate`` 0.3, ``num_leaves`` 31, ``min_data_in_leaf`` 20;
        50 trees at 0.1 before ``replicate_trees`` existed: largest relative errors 0.764, 0.730
        and 0.604 against 0.763, 0.723 and 0.605 on the three simulated logs of
        ``benchmarks/bench_propensity_em.py``, in a third to a half of the seconds). Each M-step
        of the estimate refits ``num_iterations`` trees.
    n_folds : int, default=2
        Cross-fitting: the queries are split into ``n_folds`` folds at random, and the relevance
        of each fold's rows is predicted by trees fitted on the other folds, so that no row's
        own click enters its relevance (a relevance model that fits the clicks themselves
        flattens the curve). 1 fits and predicts on all rows, as the paper does.
    sample_weight : array-like of shape (n_samples,), default=None
        Row weights, e.g. ``1 / keep`` for the non-clicked rows of a log where each was kept with
        probability ``keep``, which makes the down-sampled log count like the full one.
    n_bootstrap : int, default=20
        Bootstrap replicates for the band, each an EM on a resample of the queries (see
        ``replicate_trees``). 0 skips the band.
    confidence : float, default=0.95
        Level of the percentile band: ``lower`` and ``upper`` are the ``(1 - confidence) / 2``
        and ``(1 + confidence) / 2`` quantiles of the replicates.
    random_state : int, numpy.random.Generator or None, default=None
        Seeds the bootstrap draws and LightGBM; an int makes the estimate reproducible.
    n_jobs : int, default=None
        LightGBM threads (None: its default, all cores).
    replicate_trees : int or None, default=3
        How the bootstrap replicates run. An int: each starts from the estimate's propensities,
        relevance and trees, and each of its M-steps adds ``replicate_trees`` trees to the
        estimate's models, fitted to the replicate's soft targets (LightGBM's ``init_score``), for
        at most 12 iterations (same ``tol``); a replicate costs about a fifth of the estimate.
        None: each reruns the whole EM from the estimate's own start (click-rate ratios, a
        constant relevance, trees refitted from scratch), which costs ``n_bootstrap`` times the
        estimate. With ``n_folds=1`` neither band is centred on the estimate: in-sample trees fit
        the resample's repeated queries and flatten the replicates' curves (two small logs: warm
        0.92-1.0 and cold 0.81-0.99 at position 2, around estimates of 0.57). On simulated
        logs (one page per query, curves ``1 / k`` and ``1 / sqrt(k)``, 2 folds) the replicates'
        standard deviations from the estimate were 0.89-1.04 times those from the cold start, and
        the bands held 5 and 4-5 of the 6 true values alike.

    Returns
    -------
    estimate : PropensityEstimate
        ``method="regression_em"``; ``details["log_likelihood"]`` is the mean log-likelihood of
        the clicks at each iteration (it rises, up to the regression's approximation).

    Raises
    ------
    ValueError
        Inputs of different lengths, clicks other than 0/1, positions that are not whole numbers
        >= 1, NaN, or a position in ``1 .. max_position`` without clicks.

    See Also
    --------
    estimate_propensity_document_em : For logs that show documents at several positions (several
        sessions per query): one relevance per document, no features, consistent where a
        regression on weak features is not, and seconds with its band.
    estimate_propensity_harvesting : Needs no features, but documents shown at several positions.

    References
    ----------
    X. Wang, N. Golbandi, M. Bendersky, D. Metzler and M. Najork. "Position Bias Estimation for
    Unbiased Learning to Rank in Personal Search." WSDM 2018.

    Examples
    --------
    A thousand pages of six results each, clicked with probability ``(1 / position) * x_0``:

    >>> import numpy as np
    >>> from sklearn_ltr.clicks import estimate_propensity_em
    >>> rng = np.random.default_rng(0)
    >>> X = rng.random((6000, 3))
    >>> positions = np.tile(np.arange(1, 7), 1000)
    >>> clicks = (rng.random(6000) < X[:, 0] / positions).astype(int)
    >>> page = np.repeat(np.arange(1000), 6)
    >>> estimate = estimate_propensity_em(X, clicks, positions, page, max_position=6, n_bootstrap=0,
    ...                                   random_state=0)
    >>> estimate.positions, estimate.converged
    (array([1, 2, 3, 4, 5, 6]), True)
    >>> estimate.propensity.round(2)
    array([1.  , 0.49, 0.32, 0.25, 0.22, 0.18])
    >>> 1 / estimate.positions  # the truth
    array([1.        , 0.5       , 0.33333333, 0.25      , 0.2       , 0.16666667])

    Per-row propensities (not weights) for IPS training; position 9 shares position 6's value:

    >>> estimate.propensity_of([1, 2, 9]).round(2)
    array([1.  , 0.49, 0.18])
    """
    clicks, buckets, codes, n_queries, weights = check_log(clicks, positions, groups, max_position=max_position,
                                                           sample_weight=sample_weight)
    X = check_array(X, accept_sparse="csr", dtype=(np.float64, np.float32), ensure_all_finite=False,
                    input_name="X")
    check_features(X, owner="estimate_propensity_em", allow_nan=True)
    if X.shape[0] != clicks.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows but clicks has {clicks.shape[0]}; pass one row of features per "
                         f"shown document.")
    n_iter = check_int(n_iter, "n_iter", 1)
    if replicate_trees is not None:
        replicate_trees = check_int(replicate_trees, "replicate_trees", 1)
    n_bootstrap = check_int(n_bootstrap, "n_bootstrap", 0)
    confidence = check_confidence(confidence)
    if not (isinstance(tol, (int, float)) and tol > 0):
        raise ValueError(f"tol must be a number > 0; got {tol!r}.")
    rng = np.random.default_rng(random_state)
    max_position = int(max_position)
    n_folds = check_int(n_folds, "n_folds", 1)
    if n_folds > n_queries:
        raise ValueError(f"n_folds={n_folds} exceeds the {n_queries} queries of groups; cross-fitting needs a query "
                         f"in every fold.")
    folds = rng.permutation(np.arange(n_queries) % n_folds)[codes]
    relevance = LightGBMRelevance(X, _relevance_params(relevance_params, int(rng.integers(2**31 - 1)), n_jobs),
                                  folds)

    theta, gamma, iterations, converged, history = run_em(clicks, buckets, weights, relevance,
                                                          *_start(clicks, buckets, weights, max_position),
                                                          n_iter=n_iter, tol=tol)
    if not converged:
        warnings.warn(f"Regression EM did not converge in n_iter={n_iter} iterations (tol={tol:g}); raise n_iter.",
                      ConvergenceWarning, stacklevel=2)
    warm = None
    if n_bootstrap and replicate_trees is not None and hasattr(relevance, "boosters"):
        warm = relevance.scores()  # the estimate's models, from which each replicate continues

    def replicate(row_weights):
        if warm is None:  # the whole EM again, from the estimate's own start
            fitted = run_em(clicks, buckets, row_weights, relevance,
                            *_start(clicks, buckets, row_weights, max_position), n_iter=n_iter, tol=tol)[0]
        else:  # from the estimate's propensities, relevance and trees
            fitted = run_em(clicks, buckets, row_weights, BoostedRelevance(relevance, warm, replicate_trees),
                            theta, gamma, n_iter=min(n_iter, REPLICATE_ITER), tol=tol)[0]
        return fitted / fitted[0]

    replicates = run_bootstrap(replicate, codes, n_queries, weights, n_bootstrap=n_bootstrap, rng=rng,
                               max_position=max_position)
    lower, upper, failed = percentile_band(replicates, confidence) if n_bootstrap else (None, None, 0)
    n_shown, n_clicks = position_counts(buckets, clicks, weights, max_position=max_position)
    return PropensityEstimate(
        method="regression_em", positions=np.arange(1, max_position + 1), propensity=theta / theta[0],
        lower=lower, upper=upper, confidence=confidence,
        n_shown=n_shown, n_clicks=n_clicks,
        n_iter=iterations, converged=converged, bootstrap=replicates, n_bootstrap_failed=failed,
        details={"log_likelihood": np.asarray(history), "theta_1": float(theta[0])},
    )

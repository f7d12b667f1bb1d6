r"""Trust bias estimated by expectation-maximisation: examination and the two click rates per position.

The trust-bias model (Agarwal, Wang, Li, Bendersky and Najork, 2019) explains a click on document
:math:`d` shown at position :math:`k` by two hidden variables, examination :math:`E` and relevance
:math:`R`:

.. math::
    P(E = 1) = \theta_k, \quad P(R = 1) = \gamma_d, \quad
    P(C = 1 \mid E = 1, R = 1) = \epsilon^+_k, \quad P(C = 1 \mid E = 1, R = 0) = \epsilon^-_k,

and no click without examination, so :math:`P(C = 1) = \alpha_k \gamma_d + \beta_k` with
:math:`\alpha_k = \theta_k (\epsilon^+_k - \epsilon^-_k)` and :math:`\beta_k = \theta_k
\epsilon^-_k`: the affine parameters that the affine correction :math:`(c - \beta_k) / \alpha_k`
takes (Vardasbi, Oosterhuis and de Rijke, 2020).

EM (the regression EM of Wang et al., 2018, with Agarwal et al.'s two click rates). E-step: the
posterior of the four :math:`(E, R)` combinations of each row given its click,

.. math::
    C = 1:&\ q_{11} \propto \theta \gamma \epsilon^+,\ q_{10} \propto \theta (1 - \gamma) \epsilon^-,
    \ q_{01} = q_{00} = 0; \\
    C = 0:&\ q_{11} \propto \theta \gamma (1 - \epsilon^+),\ q_{10} \propto \theta (1 - \gamma)
    (1 - \epsilon^-),\ q_{01} \propto (1 - \theta) \gamma,\ q_{00} \propto (1 - \theta)(1 - \gamma).

M-step, in closed form per position :math:`k` (sums over the rows shown at :math:`k`, weighted):
:math:`\theta_k = \overline{q_{11} + q_{10}}`, :math:`\epsilon^+_k = \sum c\, q_{11} / \sum q_{11}`,
:math:`\epsilon^-_k = \sum c\, q_{10} / \sum q_{10}`; and the relevance either per (query, document),
:math:`\gamma_d = \overline{q_{11} + q_{01}}` over the rows of the document (identifiable where the
document is shown at several positions across sessions), or regressed on the features by LightGBM
(the soft targets :math:`q_{11} + q_{01}`, cross-fitted over folds of queries).

**Scale.** Only :math:`\alpha_k` and :math:`\beta_k` are identified, and only up to an affine map of
the relevance scale: :math:`\gamma \to a \gamma + b` with :math:`\alpha_k \to \alpha_k / a`,
:math:`\beta_k \to \beta_k - \alpha_k b / a` explains the clicks equally well. The reported values
are on the scale of the fitted relevance :math:`\gamma \in [0, 1]`. The ratios
:math:`\alpha_k / \alpha_1` and the differences :math:`\beta_k - \beta_1 \alpha_k / \alpha_1` do
not depend on that choice, and neither does the ranking that the affine correction learns or
selects: the corrected relevance is then :math:`a \gamma + b` in expectation, an increasing map of
:math:`\gamma`. :math:`\theta_k, \epsilon^+_k, \epsilon^-_k` are one factorisation of
:math:`\theta_k \epsilon^+_k = \alpha_k + \beta_k` and :math:`\theta_k \epsilon^-_k = \beta_k`.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field

import numpy as np

from sklearn_ltr._params import check_int
from sklearn_ltr.clicks._checks import check_positions, position_counts
from sklearn_ltr.clicks._estimate import check_log

__all__ = ["TrustBiasEstimate", "estimate_trust_bias_em"]

_EPS = 1e-6
#: LightGBM's regression of the soft relevance targets (``X`` given): probabilities, few small trees.
_RELEVANCE_PARAMS = {"objective": "cross_entropy", "num_iterations": 50, "learning_rate": 0.1, "num_leaves": 31,
                     "min_data_in_leaf": 20, "verbosity": -1}


@dataclass(frozen=True, repr=False)
class TrustBiasEstimate:
    r"""Trust-bias click parameters per display position, estimated from a click log.

    Attributes
    ----------
    positions : ndarray of int64 of shape (max_position,)
        ``1 .. max_position``; the last one stands for every position at or beyond it.
    alpha, beta : ndarray of float64 of shape (max_position,)
        :math:`\alpha_k = \theta_k (\epsilon^+_k - \epsilon^-_k)` and :math:`\beta_k = \theta_k
        \epsilon^-_k`: :math:`P(C = 1) = \alpha_k \gamma + \beta_k`, on the scale of the fitted
        relevance :math:`\gamma \in [0, 1]` (see the module docstring of ``sklearn_ltr.clicks._trust_em``).
    theta, eps_plus, eps_minus : ndarray of float64 of shape (max_position,)
        Examination probability and click probabilities of a relevant and a non-relevant examined
        document (one factorisation of :math:`\alpha, \beta`).
    relevance : ndarray of float64 of shape (n_samples,)
        The fitted :math:`\gamma` of each row of the log.
    n_iter : int
        EM iterations run.
    converged : bool
        Whether the log-likelihood's relative change fell below ``tol``.
    log_likelihood : ndarray of float64 of shape (n_iter,)
        Mean (weighted) log-likelihood of the clicks after each iteration; never decreasing for the
        per-document relevance.

    See Also
    --------
    estimate_trust_bias_em : The estimator that returns it.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ltr.clicks import TrustBiasEstimate
    >>> estimate = TrustBiasEstimate(
    ...     positions=np.array([1, 2]), alpha=np.array([0.6, 0.3]), beta=np.array([0.3, 0.1]),
    ...     theta=np.array([1.0, 0.5]), eps_plus=np.array([0.9, 0.8]), eps_minus=np.array([0.3, 0.2]),
    ...     relevance=np.empty(0), n_iter=0, converged=True)
    >>> estimate.affine_of([1, 2, 5])  # positions past 2 share position 2's pair
    array([[0.6, 0.3],
           [0.3, 0.1],
           [0.3, 0.1]])
    """

    positions: np.ndarray
    alpha: np.ndarray
    beta: np.ndarray
    theta: np.ndarray
    eps_plus: np.ndarray
    eps_minus: np.ndarray
    relevance: np.ndarray
    n_iter: int
    converged: bool
    log_likelihood: np.ndarray = field(default_factory=lambda: np.empty(0))

    @property
    def max_position(self):
        return int(self.positions[-1])

    def affine_of(self, positions):
        r"""Each row's :math:`(\alpha, \beta)` from its display position: what ``fit`` and the metrics take.

        Pass the result as ``propensity=`` to a neural ranker's ``fit``, to
        :class:`~sklearn_ltr.training.ValidationNDCG` or to :func:`~sklearn_ltr.metrics.ips_dcg_score`;
        they apply the affine correction :math:`(c - \beta) / \max(\alpha, 0.05)`. Positions at or
        beyond ``max_position`` get the last estimated values; an :math:`\alpha` that noise made
        non-positive is raised to :math:`10^{-6}` (the clip then bounds its weight).

        Parameters
        ----------
        positions : array-like of int of shape (n_samples,)
            1-based display position of each row.

        Returns
        -------
        affine : ndarray of float64 of shape (n_samples, 2)
            Column 0: :math:`\alpha`; column 1: :math:`\beta`.
        """
        positions = check_positions(positions)
        bucket = np.minimum(positions, self.max_position) - 1
        alpha = np.maximum(self.alpha[bucket], _EPS)
        beta = np.minimum(self.beta[bucket], 1.0 - alpha)
        return np.column_stack([alpha, beta])

    def __repr__(self):
        def show(values):
            return "[" + ", ".join(f"{v:.3g}" for v in values[:5]) + (", ..." if len(values) > 5 else "") + "]"

        return (f"TrustBiasEstimate(positions 1..{self.max_position}: alpha={show(self.alpha)}, "
                f"beta={show(self.beta)}, n_iter={self.n_iter}, converged={self.converged})")


def _document_codes(documents, query_codes, n):
    documents = np.asarray(documents)
    if documents.ndim != 1 or documents.shape[0] != n:
        raise ValueError(f"documents must hold one document id per row of the log ({n} rows); got shape "
                         f"{documents.shape}.")
    _, doc_codes = np.unique(documents, return_inverse=True)
    _, pair_codes = np.unique(np.column_stack([query_codes, doc_codes.reshape(-1)]), axis=0, return_inverse=True)
    return pair_codes.reshape(-1)


def _relevance_model(X, n, query_codes, relevance_params, n_folds, random_state):
    """``gamma(targets, weights)``: LightGBM's regression of the soft relevance targets, cross-fitted."""
    from sklearn_ltr.clicks._em import LightGBMRelevance

    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] != n:
        raise ValueError(f"X must be a 2-D array with one row of features per row of the log ({n} rows); got "
                         f"shape {X.shape}.")
    n_folds = check_int(n_folds, "n_folds", 1)
    rng = np.random.default_rng(random_state)
    folds = rng.integers(0, n_folds, query_codes.max() + 1)[query_codes] if n_folds > 1 else np.zeros(n, int)
    return LightGBMRelevance(X, {**_RELEVANCE_PARAMS, **(relevance_params or {})}, folds)


def _posteriors(clicks, theta, eps_plus, eps_minus, gamma):
    """``(q11, q10, q01, p_click)``: posteriors of (E, R) = (1, 1), (1, 0), (0, 1) given the click."""
    relevant, irrelevant = theta * gamma, theta * (1.0 - gamma)
    p_click = np.clip(relevant * eps_plus + irrelevant * eps_minus, _EPS, 1.0 - _EPS)
    clicked = clicks == 1
    q11 = np.where(clicked, relevant * eps_plus / p_click, relevant * (1.0 - eps_plus) / (1.0 - p_click))
    q10 = np.where(clicked, irrelevant * eps_minus / p_click, irrelevant * (1.0 - eps_minus) / (1.0 - p_click))
    q01 = np.where(clicked, 0.0, (1.0 - theta) * gamma / (1.0 - p_click))
    return q11, q10, q01, p_click


def estimate_trust_bias_em(clicks, positions, groups, documents=None, X=None, *, max_position=10, n_iter=500,
                           tol=1e-7, relevance_params=None, n_folds=2, sample_weight=None, random_state=0):
    r"""Per-position trust-bias parameters :math:`\alpha_k, \beta_k` of a click log, by EM.

    See the module docstring of ``sklearn_ltr.clicks._trust_em`` for the model, the E- and M-steps and the scale of the
    estimates (identified up to an affine map of the relevance scale, which the rankings learned or
    selected with the affine correction do not depend on).

    Parameters
    ----------
    clicks : array-like of shape (n_samples,)
        1 where the shown row was clicked, 0 otherwise.
    positions : array-like of int of shape (n_samples,)
        1-based display position of each row.
    groups : array-like of shape (n_samples,)
        Query (or session) id of each row.
    documents : array-like of shape (n_samples,), default=None
        Document id of each row: the relevance is then one :math:`\gamma` per (query, document),
        updated in closed form. Needs documents shown at several positions across sessions.
    X : array-like of shape (n_samples, n_features), default=None
        Features of each row, when ``documents`` is None: the relevance is regressed on them by
        LightGBM (``cross_entropy`` objective), cross-fitted over ``n_folds`` folds of queries.
    max_position : int, default=10
        Positions at or beyond it share one set of parameters.
    n_iter : int, default=500
        Largest number of EM iterations.
    tol : float, default=1e-7
        Stop when the mean log-likelihood changes by less than ``tol`` (relatively).
    relevance_params : dict, default=None
        LightGBM parameters of the relevance regression (``X`` only), over the defaults
        (50 trees of 31 leaves, learning rate 0.1).
    n_folds : int, default=2
        Folds of queries of the cross-fitted relevance (``X`` only); 1 fits and predicts all rows.
    sample_weight : array-like of shape (n_samples,), default=None
        Weight of each row (e.g. how many sessions it stands for).
    random_state : int, default=0
        Seed of the folds of queries.

    Returns
    -------
    estimate : TrustBiasEstimate
        ``alpha``, ``beta``, ``theta``, ``eps_plus``, ``eps_minus`` per position and
        ``affine_of(positions)``, the per-row ``(alpha, beta)`` that ``fit(..., propensity=...)``
        and the counterfactual metrics take.

    Raises
    ------
    ValueError
        Neither or both of ``documents`` and ``X``; a position of ``1 .. max_position`` never shown
        or never clicked (lower ``max_position``); bad clicks, positions or lengths.

    References
    ----------
    A. Agarwal, X. Wang, C. Li, M. Bendersky and M. Najork. "Addressing Trust Bias for Unbiased
    Learning-to-Rank." WWW 2019.

    A. Vardasbi, H. Oosterhuis and M. de Rijke. "When Inverse Propensity Scoring does not Work:
    Affine Corrections for Unbiased Learning to Rank." CIKM 2020.

    X. Wang, N. Golbandi, M. Bendersky, D. Metzler and M. Najork. "Position Bias Estimation for
    Unbiased Learning to Rank in Personal Search." WSDM 2018.

    Examples
    --------
    Two documents of one query, each shown 40 times at each of two positions; position 2 has half
    the clicks of position 1 for both:

    >>> import numpy as np
    >>> from sklearn_ltr.clicks import estimate_trust_bias_em
    >>> documents = np.repeat([0, 1], 80)
    >>> positions = np.tile(np.repeat([1, 2], 40), 2)
    >>> rates = {(0, 1): 0.8, (0, 2): 0.4, (1, 1): 0.2, (1, 2): 0.1}
    >>> clicks = np.concatenate([(np.arange(40) < 40 * rates[d, k]).astype(int) for d in (0, 1) for k in (1, 2)])
    >>> estimate = estimate_trust_bias_em(clicks, positions, np.zeros(160, int), documents, max_position=2)
    >>> affine = estimate.affine_of([1, 2])
    >>> bool(affine[1, 0] < affine[0, 0])  # position 2's clicks say less about relevance
    True
    """
    if (documents is None) == (X is None):
        raise ValueError("estimate_trust_bias_em needs the relevance's support: documents=... (one id per row, "
                         "documents shown at several positions) or X=... (features of each row), exactly one.")
    max_position = check_int(max_position, "max_position", 1)
    n_iter = check_int(n_iter, "n_iter", 1)
    if isinstance(tol, bool) or not isinstance(tol, numbers.Real) or not tol >= 0:
        raise ValueError(f"tol must be a number >= 0; got {tol!r}.")
    clicks, buckets, query_codes, _, weights = check_log(clicks, positions, groups, max_position=max_position,
                                                         sample_weight=sample_weight)
    n = clicks.shape[0]
    position = buckets - 1
    shown, clicked = position_counts(buckets, clicks, weights, max_position=max_position)
    ctr = clicked / shown
    # Start: examination from the click rates, relevant documents clicked far more than others once seen.
    theta = np.clip(ctr / ctr.max(), 0.05, 1.0 - _EPS)
    eps_plus, eps_minus = np.full(max_position, 0.9), np.full(max_position, 0.1)
    if documents is not None:
        docs = _document_codes(documents, query_codes, n)
        doc_weight = np.bincount(docs, weights)
        gamma_of = None
        rate = np.bincount(docs, weights * clicks) / np.maximum(doc_weight, _EPS)
        gamma = np.clip(rate / ctr.max(), 0.05, 0.95)[docs]
    else:
        gamma_of = _relevance_model(X, n, query_codes, relevance_params, n_folds, random_state)
        gamma = np.full(n, 0.5)
    history, converged = [], False
    for iteration in range(1, n_iter + 1):
        q11, q10, q01, _ = _posteriors(clicks, theta[position], eps_plus[position], eps_minus[position], gamma)
        examined = q11 + q10
        theta = np.clip(np.bincount(position, weights * examined, minlength=max_position) / shown, _EPS, 1 - _EPS)
        eps_plus = _ratio(np.bincount(position, weights * clicks * q11, minlength=max_position),
                          np.bincount(position, weights * q11, minlength=max_position))
        eps_minus = _ratio(np.bincount(position, weights * clicks * q10, minlength=max_position),
                           np.bincount(position, weights * q10, minlength=max_position))
        targets = q11 + q01
        if gamma_of is None:
            gamma = np.clip(np.bincount(docs, weights * targets) / np.maximum(doc_weight, _EPS), _EPS, 1 - _EPS)[docs]
        else:
            gamma = np.clip(gamma_of(targets, weights), _EPS, 1 - _EPS)
        p_click = np.clip(theta[position] * (eps_plus[position] * gamma + eps_minus[position] * (1 - gamma)),
                          _EPS, 1 - _EPS)
        history.append(float(np.sum(weights * (clicks * np.log(p_click) + (1 - clicks) * np.log1p(-p_click)))
                             / weights.sum()))
        if iteration > 1 and abs(history[-1] - history[-2]) <= tol * abs(history[-2]):
            converged = True
            break
    return TrustBiasEstimate(
        positions=np.arange(1, max_position + 1), alpha=theta * (eps_plus - eps_minus), beta=theta * eps_minus,
        theta=theta, eps_plus=eps_plus, eps_minus=eps_minus, relevance=gamma, n_iter=len(history),
        converged=converged, log_likelihood=np.asarray(history),
    )


def _ratio(numerator, denominator):
    return np.clip(numerator / np.maximum(denominator, _EPS), _EPS, 1 - _EPS)

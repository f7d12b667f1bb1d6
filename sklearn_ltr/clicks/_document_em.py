r"""EM of the position-based click model with one relevance per (query, document) (Chuklin et al., 2015).

The position-based model says that the document :math:`d` of query :math:`q` shown at position
:math:`k` is clicked when it is examined (probability :math:`\theta_k`) and relevant (probability
:math:`\gamma_{qd}`), independently: :math:`P(C = 1) = \theta_k \gamma_{qd}`. When the pages of a
query show the same document at different positions (several sessions per query, a logging
ranker whose order varies), these parameters are identified without features, and EM updates
both in closed form (Chuklin, Markov and de Rijke, *Click Models for Web Search*, 2015, ch. 4):

.. math::

    \theta_k \leftarrow \frac{\sum_{i: k_i = k} w_i \left(c_i + (1 - c_i)
        \frac{\theta_k (1 - \gamma_{q_i d_i})}{1 - \theta_k \gamma_{q_i d_i}}\right)}{\sum_{i: k_i = k} w_i},
    \qquad
    \gamma_{qd} \leftarrow \frac{\sum_{i: (q_i, d_i) = (q, d)} w_i \left(c_i + (1 - c_i)
        \frac{(1 - \theta_{k_i}) \gamma_{qd}}{1 - \theta_{k_i} \gamma_{qd}}\right)}{\sum_{i: (q_i, d_i) = (q, d)} w_i}.

Each iteration costs a few passes over the rows (``numpy.bincount``), so the bootstrap reruns the
whole EM on every replicate at little cost. Unlike the regression EM on features
(:func:`~sklearn_ltr.clicks.estimate_propensity_em`), no relevance model can put on the positions
what it fails to explain of the relevance: a document's relevance is its own parameter.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from sklearn_ltr._groups import check_groups
from sklearn_ltr._params import check_int
from sklearn_ltr.clicks._checks import position_counts
from sklearn_ltr.clicks._em import run_em
from sklearn_ltr.clicks._estimate import (
    PropensityEstimate,
    ReplicateError,
    _as_1d,
    _listing,
    check_confidence,
    check_log,
    percentile_band,
    run_bootstrap,
)

__all__ = ["estimate_propensity_document_em"]

_EPS = 1e-6


class DocumentRelevance:
    """The closed-form M-step of :math:`\\gamma`: one relevance per item, the weighted mean of its soft targets.

    Called as ``fit_relevance(targets, weights) -> gamma`` per row, like the regression of
    :func:`~sklearn_ltr.clicks._em.run_em`; an item without weight keeps 0.5 (none of its rows counts).
    """

    def __init__(self, items):
        self.items = np.asarray(items)
        self.n_items = int(self.items.max()) + 1 if self.items.size else 0

    def __call__(self, targets, weights):
        total = np.bincount(self.items, weights, minlength=self.n_items)
        relevant = np.bincount(self.items, weights * targets, minlength=self.n_items)
        gamma = np.divide(relevant, total, out=np.full(self.n_items, 0.5), where=total > 0)
        return gamma[self.items]


def item_codes(codes, documents):
    """One integer per distinct (query, document), from the query codes and the documents' ids."""
    doc_codes = np.unique(documents, return_inverse=True)[1].reshape(-1).astype(np.int64)
    return np.unique(codes.astype(np.int64) * (doc_codes.max() + 1) + doc_codes, return_inverse=True)[1].reshape(-1)


def start(clicks, buckets, weights, items, max_position):
    """Initial ``(theta, gamma)``: click rates of the positions relative to the highest one, and of the documents."""
    shown, clicked = position_counts(buckets, clicks, weights, max_position=max_position)
    ctr = clicked / shown
    theta = np.clip(ctr / ctr.max(), _EPS, 1.0)
    gamma = DocumentRelevance(items)(np.clip(clicks / theta[buckets - 1], 0, 1), weights)
    return theta, np.clip(gamma, 1e-3, 1 - 1e-3)


class CellTable:
    """The log aggregated into cells (document, position): rows, clicks and the links between positions."""

    def __init__(self, items, buckets, max_position):
        keys = items.astype(np.int64) * max_position + (buckets - 1)
        cells, self.cell_of_row = np.unique(keys, return_inverse=True)
        self.cell_of_row = self.cell_of_row.reshape(-1)
        self.document = cells // max_position
        self.bucket = cells % max_position
        self.n_documents = int(self.document.max()) + 1
        self.max_position = max_position

    def counts(self, clicks, weights):
        """Weighted shows and clicks of each cell."""
        n = len(self.document)
        return (np.bincount(self.cell_of_row, weights, minlength=n),
                np.bincount(self.cell_of_row, weights * clicks, minlength=n))

    def unlinked(self, shows, clicked):
        """Positions that no clicked document shown there and at a linked position ties to position 1."""
        m = self.max_position
        doc_clicks = np.bincount(self.document, clicked, minlength=self.n_documents)
        use = (shows > 0) & (doc_clicks[self.document] > 0)
        document, bucket = self.document[use], self.bucket[use]
        linked = np.zeros(m, dtype=bool)
        linked[0] = True
        while True:  # at most max_position sweeps
            reached = np.bincount(document, linked[bucket], minlength=self.n_documents) > 0
            new = linked.copy()
            new[bucket[reached[document]]] = True
            if new.sum() == linked.sum():
                return np.flatnonzero(~linked) + 1
            linked = new


def poisson_fixed_effects(table, shows, clicked, theta, *, n_iter, tol):
    """Maximum of the Poisson likelihood of the cells' clicks with mean ``theta_k * gamma_d * shows``.

    Alternates the closed-form updates :math:`\\gamma_d = C_d / \\sum_k N_{dk} \\theta_k` and
    :math:`\\theta_k = C_k / \\sum_d N_{dk} \\gamma_d` (then divided by :math:`\\theta_1`). Returns
    ``(theta, iterations, converged)``.
    """
    m, document, bucket = table.max_position, table.document, table.bucket
    doc_clicks = np.bincount(document, clicked, minlength=table.n_documents)
    position_clicks = np.bincount(bucket, clicked, minlength=m)
    for iteration in range(1, n_iter + 1):
        exposure = np.bincount(document, shows * theta[bucket], minlength=table.n_documents)
        gamma = np.divide(doc_clicks, exposure, out=np.zeros_like(exposure), where=exposure > 0)
        new = position_clicks / np.bincount(bucket, shows * gamma[document], minlength=m)
        new /= new[0]
        change = np.max(np.abs(new - theta))
        theta = new
        if change < tol:
            return theta, iteration, True
    return theta, n_iter, False


def estimate_propensity_document_em(clicks, positions, groups, documents, *, max_position=20, likelihood="poisson",
                                    n_iter=10000, tol=1e-7, sample_weight=None, n_bootstrap=200, confidence=0.95,
                                    random_state=None):
    r"""Examination propensity per position from the position-based model with one relevance per document.

    Fits the position-based model :math:`E[C \mid q, d, k] = \theta_k \gamma_{qd}` to a click log
    with one relevance parameter per (query, document) and no features. The position effect is
    identified by documents shown at several positions (several pages per query, by a ranker
    whose order varies), so no relevance model can put on the positions what it fails to explain
    of the relevance, as a regression on weak features does under a logging ranker that puts the
    relevant documents first (:func:`estimate_propensity_em`).

    ``likelihood="poisson"`` (the default) maximises the Poisson likelihood of each
    (document, position) cell's clicks :math:`C_{dk}` given its shows :math:`N_{dk}`, by the
    closed-form alternation

    .. math::

        \gamma_{qd} \leftarrow \frac{C_{qd}}{\sum_k N_{qd,k}\,\theta_k}, \qquad
        \theta_k \leftarrow \frac{C_k}{\sum_{(q,d)} N_{qd,k}\,\gamma_{qd}}.

    Poisson regression with fixed effects is consistent whenever the mean is multiplicative,
    whatever the distribution of the clicks (Wooldridge, 1999), and it has no incidental-parameter
    bias: its estimate of :math:`\theta` is the conditional maximum likelihood given each
    document's number of clicks. It needs few sessions per document.

    ``likelihood="bernoulli"`` is the classic EM of the position-based model (Chuklin et al., 2015,
    ch. 4): E-step posteriors :math:`P(E = 1 \mid C = 0) = \theta_k (1 - \gamma_{qd}) / (1 - \theta_k \gamma_{qd})`
    and :math:`P(R = 1 \mid C = 0) = (1 - \theta_k) \gamma_{qd} / (1 - \theta_k \gamma_{qd})`, M-step
    means of :math:`c + (1 - c) P(\cdot \mid C = 0)` over a position's and a document's rows. It is
    the exact likelihood, but each document's :math:`\gamma_{qd}` is fitted to its own few clicks
    (the incidental-parameter problem): a document clicked on its only show low in the list needs
    :math:`\theta_k \gamma = 1`, which pushes :math:`\theta_k` up, and the curve comes out too flat
    with ~10-15 sessions per query (0.67 largest relative error on positions 1-10 where the
    Poisson fit has 0.25, on the 62,670-row MQ2008 log of ``benchmarks/bench_propensity_em.py``).

    Parameters
    ----------
    clicks : array-like of shape (n_samples,)
        1 if the row's document was clicked, else 0; one row per document per result page.
    positions : array-like of int of shape (n_samples,)
        1-based display position of each row.
    groups : array-like of shape (n_samples,)
        Query id of each row (not the result page: the pages of a query share it). The bootstrap
        resamples queries.
    documents : array-like of shape (n_samples,)
        Document id of each row within its query: the same (query, document) in two pages shares
        one relevance :math:`\gamma_{qd}`.
    max_position : int, default=20
        Last position estimated on its own: every position at or beyond it shares one value.
        Each of ``1 .. max_position`` must have clicks, and be tied to position 1 by a chain of
        clicked documents shown at two positions.
    likelihood : {"poisson", "bernoulli"}, default="poisson"
        The fit (see above): ``"poisson"`` is consistent with few sessions per document;
        ``"bernoulli"`` is the classic click-model EM, biased towards a flat curve there.
    n_iter : int, default=10000
        Most iterations (each a few passes over the cells or rows).
    tol : float, default=1e-7
        Stop when no relative propensity moved by more than ``tol`` in an iteration; a
        :class:`~sklearn.exceptions.ConvergenceWarning` says when ``n_iter`` ran out first.
    sample_weight : array-like of shape (n_samples,), default=None
        Row weights, e.g. ``1 / keep`` for the non-clicked rows of a log where each was kept with
        probability ``keep`` (this adds noise to every document's shows: see the benchmark).
    n_bootstrap : int, default=200
        Bootstrap replicates (over queries) for the band; 0 skips the band. A Poisson replicate
        starts from the estimate (its likelihood has one maximum, which it reaches to ``tol``);
        a Bernoulli replicate reruns the whole EM from the same start as the estimate.
    confidence : float, default=0.95
        Level of the percentile band.
    random_state : int, numpy.random.Generator or None, default=None
        Seeds the bootstrap.

    Returns
    -------
    estimate : PropensityEstimate
        ``method="document_em"``; ``details`` holds ``likelihood``, ``n_documents`` (distinct
        (query, document)) and, for ``"bernoulli"``, the mean ``log_likelihood`` per iteration.

    Raises
    ------
    ValueError
        Inputs of different lengths, clicks other than 0/1, positions that are not whole numbers
        >= 1, NaN, a position in ``1 .. max_position`` without clicks, or positions that no
        clicked document shown at two positions ties to position 1.

    See Also
    --------
    estimate_propensity_em : Regression EM on features, for logs that show each document at one position.
    estimate_propensity_harvesting : Pairwise click-rate ratios of the same documents.

    References
    ----------
    A. Chuklin, I. Markov and M. de Rijke. *Click Models for Web Search*. Morgan & Claypool,
    2015, chapter 4 (parameter estimation of the position-based model by EM).

    J. M. Wooldridge. "Distribution-free estimation of some nonlinear panel data models."
    Journal of Econometrics 90(1), 1999 (Poisson regression with fixed effects).

    N. Craswell, O. Zoeter, M. Taylor and B. Ramsey. "An Experimental Comparison of Click
    Position-Bias Models." WSDM 2008.

    Examples
    --------
    Two documents of one query, each shown 300 times at position 1 and 300 times at position 2;
    position 2 is examined half as often:

    >>> import numpy as np
    >>> from sklearn_ltr.clicks import estimate_propensity_document_em
    >>> positions = np.tile([1, 2, 2, 1], 300)
    >>> documents = np.tile([0, 1, 0, 1], 300)
    >>> rng = np.random.default_rng(0)
    >>> clicks = (rng.random(1200) < np.where(documents == 0, 0.8, 0.4) / positions).astype(int)
    >>> estimate = estimate_propensity_document_em(clicks, positions, np.zeros(1200), documents,
    ...                                            max_position=2, n_bootstrap=50, random_state=0)
    >>> estimate.propensity.round(2), estimate.converged
    (array([1. , 0.5]), True)
    """
    clicks, buckets, codes, n_queries, weights = check_log(clicks, positions, groups, max_position=max_position,
                                                           sample_weight=sample_weight)
    documents = check_groups(_as_1d(documents, "documents", clicks.shape[0]), clicks.shape[0], name="documents",
                             against="clicks")
    if likelihood not in ("poisson", "bernoulli"):
        raise ValueError(f"likelihood must be 'poisson' or 'bernoulli'; got {likelihood!r}.")
    n_iter = check_int(n_iter, "n_iter", 1)
    n_bootstrap = check_int(n_bootstrap, "n_bootstrap", 0)
    confidence = check_confidence(confidence)
    if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not tol > 0:
        raise ValueError(f"tol must be a number > 0; got {tol!r}.")
    max_position = int(max_position)
    items = item_codes(codes, documents)
    table = CellTable(items, buckets, max_position)
    unlinked = table.unlinked(*table.counts(clicks, weights))
    if unlinked.size:
        raise ValueError(f"positions {_listing(unlinked)} are tied to position 1 by no clicked document shown at "
                         f"two positions (the same value of documents within the same query in groups): their "
                         f"propensity is not identified without features. Lower max_position, check that groups "
                         f"holds query ids (not result-page ids), or use estimate_propensity_em.")
    details = {"likelihood": likelihood, "n_documents": table.n_documents}
    if likelihood == "poisson":
        def fit(row_weights, theta):
            shows, clicked = table.counts(clicks, row_weights)
            if table.unlinked(shows, clicked).size:
                raise ReplicateError("a position is not identified")
            return poisson_fixed_effects(table, shows, clicked, theta, n_iter=n_iter, tol=tol)

        theta, iterations, converged = fit(weights, np.ones(max_position))
    else:
        relevance = DocumentRelevance(items)

        def fit(row_weights, theta=None):
            fitted = run_em(clicks, buckets, row_weights, relevance,
                            *start(clicks, buckets, row_weights, items, max_position), n_iter=n_iter, tol=tol,
                            theta_steps=1)
            return fitted[0] / fitted[0][0], fitted[2], fitted[3], fitted[4]

        theta, iterations, converged, history = fit(weights)
        details["log_likelihood"] = np.asarray(history)
    if not converged:
        warnings.warn(f"EM did not converge in n_iter={n_iter} iterations (tol={tol:g}); raise n_iter.",
                      ConvergenceWarning, stacklevel=2)
    rng = np.random.default_rng(random_state)
    replicates = run_bootstrap(lambda w: fit(w, theta)[0], codes, n_queries, weights, n_bootstrap=n_bootstrap,
                               rng=rng, max_position=max_position)
    lower, upper, failed = percentile_band(replicates, confidence) if n_bootstrap else (None, None, 0)
    n_shown, n_clicks = position_counts(buckets, clicks, weights, max_position=max_position)
    return PropensityEstimate(
        method="document_em", positions=np.arange(1, max_position + 1), propensity=theta,
        lower=lower, upper=upper, confidence=confidence,
        n_shown=n_shown, n_clicks=n_clicks,
        n_iter=iterations, converged=converged, bootstrap=replicates, n_bootstrap_failed=failed, details=details,
    )

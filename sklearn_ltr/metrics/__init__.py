r"""Ranking metrics over many queries at once, and routing-aware scorers.

All metrics take ``(y_true, y_score, groups)`` with one query id per row, sort
all rows once by ``(query, -score)`` and never loop over queries in Python.
Each returns the mean over queries (:func:`swapped_pairs` the total count);
:func:`ndcg_per_query` gives one value per query. To evaluate many score vectors on the
same queries (early stopping, a search, a comparison of rankers), build a
:class:`RankingEvaluator` once and pass it as ``groups``: the grouping, the gains and the
ideal DCG are then not recomputed, and the values are the same.

Counterfactual metrics estimate a ranking's DCG and NDCG from a click log instead of labels:
:func:`ips_dcg_score` (unbiased) and :func:`ips_ndcg_score` (self-normalised), with
:func:`ips_dcg_per_query` and :func:`ips_ndcg_per_query`, take ``(clicks, y_score, groups,
propensity)`` and weight each click by its clipped inverse examination propensity. Every query counts in the mean
(only ``empty_value=None`` leaves out the queries without a relevant document),
and no metric returns ``inf`` or ``NaN``: NDCG and ERR are exact for any finite
label, also where ``2**y`` overflows float64, and :func:`dcg_score` raises when
the DCG itself does. Keyword options are checked on every call and raise
``InvalidParameterError`` (a ``ValueError``) naming the parameter.

:func:`compare_rankings` and :func:`paired_significance` test whether one ranker beats
another on the same queries (paired t-test, randomization test, bootstrap interval, Holm or
Bonferroni correction); :func:`write_comparison_report` writes the result as a self-contained
HTML page with per-query difference plots, and :func:`plot_comparison` draws those figures.

One registry, :data:`METRICS` (name -> :class:`Metric`), lists the metrics with their
per-query function, options, direction and empty-query convention; :func:`get_metric` and
:func:`parse_metric` look names up (``"ndcg@10"``, ``"map"``, ``"p@5"``) and
:func:`register_metric` adds one. The scorers, the significance tests,
:mod:`sklearn_ltr.model_selection` and the command line all read it.

The scorers (:data:`ndcg_scorer`, :class:`NDCGScorer`, :func:`make_ranking_scorer`)
are called as ``scorer(estimator, X, y, groups=qid)`` and request ``groups``
through scikit-learn's metadata routing, so that model selection scores each
test fold query by query.

Examples
--------
>>> import numpy as np
>>> from sklearn.linear_model import LinearRegression
>>> from sklearn_ltr.metrics import ndcg_score, ndcg_scorer
>>> X = np.array([[0.0], [1.0], [2.0], [0.0], [3.0]])
>>> y = np.array([0, 1, 2, 1, 0])
>>> qid = np.array([1, 1, 1, 2, 2])
>>> model = LinearRegression().fit(X, y)

The model ranks query 1 perfectly (NDCG 1) and puts the relevant document of
query 2 second (NDCG :math:`1 / \log_2 3`):

>>> round(ndcg_scorer(model, X, y, groups=qid), 4)  # (1 + 0.6309) / 2
0.8155
>>> round(ndcg_score(y, model.predict(X), qid, k=10), 4)  # the same value
0.8155

The registry names every metric that the scorers and the significance tests accept:

>>> from sklearn_ltr.metrics import METRICS
>>> list(METRICS)
['ndcg', 'dcg', 'map', 'precision', 'mrr', 'err', 'swapped_pairs', 'ips_dcg', 'ips_ndcg']
>>> METRICS["swapped_pairs"].higher_is_better, METRICS["ndcg"].empty_value
(False, 1.0)
"""

from sklearn_ltr.metrics import _registry, _scorer
from sklearn_ltr.metrics._binary import average_precision_score, mrr_score, precision_at_k
from sklearn_ltr.metrics._cascade import err_score
from sklearn_ltr.metrics._click_models import click_log_likelihood, click_perplexity
from sklearn_ltr.metrics._dcg import dcg_score, ndcg_per_query, ndcg_score
from sklearn_ltr.metrics._evaluator import RankingEvaluator
from sklearn_ltr.metrics._ips import ips_dcg_per_query, ips_dcg_score, ips_ndcg_per_query, ips_ndcg_score
from sklearn_ltr.metrics._pairs import swapped_pairs
from sklearn_ltr.metrics._registry import (
    Metric,
    get_metric,
    parse_metric,
    register_metric,
    unregister_metric,
)
from sklearn_ltr.metrics._report import plot_comparison, write_comparison_report
from sklearn_ltr.metrics._scorer import NDCGScorer, RankingScorer, ips_ndcg_scorer, make_ranking_scorer
from sklearn_ltr.metrics._significance import (
    SignificanceResult,
    SignificanceTable,
    compare_rankings,
    paired_significance,
)

# Bound here, with a ``#:`` comment, so that autodoc documents it as ``sklearn_ltr.metrics.ndcg_scorer``.

#: NDCGScorer: the NDCG@10 scorer, ``NDCGScorer(k=10)``, for ``scoring=`` in model
#: selection: exponential gain, LightGBM's convention for queries without a relevant
#: document (NDCG 1) and tie-averaging. Its value equals a ranker's ``score``.
ndcg_scorer = _scorer.ndcg_scorer

#: Mapping: the registry of metrics, a read-only view of canonical name -> :class:`Metric`
#: in registration order; :func:`register_metric` adds one, :func:`get_metric` looks a name up.
METRICS = _registry.METRICS

__all__ = [
    "METRICS",
    "Metric",
    "NDCGScorer",
    "RankingEvaluator",
    "RankingScorer",
    "SignificanceResult",
    "SignificanceTable",
    "average_precision_score",
    "click_log_likelihood",
    "click_perplexity",
    "compare_rankings",
    "dcg_score",
    "err_score",
    "get_metric",
    "ips_dcg_per_query",
    "ips_dcg_score",
    "ips_ndcg_per_query",
    "ips_ndcg_score",
    "ips_ndcg_scorer",
    "make_ranking_scorer",
    "mrr_score",
    "ndcg_per_query",
    "ndcg_score",
    "ndcg_scorer",
    "paired_significance",
    "parse_metric",
    "plot_comparison",
    "precision_at_k",
    "register_metric",
    "swapped_pairs",
    "unregister_metric",
    "write_comparison_report",
]

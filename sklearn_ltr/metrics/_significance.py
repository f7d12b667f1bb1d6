r"""Paired significance tests between rankers evaluated on the same queries.

Two rankers scored on the same queries give paired per-query values of a metric,
:math:`a_q` (the baseline) and :math:`b_q` (the other system). Every test here works on
the per-query differences :math:`d_q = b_q - a_q`, :math:`q = 1 \dots n`:

- the paired Student t-test (equal to ``scipy.stats.ttest_rel``);
- the two-sided randomization (sign-flip permutation) test of Fisher's sharp null
  hypothesis, which Smucker, Allan and Carterette (2007) recommend for IR evaluation;
- a percentile bootstrap confidence interval of the mean difference, resampling
  queries (Efron and Tibshirani, 1993);
- optionally Holm's (1979) or Bonferroni's correction of the p-values across the
  systems compared with one baseline.

Resampling is vectorised: random draws come in chunks of about a million entries, so
10,000 queries by 10,000 resamples take a fraction of a second and bounded memory.
The randomization test sums each resample's signed differences from a table of the
256 signed sums of every block of 8 queries, indexed by one random byte per block
(one gather per 8 queries instead of 8 multiply-adds; blocks of 4 queries beyond
131,072 queries, to keep the table small).

Each system's differences are put in sorted order before resampling, so that, for a
given ``random_state``, the result depends only on the multiset of differences: it
is the same whatever the row order, the query ids and the other systems compared.

This module holds the two entry points; the checks of their arguments are in
``_significance_inputs``, the statistics in ``_significance_stats``, the result classes (and
their text and HTML forms) in ``_significance_results``.
"""

from __future__ import annotations

import numpy as np

from sklearn_ltr._groups import QueryGroups
from sklearn_ltr._validation import check_relevance, check_scores
from sklearn_ltr.metrics._evaluator import RankingEvaluator
from sklearn_ltr.metrics._registry import get_metric, is_builtin
from sklearn_ltr.metrics._significance_inputs import (
    TESTS,
    check_per_query,
    check_test_options,
    normalise_tests,
    split_systems,
)
from sklearn_ltr.metrics._significance_results import SignificanceResult, SignificanceTable
from sklearn_ltr.metrics._significance_stats import paired_statistics

__all__ = ["SignificanceResult", "SignificanceTable", "compare_rankings", "paired_significance"]


def _table(baseline, others, names, *, metric, tests, n_resamples, confidence_level, correction, random_state):
    """The tests on validated per-query values, ``baseline`` (n,) and ``others`` (n_systems, n), as a table."""
    tests = normalise_tests(tests)
    fields = paired_statistics(baseline, others, tests=tests, n_resamples=n_resamples,
                               confidence_level=confidence_level, correction=correction, random_state=random_state)
    results = [
        SignificanceResult(system=name, **{key: values[j] for key, values in fields.items()})
        for j, name in enumerate(names)
    ]
    return SignificanceTable(
        results, metric=metric, tests=tests, n_resamples=n_resamples,
        confidence_level=confidence_level, correction=correction,
        baseline_values=baseline, values=others,
    )


def paired_significance(
    baseline,
    others,
    *,
    tests=TESTS,
    n_resamples=10_000,
    confidence_level=0.95,
    correction=None,
    random_state=None,
):
    r"""Paired significance tests of one or more systems against a baseline, from per-query values.

    Works on the per-query values of any metric, one value per query, the same queries
    in the same order for every system (e.g. from
    :func:`~sklearn_ltr.metrics.ndcg_per_query`). With :math:`a_q` the baseline's value of
    query :math:`q`, :math:`b_q` the system's and :math:`d_q = b_q - a_q`:

    **Paired t-test.** :math:`t = \bar d / (s_d / \sqrt{n})` with
    :math:`s_d^2 = \frac{1}{n-1} \sum_q (d_q - \bar d)^2`, and the two-sided p-value
    :math:`2\, P(T_{n-1} \ge |t|)`: ``scipy.stats.ttest_rel(b, a)``. When every
    :math:`d_q` is 0 the result is :math:`t = 0`, :math:`p = 1` (scipy gives NaN).

    **Randomization test** (sign flips; Fisher's sharp null: the two systems are
    exchangeable on every query). :math:`T(s) = \sum_q s_q d_q` for sign vectors
    :math:`s \in \{-1, 1\}^n`; with :math:`B` = ``n_resamples`` uniform random
    :math:`s^{(1)}, \dots, s^{(B)}`,

    .. math::
        p = \frac{1 + \#\{i : |T(s^{(i)})| \ge |T(\mathbf{1})|\}}{1 + B},

    never 0 (Phipson and Smyth, 2010). When :math:`2^n \le B` every sign vector is
    enumerated instead and :math:`p = \#\{s : |T(s)| \ge |T(\mathbf{1})|\} / 2^n`,
    the exact value. Statistics equal up to float rounding (within
    :math:`10^{-12} \sum_q |d_q|`) count as extreme.

    **Percentile bootstrap** (Efron and Tibshirani, 1993, ch. 13). :math:`B` resamples
    of :math:`n` queries drawn with replacement give means
    :math:`\bar d^{*(1)}, \dots, \bar d^{*(B)}`; the interval is their
    :math:`\alpha/2` and :math:`1 - \alpha/2` quantiles, :math:`\alpha = 1 -`
    ``confidence_level``.

    **Corrections** over the :math:`m` systems compared with the baseline, separately
    for each test: Bonferroni :math:`\tilde p_j = \min(1, m\, p_j)`; Holm's step-down,
    with the p-values sorted :math:`p_{(1)} \le \dots \le p_{(m)}`,
    :math:`\tilde p_{(i)} = \min\{1, \max_{j \le i} (m - j + 1)\, p_{(j)}\}` (monotone
    in :math:`i`, and never above Bonferroni's).

    Smucker, Allan and Carterette (2007) found the t-test, the randomization test and
    the bootstrap to agree closely on TREC runs, and recommend the randomization test.

    Parameters
    ----------
    baseline : array-like of shape (n_queries,)
        Per-query metric values of the baseline; finite, at least 2 queries.
    others : array-like of shape (n_queries,) or (n_systems, n_queries), dict or DataFrame
        Per-query values of the systems to compare with the baseline, same queries in
        the same order: one array, a sequence of arrays (named 0, 1, ...), a dict
        ``{name: values}`` or a data frame with one column per system.
    tests : str or collection of str, default=("t-test", "randomization", "bootstrap")
        The tests to run, among ``"t-test"``, ``"randomization"`` and ``"bootstrap"``.
    n_resamples : int, default=10_000
        Random sign vectors of the randomization test, and resamples of the bootstrap.
        The Monte-Carlo standard error of a p-value :math:`p` is about
        :math:`\sqrt{p (1 - p) / B}` (0.002 at :math:`p = 0.05`, :math:`B = 10^4`).
    confidence_level : float, default=0.95
        Confidence level of the bootstrap interval, in (0, 1).
    correction : {"holm", "bonferroni"} or None, default=None
        Correction of the p-values for the number of systems compared with the
        baseline, in the ``*_adjusted`` fields; the raw p-values are kept.
    random_state : int, numpy.random.Generator, RandomState instance or None, default=None
        Seeds the randomization test and the bootstrap (two independent streams, so
        that running one test or both gives the same values). The draws do not depend
        on the number of systems; each system's differences are resampled in sorted
        order, so a result is the same whatever the order of the queries.

    Returns
    -------
    table : SignificanceTable
        One :class:`SignificanceResult` per system, in the order of ``others``.

    Raises
    ------
    ValueError
        When an array is not 1-D, has NaN or infinite values, a length different
        from ``baseline``'s, fewer than 2 queries, or ``others`` is empty; the
        message names the argument.
    InvalidParameterError
        When ``tests``, ``n_resamples``, ``confidence_level``, ``correction`` or
        ``random_state`` is not one of the values above (a ``ValueError``).

    See Also
    --------
    compare_rankings : The same tests from relevance labels and scores.

    References
    ----------
    M. D. Smucker, J. Allan and B. Carterette. "A comparison of statistical
    significance tests for information retrieval evaluation." CIKM 2007.

    S. Holm. "A simple sequentially rejective multiple test procedure."
    Scandinavian Journal of Statistics 6(2), 65-70, 1979.

    B. Efron and R. J. Tibshirani. *An Introduction to the Bootstrap*. Chapman &
    Hall, 1993.

    B. Phipson and G. K. Smyth. "Permutation p-values should never be zero."
    Statistical Applications in Genetics and Molecular Biology 9(1), 2010.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ltr.metrics import paired_significance
    >>> rng = np.random.default_rng(0)
    >>> baseline = rng.uniform(0.2, 0.8, size=50)
    >>> others = {"better": baseline + rng.normal(0.05, 0.1, size=50),
    ...           "same": baseline + rng.normal(0.0, 0.1, size=50)}
    >>> table = paired_significance(baseline, others, correction="holm", random_state=0)
    >>> table
    per-query values over 50 queries, baseline mean 0.5161, 10000 resamples
    p-values Holm-corrected over 2 systems
    system  mean    difference  95% CI              t-test p (holm)  randomization p (holm)
    better  0.5694  +0.0533     [+0.0256, +0.0815]  0.0011           0.0020
    same    0.5188  +0.0027     [-0.0238, +0.0289]  0.8440           0.8418

    The raw p-values are kept; Holm multiplies the smallest of the 2 by 2:

    >>> r = table["better"]
    >>> round(r.t_pvalue, 6), round(r.t_pvalue_adjusted, 6)  # scipy.stats.ttest_rel(others["better"], baseline)
    (0.000543, 0.001086)
    """
    check_test_options("paired_significance", tests=tests, n_resamples=n_resamples,
                       confidence_level=confidence_level, correction=correction, random_state=random_state)
    baseline = check_per_query(baseline, "baseline")
    if baseline.shape[0] < 2:
        raise ValueError(f"baseline has {baseline.shape[0]} value(s); a paired test needs at least 2 queries.")
    names, systems, labels = split_systems(others)
    others = np.stack([check_per_query(v, label, baseline.shape[0]) for v, label in zip(systems, labels, strict=True)])
    return _table(
        baseline, others, names, metric=None, tests=tests, n_resamples=n_resamples,
        confidence_level=confidence_level, correction=correction, random_state=random_state,
    )


def compare_rankings(
    y_true,
    baseline,
    others,
    groups,
    *,
    metric="ndcg",
    k=10,
    tests=TESTS,
    n_resamples=10_000,
    confidence_level=0.95,
    correction=None,
    random_state=None,
    **metric_params,
):
    r"""Compare the rankings of one or more systems with a baseline's, with significance tests.

    Evaluates every system's scores with a ranking metric query by query (vectorised,
    with the conventions of the metric's public function, e.g.
    :func:`~sklearn_ltr.metrics.ndcg_score`), then runs the paired tests of
    :func:`paired_significance` on the per-query values: for each system, the mean
    difference *system minus baseline*, the paired t-test and randomization-test
    p-values, and a percentile bootstrap confidence interval of the mean difference
    (see :func:`paired_significance` for the formulas).

    Queries whose value is undefined (no relevant document with ``empty_value=None``
    for ``"ndcg"`` and ``"map"``) are left out of every comparison: they depend on the
    labels only, so they are the same queries for every system.

    The counterfactual metrics ``"ips_dcg"`` and ``"ips_ndcg"`` compare rankers on a click
    log instead of labels: ``y_true`` holds the clicks and ``propensity=`` the examination
    propensity of each logged row (see :func:`~sklearn_ltr.metrics.ips_dcg_per_query`).

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Relevance grades of the rows, shared by all systems.
    baseline : array-like of shape (n_samples,)
        The baseline's scores of the rows; finite, a higher score ranks higher.
    others : array-like of shape (n_samples,) or (n_systems, n_samples), dict or DataFrame
        Scores of the systems to compare with the baseline, for the same rows: one
        array, a sequence of arrays (named 0, 1, ...), a dict ``{name: scores}`` or a
        data frame with one column per system.
    groups : array-like of shape (n_samples,)
        Query id of each row (integers or strings, any order); at least 2 queries.
    metric : str, default="ndcg"
        A metric of :data:`~sklearn_ltr.metrics.METRICS` with per-query values:
        ``"ndcg"`` (:func:`~sklearn_ltr.metrics.ndcg_score`),
        ``"dcg"`` (:func:`~sklearn_ltr.metrics.dcg_score`),
        ``"map"`` (:func:`~sklearn_ltr.metrics.average_precision_score`),
        ``"precision"`` (:func:`~sklearn_ltr.metrics.precision_at_k`),
        ``"mrr"`` (:func:`~sklearn_ltr.metrics.mrr_score`),
        ``"err"`` (:func:`~sklearn_ltr.metrics.err_score`),
        ``"ips_dcg"`` (:func:`~sklearn_ltr.metrics.ips_dcg_score`),
        ``"ips_ndcg"`` (:func:`~sklearn_ltr.metrics.ips_ndcg_score`), an alias or a registered metric.
    k : int or None, default=10
        The metric's cut-off; ``None`` uses whole lists (not for ``"precision"``).
    tests : str or collection of str, default=("t-test", "randomization", "bootstrap")
        The tests to run.
    n_resamples : int, default=10_000
        Sign vectors of the randomization test, and resamples of the bootstrap.
    confidence_level : float, default=0.95
        Confidence level of the bootstrap interval, in (0, 1).
    correction : {"holm", "bonferroni"} or None, default=None
        Correction of the p-values across the systems compared with the baseline.
    random_state : int, numpy.random.Generator, RandomState instance or None, default=None
        Seeds the resampling tests.
    **metric_params
        Further options of the metric, e.g. ``gain="linear"``, ``empty_value=0.0``,
        ``ties="stable"`` for ``"ndcg"``, ``max_grade=4`` for ``"err"``, ``clip=0.1`` for
        ``"ips_ndcg"``; and the per-row inputs of a metric that needs them
        (the ``inputs`` of its :class:`~sklearn_ltr.metrics.Metric`): ``propensity=`` for
        ``"ips_dcg"`` and ``"ips_ndcg"``, one examination propensity per row.

    Returns
    -------
    table : SignificanceTable
        One :class:`SignificanceResult` per system; ``table.metric`` names the metric
        (e.g. ``"ndcg@10"``) and ``table.baseline_mean`` equals the public metric of the
        baseline's scores.

    Raises
    ------
    ValueError
        When the scores of ``baseline`` or of a system in ``others`` have NaN or a
        length different from ``y_true``'s, ``groups`` does not match, or fewer than 2
        queries are compared; the message names the argument.
    InvalidParameterError
        When ``metric``, ``k``, a metric option, ``tests``, ``n_resamples``,
        ``confidence_level``, ``correction`` or ``random_state`` is invalid (a
        ``ValueError``).
    TypeError
        When ``metric_params`` has an option that the metric does not take, or lacks a
        per-row input that it needs (``propensity`` for the counterfactual metrics).

    See Also
    --------
    paired_significance : The same tests on per-query values of any metric.

    References
    ----------
    M. D. Smucker, J. Allan and B. Carterette. "A comparison of statistical
    significance tests for information retrieval evaluation." CIKM 2007.

    S. Holm. "A simple sequentially rejective multiple test procedure."
    Scandinavian Journal of Statistics 6(2), 65-70, 1979.

    B. Efron and R. J. Tibshirani. *An Introduction to the Bootstrap*. Chapman &
    Hall, 1993.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ltr.metrics import compare_rankings, ndcg_score
    >>> rng = np.random.default_rng(0)
    >>> qid = np.repeat(np.arange(200), 10)
    >>> y = rng.integers(0, 3, size=qid.size)
    >>> noise = rng.normal(size=(3, qid.size))
    >>> baseline = y + 2.0 * noise[0]
    >>> others = {"better": y + 1.0 * noise[1], "noisier": y + 3.0 * noise[2]}
    >>> table = compare_rankings(y, baseline, others, qid, metric="ndcg", k=10,
    ...                          correction="holm", random_state=0)
    >>> table.metric, table.n_queries, table.baseline_mean == ndcg_score(y, baseline, qid, k=10)
    ('ndcg@10', 200, True)
    >>> r = table["better"]
    >>> r.mean_difference > 0, r.t_pvalue_adjusted < 0.05, r.randomization_pvalue_adjusted < 0.05
    (True, True, True)
    >>> bool(r.ci_low > 0)
    True

    On a click log, the counterfactual NDCG compares the same rankers without labels:

    >>> from sklearn_ltr.datasets import observation_propensity, simulate_clicks
    >>> positions, clicks = simulate_clicks(y, qid, w=0.5, random_state=0)
    >>> table = compare_rankings(clicks, baseline, others, qid, metric="ips_ndcg", k=10,
    ...                          propensity=observation_propensity(positions), random_state=0)
    >>> table.metric, bool(table["better"].mean_difference > 0)
    ('ips_ndcg@10', True)
    """
    record = get_metric(metric, per_query=True, owner="compare_rankings", parameter="metric")
    check_test_options("compare_rankings", tests=tests, n_resamples=n_resamples,
                       confidence_level=confidence_level, correction=correction, random_state=random_state)
    # Per-row inputs (a click log's propensities) travel with the options but are not options.
    inputs = {name: metric_params.pop(name) for name in record.inputs if name in metric_params}
    record.check_inputs("compare_rankings", inputs)
    options = {"k": k, **metric_params} if record.takes_k else dict(metric_params)
    record.check_options("compare_rankings", options)
    per_query = record.per_query

    y_true = check_relevance(y_true, name="y_true")
    n_samples = y_true.shape[0]
    # Validates groups before any scoring; every ranker is then scored on this one grouping.
    if is_builtin(record):
        evaluator = RankingEvaluator(y_true, groups)
        y_true, groups = evaluator.y_true, evaluator
    else:
        QueryGroups(groups, n_samples, against="y_true")
    baseline = check_scores(baseline, n_samples, name="baseline")
    names, systems, labels = split_systems(others)
    systems = [check_scores(scores, n_samples, name=label) for scores, label in zip(systems, labels, strict=True)]

    base_values = per_query(y_true, baseline, groups, **inputs, **options)
    other_values = np.stack([per_query(y_true, scores, groups, **inputs, **options) for scores in systems])
    defined = ~np.isnan(base_values)
    if defined.sum() < 2:
        raise ValueError(
            f"groups has {defined.size} queries, {int(defined.sum())} of them with a defined {record.name} "
            f"(a relevant document, with empty_value=None); a paired test needs at least 2 queries."
        )
    label = record.spelling(k if record.takes_k else None)
    return _table(
        base_values[defined], other_values[:, defined], names, metric=label, tests=tests,
        n_resamples=n_resamples, confidence_level=confidence_level, correction=correction,
        random_state=random_state,
    )

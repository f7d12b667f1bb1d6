"""Results of the significance tests: one :class:`SignificanceResult` per system, in a :class:`SignificanceTable`."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from numbers import Integral

import numpy as np

# The report renders a table: the table imports it (for to_html), it does not import the table.
from sklearn_ltr.metrics._report import _format_p, _page, write_comparison_report

__all__ = ["SignificanceResult", "SignificanceTable"]


def _read_only(values):
    if values is None:
        return None
    values = np.array(values, dtype=np.float64)
    values.flags.writeable = False
    return values


@dataclass(frozen=True)
class SignificanceResult:
    r"""One system compared with the baseline: mean difference, p-values, confidence interval.

    A row of the :class:`SignificanceTable` that :func:`compare_rankings` and
    :func:`paired_significance` return. Differences are *system minus baseline*,
    so a positive ``mean_difference`` means the system scores higher. A field of a
    test that was not run is ``None``.

    Attributes
    ----------
    system : object
        The system's name: its key in ``others``, or its position there.
    n_queries : int
        Number of paired queries compared.
    baseline_mean : float
        Mean of the baseline's per-query values.
    mean : float
        Mean of the system's per-query values.
    mean_difference : float
        :math:`\bar d = \frac{1}{n} \sum_q (b_q - a_q)`, ``mean - baseline_mean``.
    t_statistic : float or None
        Paired t statistic :math:`\bar d / (s_d / \sqrt{n})` (``ttest_rel(system, baseline)``);
        0 when every difference is 0.
    t_pvalue : float or None
        Two-sided p-value of the paired t-test.
    randomization_pvalue : float or None
        Two-sided p-value of the sign-flip randomization test, never 0.
    ci_low, ci_high : float or None
        Percentile bootstrap confidence interval of the mean difference.
    t_pvalue_adjusted, randomization_pvalue_adjusted : float or None
        The p-values after the Holm or Bonferroni correction across the systems
        compared with the baseline; ``None`` when ``correction=None``.

    Examples
    --------
    >>> from sklearn_ltr.metrics import paired_significance
    >>> table = paired_significance([0.2, 0.5, 0.4, 0.6], {"new": [0.3, 0.7, 0.4, 0.9]},
    ...                             tests="t-test")
    >>> result = table["new"]
    >>> round(result.mean_difference, 4), round(result.t_pvalue, 4)
    (0.15, 0.1027)
    >>> result.randomization_pvalue is None  # not requested
    True
    """

    system: object
    n_queries: int
    baseline_mean: float
    mean: float
    mean_difference: float
    t_statistic: float | None = None
    t_pvalue: float | None = None
    randomization_pvalue: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    t_pvalue_adjusted: float | None = None
    randomization_pvalue_adjusted: float | None = None

    def to_dict(self):
        """The fields as a dict.

        Returns
        -------
        fields : dict
            Field name -> value, in declaration order.

        Examples
        --------
        >>> from sklearn_ltr.metrics import SignificanceResult
        >>> SignificanceResult("new", 2, 0.5, 0.75, 0.25).to_dict()["mean_difference"]
        0.25
        """
        return dataclasses.asdict(self)


class SignificanceTable(Sequence):
    """Systems compared with one baseline: a sequence of :class:`SignificanceResult`.

    Returned by :func:`compare_rankings` and :func:`paired_significance`; not meant to
    be built directly. Index it by position or by system name; :meth:`to_dict` gives
    columns (``pandas.DataFrame(table.to_dict())`` makes a data frame of it); its
    ``repr`` is a text table, with the corrected p-values when a correction was applied.

    Attributes
    ----------
    results : tuple of SignificanceResult
        One per system, in the order of ``others``.
    metric : str or None
        The metric compared, e.g. ``"ndcg@10"``; ``None`` for per-query values
        passed directly.
    n_queries : int
        Number of paired queries.
    baseline_mean : float
        Mean of the baseline's per-query values.
    tests : tuple of str
        The tests run.
    n_resamples : int
        Resamples of the randomization test and of the bootstrap.
    confidence_level : float
        Confidence level of the bootstrap interval.
    correction : {"holm", "bonferroni"} or None
        Correction applied to the p-values across the systems.
    baseline_values : ndarray of shape (n_queries,) or None
        The baseline's per-query values compared (queries in sorted query-id order for
        :func:`compare_rankings`, undefined queries left out), read-only.
    values : ndarray of shape (n_systems, n_queries) or None
        The systems' per-query values, a row per system in the order of ``results``,
        read-only. The per-query differences of system ``j`` are
        ``values[j] - baseline_values``.

    Examples
    --------
    >>> from sklearn_ltr.metrics import paired_significance
    >>> table = paired_significance([0.2, 0.5, 0.4, 0.6], {"new": [0.3, 0.7, 0.4, 0.9]},
    ...                             tests="t-test")
    >>> table
    per-query values over 4 queries, baseline mean 0.4250
    system  mean    difference  t-test p
    new     0.5750  +0.1500     0.1027
    >>> len(table), table[0] is table["new"]
    (1, True)
    >>> sorted(table.to_dict())[:3]
    ['baseline_mean', 'ci_high', 'ci_low']
    >>> table.values[0] - table.baseline_values  # the per-query differences of "new"
    array([0.1, 0.2, 0. , 0.3])
    """

    def __init__(self, results, *, metric, tests, n_resamples, confidence_level, correction,
                 baseline_values=None, values=None):
        self.results = tuple(results)
        self.metric = metric
        self.n_queries = self.results[0].n_queries
        self.baseline_mean = self.results[0].baseline_mean
        self.tests = tuple(tests)
        self.n_resamples = n_resamples
        self.confidence_level = confidence_level
        self.correction = correction
        self.baseline_values = _read_only(baseline_values)
        self.values = _read_only(values)

    def __len__(self):
        return len(self.results)

    def __getitem__(self, key):
        if isinstance(key, (Integral, slice)) and not isinstance(key, bool):
            return self.results[key]
        for result in self.results:
            if result.system == key:
                return result
        raise KeyError(f"no system named {key!r}; the systems are {[r.system for r in self.results]!r}.")

    def to_dict(self):
        """Columns of the table: field name -> list with one value per system.

        Returns
        -------
        columns : dict of list
            Every field of :class:`SignificanceResult`, ``None`` where a test was not run.

        Examples
        --------
        >>> from sklearn_ltr.metrics import paired_significance
        >>> table = paired_significance([0.2, 0.4, 0.6], [[0.3, 0.5, 0.7], [0.2, 0.4, 0.6]],
        ...                             tests="t-test")
        >>> columns = table.to_dict()
        >>> columns["system"], [round(v, 4) for v in columns["mean_difference"]]
        ([0, 1], [0.1, 0.0])
        """
        names = [field.name for field in dataclasses.fields(SignificanceResult)]
        return {name: [getattr(result, name) for result in self.results] for name in names}

    def to_html(self, path=None, *, baseline_name="baseline", title="Ranker comparison", description=None,
                alpha=0.05):
        """The comparison as a self-contained HTML page: this table, per-query difference plots, distributions.

        The page of :func:`~sklearn_ltr.metrics.write_comparison_report` for this table's
        metric; it needs matplotlib and loads nothing from the network.

        Parameters
        ----------
        path : str, path-like or None, default=None
            The HTML file to write (whole or not at all); None returns the page instead.
        baseline_name : str, default="baseline"
            The baseline's name in the table and figures.
        title : str, default="Ranker comparison"
            The page's title.
        description : str or None, default=None
            A line under the title.
        alpha : float, default=0.05
            p-values below it are marked significant.

        Returns
        -------
        page : str or None
            The HTML page when ``path`` is None, else None.

        Examples
        --------
        >>> from sklearn_ltr.metrics import paired_significance
        >>> table = paired_significance([0.2, 0.5, 0.4, 0.6], {"new": [0.3, 0.7, 0.4, 0.9]},
        ...                             tests="t-test")
        >>> page = table.to_html(baseline_name="old")
        >>> page.startswith("<!DOCTYPE html>"), page.count('<figure class="differences"')
        (True, 1)
        """
        if path is not None:
            write_comparison_report(self, path, baseline_name=baseline_name, title=title,
                                    description=description, alpha=alpha)
            return None
        return _page(self, baseline_name, title, description, alpha)

    def _header(self):
        what = self.metric or "per-query values"
        line = f"{what} over {self.n_queries} queries, baseline mean {self.baseline_mean:.4f}"
        if "randomization" in self.tests or "bootstrap" in self.tests:
            line += f", {self.n_resamples} resamples"
        if self.correction is not None and ("t-test" in self.tests or "randomization" in self.tests):
            line += f"\np-values {self.correction.capitalize()}-corrected over {len(self)} systems"
        return line

    def __repr__(self):
        suffix = f" ({self.correction})" if self.correction else ""
        columns = [("system", [str(r.system) for r in self.results]),
                   ("mean", [f"{r.mean:.4f}" for r in self.results]),
                   ("difference", [f"{r.mean_difference:+.4f}" for r in self.results])]
        if "bootstrap" in self.tests:
            columns.append((f"{self.confidence_level:.0%} CI",
                            [f"[{r.ci_low:+.4f}, {r.ci_high:+.4f}]" for r in self.results]))
        for test, field in (("t-test", "t_pvalue"), ("randomization", "randomization_pvalue")):
            if test in self.tests:
                if self.correction:
                    field += "_adjusted"
                columns.append((f"{test} p{suffix}", [_format_p(getattr(r, field)) for r in self.results]))
        widths = [max(len(title), *map(len, cells)) for title, cells in columns]
        rows = [[title for title, _ in columns]]
        rows += [list(row) for row in zip(*(values for _, values in columns), strict=True)]
        lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows]
        return "\n".join([self._header(), *lines])

"""``evaluate --metrics``: parse a list such as ``ndcg@10,map@10,mrr`` and compute it.

Each entry is a metric of :data:`sklearn_ltr.metrics.METRICS` with per-query values, spelled
as :func:`sklearn_ltr.metrics.parse_metric` reads it (``ndcg[@k]``, ``dcg[@k]``, ``map[@k]``,
``precision@k`` or ``p@k``, ``mrr[@k]``, ``err[@k]``, or a registered metric), case-insensitive.
Every value is the mean over queries with the library's defaults: exponential gain, and a
query without a relevant document (an *empty* query) scores 1 in NDCG and MAP (LightGBM's
convention) and 0 in the other metrics. ``--empty-queries zero`` counts empty queries as 0 in
every metric, ``drop`` leaves them out of every mean; the output says how many there are.
``evaluate`` and ``compare`` take the option alike (:func:`add_empty_queries_option`) and print the
same footnote (:func:`empty_query_note`).

On a click log (``--propensities`` or ``--propensity-curve``, :mod:`sklearn_ltr.cli._propensities`)
the labels are clicks and the counterfactual metrics ``ips_dcg[@k]`` and ``ips_ndcg[@k]`` get
each row's propensity (``inputs``) and ``--clip``; an empty query is one without a click.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sklearn_ltr.cli._errors import CLIError
from sklearn_ltr.metrics import Metric, parse_metric

__all__ = [
    "EMPTY_QUERY_RULES", "EvaluatedMetric", "add_empty_queries_option", "empty_queries", "empty_query_note",
    "metric_values", "parse_metrics",
]

#: ``--empty-queries`` choices: how a query without a relevant document counts in a mean.
EMPTY_QUERY_RULES = {
    "default": "each metric's own convention",
    "zero": "counted as 0 in every metric",
    "drop": "left out of every metric",
}


def add_empty_queries_option(parser):
    """The ``--empty-queries`` option of every command that reports metrics: one spelling, one meaning."""
    parser.add_argument("--empty-queries", choices=list(EMPTY_QUERY_RULES), default="default",
                        help="queries with no relevant document: each metric's convention (default: 1 in NDCG and "
                             "MAP, 0 in the others), 0 in every metric, or left out (drop)")


def empty_queries(y_true, groups):
    """Boolean mask, one entry per query in sorted query-id order: True where no label is above 0."""
    _, codes = np.unique(groups, return_inverse=True)
    return np.bincount(codes, weights=(np.asarray(y_true) > 0).astype(np.float64)) == 0


def empty_query_note(metrics, n_empty, n_queries, rule, *, counts=None, click_log=False):
    """The footnote of a metrics report: how many queries are empty, and how each metric counted them.

    ``counts``, ``[(file label, n_empty, n_queries)]``, describes several files at once (``train``'s
    training and validation files); then ``n_empty`` and ``n_queries`` are ignored. None when no
    query is empty. With ``click_log`` the labels are clicks: an empty query is one without a click.
    """
    counts = [("", n_empty, n_queries)] if counts is None else [c for c in counts if c[1]]
    if not any(n for _, n, _ in counts):
        return None
    head = " and ".join(f"{n:,} of {total:,}{' ' + label if label else ''} queries" for label, n, total in counts)
    head += " have no click" if click_log else " have no relevant document (label > 0)"
    if rule == "zero":
        return f"{head}: counted as 0 in every metric (--empty-queries zero)."
    if rule == "drop":
        return f"{head}: left out of every metric (--empty-queries drop)."
    ones = [m.label for m in metrics if (m.metric.empty_value or 0) == 1]
    zeros = [m.label for m in metrics if (m.metric.empty_value or 0) != 1]
    parts = []
    if ones:
        parts.append(f"{', '.join(ones)} count{'s' if len(ones) == 1 else ''} them as 1 (LightGBM's convention)")
    if zeros:
        parts.append(f"{', '.join(zeros)} as 0")
    return f"{head}: {' and '.join(parts)}; --empty-queries zero or drop treats every metric alike."


@dataclass(frozen=True)
class EvaluatedMetric:
    """One entry of ``--metrics``: a registered metric and its cut-off."""

    metric: Metric
    k: int | None

    @property
    def key(self):
        """Canonical name, e.g. ``ndcg@10`` (the JSON key)."""
        return self.metric.spelling(self.k)

    @property
    def label(self):
        """Display name, e.g. ``NDCG@10``."""
        return self.metric.label if self.k is None else f"{self.metric.label}@{self.k}"

    def options(self, empty="default", clip=None):
        """Keyword options of the metric that apply rule ``empty`` of :data:`EMPTY_QUERY_RULES` (``drop`` aside).

        ``zero`` sets ``empty_value=0.0`` where the metric has that option; a metric without
        it must already score an empty query 0 (DCG, precision, MRR, ERR do), else a ValueError.
        ``clip`` (``--clip``) goes to the metrics that have that option (the counterfactual ones).
        """
        options = {"k": self.k} if self.metric.takes_k else {}
        if clip is not None and "clip" in self.metric.options:
            options["clip"] = clip
        if empty == "zero":
            if "empty_value" in self.metric.options:
                options["empty_value"] = 0.0
            elif (self.metric.empty_value or 0) != 0:
                raise ValueError(f"{self.label} scores a query without a relevant document "
                                 f"{self.metric.empty_value:g} and has no empty_value option: --empty-queries zero "
                                 f"cannot apply to it; use default or drop")
        return options

    def __call__(self, y_true, y_score, groups, *, empty="default", inputs=None, clip=None):
        """The mean over queries; ``empty`` is a rule of :data:`EMPTY_QUERY_RULES`.

        ``inputs`` holds the per-row inputs of a metric that needs them (``{"propensity": ...}``).
        """
        inputs = {name: (inputs or {})[name] for name in self.metric.inputs}
        options = self.options(clip=clip)
        if empty == "default":
            return float(self.metric.score(y_true, y_score, groups, **inputs, **options))
        values = np.asarray(self.metric.per_query(y_true, y_score, groups, **inputs, **options), dtype=np.float64)
        is_empty = empty_queries(y_true, groups)
        if empty == "zero":
            values = np.where(is_empty, 0.0, values)
        else:
            values = values[~is_empty]
            if values.size == 0:
                raise ValueError("every query is empty (no label above 0): --empty-queries drop leaves none")
        return float(np.mean(values))


def metric_values(metrics, y_true, y_score, groups, *, empty, where, inputs=None, clip=None):
    """``{metric: mean}`` of :class:`EvaluatedMetric` entries under rule ``empty``; a CLIError names ``where``.

    The metrics validate the labels (finite, non-negative, ...): their ValueError is a user error.
    ``inputs`` and ``clip``: a click log's propensities and ``--clip``, for the metrics that take them.
    """
    values = {}
    for metric in metrics:
        try:
            values[metric] = metric(y_true, y_score, groups, empty=empty, inputs=inputs, clip=clip)
        except ValueError as err:
            raise CLIError(f"cannot compute {metric.label} on {where}: {err}") from err
        if not np.isfinite(values[metric]):
            raise CLIError(f"{metric.label} on {where} is {values[metric]} (labels up to {np.max(y_true):g}: too "
                           f"large for the gain 2**label - 1?).")
    return values


def parse_metrics(text, *, command="evaluate", click_log=False):
    """``"ndcg@10,map@10"`` into a list of :class:`EvaluatedMetric` (case-insensitive, duplicates dropped).

    With ``click_log`` the command has each row's propensity, so the counterfactual metrics are accepted;
    without, they are refused with a message that names the options giving propensities.
    """
    parsed = []
    for token in text.split(","):
        try:
            metric, k = parse_metric(token.strip().lower(), per_query=True, owner=f"sklearn-ltr {command}",
                                     parameter="--metrics")
        except ValueError as err:
            raise CLIError(f"--metrics {text!r}: {err}") from None
        if metric.inputs and not click_log:
            raise CLIError(f"--metrics {text!r}: {metric.spelling(k)} estimates a metric from a click log (the labels "
                           f"of --data are clicks) and needs each row's examination propensity: give --propensities "
                           f"FILE (one per data row), or --propensity-curve FILE (one per display position) with "
                           f"--positions FILE.")
        entry = EvaluatedMetric(metric, k)
        if entry not in parsed:
            parsed.append(entry)
    return parsed

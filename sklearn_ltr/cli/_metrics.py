"""``evaluate --metrics``: parse a list such as ``ndcg@10,map@10,mrr`` and compute it.

Each entry is a metric of :data:`sklearn_ltr.metrics.METRICS` with per-query values, spelled
as :func:`sklearn_ltr.metrics.parse_metric` reads it (``ndcg[@k]``, ``dcg[@k]``, ``map[@k]``,
``precision@k`` or ``p@k``, ``mrr[@k]``, ``err[@k]``, or a registered metric), case-insensitive.
Every value is the mean over queries with the library's defaults: exponential gain, and a
query without a relevant document scores 1 in NDCG and MAP (LightGBM's convention).
"""

from __future__ import annotations

from dataclasses import dataclass

from sklearn_ltr.cli._errors import CLIError
from sklearn_ltr.metrics import Metric, parse_metric

__all__ = ["EvaluatedMetric", "parse_metrics"]


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

    def __call__(self, y_true, y_score, groups):
        cutoff = {"k": self.k} if self.metric.takes_k else {}
        return float(self.metric.score(y_true, y_score, groups, **cutoff))


def parse_metrics(text):
    """``"ndcg@10,map@10"`` into a list of :class:`EvaluatedMetric` (case-insensitive, duplicates dropped)."""
    parsed = []
    for token in text.split(","):
        try:
            metric, k = parse_metric(token.strip().lower(), per_query=True, owner="sklearn-ltr evaluate",
                                     parameter="--metrics")
        except ValueError as err:
            raise CLIError(f"--metrics {text!r}: {err}") from None
        entry = EvaluatedMetric(metric, k)
        if entry not in parsed:
            parsed.append(entry)
    return parsed

"""``evaluate --metrics``: parse a list such as ``ndcg@10,map@10,mrr`` and compute it.

=================  ==========================================================  ============
name               metric (:mod:`sklearn_ltr.metrics`)                          cut-off
=================  ==========================================================  ============
``ndcg[@k]``       :func:`~sklearn_ltr.metrics.ndcg_score`                       optional
``dcg[@k]``        :func:`~sklearn_ltr.metrics.dcg_score`                        optional
``map[@k]``        :func:`~sklearn_ltr.metrics.average_precision_score`          optional
``precision@k``    :func:`~sklearn_ltr.metrics.precision_at_k` (alias ``p@k``)   required
``mrr[@k]``        :func:`~sklearn_ltr.metrics.mrr_score`                        optional
``err[@k]``        :func:`~sklearn_ltr.metrics.err_score`                        optional
=================  ==========================================================  ============

Every value is the mean over queries with the library's defaults: exponential gain, and a
query without a relevant document scores 1 in NDCG and MAP (LightGBM's convention).
"""

from __future__ import annotations

from dataclasses import dataclass

from sklearn_ltr.cli._errors import CLIError

__all__ = ["Metric", "parse_metrics"]

# name -> (function name in sklearn_ltr.metrics, display name, whether a cut-off is required)
_METRICS = {
    "ndcg": ("ndcg_score", "NDCG", False),
    "dcg": ("dcg_score", "DCG", False),
    "map": ("average_precision_score", "MAP", False),
    "precision": ("precision_at_k", "P", True),
    "mrr": ("mrr_score", "MRR", False),
    "err": ("err_score", "ERR", False),
}
_ALIASES = {"p": "precision", "prec": "precision", "ap": "map"}
VALID = "ndcg, ndcg@k, dcg, dcg@k, map, map@k, precision@k (or p@k), mrr, mrr@k, err, err@k"


@dataclass(frozen=True)
class Metric:
    """One entry of ``--metrics``."""

    name: str
    k: int | None

    @property
    def key(self):
        """Canonical name, e.g. ``ndcg@10`` (the JSON key)."""
        return self.name if self.k is None else f"{self.name}@{self.k}"

    @property
    def label(self):
        """Display name, e.g. ``NDCG@10``."""
        short = _METRICS[self.name][1]
        return short if self.k is None else f"{short}@{self.k}"

    def __call__(self, y_true, y_score, groups):
        from sklearn_ltr import metrics

        return float(getattr(metrics, _METRICS[self.name][0])(y_true, y_score, groups, k=self.k))


def parse_metrics(text):
    """``"ndcg@10,map@10"`` into a list of :class:`Metric` (case-insensitive, duplicates dropped)."""
    parsed = []
    for token in text.split(","):
        token = token.strip().lower()
        name, at, cutoff = token.partition("@")
        name = _ALIASES.get(name, name)
        if name not in _METRICS:
            raise CLIError(f"unknown metric {token!r} in --metrics {text!r}; valid metrics: {VALID}.")
        k = None
        if at:
            if not cutoff.isdigit() or int(cutoff) < 1:
                raise CLIError(f"metric {token!r}: the cut-off after '@' must be a positive integer (e.g. {name}@10).")
            k = int(cutoff)
        elif _METRICS[name][2]:
            raise CLIError(f"metric {token!r} needs a cut-off: {name}@k, e.g. {name}@10.")
        metric = Metric(name, k)
        if metric not in parsed:
            parsed.append(metric)
    return parsed

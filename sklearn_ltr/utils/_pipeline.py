"""The last step of a :class:`~sklearn.pipeline.Pipeline` (bottom layer, no ``sklearn_ltr`` import)."""

from __future__ import annotations

__all__ = ["final_estimator", "is_pipeline"]


def is_pipeline(estimator):
    """Whether ``estimator`` is a Pipeline-like object: a non-empty ``steps`` list and slicing."""
    steps = getattr(estimator, "steps", None)
    return isinstance(steps, list) and bool(steps) and hasattr(estimator, "__getitem__")


def final_estimator(estimator):
    """The estimator a Pipeline ends with (followed through nested pipelines), else ``estimator`` itself."""
    while is_pipeline(estimator):
        estimator = estimator.steps[-1][1]
    return estimator

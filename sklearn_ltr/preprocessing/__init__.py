"""Feature preprocessing for learning to rank."""

from sklearn_ltr.preprocessing._log1p import Log1pTransformer

__all__ = ["Log1pTransformer"]

"""Feature preprocessing for learning to rank."""

from sklearn_ltr.preprocessing._log1p import Log1pTransformer
from sklearn_ltr.preprocessing._query_normalizer import QueryNormalizer

__all__ = ["Log1pTransformer", "QueryNormalizer"]

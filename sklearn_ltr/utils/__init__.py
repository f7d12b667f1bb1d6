"""Utilities for ranker authors: ranker tags; in :mod:`sklearn_ltr.utils.estimator_checks`,
the public ranker contract suite; in :mod:`sklearn_ltr.utils.persistence`, the types to
trust when loading a skops file of a model (``TRUSTED_TYPES``, also importable from here).

Examples
--------
>>> from sklearn_ltr.utils import TRUSTED_TYPES
>>> "sklearn_ltr.rankers._dasalc.DASALCRanker" in TRUSTED_TYPES  # skops.io.load(path, trusted=TRUSTED_TYPES)
True
"""

from sklearn_ltr.utils._tags import RankerTags, Tags, get_ranker_tags
from sklearn_ltr.utils.persistence import TRUSTED_TYPES

__all__ = ["TRUSTED_TYPES", "RankerTags", "Tags", "get_ranker_tags"]

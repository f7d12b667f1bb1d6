"""Utilities for ranker authors: ranker tags and, in :mod:`sklearn_ltr.utils.estimator_checks`,
the public ranker contract suite."""

from sklearn_ltr.utils._tags import RankerTags, Tags, get_ranker_tags

__all__ = ["RankerTags", "Tags", "get_ranker_tags"]

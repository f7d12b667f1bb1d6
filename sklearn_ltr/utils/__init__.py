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

__all__ = ["TRUSTED_TYPES", "RankerTags", "Tags", "get_ranker_tags"]

# The bottom of the package (compat, tags, optional imports) lives in this package's private
# modules, which everything imports, before the registry of rankers has declared its types;
# TRUSTED_TYPES is read from persistence on first use (PEP 562), once they are declared.


def __getattr__(name):
    if name == "TRUSTED_TYPES":
        from sklearn_ltr.utils.persistence import TRUSTED_TYPES

        return TRUSTED_TYPES
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""The public rankers: thin scikit-learn estimators over their backends.

The neural rankers load torch and skorch; they are imported on first use (PEP 562), so
that ``from sklearn_ltr.rankers import LambdaMARTRanker`` loads neither.
"""

import importlib

# name -> private module that defines it
_LAZY = {
    "DASALCRanker": "_dasalc",
    "LambdaMARTRanker": "_lambdamart",
    "MissingPositionsWarning": "_two_tower",
    "RankNetRanker": "_ranknet",
    "RankingEnsemble": "_ensemble",
    "SetRankRanker": "_setrank",
    "TwoTowerDebiasedRanker": "_two_tower",
}

__all__ = sorted(_LAZY)


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))

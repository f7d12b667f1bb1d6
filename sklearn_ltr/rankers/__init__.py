"""The public rankers: thin scikit-learn estimators over their backends.

Every ranker is listed once, in ``sklearn_ltr/rankers/_registry.py``. The neural rankers
load torch and skorch; they are imported on first use (PEP 562), so that
``from sklearn_ltr.rankers import LambdaMARTRanker`` loads neither.

Examples
--------
>>> from sklearn_ltr.rankers import RANKERS
>>> [entry.cli_name for entry in RANKERS.values() if entry.cli_name]
['lambdamart', 'ranknet', 'dasalc', 'setrank', 'two-tower']
"""

from sklearn_ltr.rankers import _registry
from sklearn_ltr.rankers._registry import RankerEntry, register_ranker, unregister_ranker

#: dict of str to RankerEntry: every ranker of the package by class name, in registration
#: order; the package's exports, ``TRUSTED_TYPES``, the command line and the test suite read it.
RANKERS = _registry.RANKERS

__all__ = ["RANKERS", "RankerEntry", "register_ranker", "unregister_ranker"]
__all__ += _registry.exported_names()  # the registered rankers (and their warnings)
__all__.sort()


def __getattr__(name):
    try:
        value = _registry.load(name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    if name in __all__:
        globals()[name] = value  # later lookups skip __getattr__ (a ranker registered later is not cached)
    return value


def __dir__():
    return sorted(set(globals()) | set(_registry.exported_names()))

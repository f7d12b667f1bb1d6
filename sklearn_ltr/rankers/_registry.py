"""The one registry of rankers: every list of rankers in the package is read from here.

``sklearn_ltr`` and ``sklearn_ltr.rankers`` export the registered classes (imported on first
use, so that LambdaMART and the metrics load no torch), :data:`sklearn_ltr.utils.TRUSTED_TYPES`
lists their skops types, the command line offers the ones with a ``cli_name`` as ``--model``
choices, and the test suite runs the contract suite over each with its ``fast_params``.
Adding a ranker is one module that defines it plus one :func:`register_ranker` line below
(see the contributors' page of the docs). This module imports nothing heavy: classes are
named by their module path and loaded on demand.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field

from sklearn_ltr.utils._trusted_types import declare_trusted_types, withdraw_trusted_types

__all__ = ["PER_QUERY_WEIGHTS", "RANKERS", "RankerEntry", "exported_names", "load", "register_ranker",
           "unregister_ranker"]


@dataclass(frozen=True)
class RankerEntry:
    """One ranker of the package.

    Attributes
    ----------
    name : str
        Class name, exported from ``sklearn_ltr`` and ``sklearn_ltr.rankers``.
    module : str
        Module that defines it, e.g. ``"sklearn_ltr.rankers._ranknet"``.
    fast_params : dict or callable
        Small, fast settings for the test suite's contract checks (a callable returning
        them when they hold estimators).
    cli_name : str or None
        Its ``--model`` name on the command line, or None to leave it out.
    cli_preprocessing : str
        The command line's default ``--preprocessing`` for it.
    clicks : bool
        Trains on clicks with display positions (the command line then simulates clicks).
    neural : bool
        A torch model trained through :mod:`sklearn_ltr.training`.
    trusted_types : tuple of str
        Further types its skops file references (its net and torch module classes).
    also_exports : tuple of str
        Other public names its module defines (e.g. a warning class).
    expected_failed_checks : dict
        ``{check name: reason}`` of scikit-learn's estimator checks that cannot pass for it
        (the test suite marks them xfail, strict), e.g. ``PER_QUERY_WEIGHTS``.
    fast_variants : tuple of dict
        Further configurations the contract suite checks too, each a dict of parameters
        that override ``fast_params`` (e.g. ``{"objective": "rank_xendcg"}``).

    Examples
    --------
    >>> from sklearn_ltr.rankers import RANKERS
    >>> entry = RANKERS["RankNetRanker"]
    >>> entry.cli_name, entry.neural, entry.cls.__name__
    ('ranknet', True, 'RankNetRanker')
    """

    name: str
    module: str
    fast_params: object = field(default_factory=dict)
    cli_name: str | None = None
    cli_preprocessing: str = "none"
    clicks: bool = False
    neural: bool = False
    trusted_types: tuple = ()
    also_exports: tuple = ()
    expected_failed_checks: dict = field(default_factory=dict)
    fast_variants: tuple = ()

    @property
    def cls(self):
        """The ranker class (imports its module)."""
        return load(self.name)

    def make_fast(self):
        """An instance with ``fast_params``."""
        params = self.fast_params() if callable(self.fast_params) else self.fast_params
        return self.cls(**params)


#: Class name -> :class:`RankerEntry`, in registration order.
RANKERS = {}


def register_ranker(entry):
    """Add ``entry`` (a :class:`RankerEntry`) to the registry; its name must be new.

    Parameters
    ----------
    entry : RankerEntry
        The ranker to add.

    Returns
    -------
    entry : RankerEntry

    Examples
    --------
    >>> import sklearn_ltr
    >>> from sklearn_ltr.rankers import RankerEntry, register_ranker, unregister_ranker
    >>> _ = register_ranker(RankerEntry("MyLambdaMART", "sklearn_ltr.rankers._lambdamart"))
    >>> "MyLambdaMART" in dir(sklearn_ltr)
    True
    >>> unregister_ranker("MyLambdaMART")
    """
    taken = {entry.name, *entry.also_exports} & set(exported_names())
    if taken:
        raise ValueError(f"register_ranker: {sorted(taken)} already exported by a registered ranker.")
    if entry.cli_name is not None and any(other.cli_name == entry.cli_name for other in RANKERS.values()):
        raise ValueError(f"register_ranker: --model {entry.cli_name!r} is taken.")
    RANKERS[entry.name] = entry
    # utils.persistence lists these for skops; it sits below the rankers, so they are handed down.
    declare_trusted_types(entry.name, (f"{entry.module}.{entry.name}", *entry.trusted_types))
    return entry


def unregister_ranker(name):
    """Remove the ranker ``name`` from the registry (for tests that register a toy one).

    Examples
    --------
    >>> from sklearn_ltr.rankers import RANKERS, RankerEntry, register_ranker, unregister_ranker
    >>> _ = register_ranker(RankerEntry("Toy", "sklearn_ltr.rankers._lambdamart"))
    >>> unregister_ranker("Toy")
    >>> "Toy" in RANKERS
    False
    """
    del RANKERS[name]
    withdraw_trusted_types(name)


def exported_names():
    """``{public name: defining module}`` of every registered ranker and its other exports."""
    names = {}
    for entry in RANKERS.values():
        names[entry.name] = entry.module
        names.update(dict.fromkeys(entry.also_exports, entry.module))
    return names


def load(name):
    """The object ``name`` (a ranker or one of its ``also_exports``), importing its module."""
    module = exported_names().get(name)
    if module is None:
        raise AttributeError(name)
    return getattr(importlib.import_module(module), name)


def _neural(name, module, fast_params, cli_name, preprocessing, *, trusted, **kwargs):
    return RankerEntry(name, module, fast_params, cli_name, preprocessing, neural=True,
                       trusted_types=("sklearn_ltr.training._net.RankingNet", *trusted), **kwargs)


_NEURAL_FAST = {"max_epochs": 2, "random_state": 0}

_LIST_CONTEXT = (
    "list context: a document's score depends on the other documents of its query, and the check "
    "scores subsets of one query (groups=None) and compares them with the whole"
)
_PER_QUERY_WEIGHTS = (
    "sample_weight weighs whole queries (a ranking loss compares the documents of a query), while the "
    "check gives the rows of its single query different weights (or reads them as repetitions of rows)"
)
_OWN_TARGET = (
    "TwoTowerDebiasedRanker learns from 0/1 clicks; this check builds its target [1, 1, 2, 2, ...] itself, "
    "without the target hook through which the contract suite feeds clicks to the other checks"
)

#: scikit-learn's checks that every ranker with per-query ``sample_weight`` fails, with the reason.
PER_QUERY_WEIGHTS = dict.fromkeys(
    ["check_sample_weights_not_overwritten", "check_sample_weight_equivalence_on_dense_data"], _PER_QUERY_WEIGHTS
)


def _ensemble_fast():
    from sklearn_ltr.rankers._lambdamart import LambdaMARTRanker

    return {"estimator": LambdaMARTRanker(n_estimators=5, num_leaves=7, n_jobs=1), "n_estimators": 2,
            "random_state": 0}


register_ranker(RankerEntry(
    "LambdaMARTRanker", "sklearn_ltr.rankers._lambdamart",
    {"n_estimators": 5, "num_leaves": 7, "n_jobs": 1, "random_state": 0}, "lambdamart", "none",
    trusted_types=("lightgbm.sklearn.LGBMRanker", "lightgbm.basic.Booster", "collections.OrderedDict"),
    expected_failed_checks={**PER_QUERY_WEIGHTS,
                            "check_sample_weight_equivalence_on_sparse_data": _PER_QUERY_WEIGHTS},
    fast_variants=({"objective": "rank_xendcg"},)))
register_ranker(_neural(
    "RankNetRanker", "sklearn_ltr.rankers._ranknet", {"hidden_sizes": (8,), **_NEURAL_FAST}, "ranknet",
    "log1p-standardize", trusted=("sklearn_ltr.nn._mlp.MLPScorer",), expected_failed_checks=PER_QUERY_WEIGHTS))
register_ranker(_neural(
    "DASALCRanker", "sklearn_ltr.rankers._dasalc",
    {"hidden_size": 8, "n_layers": 1, "n_attention_layers": 1, "n_heads": 1, "head_size": 4, **_NEURAL_FAST},
    "dasalc", "none", trusted=("sklearn_ltr.nn._dasalc.DASALCNet",),
    expected_failed_checks={"check_methods_subset_invariance": _LIST_CONTEXT, **PER_QUERY_WEIGHTS}))
register_ranker(_neural(
    "SetRankRanker", "sklearn_ltr.rankers._setrank", {"d_model": 8, "n_blocks": 1, "n_heads": 2, **_NEURAL_FAST},
    "setrank", "log1p-standardize", trusted=("sklearn_ltr.nn._setrank.SetRankNet",),
    expected_failed_checks={"check_methods_subset_invariance": _LIST_CONTEXT, **PER_QUERY_WEIGHTS}))
register_ranker(_neural(
    "TwoTowerDebiasedRanker", "sklearn_ltr.rankers._two_tower", {"hidden_sizes": (8,), **_NEURAL_FAST},
    "two-tower", "log1p-standardize", clicks=True, also_exports=("MissingPositionsWarning",),
    trusted=("sklearn_ltr.rankers._two_tower._TwoTowerNet", "sklearn_ltr.nn._two_tower.TwoTowerScorer"),
    expected_failed_checks={**PER_QUERY_WEIGHTS, "check_sample_weights_pandas_series": _OWN_TARGET,
                            "check_sample_weights_not_an_array": _OWN_TARGET}))
register_ranker(RankerEntry("RankingEnsemble", "sklearn_ltr.rankers._ensemble", _ensemble_fast))

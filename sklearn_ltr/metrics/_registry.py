"""The one registry of ranking metrics: a :class:`Metric` record per metric, looked up by name.

The scorers, the significance tests, :mod:`sklearn_ltr.model_selection` and the command
line read it; adding a metric is one :func:`register_metric` call (or one entry of
``_BUILTIN`` below). Names are looked up, and spellings such as ``"ndcg@10"`` parsed, here
and nowhere else, so that an unknown name raises the same error everywhere.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from sklearn_ltr.metrics._binary import (
    _ap_per_query,
    _mrr_per_query,
    _precision_per_query,
    average_precision_score,
    mrr_score,
    precision_at_k,
)
from sklearn_ltr.metrics._cascade import _err_per_query, err_score
from sklearn_ltr.metrics._dcg import _dcg_per_query, dcg_score, ndcg_per_query, ndcg_score
from sklearn_ltr.metrics._ips import ips_dcg_per_query, ips_dcg_score, ips_ndcg_per_query, ips_ndcg_score
from sklearn_ltr.metrics._lists import RankedLists, mean_over_queries
from sklearn_ltr.metrics._pairs import swapped_pairs
from sklearn_ltr.metrics._params import CONSTRAINTS
from sklearn_ltr.utils._sklearn_compat import InvalidParameterError, check_parameters

__all__ = ["METRICS", "Metric", "get_metric", "is_builtin", "parse_metric", "register_metric", "unregister_metric"]


@dataclass(frozen=True, eq=False)
class Metric:
    """A ranking metric of the registry: its functions, options and conventions.

    Parameters
    ----------
    name : str
        Canonical name, e.g. ``"ndcg"``; with a cut-off it is spelled ``"ndcg@10"``.
    score : callable or None
        ``score(y_true, y_score, groups, **inputs, **options) -> float``, the value over all queries
        (the mean for every built-in metric but ``"swapped_pairs"``). None: the mean of
        ``per_query`` over the queries it does not leave out (NaN).
    per_query : callable or None
        ``per_query(y_true, y_score, groups, **inputs, **options) -> ndarray of shape (n_queries,)``,
        one value per query in sorted query-id order, NaN for a query left out; its mean
        is ``score``. None for a metric that is not a mean over queries (it is then not
        accepted where per-query values are needed: significance tests, LETOR folds,
        ``sklearn-ltr evaluate``). The options reach it already checked.
    options : mapping of str to list
        Keyword options of both functions, each with its scikit-learn constraints, e.g.
        ``{"k": [...], "gain": [...]}``; ``"k"`` (the cut-off) when the metric takes one.
    higher_is_better : bool, default=True
        False for a loss-like metric: the scorers then negate it, and model selection
        keeps the smallest value.
    empty_value : float or None, default=0.0
        The value of a query without a relevant document (all labels 0) by default, its
        ``empty_value`` option where the metric has one; None when such a query is left
        out.
    aliases : tuple of str, default=()
        Other accepted names, e.g. ``("p", "prec")``.
    label : str, default=None
        Display name in tables, e.g. ``"NDCG"``; None: ``name.upper()``.
    description : str, default=""
        One line on what it measures.
    inputs : tuple of str, default=()
        Per-row inputs beyond ``(y_true, y_score, groups)`` that both functions need, passed by
        keyword with one value per row: ``("propensity",)`` for the counterfactual metrics,
        whose ``y_true`` are the clicks of a log. A reader of the registry that cannot supply
        them refuses such a metric (``get_metric(..., inputs=())``); the scorers request them
        through metadata routing, as they request ``groups``.

    Attributes
    ----------
    takes_k : bool
        Whether the metric has a cut-off ``k``.
    requires_k : bool
        Whether the cut-off must be given (``k=None``, the whole list, is not allowed).

    See Also
    --------
    get_metric : The record of a registered name.
    register_metric : Add a metric to the registry.

    Examples
    --------
    >>> from sklearn_ltr.metrics import get_metric
    >>> ndcg = get_metric("ndcg")
    >>> ndcg.score.__name__, ndcg.higher_is_better, ndcg.empty_value, list(ndcg.options)
    ('ndcg_score', True, 1.0, ['k', 'gain', 'empty_value', 'ties'])
    >>> ndcg.per_query([2, 0, 1, 0], [0.5, 0.9, 0.1, 0.3], [1, 1, 2, 2], k=10).round(4)
    array([0.6309, 0.6309])
    >>> get_metric("precision").requires_k, ndcg.spelling(10)
    (True, 'ndcg@10')
    """

    name: str
    score: Callable | None
    per_query: Callable | None
    options: Mapping = field(default_factory=dict)
    higher_is_better: bool = True
    empty_value: float | None = 0.0
    aliases: tuple = ()
    label: str | None = None
    description: str = ""
    inputs: tuple = ()

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name or "@" in self.name:
            raise ValueError(f"a metric name must be a non-empty str without '@'; got {self.name!r}.")
        if self.score is None and self.per_query is None:
            raise ValueError(f"metric {self.name!r} needs a score or a per_query function (or both).")
        if self.score is None:
            object.__setattr__(self, "score", _mean_of(self.per_query))
        object.__setattr__(self, "options", MappingProxyType(dict(self.options)))
        object.__setattr__(self, "aliases", tuple(self.aliases))
        object.__setattr__(self, "inputs", tuple(self.inputs))
        clash = [name for name in self.inputs
                 if not isinstance(name, str) or not name.isidentifier() or name in self.options
                 or name in ("y_true", "y_score", "groups", "sample_weight")]
        if clash:
            raise ValueError(f"metric {self.name!r}: input {clash[0]!r} must be a new keyword name, not an option "
                             f"or one of y_true, y_score, groups, sample_weight.")
        if self.label is None:
            object.__setattr__(self, "label", self.name.upper())

    def __repr__(self):
        options = ", ".join(self.options) or "none"
        return (f"Metric({self.name!r}, options: {options}, higher_is_better={self.higher_is_better}, "
                f"empty_value={self.empty_value})")

    @property
    def takes_k(self):
        """Whether the metric has a cut-off ``k``."""
        return "k" in self.options

    @property
    def requires_k(self):
        """Whether a cut-off must be given (``k=None`` is not accepted)."""
        return self.takes_k and None not in self.options["k"]

    def spelling(self, k=None):
        """The name with its cut-off, ``"ndcg@10"``, or the bare name for ``k=None``."""
        return self.name if k is None else f"{self.name}@{k}"

    def check_inputs(self, owner, inputs):
        """Raise a ``TypeError`` naming ``owner`` when one of the metric's per-row ``inputs`` is missing.

        Parameters
        ----------
        owner : str
            The caller, named in the message.
        inputs : mapping of str to array-like
            The per-row inputs given; None values count as missing.
        """
        missing = [name for name in self.inputs if inputs.get(name) is None]
        if missing:
            raise TypeError(
                f"{owner}: the {self.name!r} metric needs {missing[0]}=..., one value per row of y_true "
                f"(for the counterfactual metrics, the examination propensity of each logged row, in (0, 1])."
            )

    def check_options(self, owner, options):
        """Check keyword options of the metric, naming ``owner`` in the error.

        Parameters
        ----------
        owner : str
            The caller, named in the message.
        options : dict
            Option name -> value, ``k`` included.

        Raises
        ------
        TypeError
            For an option the metric does not take; the message lists its options.
        InvalidParameterError
            For a value its constraints reject (a ``ValueError``).
        """
        unknown = [name for name in options if name not in self.options]
        if unknown:
            raise TypeError(
                f"{owner}: the {self.name!r} metric got an unexpected keyword argument {unknown[0]!r}; "
                f"its options are {list(self.options) or 'none'}."
            )
        check_parameters(owner, dict(self.options), options)


def _mean_of(per_query):
    def score(y_true, y_score, groups, **options):
        values = np.asarray(per_query(y_true, y_score, groups, **options), dtype=np.float64)
        return mean_over_queries(values, dropped=np.isnan(values))

    score.__name__ = f"mean_{getattr(per_query, '__name__', 'metric')}"
    return score


# ------------------------------------------------------------- per-query values of the built-ins
# One value per query, in sorted query-id order, with the conventions of the public metric:
# their mean over queries is that metric (tests check it).


def _ndcg_values(y_true, y_score, groups, **options):
    return ndcg_per_query(y_true, y_score, groups, **options)[1]


def _dcg_values(y_true, y_score, groups, *, k=None, gain="exponential", ties="average"):
    return _dcg_per_query(RankedLists(y_true, y_score, groups, stable=ties == "stable"), gain, k, ties)


def _ap_values(y_true, y_score, groups, **options):
    return _ap_per_query(y_true, y_score, groups, **options)[0]


def _ips_dcg_values(clicks, y_score, groups, *, propensity, **options):
    return ips_dcg_per_query(clicks, y_score, groups, propensity, **options)[1]


def _ips_ndcg_values(clicks, y_score, groups, *, propensity, **options):
    return ips_ndcg_per_query(clicks, y_score, groups, propensity, **options)[1]


def _swapped_fraction(y_true, y_score, groups):
    """Fraction of the pairs with different labels that are ranked against them."""
    return swapped_pairs(y_true, y_score, groups, normalize=True)


_BUILTIN = (
    Metric("ndcg", ndcg_score, _ndcg_values, CONSTRAINTS["ndcg_score"], empty_value=1.0, label="NDCG",
           description="normalised discounted cumulative gain"),
    Metric("dcg", dcg_score, _dcg_values, CONSTRAINTS["dcg_score"], label="DCG",
           description="discounted cumulative gain"),
    Metric("map", average_precision_score, _ap_values, CONSTRAINTS["average_precision_score"], empty_value=1.0,
           aliases=("ap",), label="MAP", description="mean average precision"),
    Metric("precision", precision_at_k, _precision_per_query, CONSTRAINTS["precision_at_k"],
           aliases=("p", "prec"), label="P", description="fraction of relevant documents in the top k"),
    Metric("mrr", mrr_score, _mrr_per_query, CONSTRAINTS["mrr_score"], label="MRR",
           description="reciprocal rank of the first relevant document"),
    Metric("err", err_score, _err_per_query, CONSTRAINTS["err_score"], label="ERR",
           description="expected reciprocal rank (cascade model)"),
    Metric("swapped_pairs", _swapped_fraction, None, {}, higher_is_better=False, empty_value=None,
           label="swapped", description="fraction of document pairs ranked against their labels"),
    # Counterfactual: y_true holds a click log's clicks, and each row's examination propensity comes too.
    Metric("ips_dcg", ips_dcg_score, _ips_dcg_values, CONSTRAINTS["ips_dcg_score"], label="IPS-DCG",
           description="DCG estimated from clicks by inverse propensity scoring (unbiased)",
           inputs=("propensity",)),
    Metric("ips_ndcg", ips_ndcg_score, _ips_ndcg_values, CONSTRAINTS["ips_ndcg_score"], empty_value=1.0,
           label="IPS-NDCG", description="NDCG estimated from clicks, self-normalised inverse propensity scoring",
           inputs=("propensity",)),
)

_REGISTRY = {metric.name: metric for metric in _BUILTIN}
_ALIASES = {alias: metric.name for metric in _BUILTIN for alias in metric.aliases}

#: Read-only view of the registry, canonical name -> :class:`Metric`, in registration order.
METRICS = MappingProxyType(_REGISTRY)


def is_builtin(metric):
    """Whether ``metric`` (a :class:`Metric`) is one of the package's own, whose functions take a prebuilt grouping.

    The package's metrics accept a :class:`~sklearn_ltr.metrics.RankingEvaluator` (or a
    ``QueryGroups``) as ``groups``; a metric registered outside it takes per-row ids only.
    """
    return any(metric is builtin for builtin in _BUILTIN)


def _spellings(per_query=False, inputs=None):
    """``"ndcg[@k], ..., precision@k (or p, prec), ..."``: the accepted names, for messages.

    With ``per_query=False`` every registered metric, those without per-query values marked;
    with ``inputs`` (a tuple), only those whose per-row inputs are among them.
    """
    words = []
    for metric in _REGISTRY.values():
        if per_query and metric.per_query is None:
            continue
        if inputs is not None and not set(metric.inputs) <= set(inputs):
            continue
        word = metric.name + ("@k" if metric.requires_k else "[@k]" if metric.takes_k else "")
        notes = [f"or {', '.join(metric.aliases)}"] if metric.aliases else []
        notes += ["no per-query values"] if metric.per_query is None else []
        notes += [f"needs {', '.join(metric.inputs)}"] if metric.inputs and inputs is None else []
        words.append(word + (f" ({'; '.join(notes)})" if notes else ""))
    return ", ".join(words)


def get_metric(name, *, per_query=False, owner="get_metric", parameter="name", inputs=None):
    """The registered :class:`Metric` of a name or alias.

    Parameters
    ----------
    name : str
        A name of :data:`METRICS` or an alias (``"p"``, ``"ap"``, ...), case-sensitive,
        without a cut-off (see :func:`parse_metric` for ``"ndcg@10"``).
    per_query : bool, default=False
        Accept only a metric with per-query values (not ``"swapped_pairs"``).
    owner, parameter : str, default="get_metric", "name"
        The caller and its argument, named in the error message.
    inputs : tuple of str, default=None
        The per-row inputs the caller can supply beyond ``(y_true, y_score, groups)``: a metric
        that needs another one (see the ``inputs`` of :class:`Metric`) is refused. ``()``:
        labels and scores only, which refuses the counterfactual metrics. None: no check.

    Returns
    -------
    metric : Metric

    Raises
    ------
    InvalidParameterError
        For an unknown name (a ``ValueError``; the message lists the known metrics), a
        name with a cut-off, with ``per_query=True`` a metric without per-query values, or a
        metric that needs a per-row input not in ``inputs``.

    Examples
    --------
    >>> from sklearn_ltr.metrics import get_metric
    >>> get_metric("p").name, get_metric("map").label
    ('precision', 'MAP')
    >>> get_metric("auc")
    Traceback (most recent call last):
    ...
    sklearn...InvalidParameterError: The 'name' parameter of get_metric must be a registered metric; got unknown
    metric 'auc'. A metric must be one of ndcg[@k], ...
    """
    key = _ALIASES.get(name, name) if isinstance(name, str) else None
    start = f"The {parameter!r} parameter of {owner} must be"
    if key not in _REGISTRY:
        if isinstance(name, str) and "@" in name and name.partition("@")[0] in (*_REGISTRY, *_ALIASES):
            raise InvalidParameterError(
                f"{start} a metric name without a cut-off; got {name!r}: pass the cut-off as k "
                f"(metric={name.partition('@')[0]!r}, k={name.partition('@')[2]})."
            )
        raise InvalidParameterError(
            f"{start} a registered metric; got unknown metric {name!r}. A metric must be one of "
            f"{_spellings()} (sklearn_ltr.metrics.METRICS; add one with register_metric)."
        )
    metric = _REGISTRY[key]
    if per_query and metric.per_query is None:
        raise InvalidParameterError(
            f"{start} a metric with per-query values; the {metric.name!r} metric has none. "
            f"A metric must be one of {_spellings(per_query=True)}."
        )
    if inputs is not None and not set(metric.inputs) <= set(inputs):
        needed = ", ".join(name for name in metric.inputs if name not in inputs)
        raise InvalidParameterError(
            f"{start} a metric that {owner} can compute; the {metric.name!r} metric also needs {needed} (one "
            f"value per row), which {owner} does not take. A metric must be one of "
            f"{_spellings(per_query=per_query, inputs=tuple(inputs))}."
        )
    return metric


def parse_metric(spelling, *, per_query=False, owner="parse_metric", parameter="spelling", inputs=None):
    """A metric and its cut-off from a spelling such as ``"ndcg@10"``, ``"map"`` or ``"p@5"``.

    Parameters
    ----------
    spelling : str
        A name or alias of :data:`METRICS`, optionally followed by ``@k`` with a positive
        integer ``k``; case-sensitive (callers lower-case user input first if they wish).
    per_query : bool, default=False
        Accept only a metric with per-query values.
    inputs : tuple of str, default=None
        The per-row inputs the caller can supply (see :func:`get_metric`); None: no check.
    owner, parameter : str, default="parse_metric", "spelling"
        The caller and its argument, named in the error message.

    Returns
    -------
    metric : Metric
    k : int or None
        The cut-off; None when the spelling has none.

    Raises
    ------
    InvalidParameterError
        For an unknown name (the message of :func:`get_metric`), a cut-off that is not a
        positive integer, a missing cut-off the metric requires, or one it does not take.

    Examples
    --------
    >>> from sklearn_ltr.metrics import parse_metric
    >>> metric, k = parse_metric("ndcg@10")
    >>> metric.name, k
    ('ndcg', 10)
    >>> parse_metric("p@5")[0].name, parse_metric("mrr")[1]
    ('precision', None)
    """
    name, at, cutoff = spelling.partition("@") if isinstance(spelling, str) else (spelling, "", "")
    metric = get_metric(name, per_query=per_query, owner=owner, parameter=parameter, inputs=inputs)
    start = f"The {parameter!r} parameter of {owner} got metric {spelling!r}"
    if not at:
        if metric.requires_k:
            raise InvalidParameterError(f"{start}, which needs a cut-off: {name}@k, e.g. {name}@10.")
        return metric, None
    if not metric.takes_k:
        raise InvalidParameterError(f"{start}: the {metric.name!r} metric takes no cut-off; spell it {name!r}.")
    if not cutoff.isdigit() or int(cutoff) < 1:
        raise InvalidParameterError(f"{start}: the cut-off after '@' must be a positive integer (e.g. {name}@10).")
    return metric, int(cutoff)


def register_metric(metric):
    """Add a metric to the registry, under its name and aliases.

    Every reader of the registry then accepts it: the scorers, :func:`compare_rankings`,
    :func:`~sklearn_ltr.model_selection.evaluate_letor_folds` and ``sklearn-ltr evaluate``
    (the last three if it has per-query values).

    Parameters
    ----------
    metric : Metric
        The record; its name and aliases must be new.

    Returns
    -------
    metric : Metric
        The same record.

    Raises
    ------
    ValueError
        When the name or an alias is already registered.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ltr.metrics import Metric, get_metric, register_metric, unregister_metric
    >>> def top_label(y_true, y_score, groups):  # label of each query's best-scored document
    ...     return np.array([0.0, 2.0])
    >>> register_metric(Metric("top_label", None, top_label))
    Metric('top_label', options: none, higher_is_better=True, empty_value=0.0)
    >>> get_metric("top_label").score([0, 2], [0.3, 0.5], [1, 2])
    1.0
    >>> unregister_metric("top_label")
    """
    if not isinstance(metric, Metric):
        raise TypeError(f"register_metric takes a sklearn_ltr.metrics.Metric; got {type(metric).__name__!r}.")
    taken = [name for name in (metric.name, *metric.aliases) if name in _REGISTRY or name in _ALIASES]
    if taken:
        raise ValueError(f"metric name {taken[0]!r} is already registered; unregister_metric({taken[0]!r}) first.")
    _REGISTRY[metric.name] = metric
    _ALIASES.update(dict.fromkeys(metric.aliases, metric.name))
    return metric


def unregister_metric(name):
    """Remove a metric, by name or alias, from the registry.

    Parameters
    ----------
    name : str
        A registered name or alias.

    Raises
    ------
    InvalidParameterError
        For an unknown name (the message of :func:`get_metric`).
    ValueError
        For a built-in metric, which stays registered.

    Examples
    --------
    >>> from sklearn_ltr.metrics import METRICS, Metric, register_metric, unregister_metric
    >>> _ = register_metric(Metric("always_one", None, lambda y_true, y_score, groups: [1.0]))
    >>> unregister_metric("always_one")
    >>> "always_one" in METRICS
    False
    """
    metric = get_metric(name, owner="unregister_metric")
    if any(metric is builtin for builtin in _BUILTIN):
        raise ValueError(f"{metric.name!r} is a built-in metric of sklearn_ltr; only registered ones can be removed.")
    del _REGISTRY[metric.name]
    for alias in metric.aliases:
        del _ALIASES[alias]


"""Loss registry: names (and aliases) to functions with their declared memory cost, and ``get_loss``.

Every loss is registered with :func:`register_loss`, which records its memory cost: how many
``[list, list]`` float32 tensors one list holds during a training step (forward and backward),
0 for a loss linear in the list length. The neural rankers' memory check reads that
declaration (:func:`pairwise_tensors`); a loss registered without one is refused.
"""

from __future__ import annotations

import functools
import inspect

from sklearn_ltr.losses._approx import approx_ndcg, gumbel_approx_ndcg
from sklearn_ltr.losses._hinge import hinge
from sklearn_ltr.losses._lambdaloss import lambdaloss
from sklearn_ltr.losses._listwise import attention_rank, listmle, softmax_cross_entropy
from sklearn_ltr.losses._mse import mean_squared_error
from sklearn_ltr.losses._neuralsort import gumbel_neuralsort_ndcg, neuralsort_ndcg
from sklearn_ltr.losses._pairwise import lambdarank, ranknet
from sklearn_ltr.losses._pointwise import sigmoid_cross_entropy

__all__ = ["ALIASES", "LOSSES", "LOSS_MEMORY", "get_loss", "pairwise_tensors", "register_loss", "unregister_loss"]

#: Canonical names of the losses (the DASALC paper's loss comparison, ListMLE, the LambdaLoss
#: framework, the pairwise hinge and the squared error), filled by
#: :func:`register_loss` below.
LOSSES = {}

#: Canonical name -> ``[list, list]`` float32 tensors per list in one training step (0: linear).
LOSS_MEMORY = {}

#: Other accepted spellings, each mapped to its canonical name.
ALIASES = {
    "pointwise": "sigmoid_ce",
    "sigmoid": "sigmoid_ce",
    "sigmoid_cross_entropy": "sigmoid_ce",
    "pairwise": "ranknet",
    "lambda": "lambdarank",
    "listnet": "softmax",
    "softmax_ce": "softmax",
    "softmax_cross_entropy": "softmax",
    "approxndcg": "approx_ndcg",
    "gumbel_approxndcg": "gumbel_approx_ndcg",
    "neural_ndcg": "neuralsort_ndcg",
    "neuralndcg": "neuralsort_ndcg",
    "gumbel_neural_ndcg": "gumbel_neuralsort_ndcg",
    "attrank": "attention_rank",
    "dlcm": "attention_rank",
    "list_mle": "listmle",
    "lambda_loss": "lambdaloss",
    "pairwise_hinge": "hinge",
    "ranksvm": "hinge",
    "rank_svm": "hinge",
    "mean_squared_error": "mse",
    "squared_error": "mse",
}


# Peaks measured on CPU with one list of 3,000 documents (benchmarks/bench_loss_memory.py), rounded up.
_BUILTIN = (
    ("sigmoid_ce", sigmoid_cross_entropy, 0),
    ("ranknet", ranknet, 8),
    ("lambdarank", lambdarank, 10),
    ("softmax", softmax_cross_entropy, 0),
    ("approx_ndcg", approx_ndcg, 5),
    ("gumbel_approx_ndcg", gumbel_approx_ndcg, 5),
    ("neuralsort_ndcg", neuralsort_ndcg, 7),
    ("gumbel_neuralsort_ndcg", gumbel_neuralsort_ndcg, 7),
    ("attention_rank", attention_rank, 0),
    ("listmle", listmle, 0),
    ("lambdaloss", lambdaloss, 12),
    ("hinge", hinge, 10),
    ("mse", mean_squared_error, 0),
)


def register_loss(name, function, *, pairwise_tensors, aliases=()):
    """Register ``function`` as the loss ``name``, with its memory cost.

    Parameters
    ----------
    name : str
        Canonical name (lower case, ``_`` between words), usable as ``loss=name``.
    function : callable
        ``function(scores, labels, mask=None, **options) -> tensor``, a module-level function
        (so that a bound :func:`functools.partial` pickles).
    pairwise_tensors : int
        ``[list, list]`` float32 tensors that one list holds in a training step, forward and
        backward (measure the peak on one long list); 0 for a loss linear in the list length.
        Required: the memory check reads it before training.
    aliases : iterable of str, default=()
        Other spellings mapped to ``name``.

    Returns
    -------
    function : callable
        ``function`` unchanged (so that this works as ``register_loss(...)(f)`` style code too).

    Raises
    ------
    TypeError
        When ``pairwise_tensors`` is missing or not a non-negative integer.
    ValueError
        When ``name`` or an alias is taken.

    Examples
    --------
    >>> import torch
    >>> from sklearn_ltr.losses import get_loss, pairwise_tensors, register_loss, unregister_loss
    >>> def absolute_error(scores, labels, mask=None, *, reduction="mean", weights=None):
    ...     return (scores - labels).abs().mean()
    >>> _ = register_loss("absolute_error", absolute_error, pairwise_tensors=0, aliases=("mae",))
    >>> get_loss("MAE") is absolute_error, pairwise_tensors("mae")
    (True, 0)
    >>> register_loss("cubic", absolute_error)  # no declared cost: refused
    Traceback (most recent call last):
    ...
    TypeError: register_loss() missing 1 required keyword-only argument: 'pairwise_tensors'
    >>> unregister_loss("absolute_error")
    """
    if isinstance(pairwise_tensors, bool) or not isinstance(pairwise_tensors, int) or pairwise_tensors < 0:
        raise TypeError(
            f"register_loss({name!r}): pairwise_tensors must be the number of [list, list] float32 tensors one "
            f"list holds in a training step (0 for a loss linear in the list length); got {pairwise_tensors!r}."
        )
    if not callable(function):
        raise TypeError(f"register_loss({name!r}): the loss must be callable; got {type(function).__name__}.")
    name, aliases = _normal(name), [_normal(alias) for alias in aliases]  # as get_loss reads names
    taken = sorted({name, *aliases} & (set(LOSSES) | set(ALIASES)))
    if taken:
        raise ValueError(f"register_loss({name!r}): {taken} already name a loss; unregister_loss first.")
    LOSSES[name] = function
    LOSS_MEMORY[name] = pairwise_tensors
    ALIASES.update({alias: name for alias in aliases})
    return function


def unregister_loss(name):
    """Remove the loss ``name`` (canonical) and its aliases from the registry.

    Examples
    --------
    >>> from sklearn_ltr.losses import LOSSES, ranknet, register_loss, unregister_loss
    >>> _ = register_loss("my_ranknet", ranknet, pairwise_tensors=8)
    >>> unregister_loss("my_ranknet")
    >>> "my_ranknet" in LOSSES
    False
    """
    name = _normal(name)
    LOSSES.pop(name)
    LOSS_MEMORY.pop(name)
    for alias in [alias for alias, target in ALIASES.items() if target == name]:
        del ALIASES[alias]


def pairwise_tensors(loss):
    """Declared ``[list, list]`` tensors per list of ``loss`` (a name, a function or a partial of one).

    Returns ``None`` for a callable that was never registered: its cost is unknown.

    Examples
    --------
    >>> import functools
    >>> from sklearn_ltr.losses import pairwise_tensors, ranknet
    >>> pairwise_tensors("ranknet"), pairwise_tensors("softmax"), pairwise_tensors(functools.partial(ranknet))
    (8, 0, 8)
    >>> pairwise_tensors(lambda scores, labels, mask: scores.sum()) is None
    True
    """
    if isinstance(loss, str):
        return LOSS_MEMORY[_canonical(loss)]
    function = loss.func if isinstance(loss, functools.partial) else loss
    for name, registered in LOSSES.items():
        if registered is function:
            return LOSS_MEMORY[name]
    return None


def _normal(name):
    return name.strip().lower().replace("-", "_").replace(" ", "_")


def _canonical(name):
    key = _normal(name)
    key = ALIASES.get(key, key)
    if key not in LOSSES:
        known = ", ".join(sorted(LOSSES))
        aliases = ", ".join(sorted(ALIASES))
        raise ValueError(
            f"Unknown loss {name!r}. Known losses: {known} (aliases: {aliases}); "
            "or pass a callable loss(scores, labels, mask, **options) -> scalar tensor."
        )
    return key


def _check_options(function, options):
    """Raise TypeError for an option the function does not take (when its signature says so)."""
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):  # builtins and some C callables have no signature
        return
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return
    accepted = [
        name
        for name, p in list(parameters.items())[3:]
        if p.kind in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        name = getattr(function, "__name__", repr(function))
        raise TypeError(f"{name} got unexpected option(s) {unknown}; it accepts {accepted}.")


def get_loss(loss, **options):
    """Resolve a loss name or callable to a function ``loss(scores, labels, mask) -> scalar``.

    Parameters
    ----------
    loss : str or callable
        A name of :data:`LOSSES` or of :data:`ALIASES` (case-insensitive, ``-`` read as ``_``),
        or any callable with the loss signature, which passes through unchanged.
    **options
        Keyword options bound to the loss, e.g. ``get_loss("ranknet", sigma=2.0)``; they are
        checked against the function's signature now rather than at the first batch.

    Returns
    -------
    callable
        The function itself when no option is given, else a :func:`functools.partial`
        (picklable, since every registered loss is a module-level function).

    Raises
    ------
    ValueError
        For an unknown name (the message lists the known names).
    TypeError
        For an option the loss does not accept, or a ``loss`` that is neither a string nor
        callable.

    Examples
    --------
    >>> import torch
    >>> from sklearn_ltr.losses import get_loss, ranknet
    >>> get_loss("ranknet") is ranknet
    True
    >>> get_loss("ListNet").__name__  # an alias, case-insensitive
    'softmax_cross_entropy'

    Options are bound, and checked against the loss's signature at once:

    >>> loss = get_loss("ranknet", sigma=2.0)
    >>> loss.keywords
    {'sigma': 2.0}
    >>> round(loss(torch.tensor([[1.0, 0.0]]), torch.tensor([[1.0, 0.0]])).item(), 4)  # log(1 + e^-2)
    0.1269
    >>> get_loss("ranknet", temperature=0.1)
    Traceback (most recent call last):
    ...
    TypeError: ranknet got unexpected option(s) ['temperature']; it accepts ['sigma', 'include_ties', 'reduction',
    'weights', 'click_weights'].
    """
    if isinstance(loss, str):
        function = LOSSES[_canonical(loss)]
    elif callable(loss):
        function = loss
    else:
        raise TypeError(f"loss must be a name or a callable; got {type(loss).__name__}.")
    if not options:
        return function
    _check_options(function, options)
    return functools.partial(function, **options)


for _name, _function, _tensors in _BUILTIN:
    register_loss(_name, _function, pairwise_tensors=_tensors)

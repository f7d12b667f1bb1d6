"""Loss registry: names (and aliases) to functions, and ``get_loss``."""

from __future__ import annotations

import functools
import inspect

from sklearn_ltr.losses._approx import approx_ndcg, gumbel_approx_ndcg
from sklearn_ltr.losses._listwise import attention_rank, listmle, softmax_cross_entropy
from sklearn_ltr.losses._neuralsort import gumbel_neuralsort_ndcg, neuralsort_ndcg
from sklearn_ltr.losses._pairwise import lambdarank, ranknet
from sklearn_ltr.losses._pointwise import sigmoid_cross_entropy

__all__ = ["ALIASES", "LOSSES", "get_loss"]

#: Canonical names of the ten losses (the DASALC paper's loss comparison, plus ListMLE).
LOSSES = {
    "sigmoid_ce": sigmoid_cross_entropy,
    "ranknet": ranknet,
    "lambdarank": lambdarank,
    "softmax": softmax_cross_entropy,
    "approx_ndcg": approx_ndcg,
    "gumbel_approx_ndcg": gumbel_approx_ndcg,
    "neuralsort_ndcg": neuralsort_ndcg,
    "gumbel_neuralsort_ndcg": gumbel_neuralsort_ndcg,
    "attention_rank": attention_rank,
    "listmle": listmle,
}

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
}


def _canonical(name):
    key = name.strip().lower().replace("-", "_").replace(" ", "_")
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
    'weights'].
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

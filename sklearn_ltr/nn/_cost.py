"""Memory cost that a torch module declares, read by the training layer's memory check.

Each scorer of :mod:`sklearn_ltr.nn` defines a classmethod ``memory_cost(**module_kwargs)``
beside its constructor, so that the cost is written where the architecture is: a change of
the architecture and of its cost are one diff.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

__all__ = ["ModuleCost", "bound_arguments"]


@dataclass(frozen=True)
class ModuleCost:
    """Float32 values a module holds per list of ``L`` documents in its forward pass.

    Attributes
    ----------
    attention_layers : int
        Layers of self-attention over the list; each head of each holds ``[L, L]`` scores.
    attention_heads : int
        Heads per attention layer.
    activation_width : int
        Activations per document (the sum of the layer widths), the linear part.

    Examples
    --------
    >>> from sklearn_ltr.nn import DASALCNet, MLPScorer
    >>> MLPScorer.memory_cost(n_features=10, hidden_sizes=(64, 32))
    ModuleCost(attention_layers=0, attention_heads=0, activation_width=97)
    >>> DASALCNet.memory_cost(n_features=10).attention_layers
    4
    """

    attention_layers: int = 0
    attention_heads: int = 0
    activation_width: int = 0


def bound_arguments(module_class, kwargs):
    """The constructor arguments of ``module_class`` for ``kwargs``, defaults filled in."""
    bound = inspect.signature(module_class).bind(**kwargs)
    bound.apply_defaults()
    return bound.arguments

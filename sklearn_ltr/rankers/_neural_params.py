"""The parameters every neural ranker shares, declared once: defaults, constraints and documentation.

A neural ranker declares only its own (module) parameters; :class:`NeuralParameters`
builds its ``__init__`` (a real signature that ``get_params``, ``clone`` and the docs
read) from those and the shared training parameters below, merges the constraints, and
fills the ``%(neural_parameters)s`` marker of its docstring with the shared entries.
"""

from __future__ import annotations

import inspect
import numbers
from numbers import Integral, Real

import torch
from skorch.callbacks import Callback

from sklearn_ltr._query_column import QUERY_COLUMN_CONSTRAINTS, QUERY_COLUMN_DOC
from sklearn_ltr.losses import ALIASES, LOSSES
from sklearn_ltr.utils._sklearn_compat import Interval, Satisfies, StrOptions

__all__ = ["OPTIMIZERS", "NeuralParameters", "positive_int_tuple"]

OPTIMIZERS = {"adam": torch.optim.Adam, "adamw": torch.optim.AdamW, "sgd": torch.optim.SGD}

#: The docstring marker replaced by the shared parameters' entries.
MARKER = "%(neural_parameters)s"


def _is_int(value):
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _is_loss(value):
    if isinstance(value, str):
        key = value.strip().lower().replace("-", "_").replace(" ", "_")
        return ALIASES.get(key, key) in LOSSES
    if not callable(value):
        return False
    try:
        parameters = list(inspect.signature(value).parameters.values())
    except (TypeError, ValueError):  # a builtin without a signature: trust it
        return True
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 3 or any(p.kind is p.VAR_POSITIONAL for p in parameters)


def _is_callback_list(value):
    if not isinstance(value, (list, tuple)):
        return False
    for entry in value:
        if isinstance(entry, tuple) and len(entry) == 2 and isinstance(entry[0], str):
            entry = entry[1]
        if not (isinstance(entry, Callback) or (isinstance(entry, type) and issubclass(entry, Callback))):
            return False
    return True


def _is_device(value):
    if isinstance(value, torch.device):
        return value.type in ("cpu", "cuda")
    if not isinstance(value, str):
        return False
    kind, _, index = value.partition(":")
    return value == "auto" or (kind in ("cpu", "cuda") and (not index or (kind == "cuda" and index.isdigit())))


def positive_int_tuple(what="a tuple of positive ints"):
    """Constraint: a tuple or list of integers >= 1 (possibly empty)."""
    return Satisfies(
        f"{what} (e.g. (64, 32); () for none)",
        lambda v: isinstance(v, (tuple, list)) and all(_is_int(s) and s >= 1 for s in v),
    )


_LOSS_DOC = """\
loss : str or callable, default={default!r}
    A name of :data:`sklearn_ltr.losses.LOSSES` (or an alias) or a function
    ``loss(scores, labels, mask, **options) -> scalar``.
loss_params : dict, default=None
    Options of the loss, e.g. ``{{"sigma": 2.0}}``."""

_DISTRIBUTED_DOC = """\
distributed : bool, default=False
    Data-parallel training over the processes of a ``torchrun`` (or
    ``accelerate launch``) job: each process trains on whole queries
    of every batch and the gradients are summed, so N processes train
    the model one process would. Each process passes the whole data
    set to ``fit``. A single process trains as usual. See the user
    guide's page on training on several GPUs or machines."""

# name -> (default, numpydoc entry, constraints), in signature order.
_TRAINING = {
    "lr": (1e-3, "lr : float, default=1e-3\n    Learning rate.",
           [Interval(Real, 0, None, closed="neither")]),
    "optimizer": ("adam", 'optimizer : {"adam", "adamw", "sgd"} or torch optimizer class, default="adam"\n'
                  "    Optimiser.",
                  [StrOptions(set(OPTIMIZERS)),
                   Satisfies("a torch.optim.Optimizer subclass",
                             lambda v: isinstance(v, type) and issubclass(v, torch.optim.Optimizer))]),
    "weight_decay": (0.0, "weight_decay : float, default=0.0\n    L2 penalty of the optimiser.",
                     [Interval(Real, 0, None, closed="left")]),
    "max_epochs": (20, "max_epochs : int, default=20\n    Passes over the training queries.",
                   [Interval(Integral, 1, None, closed="left")]),
    "batch_size": (32, "batch_size : int, default=32\n    Queries per batch, in training and prediction "
                   "(predictions do not\n    depend on it; prediction batches shrink when memory is short).",
                   [Interval(Integral, 1, None, closed="left")]),
    "max_list_length": (None, "max_list_length : int, default=None\n    Training lists longer than this are "
                        "subsampled, keeping relevant\n    documents first; prediction always scores whole lists. "
                        "Lower it when\n    ``fit`` reports that the longest lists need too much memory.",
                        [Interval(Integral, 2, None, closed="left"), None]),
    "validation_fraction": (None, "validation_fraction : float, default=None\n    Share of training queries "
                            "held out to log ``valid_ndcg@10`` in\n    ``history_`` each epoch. ``None`` holds "
                            "out nothing (0.1 when\n    ``early_stopping`` is on).",
                            [Interval(Real, 0, 1, closed="neither"), None]),
    "early_stopping": (False, "early_stopping : bool, default=False\n    Stop when the validation NDCG@10 has "
                       "not improved for\n    ``n_iter_no_change`` epochs and restore the best epoch's weights\n"
                       "    (``best_iteration_``).",
                       ["boolean"]),
    "n_iter_no_change": (5, "n_iter_no_change : int, default=5\n    Patience of early stopping, in epochs.",
                         [Interval(Integral, 1, None, closed="left")]),
    "device": ("auto", 'device : {"auto", "cpu", "cuda"}, default="auto"\n    ``"auto"`` trains on CUDA when '
               "available (bf16 autocast), else CPU.\n    A model trained on CUDA pickles and loads on a CPU-only "
               "machine.",
               [Satisfies("'auto', 'cpu', 'cuda', 'cuda:N' or a torch.device", _is_device)]),
    "random_state": (None, "random_state : int, RandomState instance or None, default=None\n    Seeds weights, "
                     "dropout, shuffling, subsampling and the validation\n    split: the same int gives the same "
                     "predictions on CPU. A RandomState\n    instance is drawn from (each fit then differs).",
                     ["random_state"]),
    "callbacks": (None, "callbacks : list of skorch callbacks, default=None\n    Extra skorch callbacks (e.g. "
                  "``LRScheduler``, ``Checkpoint``) or\n    ``(name, callback)`` pairs; copied at fit time.",
                  [Satisfies("a list of skorch callbacks or (name, callback) pairs", _is_callback_list), None]),
    "verbose": (0, "verbose : int, default=0\n    0 silent, 1 a per-epoch table, 2 also a progress bar per epoch.",
                ["verbose"]),
    "query_column": (None, QUERY_COLUMN_DOC, QUERY_COLUMN_CONSTRAINTS),
    "keep_training_state": (False, "keep_training_state : bool, default=False\n    Keep the whole skorch net in "
                            "``net_`` after ``fit``: optimiser, criterion,\n    callbacks, random generator and "
                            "per-batch losses, e.g. to inspect\n    a callback. By default ``net_`` keeps only what "
                            "``predict`` needs\n    (the module's weights and configuration) and ``history_`` its "
                            "per-epoch\n    rows: the model pickles small, and a skops file of it loads with\n"
                            "    :data:`sklearn_ltr.utils.persistence.TRUSTED_TYPES`.",
                            ["boolean"]),
    "distributed": (False, _DISTRIBUTED_DOC, ["boolean"]),
}

_LOSS_CONSTRAINTS = {
    "loss": [Satisfies(f"one of {sorted(LOSSES)} (or an alias) or a callable loss(scores, labels, mask, "
                       "**options)", _is_loss)],
    "loss_params": [dict, None],
}


def _indent(text, spaces=4):
    pad = " " * spaces
    return "\n".join(pad + line if line else line for line in text.splitlines())


class NeuralParameters:
    """Mixin that builds a neural ranker's ``__init__``, constraints and docstring from declarations.

    A subclass declares

    - ``_module_parameters``: dict name -> default of its own parameters (positional or
      keyword, in signature order);
    - ``_keyword_parameters``: dict name -> default of further keyword-only parameters
      placed before the shared ones (optional);
    - ``_default_loss``: the default of ``loss``, or ``None`` for a ranker without the
      ``loss`` and ``loss_params`` parameters;
    - ``_parameter_constraints``: the constraints of its own parameters only.

    ``__init__`` stores every argument unchanged (scikit-learn's rule); validation
    happens in ``fit``.
    """

    _module_parameters: dict = {}  # noqa: RUF012
    _keyword_parameters: dict = {}  # noqa: RUF012
    _default_loss = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "_module_parameters" not in cls.__dict__:  # an intermediate base: nothing to build
            return
        shared = {}
        if cls._default_loss is not None:
            shared = {"loss": cls._default_loss, "loss_params": None}
        shared.update({name: default for name, (default, _, _) in _TRAINING.items()})
        keyword = {**cls._keyword_parameters, **shared}
        overlap = set(cls._module_parameters) & set(keyword)
        if overlap:
            raise TypeError(f"{cls.__name__} redeclares shared parameters {sorted(overlap)}.")
        cls.__init__ = _make_init(cls, cls._module_parameters, keyword)
        constraints = {name: constraints for name, (_, _, constraints) in _TRAINING.items()}
        if cls._default_loss is not None:
            constraints.update(_LOSS_CONSTRAINTS)
        cls._parameter_constraints = {**cls.__dict__.get("_parameter_constraints", {}), **constraints}
        if cls.__doc__ and MARKER in cls.__doc__:
            entries = [entry for _, entry, _ in _TRAINING.values()]
            if cls._default_loss is not None:
                entries.insert(0, _LOSS_DOC.format(default=cls._default_loss))
            block = _indent("\n".join(entries))
            cls.__doc__ = cls.__doc__.replace("    " + MARKER, block)


def _make_init(cls, positional, keyword):
    parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    parameters += [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default)
                   for name, default in positional.items()]
    parameters += [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default)
                   for name, default in keyword.items()]
    signature = inspect.Signature(parameters)

    def __init__(self, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        for name, value in list(bound.arguments.items())[1:]:
            setattr(self, name, value)

    __init__.__signature__ = signature
    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    __init__.__module__ = cls.__module__
    __init__.__doc__ = f"Store the parameters unchanged; see :class:`{cls.__name__}`."
    return __init__

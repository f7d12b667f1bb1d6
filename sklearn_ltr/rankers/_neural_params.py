"""The parameters every neural ranker shares, declared once: constraints and documentation.

Each neural ranker writes its ``__init__`` out, shared parameters included (keyword-only,
after its own). Their constraints (:data:`TRAINING_CONSTRAINTS`, :data:`LOSS_CONSTRAINTS`)
and numpydoc entries are declared here only: a ranker spreads the constraints into its
``_parameter_constraints``, and :class:`NeuralParameters` fills the ``%(neural_parameters)s``
marker of its docstring with the entries.
"""

from __future__ import annotations

import inspect
import numbers
import os
from numbers import Integral, Real

import torch
from skorch.callbacks import Callback

from sklearn_ltr._query_column import QUERY_COLUMN_CONSTRAINTS, QUERY_COLUMN_DOC
from sklearn_ltr.losses import ALIASES, LOSSES
from sklearn_ltr.training._precision import PRECISIONS
from sklearn_ltr.utils._sklearn_compat import Interval, Satisfies, StrOptions

__all__ = [
    "LOSS_CONSTRAINTS", "OPTIMIZERS", "TRAINING_CONSTRAINTS", "NeuralParameters", "positive_int_tuple",
    "shared_parameters_doc",
]

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

_CHECKPOINT_DOC = """\
checkpoint_dir : str or path-like, default=None
    Folder of a checkpoint written atomically after every epoch
    (weights, optimizer, callbacks' state such as early stopping and
    learning-rate schedules, history, random streams). A later
    ``fit`` with the same parameters on the same data resumes from
    it and ends with the model an uninterrupted fit gives; a
    checkpoint of other parameters or data is refused. Under
    ``distributed=True`` rank 0 writes it and every process reads
    it. After ``fit``, the attribute ``resumed_from_epoch_`` is the
    number of epochs the checkpoint held when the fit resumed from
    it (the epochs it then trained are ``resumed_from_epoch_ + 1``
    to ``n_iter_``), and None when the fit started fresh (as every
    fit without ``checkpoint_dir`` does). See the user guide's page
    on training from disk and resuming."""

# The shared training parameters: name -> (numpydoc entry, constraints), in signature order.
# Each ranker writes them out in its ``__init__`` (keyword-only, after its own parameters).
_TRAINING = {
    "lr": (
        "lr : float, default=1e-3\n    Learning rate.",
        [Interval(Real, 0, None, closed="neither")],
    ),
    "optimizer": (
        'optimizer : {"adam", "adamw", "sgd"} or torch optimizer class, default="adam"\n    Optimiser.',
        [StrOptions(set(OPTIMIZERS)),
         Satisfies("a torch.optim.Optimizer subclass",
                   lambda v: isinstance(v, type) and issubclass(v, torch.optim.Optimizer))],
    ),
    "weight_decay": (
        "weight_decay : float, default=0.0\n    L2 penalty of the optimiser.",
        [Interval(Real, 0, None, closed="left")],
    ),
    "max_epochs": (
        "max_epochs : int, default=20\n    Passes over the training queries.",
        [Interval(Integral, 1, None, closed="left")],
    ),
    "batch_size": (
        'batch_size : int or "auto", default=32\n    Queries per training batch (predictions do not depend on it: '
        "prediction\n    batches are cut by documents and shrink when memory is short).\n"
        '    ``"auto"``: the largest batch that the memory check finds room for\n    on the device, at most 256 '
        "queries and at most half of the\n    training queries (see the user guide's GPU page); the batch "
        "chosen is\n    ``batch_size_``.",
        [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
    ),
    "max_list_length": (
        "max_list_length : int, default=None\n    Training lists longer than this are subsampled, keeping relevant\n"
        "    documents first; prediction always scores whole lists. Lower it when\n"
        "    ``fit`` reports that the longest lists need too much memory.",
        [Interval(Integral, 2, None, closed="left"), None],
    ),
    "validation_fraction": (
        "validation_fraction : float, default=None\n    Share of training queries held out to log "
        "``valid_ndcg@10`` in\n    ``history_`` each epoch (their IPS estimate of DCG@10,\n"
        "    ``valid_ips_dcg@10``, for a fit with ``propensity``). ``None`` holds\n"
        "    out nothing (0.1 when ``early_stopping`` is on).",
        [Interval(Real, 0, 1, closed="neither"), None],
    ),
    "early_stopping": (
        "early_stopping : bool, default=False\n    Stop when the validation NDCG@10 (IPS-DCG@10 on a click log\n"
        "    with propensities) has not improved for ``n_iter_no_change``\n"
        "    epochs and restore the best epoch's weights\n    (``best_iteration_``). "
        "With a :class:`~sklearn_ltr.training.ValidationNDCG` of a\n    separate set in ``callbacks`` (and "
        "``validation_fraction=None``), its\n    value is monitored and nothing is held out: the recipe for "
        "click\n    logs, with a validation log of other queries.",
        ["boolean"],
    ),
    "n_iter_no_change": (
        "n_iter_no_change : int, default=5\n    Patience of early stopping, in epochs.",
        [Interval(Integral, 1, None, closed="left")],
    ),
    "device": (
        'device : {"auto", "cpu", "cuda"}, default="auto"\n    ``"auto"`` trains on CUDA when available, else '
        "CPU (or on the device\n    named by the environment variable ``SKLEARN_LTR_DEVICE``). A model\n"
        "    trained on CUDA pickles and loads on a CPU-only machine.",
        [Satisfies("'auto', 'cpu', 'cuda', 'cuda:N' or a torch.device", _is_device)],
    ),
    "precision": (
        'precision : {"32-true", "bf16-mixed"}, default="32-true"\n    Numerical precision of training. '
        '``"32-true"``: float32 throughout\n    (measured faster than bf16 at these model sizes, and stable).\n'
        '    ``"bf16-mixed"``: the training forward pass under bf16 autocast\n    (CUDA or CPU); losses stay '
        "float32. Whatever it is, ``predict``,\n    ``score`` and the ONNX export compute scores in float32: no "
        "score\n    is ever bf16-rounded.",
        [StrOptions(set(PRECISIONS))],
    ),
    "random_state": (
        "random_state : int, RandomState instance or None, default=None\n    Seeds weights, dropout, shuffling, "
        "subsampling and the validation\n    split: the same int gives the same predictions on CPU. A RandomState\n"
        "    instance is drawn from (each fit then differs).",
        ["random_state"],
    ),
    "callbacks": (
        "callbacks : list of skorch callbacks, default=None\n    Extra skorch callbacks (e.g. ``LRScheduler``, "
        "``Checkpoint``) or\n    ``(name, callback)`` pairs; copied at fit time.",
        [Satisfies("a list of skorch callbacks or (name, callback) pairs", _is_callback_list), None],
    ),
    "verbose": (
        "verbose : int, default=0\n    0 silent, 1 a per-epoch table, 2 also a progress bar per epoch.",
        ["verbose"],
    ),
    "query_column": (QUERY_COLUMN_DOC, QUERY_COLUMN_CONSTRAINTS),
    "keep_training_state": (
        "keep_training_state : bool, default=False\n    Keep the whole skorch net in ``net_`` after ``fit``: "
        "optimiser, criterion,\n    callbacks, random generator and per-batch losses, e.g. to inspect\n"
        "    a callback. By default ``net_`` keeps only what ``predict`` needs\n    (the module's weights and "
        "configuration) and ``history_`` its per-epoch\n    rows: the model pickles small, and a skops file of it "
        "loads with\n    :data:`sklearn_ltr.utils.persistence.TRUSTED_TYPES`.",
        ["boolean"],
    ),
    "distributed": (_DISTRIBUTED_DOC, ["boolean"]),
    "checkpoint_dir": (_CHECKPOINT_DOC, [str, os.PathLike, None]),
}

#: Constraints of the shared training parameters, for a ranker's ``_parameter_constraints``.
TRAINING_CONSTRAINTS = {name: constraints for name, (_, constraints) in _TRAINING.items()}

#: Constraints of ``loss`` and ``loss_params``, for the rankers that take them.
LOSS_CONSTRAINTS = {
    "loss": [Satisfies(f"one of {sorted(LOSSES)} (or an alias) or a callable loss(scores, labels, mask, "
                       "**options)", _is_loss)],
    "loss_params": [dict, None],
}


def _indent(text, spaces=4):
    pad = " " * spaces
    return "\n".join(pad + line if line else line for line in text.splitlines())


def shared_parameters_doc(signature):
    """The numpydoc entries of the shared parameters of a neural ranker, in signature order.

    Parameters
    ----------
    signature : inspect.Signature
        The ranker's ``__init__`` signature: ``loss`` and ``loss_params`` are documented
        when it has ``loss`` (with its default); the training parameters always are.

    Returns
    -------
    str
        The entries, unindented, one after the other.
    """
    entries = []
    if "loss" in signature.parameters:
        entries.append(_LOSS_DOC.format(default=signature.parameters["loss"].default))
    entries += [entry for entry, _ in _TRAINING.values()]
    return "\n".join(entries)


class NeuralParameters:
    """Mixin that writes the shared parameters' documentation into a neural ranker's docstring.

    A neural ranker writes its ``__init__`` out: its own parameters first, then, keyword-only,
    ``loss`` and ``loss_params`` (if it takes them) and the training parameters, each stored
    unchanged (scikit-learn's rule; validation happens in ``fit``). Its
    ``_parameter_constraints`` spreads :data:`LOSS_CONSTRAINTS` and :data:`TRAINING_CONSTRAINTS`
    after its own. At class creation, the line ``%(neural_parameters)s`` of its docstring's
    Parameters section is replaced by the shared entries (``loss``'s default read from
    ``__init__``). ``tests/test_constructors.py`` checks that signature, constraints and
    docstring agree.
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.__doc__ and MARKER in cls.__doc__:
            block = _indent(shared_parameters_doc(inspect.signature(cls.__init__)))
            cls.__doc__ = cls.__doc__.replace("    " + MARKER, block)

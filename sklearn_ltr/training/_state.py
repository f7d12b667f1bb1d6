"""What a fitted neural ranker keeps: the module's weights and configuration, not the training state.

After training, a skorch net holds what training needs: the optimizer and its moment
estimates, the callbacks (some with validation data), the criterion, the batch iterator's
random generator, per-batch losses in its history. ``predict`` needs none of it, and it
makes a pickle large and a skops file reference many types to trust (``builtins.print``,
``torch._C.Generator``, ``DataLoader``, ``Adam``, ...). Unless the ranker has
``keep_training_state=True``, ``fit`` replaces its net by an *inference net*
(:func:`inference_net`): a net of the same class that holds the trained module, the
settings that prediction reads (device, batch size, precision) and the per-epoch rows of
the history, and that refuses to train.

An inference net pickles, and saves with skops, as a plain state (:func:`inference_state`):
the module class and its constructor arguments, its ``state_dict`` as NumPy arrays, the
settings, and the history as a list of dicts. Loading rebuilds the module from that state
(:func:`restore_inference_net`), on CPU when the model was trained on CUDA and this
machine has none, and in the dtypes it was saved in (a module trained in bfloat16 comes back in
bfloat16, with exactly its weights). Nothing in the state is a pickle: ``skops.io.load`` needs to trust only
the ranker, net and module classes (:data:`sklearn_ltr.utils.persistence.TRUSTED_TYPES`).
"""

from __future__ import annotations

import numpy as np
import torch
from skorch.history import History

from sklearn_ltr.training._device import load_device

__all__ = ["STATE_KEY", "inference_net", "inference_state", "is_inference_state", "restore_inference_net"]

#: Key (and layout version) marking an inference net's pickled state.
STATE_KEY, STATE_VERSION = "sklearn_ltr_inference_state", 1

#: Settings of the net kept for prediction (and, for the record, the training configuration).
_SETTINGS = ("device", "batch_size", "precision", "prediction_documents", "lr", "max_epochs", "max_list_length",
             "random_state")

#: Parameters of the skorch net that only training reads: left out of an inference net.
_TRAINING_ONLY = {
    "criterion": None, "optimizer": None, "iterator_train": None, "iterator_valid": None, "dataset": None,
    "train_split": None, "callbacks": None, "verbose": 0,
}  # fmt: skip

#: Tensor dtypes without a NumPy equivalent, stored as float32 and cast back on load.
_NON_NUMPY = {"torch.bfloat16": torch.bfloat16}


def _epoch_rows(history):
    """The per-epoch rows of a skorch history as plain dicts, without their per-batch lists."""
    return [{key: value for key, value in row.items() if key != "batches"} for row in history or ()]


def inference_state(net, *, weights=True):
    """The plain state of a fitted net's inference part: classes, primitives and NumPy arrays only.

    Parameters
    ----------
    net : RankingNet
        A fitted net (with or without its training state).
    weights : bool, default=True
        Whether to copy the module's weights into the state (``False`` leaves ``weights`` empty).

    Returns
    -------
    state : dict
        ``module_class`` and ``module_kwargs`` (to rebuild the module), ``weights``
        (its ``state_dict`` as NumPy arrays on CPU), ``dtypes`` (tensors stored as
        float32 because NumPy has no such dtype), ``settings`` and ``history``.
    """
    arrays, dtypes = {}, {}
    for name, tensor in net.module_.state_dict().items() if weights else ():
        tensor = tensor.detach().cpu()
        if str(tensor.dtype) in _NON_NUMPY:
            dtypes[name] = str(tensor.dtype)
            tensor = tensor.float()
        arrays[name] = tensor.numpy()
    return {
        STATE_KEY: STATE_VERSION,
        "module_class": type(net.module_),
        "module_kwargs": net.get_params_for("module"),
        "weights": arrays,
        "dtypes": dtypes,
        "settings": {name: getattr(net, name) for name in _SETTINGS if hasattr(net, name)},
        "history": _epoch_rows(net.history_),
    }


def is_inference_state(state):
    """Whether ``state`` (what ``__setstate__`` receives) is an inference net's."""
    return isinstance(state, dict) and STATE_KEY in state


def _rebuild_module(state):
    module_class, kwargs = state["module_class"], dict(state["module_kwargs"])
    if not (isinstance(module_class, type) and issubclass(module_class, torch.nn.Module)):
        raise TypeError(f"the saved module class {module_class!r} is not a torch.nn.Module subclass.")
    # Building a module draws its initial weights: keep the caller's random state as it was.
    with torch.random.fork_rng(devices=[]):
        module = module_class(**kwargs)
    weights = {}
    for name, value in state["weights"].items():
        tensor = torch.tensor(np.asarray(value))  # a copy: loaded arrays may be read-only memory maps
        if name in state.get("dtypes", {}):
            tensor = tensor.to(_NON_NUMPY[state["dtypes"][name]])
        weights[name] = tensor
    # assign=True keeps each saved tensor's dtype: copying into the fresh module would cast a module
    # trained in bfloat16 (or float64) to the constructor's float32.
    module.load_state_dict(weights, strict=True, assign=True)
    return module.eval()


def restore_inference_net(net, state, *, module=None):
    """Make ``net``, an instance of its class not yet initialised, the inference net of ``state``.

    Parameters
    ----------
    net : RankingNet
        A bare instance (from ``__new__``, as unpickling creates one).
    state : dict
        What :func:`inference_state` returned.
    module : torch.nn.Module, default=None
        The trained module itself (no copy); ``None`` rebuilds it from ``state``.

    Returns
    -------
    net : RankingNet
    """
    if state.get(STATE_KEY, 0) > STATE_VERSION:
        raise ValueError(f"this model was saved by a newer sklearn_ltr (state version {state[STATE_KEY]}); "
                         f"upgrade sklearn_ltr to load it.")
    if module is None:
        module = _rebuild_module(state)
    settings = {name: value for name, value in state["settings"].items() if name in _SETTINGS}
    settings["device"] = load_device(settings.get("device", "cpu"))
    module_kwargs = {f"module__{key}": value for key, value in state["module_kwargs"].items()}
    type(net).__init__(
        net, state["module_class"], **_TRAINING_ONLY, **settings, **module_kwargs,
        history=History(state["history"]), initialized_=True,
    )
    with net._current_init_context("module"):  # as skorch's initialize_module registers a module
        net.module_ = module.to(settings["device"])
    net.inference_only_ = True
    return net


def inference_net(net):
    """A net of ``net.inference_class`` with only what prediction needs; it shares ``net``'s trained module.

    A data-parallel net's inference net is a plain one: it predicts without a process group.
    """
    net.module_.zero_grad(set_to_none=True)  # gradients of the last batch: training state
    net.module_.eval()  # a fitted model's module predicts
    state = inference_state(net, weights=False)  # the module itself is reused
    cls = net.inference_class
    return restore_inference_net(cls.__new__(cls), state, module=net.module_)

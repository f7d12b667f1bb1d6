"""Resumable training: an atomic checkpoint after every epoch, restored by a later ``fit``.

:class:`TrainingCheckpoint` is the skorch callback behind the neural rankers'
``checkpoint_dir``. After each epoch it writes one file, ``checkpoint.pt``, holding all
that the next epoch depends on:

- the weights of every module and criterion, every optimizer's state (moments, step
  counts, learning rates);
- the state of every other callback (see "Callback state" below): early stopping's counters
  and best weights, a learning-rate scheduler's ``state_dict``, a user callback's own;
- the history (every epoch's row, per-batch losses included);
- the random streams: the generator that shuffles the queries and subsamples lists (the
  data order of the next epochs is drawn from it), torch's global generator (dropout,
  noise augmentation) and, under data parallelism, each process's own streams.

A later ``fit`` with the same parameters on the same data restores all of it at the start of
training and runs the remaining epochs only: the resumed fit is the fit that would have been.
The net's ``resumed_from_epoch_`` (the estimator's too) says from which: the epochs the
checkpoint held, or None when the fit started fresh.
The file is written with :func:`sklearn_ltr._atomic.write_atomically`, so a crash during the
write leaves the previous checkpoint whole. A checkpoint of other parameters, of other data (the
training rows with every per-row input, label and query weight, in the order training sees them;
any separate validation set) or that cannot be read is refused with the reason, and left as it is.

Why not skorch's ``Checkpoint`` and ``LoadInitState``: they write the module, the optimizer
and the history to separate files one after the other (a crash between two writes mixes two
epochs), and they restore neither the other callbacks' state nor the random streams, so a
resumed run would draw another data order; they also load any file they find, from any data.

Under data parallelism the processes' streams are gathered and rank 0 alone writes; every
process reads the same file when the job is restarted (``torchrun --max-restarts``).

Callback state. A callback with ``state_dict()`` and ``load_state_dict(state)`` is saved by
them (the library's own callbacks have them). skorch's callbacks, which do not, are saved by the
attributes ``_SKORCH_CALLBACKS`` lists for each. Any other callback is saved by its fitted
attributes (``name_``). Either way a checkpoint holds numbers, strings, bytes, tensors, NumPy
arrays, NumPy ``Generator`` and ``RandomState`` (by their bit generator's state), torch
generators, and lists, tuples and dicts of them; anything else (a file, a lock, a function) is
refused when training starts, with the callback and the attribute named, never left out: a
callback whose state were not restored would make the resumed fit another fit. The net resumes
by an explicit call, ``RankingNet.resume_from``, once everything is restored.
"""

from __future__ import annotations

import collections
import io
import os

import numpy as np
import torch
from skorch.callbacks import Callback
from skorch.history import History

from sklearn_ltr._atomic import write_atomically
from sklearn_ltr.training._fingerprint import data_fingerprint, describe_parameters, validation_fingerprint

__all__ = ["CHECKPOINT_FILE", "TrainingCheckpoint", "training_checkpoint"]

#: Parameters that change neither the model nor the data order: a checkpoint ignores them.
_NOT_TRAINING = frozenset({"verbose", "checkpoint_dir", "keep_training_state"})

#: The file a checkpoint folder holds.
CHECKPOINT_FILE = "checkpoint.pt"
#: Layout version of the checkpoint's content.
_VERSION = 2  # 2: callbacks saved by state_dict() or by the attributes of _SKORCH_CALLBACKS


def _mapping(value, items):
    """The ``(key, item)`` pairs ``items`` as a mapping of the type of ``value`` (a dict, or a subclass of it).

    Not ``type(value)(items)``: a ``Counter`` would count the pairs themselves, and MultiStepLR's
    ``milestones`` (a Counter of epochs) would come back as milestones no epoch ever reaches, the
    resumed schedule then never decaying again. ``Counter(mapping)`` takes the counts as they are.
    """
    items = dict(items)
    if type(value) is dict:
        return items
    return collections.Counter(items) if isinstance(value, collections.Counter) else type(value)(items)


def _plain(value):
    """``value`` made of tensors, Python scalars, strings and containers (NumPy scalars converted), else raise."""
    if isinstance(value, np.generic):  # before float: np.float64 is a float, and not a plain one to torch.load
        return value.item()
    if value is None or isinstance(value, (bool, int, float, str, torch.Tensor)):
        return value
    if isinstance(value, dict):
        return _mapping(value, ((key, _plain(item)) for key, item in value.items()))
    if isinstance(value, (list, tuple)):  # a History (a list) becomes a plain list
        return (tuple if isinstance(value, tuple) else list)(_plain(item) for item in value)
    raise TypeError(type(value).__name__)


#: Key of the tagged dicts that stand for NumPy arrays and random generators in a callback's state.
_TAG = "__sklearn_ltr__"


class _Unsavable(TypeError):
    """A value a checkpoint cannot hold; ``where`` says where in the callback's state it lies."""

    def __init__(self, where, value):
        super().__init__(where)
        self.where, self.kind = where, type(value).__qualname__


def _encode(value, where):
    """``value`` as data ``torch.load(weights_only=True)`` reads back, NumPy arrays and generators tagged.

    Tensors, Python scalars, strings, bytes and lists, tuples and dicts of them are kept; NumPy
    scalars become Python ones; NumPy arrays, NumPy ``Generator`` and ``RandomState`` and torch
    generators become tagged dicts of their data or state (:func:`_decode` rebuilds them).
    Anything else raises :class:`_Unsavable`.
    """
    if isinstance(value, np.generic):  # before float: np.float64 is a float, and not a plain one to torch.load
        return value.item()
    if value is None or isinstance(value, (bool, int, float, str, bytes, torch.Tensor)):
        return value
    if isinstance(value, np.ndarray) and value.dtype != object:
        return {_TAG: "ndarray", "dtype": value.dtype.str, "shape": list(value.shape),
                "data": np.ascontiguousarray(value).tobytes()}
    if isinstance(value, np.random.Generator):
        return {_TAG: "Generator", "state": _encode(value.bit_generator.state, where)}
    if isinstance(value, np.random.RandomState):
        return {_TAG: "RandomState", "state": _encode(value.get_state(legacy=False), where)}
    if isinstance(value, torch.Generator):
        return {_TAG: "torch.Generator", "state": value.get_state()}
    # torch.load(weights_only=True) reads back no other mapping type (a defaultdict, say): refused here,
    # naming it, rather than by a TypeError of the mapping's constructor or at the resume.
    if type(value) in (dict, collections.OrderedDict, collections.Counter):
        return _mapping(value, ((key, _encode(item, f"{where}[{key!r}]")) for key, item in value.items()))
    if isinstance(value, (list, tuple)):
        return (tuple if isinstance(value, tuple) else list)(
            _encode(item, f"{where}[{index}]") for index, item in enumerate(value))
    raise _Unsavable(where, value)


def _decode(value, current=None):
    """What :func:`_encode` gave ``value`` for; a generator's state goes into ``current`` when it is one of its kind."""
    if isinstance(value, dict) and _TAG in value:
        kind = value[_TAG]
        if kind == "ndarray":
            return np.frombuffer(value["data"], dtype=np.dtype(value["dtype"])).reshape(value["shape"]).copy()
        state = _decode(value["state"])
        if kind == "Generator":
            generator = current if isinstance(current, np.random.Generator) else \
                np.random.Generator(getattr(np.random, state["bit_generator"])())
            generator.bit_generator.state = state
            return generator
        if kind == "RandomState":
            generator = current if isinstance(current, np.random.RandomState) else np.random.RandomState()
            generator.set_state(state)
            return generator
        generator = current if isinstance(current, torch.Generator) else torch.Generator()
        generator.set_state(state)
        return generator
    if isinstance(value, dict):
        return _mapping(value, ((key, _decode(item)) for key, item in value.items()))
    if isinstance(value, (list, tuple)):
        return type(value)(_decode(item) for item in value)
    return value


#: skorch's callbacks, which have no ``state_dict``: the attributes each one trains (saved)
#: and those it rebuilds itself when training starts or an epoch begins (not saved).
_SKORCH_CALLBACKS = {
    "EarlyStopping": (("misses_", "dynamic_threshold_", "best_epoch_", "best_model_weights_"), ()),
    "LRScheduler": (("lr_scheduler_", "batch_idx_"), ("policy_",)),  # the scheduler by its state_dict
    "PassthroughScoring": (("best_score_",), ()),
    "EpochScoring": (("best_score_",), ("name_", "X_indexing_", "y_indexing_", "y_preds_", "y_trues_")),
    "BatchScoring": (("best_score_",), ("name_",)),
    "PrintLog": (("first_iteration_",), ("keys_ignored_",)),
    "EpochTimer": ((), ("epoch_start_time_",)),
    "ProgressBar": ((), ("pbar_",)),
    "GradientNormClipping": ((), ()),
    "Freezer": ((), ()),
    "Unfreezer": ((), ()),
    "Initializer": ((), ()),
    "ParamMapper": ((), ()),
    "WarmRestartLR": ((), ()),
    "InputShapeSetter": ((), ("module_",)),
    "Checkpoint": ((), ("f_history_",)),
    "TrainEndCheckpoint": ((), ("checkpoint_",)),
    "LoadInitState": ((), ("did_load_",)),
    "TensorBoard": ((), ("first_batch_", "keys_ignored_")),
    "MlflowLogger": ((), ("batch_suffix_", "client_", "epoch_suffix_", "keys_ignored_", "run_")),
    "NeptuneLogger": ((), ("keys_ignored_",)),
    "SacredLogger": ((), ("batch_suffix_", "epoch_suffix_", "keys_ignored_")),
    "WandbLogger": ((), ("keys_ignored_",)),
}


def _skorch_entry(cls):
    """``(saved, rebuilt)`` of a callback class of skorch itself, else None."""
    if cls.__module__.split(".")[0] != "skorch":
        return None
    return _SKORCH_CALLBACKS.get(cls.__name__)


def _has_protocol(callback):
    return callable(getattr(callback, "state_dict", None)) and callable(getattr(callback, "load_state_dict", None))


def _attribute_names(callback):
    """The attributes a checkpoint holds for a callback without ``state_dict``.

    skorch's own callbacks: those of :data:`_SKORCH_CALLBACKS`. Any other callback (a subclass
    of skorch's among them): each fitted attribute (``name_``), except those a skorch base class
    rebuilds itself.
    """
    entry = _skorch_entry(type(callback))
    if entry is not None:
        return [name for name in entry[0] if hasattr(callback, name)]
    rebuilt = {name for cls in type(callback).__mro__ for name in (_skorch_entry(cls) or ((), ()))[1]}
    return [name for name in vars(callback)
            if name.endswith("_") and not name.startswith("_") and name not in rebuilt]


def _callback_state(name, callback, owner="fit"):
    """The training state of a callback, as a checkpoint holds it; a TypeError names what it cannot hold.

    A callback with ``state_dict()`` and ``load_state_dict(state)`` is saved by them; any other
    by its attributes (:func:`_attribute_names`), an attribute whose value has ``state_dict``
    (a learning-rate scheduler) by that.
    """
    try:
        if _has_protocol(callback):
            return {"state_dict": _encode(callback.state_dict(), "state_dict()")}
        attributes = {}
        for attribute in _attribute_names(callback):
            value = getattr(callback, attribute)
            if not isinstance(value, type) and _has_protocol(value):
                attributes[attribute] = {"state_dict": _encode(value.state_dict(), f"{attribute}.state_dict()")}
            else:
                attributes[attribute] = {"value": _encode(value, attribute)}
        return {"attributes": attributes}
    except _Unsavable as error:
        fix = ("make state_dict() return plain data" if _has_protocol(callback) else
               "give the callback a state_dict() method returning its training state as plain data and a "
               "load_state_dict(state) method restoring it (state_dict() may return {} for a callback that "
               "keeps nothing from one epoch to the next)")
        raise TypeError(
            f"{owner}: the checkpoint cannot hold the state of the callback {name!r} ({type(callback).__qualname__}): "
            f"{error.where} is a {error.kind}, which a checkpoint cannot save; it would not be restored, and a "
            f"resumed fit would differ from the uninterrupted one. A checkpoint holds numbers, strings, bytes, "
            f"tensors, NumPy arrays, NumPy and torch random generators, and lists, tuples and dicts of them: "
            f"{fix}."
        ) from None


def _restore_callback(callback, state):
    if "state_dict" in state:
        callback.load_state_dict(_decode(state["state_dict"]))
        return
    for name, entry in state["attributes"].items():
        if "state_dict" in entry:
            getattr(callback, name).load_state_dict(_decode(entry["state_dict"]))
        else:
            setattr(callback, name, _decode(entry["value"], getattr(callback, name, None)))


def _rank_state(net):
    """The random streams of this process."""
    state = {"torch": torch.get_rng_state()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    generator = getattr(net, "subsample_generator_", None)
    if generator is not None:
        state["subsample"] = generator.get_state()
    return state


def _restore_rank_state(net, state):
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
    if "subsample" in state:
        generator = torch.Generator()
        generator.set_state(state["subsample"])
        net.subsample_generator_ = generator


def _world(net):
    return getattr(net, "rank_", 0), getattr(net, "world_size_", 1)


def _differences(saved, current, limit=3):
    names = sorted(set(saved) | set(current))
    changed = [name for name in names if saved.get(name, "<unset>") != current.get(name, "<unset>")]
    shown = [f"{name}={_short(saved.get(name, '<unset>'))} there, {_short(current.get(name, '<unset>'))} here"
             for name in changed[:limit]]
    more = f" and {len(changed) - limit} more" if len(changed) > limit else ""
    return "; ".join(shown) + more


def _short(value, limit=80):
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


class TrainingCheckpoint(Callback):
    """Write an atomic checkpoint after each epoch; resume from it at the start of a later fit.

    The neural rankers add it when ``checkpoint_dir`` is set; see the module docstring for
    what a checkpoint holds. It must run after the callbacks whose state it restores: the
    rankers put it after every other callback (skorch still runs ``PrintLog`` last).

    Parameters
    ----------
    directory : str or path-like
        Folder of the checkpoint (created when missing).
    parameters : dict, default=None
        Description of the estimator's parameters (:func:`describe_parameters`): a checkpoint
        written under other parameters is refused, naming the first that differ.
    owner : str, default="fit"
        Name used in messages (the estimator's class).

    Raises
    ------
    TypeError
        When training starts (and at each write), for a callback whose state holds a value a
        checkpoint cannot save, naming the callback and the attribute (or the entry of its
        ``state_dict()``).
    """

    def __init__(self, directory, *, parameters=None, owner="fit"):
        self.directory = directory
        self.parameters = parameters
        self.owner = owner

    @property
    def path(self):
        return os.path.join(os.fspath(self.directory), CHECKPOINT_FILE)

    def _fix(self):
        return (f"Fit with the parameters and data of that run to resume it, or set checkpoint_dir to another "
                f"folder (or delete {self.path!r}) to train from scratch.")

    def _read(self):
        try:
            with open(self.path, "rb") as file:
                content = file.read()
        except FileNotFoundError:
            return None
        try:
            state = torch.load(io.BytesIO(content), map_location="cpu", weights_only=True)
        except Exception as error:  # a truncated zip, a foreign file: the reason is in torch's message
            raise ValueError(
                f"{self.owner}: the checkpoint {self.path!r} cannot be read (truncated or not a checkpoint: "
                f"{type(error).__name__}: {str(error)[:200]}). It was left as it is. Delete it to train from "
                f"scratch, or restore a whole copy of it to resume."
            ) from None
        if not isinstance(state, dict) or state.get("version") != _VERSION:
            raise ValueError(f"{self.owner}: {self.path!r} is not a checkpoint of this version of sklearn_ltr "
                             f"(layout {state.get('version') if isinstance(state, dict) else None!r}, expected "
                             f"{_VERSION}). It was left as it is. {self._fix()}")
        return state

    def _check(self, state, parameters, fingerprint, world_size):
        if state["parameters"] != parameters:
            raise ValueError(
                f"{self.owner}: the checkpoint {self.path!r} was written by a fit with other parameters "
                f"({_differences(state['parameters'], parameters)}); it was not used and is left as it is. "
                f"{self._fix()}"
            )
        if state["data"] != fingerprint:
            raise ValueError(
                f"{self.owner}: the checkpoint {self.path!r} was written for other training data "
                f"({state['data_summary']} there, {self._summary} here, or the same shape with other values, "
                f"labels, query ids or query weights); it was not used and is left as it is. {self._fix()}"
            )
        if state.get("validation") != self._validation:  # None in a checkpoint written without one
            raise ValueError(
                f"{self.owner}: the checkpoint {self.path!r} was written for another validation set (X_val, y_val, "
                f"groups_val, propensity_val or another per-row input of it differ, or only one of the two fits "
                f"had one): the validation values of the history and the epoch early stopping stops at depend "
                f"on it; it was not used and is left as it is. {self._fix()}"
            )
        if state["world_size"] != world_size:
            raise ValueError(
                f"{self.owner}: the checkpoint {self.path!r} was written by {state['world_size']} process(es), "
                f"this job has {world_size}: each process's random streams cannot be mapped to another number "
                f"of processes; it was not used and is left as it is. Resume with {state['world_size']} "
                f"process(es), or set checkpoint_dir to another folder to train from scratch."
            )

    def on_train_begin(self, net, X=None, y=None, **kwargs):
        rank, world_size = _world(net)
        self._fingerprint = data_fingerprint(X)
        self._validation = validation_fingerprint(net.callbacks_)
        self._summary = f"{X.n_rows} rows of {len(X)} queries"
        self._parameters = dict(self.parameters or {})
        net.resumed_from_epoch_ = None  # the estimator's resumed_from_epoch_: None for a fresh start
        state = self._read()
        if state is not None:
            self._restore(net, state, rank, world_size)
        self._callback_states(net)  # a callback whose state cannot be saved is refused before the first epoch

    def _callback_states(self, net):
        return {name: _callback_state(name, callback, self.owner)
                for name, callback in net.callbacks_ if callback is not self}

    def _restore(self, net, state, rank, world_size):
        self._check(state, self._parameters, self._fingerprint, world_size)
        for kind in ("modules", "criteria", "optimizers"):
            for name, saved in state[kind].items():
                getattr(net, name + "_").load_state_dict(saved)
        net.history = History(state["history"])
        callbacks = dict(net.callbacks_)
        for name, saved in state["callbacks"].items():
            if name in callbacks:
                _restore_callback(callbacks[name], saved)
        net.generator_.set_state(state["generator"])
        _restore_rank_state(net, state["ranks"][rank])
        net.resume_from(len(state["history"]), finished=state["finished"])

    def _state(self, net, finished):
        rank, world_size = _world(net)
        ranks = [_rank_state(net)]
        if world_size > 1:
            import torch.distributed as dist

            ranks = [None] * world_size
            dist.all_gather_object(ranks, _rank_state(net))
        if rank != 0:
            return None

        def saved(name):
            return {key: value.detach().cpu().clone() if torch.is_tensor(value) else value
                    for key, value in getattr(net, name + "_").state_dict().items()}

        return {
            "version": _VERSION,
            "finished": finished,
            "parameters": self._parameters,
            "data": self._fingerprint,
            "data_summary": self._summary,
            "validation": self._validation,
            "world_size": world_size,
            "modules": {name: saved(name) for name in net._modules},
            "criteria": {name: saved(name) for name in net._criteria},
            "optimizers": {name: _plain(getattr(net, name + "_").state_dict()) for name in net._optimizers},
            "history": _plain(list(net.history)),
            "callbacks": self._callback_states(net),
            "generator": net.generator_.get_state(),
            "ranks": ranks,
        }

    def _write(self, net, finished):
        state = self._state(net, finished)
        if state is None:
            return
        os.makedirs(self.directory, exist_ok=True)
        write_atomically(self.path, lambda file: torch.save(state, file))

    def on_epoch_end(self, net, **kwargs):
        self._write(net, finished=False)

    def on_train_end(self, net, **kwargs):
        # Marks the fit complete: a later fit restores the final model and trains no further epoch.
        if getattr(net, "interrupted_", False):
            return
        self._write(net, finished=True)


def training_checkpoint(estimator):
    """The :class:`TrainingCheckpoint` of an estimator with a ``checkpoint_dir``, keyed by its parameters."""
    parameters = {name: describe_parameters(value) for name, value in estimator.get_params(deep=False).items()
                  if name not in _NOT_TRAINING}
    parameters["estimator"] = type(estimator).__qualname__
    return TrainingCheckpoint(estimator.checkpoint_dir, parameters=parameters, owner=f"{type(estimator).__name__}.fit")

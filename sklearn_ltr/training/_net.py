"""The private skorch net behind every neural ranker.

:class:`RankingNet` is a :class:`skorch.NeuralNet` whose items are queries: it
iterates over padded, length-bucketed batches (:mod:`~sklearn_ltr.training._batches`),
computes a mask-aware ranking loss, splits validation data by query, and scores one
row of a query dataset through the rankers' one scoring path
(:mod:`~sklearn_ltr.training._predict`). Its variation points are declared, never patched:

- ``precision`` (:mod:`~sklearn_ltr.training._precision`) is read in :meth:`RankingNet.infer`
  alone, and only in training: scoring always runs in float32;
- :attr:`RankingNet.batches_class` and :meth:`RankingNet.batch_options` are the one place
  that builds the batch iterator; the data-parallel net (:mod:`~sklearn_ltr.training._distributed`)
  swaps the class and extends the options;
- :meth:`RankingNet.reduce_sum` sums a tensor over the processes that train together
  (none here: it returns it unchanged);
- :attr:`RankingNet.checks_batch_loss` says whether each step checks its own loss for
  NaN (the data-parallel net checks the global loss instead).

The public estimators build one in ``fit`` and keep it as ``net_``, by default as an
*inference net* without its training state (:mod:`~sklearn_ltr.training._state`).
"""

from __future__ import annotations

import contextlib
import math

import numpy as np
import torch
from skorch import NeuralNet
from skorch.callbacks import EarlyStopping, PrintLog

from sklearn_ltr._blocks import canonical_query_order
from sklearn_ltr.exceptions import NonFiniteLossError
from sklearn_ltr.training._batches import CLICK_WEIGHTS, QueryBatches, QueryDataset
from sklearn_ltr.training._device import is_cuda
from sklearn_ltr.training._mapped import in_place_dataset
from sklearn_ltr.training._precision import check_precision, training_autocast
from sklearn_ltr.training._predict import dataset_blocks, dataset_inputs, device_batches, predict_scores
from sklearn_ltr.training._state import inference_net, inference_state, is_inference_state, restore_inference_net

__all__ = ["CLICK_WEIGHTS", "QuerySplit", "RankingLoss", "RankingNet", "build_dataset"]


class RankingLoss(torch.nn.Module):
    """Criterion wrapping a loss of :mod:`sklearn_ltr.losses`: ``loss(scores, labels, mask)``.

    Per-query ``weights`` (from ``fit(..., sample_weight=...)``) and per-document
    ``click_weights`` (inverse propensities, from ``fit(..., propensity=...)``) are passed as
    the loss's options of those names only when given, so that losses without those options
    keep working.
    """

    def __init__(self, loss):
        super().__init__()
        self.loss = loss

    def forward(self, scores, labels, mask, weights=None, click_weights=None):
        # Losses run in float32 even when the forward pass ran under bf16 autocast.
        options = {}
        if weights is not None:
            options["weights"] = weights
        if click_weights is not None:
            options["click_weights"] = click_weights
        return self.loss(scores.float(), labels.float(), mask, **options)


class QuerySplit:
    """skorch ``train_split`` that holds out a random fraction of queries (never splits a query).

    Parameters
    ----------
    fraction : float
        Share of queries in the validation set, in (0, 1).
    random_state : int or None
        Seed of the split.
    """

    def __init__(self, fraction, random_state=None):
        self.fraction = fraction
        self.random_state = random_state

    def __call__(self, dataset, y=None, **fit_params):
        n_queries = len(dataset)
        n_valid = round(self.fraction * n_queries)
        if n_valid < 1 or n_valid >= n_queries:
            raise ValueError(
                f"validation_fraction={self.fraction} leaves {n_valid} of {n_queries} queries for "
                f"validation; it needs at least one query on each side."
            )
        permutation = np.random.default_rng(self.random_state).permutation(n_queries)
        valid = torch.as_tensor(np.sort(permutation[:n_valid]))
        train = torch.as_tensor(np.sort(permutation[n_valid:]))
        return dataset.subset(train), dataset.subset(valid)


class RankingNet(NeuralNet):
    """skorch net over query datasets; see the module docstring.

    Parameters
    ----------
    module : torch.nn.Module class or instance
        Maps ``(X, mask, **extras)`` to scores ``[batch, list]``.
    criterion : RankingLoss
        Set ``criterion__loss`` to a loss function of :mod:`sklearn_ltr.losses`.
    max_list_length : int, default=None
        Training lists longer than this are subsampled (relevant documents kept first).
    random_state : int, default=None
        Seeds module initialisation, dropout, shuffling and subsampling.
    precision : {"32-true", "bf16-mixed"}, default="32-true"
        Precision of the training forward pass (:mod:`~sklearn_ltr.training._precision`);
        scoring is always float32.
    prediction_documents : int, default=65536
        Documents per prediction batch (whole lists; a longer list is a batch of its own),
        independent of the training ``batch_size``.
    **kwargs
        Any :class:`skorch.NeuralNet` parameter.
    """

    #: Whether each training and validation step checks its own loss for NaN.
    checks_batch_loss = True

    #: The batch iterator's class; :meth:`batch_options` gives its keyword arguments.
    batches_class = QueryBatches

    def __init__(self, module, *args, max_list_length=None, random_state=None, precision="32-true",
                 prediction_documents=1 << 16, **kwargs):
        super().__init__(module, *args, **kwargs)
        self.max_list_length = max_list_length
        self.random_state = random_state
        self.precision = precision
        self.prediction_documents = prediction_documents

    @property
    def inference_class(self):
        """The class of this net's inference net (:meth:`without_training_state`): its own."""
        return type(self)

    def batch_options(self, dataset, training):
        """Keyword arguments of the batch iterator over ``dataset``."""
        return {
            "batch_size": self.batch_size if self.batch_size > 0 else len(dataset),
            "shuffle": training,
            "max_list_length": self.max_list_length if training else None,
            "generator": getattr(self, "generator_", None),
            "device": self.device,
            "packed": self.packed_inputs,
        }

    @property
    def packed_inputs(self):
        """Whether the module scores packed rows (``packed_inputs = True``): batches then gather no padding."""
        return bool(getattr(getattr(self, "module_", None), "packed_inputs", False))

    def get_iterator(self, dataset, training=False):
        """The batches of ``dataset`` in training (shuffled, subsampled) or validation order."""
        options = self.batch_options(dataset, training)
        return self.batches_class(dataset.to(self.device), options.pop("batch_size"), **options)

    def reduce_sum(self, tensor):
        """Sum of ``tensor`` over the processes training together: itself, for one process."""
        return tensor

    def infer(self, x, **fit_params):
        # Query weights feed the loss, and keys starting with "_" the batch's bookkeeping: not the module.
        x = {name: value for name, value in x.items() if name != "weights" and not name.startswith("_")}
        autocast = training_autocast(self.precision, self.device) if self.module_.training else contextlib.nullcontext()
        with autocast:
            return super().infer(x, **fit_params)

    def get_loss(self, y_pred, y_true, X=None, training=False):
        if CLICK_WEIGHTS in X:
            return self.criterion_(y_pred, y_true, X["mask"], weights=X.get("weights"), click_weights=X[CLICK_WEIGHTS])
        return self.criterion_(y_pred, y_true, X["mask"], weights=X.get("weights"))

    def check_finite_loss(self, loss, where):
        """Raise :class:`NonFiniteLossError` when ``loss`` (a scalar tensor) is NaN or infinite."""
        # One scalar per batch: skorch reads it with .item() for the history anyway.
        if torch.isfinite(loss).all():
            return
        epoch = len(self.history)
        batches = self.history[-1]["batches"] if epoch else []
        # The epoch's history lists its training batches, then its validation batches: a validation
        # batch is numbered among the validation batches (those without a training loss).
        batch = len(batches) if where == "training" else sum("train_loss" not in entry for entry in batches)
        raise NonFiniteLossError(
            f"The {where} loss became {float(loss)} at epoch {epoch}, batch {batch}: training diverged and the "
            f"weights are no longer usable, so fit stopped. Lower the learning rate (lr={self.lr:g}), scale the "
            f"features (StandardScaler or Log1pTransformer in a Pipeline), check the labels' range, or check a "
            f"custom loss for NaN."
        )

    def train_step(self, batch, **fit_params):
        step = super().train_step(batch, **fit_params)
        if self.checks_batch_loss:
            self.check_finite_loss(step["loss"].detach(), "training")
        return step

    def validation_step(self, batch, **fit_params):
        step = super().validation_step(batch, **fit_params)
        if self.checks_batch_loss:
            self.check_finite_loss(step["loss"].detach(), "validation")
        return step

    def run_single_epoch(self, iterator, training, prefix, step_fn, **fit_params):
        # skorch's loop, except the batch size: skorch's get_len asks every input for one length,
        # which a packed batch (X holds its real documents, the mask its lists) does not have.
        # The lists of a batch are the rows of its mask.
        if iterator is None:
            return
        batch_count = 0
        for batch in iterator:
            self.notify("on_batch_begin", batch=batch, training=training)
            step = step_fn(batch, **fit_params)
            self.history.record_batch(prefix + "_loss", step["loss"].item())
            self.history.record_batch(prefix + "_batch_size", int(batch[0]["mask"].shape[0]))
            self.notify("on_batch_end", batch=batch, training=training, **step)
            batch_count += 1
        self.history.record(prefix + "_batch_count", batch_count)

    def notify(self, method_name, **cb_kwargs):
        """skorch's notify, except that the epoch's log row still prints when a callback stops training.

        skorch runs ``PrintLog`` last, and ``EarlyStopping`` stops by raising at the end of an
        epoch: without this, ``verbose=1`` would leave the last epoch (the one in ``history_``
        that decided to stop) out of the table.
        """
        if method_name != "on_epoch_end":
            return super().notify(method_name, **cb_kwargs)
        getattr(self, method_name)(self, **cb_kwargs)
        for position, (_, callback) in enumerate(self.callbacks_):
            try:
                callback.on_epoch_end(self, **cb_kwargs)
            except KeyboardInterrupt:
                for _, later in self.callbacks_[position + 1:]:
                    if isinstance(later, PrintLog):
                        later.on_epoch_end(self, **cb_kwargs)
                raise
        return None

    def resume_from(self, epochs, *, finished=False):
        """Continue a training run after its first ``epochs`` epochs, restored from a checkpoint.

        Called by a callback's ``on_train_begin`` once it has restored the weights, the
        optimizer, the history and the random streams of those epochs: the fit under way then
        trains only the epochs that remain of ``max_epochs``, none when ``finished`` (that run
        had ended, e.g. stopped early). Sets ``resumed_from_epoch_`` to ``epochs``.

        Parameters
        ----------
        epochs : int
            Epochs the restored run had trained.
        finished : bool, default=False
            Whether that run had ended.
        """
        self.resumed_from_epoch_ = epochs
        self._epochs_done_ = math.inf if finished else epochs  # read once, by the fit loop under way

    def fit_loop(self, X, y=None, epochs=None, **fit_params):
        # skorch swallows KeyboardInterrupt in partial_fit, and its EarlyStopping raises one to
        # stop: remember a real interruption (Ctrl-C) for the estimator.
        # A resumed run (resume_from) trains the epochs that remain.
        done = self.__dict__.pop("_epochs_done_", 0)
        if done:
            epochs = int(max(0, (self.max_epochs if epochs is None else epochs) - min(done, 2**62)))
        try:
            return super().fit_loop(X, y, epochs=epochs, **fit_params)
        except KeyboardInterrupt:
            stopped = any(isinstance(callback, EarlyStopping) and callback.misses_ >= callback.patience
                          for _, callback in self.callbacks_)
            self.interrupted_ = not stopped
            raise

    def _check_trainable(self):
        if getattr(self, "inference_only_", False):
            raise RuntimeError(
                "This net kept only what prediction needs (keep_training_state=False): it has no optimizer, "
                "criterion or callbacks to train with. Refit the ranker, with keep_training_state=True to keep "
                "the training state."
            )

    def partial_fit(self, X, y=None, classes=None, **fit_params):
        self._check_trainable()
        return super().partial_fit(X, y, classes=classes, **fit_params)

    def fit(self, X, y=None, **fit_params):
        """Train on a :class:`QueryDataset` (``y`` unused: labels live in the dataset)."""
        self._check_trainable()
        self.interrupted_ = False
        seed = self.random_state
        if seed is None:
            seed = int(np.random.default_rng().integers(2**31))
        check_precision(self.precision)
        devices = [torch.device(self.device)] if is_cuda(self.device) else []
        # Seed torch without disturbing the caller's global random state.
        with torch.random.fork_rng(devices=[d.index or 0 for d in devices]):
            torch.manual_seed(seed)
            self.generator_ = torch.Generator().manual_seed(seed)
            super().fit(X, None, **fit_params)
        if not all(torch.isfinite(p).all() for p in self.module_.parameters()):
            raise NonFiniteLossError(
                "Training ended with non-finite weights (NaN or inf); the model cannot score. Lower the learning "
                f"rate (lr={self.lr:g}) or scale the features."
            )
        return self

    def prediction_batches(self, dataset, *, documents=None):
        """Yield the module's inputs of each batch that :meth:`score_rows` runs over ``dataset``, on the device.

        The blocks, staging and batches of the scoring path
        (:func:`~sklearn_ltr.training._predict.device_batches`); for timing the module alone.
        """
        X, extras = dataset_inputs(dataset)
        wanted = documents or self.prediction_documents
        return device_batches(self, X, dataset_blocks(dataset), documents=lambda sizes: wanted, extras=extras)

    def score_rows(self, dataset, *, documents=None):
        """Score every row of ``dataset`` (whole lists) in float32; float64 scores in the dataset's row order.

        The rankers' one scoring path (:func:`~sklearn_ltr.training._predict.predict_scores`),
        over blocks of the dataset's queries (:func:`~sklearn_ltr.training._predict.dataset_blocks`):
        each list in its canonical order, batches of at most ``documents`` padded slots
        (``prediction_documents`` by default; a longer list is a batch of its own), whatever the
        training ``batch_size``, so that a row gets the score ``predict`` gives it. Never under
        autocast. The module's training mode is restored afterwards, so a callback may score
        between epochs. Rows of the flat tensors that no query of ``dataset`` holds (a subset
        over rows used where they lie) are NaN.
        """
        self.check_is_fitted()
        X, extras = dataset_inputs(dataset)
        wanted = documents or self.prediction_documents
        scores, _ = predict_scores(self, X, dataset_blocks(dataset), documents=lambda sizes: wanted, extras=extras)
        return scores

    def check_data(self, X, y=None):
        if not isinstance(X, QueryDataset):
            raise TypeError("RankingNet trains on a QueryDataset; use the public rankers instead.")

    def without_training_state(self):
        """A net of this class with only what prediction needs (it shares this net's trained module).

        It keeps the module, the settings that prediction reads (device, batch size,
        precision) and the per-epoch rows of the history; not the optimizer, criterion,
        callbacks, random generator or per-batch losses. It pickles as plain state
        (module class and arguments, weights as NumPy arrays), rebuilt on load; it
        refuses to train.
        """
        return inference_net(self)

    def __getstate__(self):
        if self.__dict__.get("inference_only_", False):
            return inference_state(self)
        return super().__getstate__()

    def __setstate__(self, state):
        if is_inference_state(state):
            restore_inference_net(self, state)
        else:
            super().__setstate__(state)


def build_dataset(query_groups, X, y=None, *, query_weights=None, **extras):
    """:class:`QueryDataset` of the rows grouped by ``query_groups``, each query's rows in canonical order.

    The rows of each query come in their canonical order
    (:func:`~sklearn_ltr._blocks.canonical_query_order`: by the features as numbers, then the label,
    then each extra per-row input), so that training does not depend on the order of the rows
    within a query: batches, the documents ``max_list_length`` keeps, the noise or dropout drawn
    per slot and every sum over a list see the same rows in the same places.
    A float32 ``X`` whose queries' rows are contiguous (a memory-mapped file of the on-disk
    layout) is used in place (:mod:`~sklearn_ltr.training._mapped`), anything else copied.
    """
    tie_breakers = [np.asarray(values) for values in ([] if y is None else [y])]
    tie_breakers += [np.asarray(values) for values in extras.values()]
    order = canonical_query_order(query_groups, X, *tie_breakers)
    dataset = in_place_dataset(query_groups, X, y, query_weights=query_weights, order=order, **extras)
    if dataset is not None:
        return dataset
    return QueryDataset.from_arrays(query_groups, X, y, query_weights=query_weights, order=order, **extras)

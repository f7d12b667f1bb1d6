"""The private skorch net behind every neural ranker.

:class:`RankingNet` is a :class:`skorch.NeuralNet` whose items are queries: it
iterates over padded, length-bucketed batches (:mod:`sklearn_ltr._query_batches`),
computes a mask-aware ranking loss, splits validation data by query, logs the
validation NDCG@10 in its history (usable by ``EarlyStopping``), and predicts
one score per row. Users never see it: the public estimators build one in
``fit`` and keep it as ``net_``, by default as an *inference net* without its
training state (:meth:`RankingNet.without_training_state`, :mod:`sklearn_ltr._model_state`).
"""

from __future__ import annotations

import contextlib

import numpy as np
import torch
from skorch import NeuralNet
from skorch.callbacks import Callback, EarlyStopping

from sklearn_ltr._model_state import inference_net, inference_state, is_inference_state, restore_inference_net
from sklearn_ltr._query_batches import QueryBatches, QueryDataset
from sklearn_ltr.exceptions import NonFiniteLossError

__all__ = ["QuerySplit", "RankingLoss", "RankingNet", "ValidationNDCG", "resolve_device"]


def resolve_device(device):
    """``"auto"`` -> CUDA when available, else CPU; ``"cpu"``/``"cuda"``/``"cuda:N"`` as given."""
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if isinstance(device, torch.device):
        device = str(device)
    if not isinstance(device, str) or device.split(":")[0] not in {"cpu", "cuda"}:
        raise ValueError(f"device must be 'auto', 'cpu' or 'cuda' (or 'cuda:N'); got {device!r}.")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"device={device!r} but CUDA is not available here; use device='auto' or 'cpu'.")
    return device


class RankingLoss(torch.nn.Module):
    """Criterion wrapping a loss of :mod:`sklearn_ltr.losses`: ``loss(scores, labels, mask)``.

    Per-query ``weights`` (from ``fit(..., sample_weight=...)``) are passed as the loss's
    ``weights`` option only when given, so that losses without that option keep working.
    """

    def __init__(self, loss):
        super().__init__()
        self.loss = loss

    def forward(self, scores, labels, mask, weights=None):
        # Losses run in float32 even when the forward pass ran under bf16 autocast.
        if weights is None:
            return self.loss(scores.float(), labels.float(), mask)
        return self.loss(scores.float(), labels.float(), mask, weights=weights)


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


class ValidationNDCG(Callback):
    """Record the mean NDCG@k of the validation queries after each epoch, as ``valid_ndcg@k``.

    It reuses the predictions of skorch's validation pass (no second forward
    pass). Monitor it with ``EarlyStopping(monitor="valid_ndcg@10", lower_is_better=False)``.
    """

    def __init__(self, k=10):
        self.k = k

    @property
    def name(self):
        return f"valid_ndcg@{self.k}"

    def on_epoch_begin(self, net, **kwargs):
        self._scores, self._labels, self._groups = [], [], []
        self._n_queries = 0

    def on_batch_end(self, net, batch=None, training=False, y_pred=None, **kwargs):
        if training or y_pred is None:
            return
        inputs, labels = batch
        mask = inputs["mask"]
        # Any id unique to each list of the epoch identifies its query.
        query = torch.arange(mask.shape[0], device=mask.device)[:, None].expand_as(mask)
        self._scores.append(y_pred[mask].float().cpu())
        self._labels.append(labels[mask].float().cpu())
        self._groups.append(query[mask].cpu() + self._n_queries)
        self._n_queries += mask.shape[0]

    def on_epoch_end(self, net, **kwargs):
        if not self._scores:
            return
        from sklearn_ltr.metrics import ndcg_score

        scores = torch.cat(self._scores).numpy().astype(np.float64)
        if not np.isfinite(scores).all():
            value = float("nan")
        else:
            value = ndcg_score(torch.cat(self._labels).numpy(), scores, torch.cat(self._groups).numpy(), k=self.k)
        net.history.record(self.name, value)


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
    autocast : bool, default=True
        Run the forward pass under bf16 autocast on CUDA (losses stay float32).
    **kwargs
        Any :class:`skorch.NeuralNet` parameter.
    """

    def __init__(self, module, *args, max_list_length=None, random_state=None, autocast=True, **kwargs):
        super().__init__(module, *args, **kwargs)
        self.max_list_length = max_list_length
        self.random_state = random_state
        self.autocast = autocast

    def _autocast(self):
        if self.autocast and str(self.device).startswith("cuda"):
            return torch.autocast("cuda", dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def get_iterator(self, dataset, training=False):
        return QueryBatches(
            dataset.to(self.device),
            self.batch_size if self.batch_size > 0 else len(dataset),
            shuffle=training,
            max_list_length=self.max_list_length if training else None,
            generator=getattr(self, "generator_", None),
            device=self.device,
        )

    def infer(self, x, **fit_params):
        # Query weights feed the loss, not the module.
        x = {name: value for name, value in x.items() if name != "weights"}
        with self._autocast():
            return super().infer(x, **fit_params)

    def get_loss(self, y_pred, y_true, X=None, training=False):
        return self.criterion_(y_pred, y_true, X["mask"], weights=X.get("weights"))

    def _check_finite(self, loss, where):
        # One scalar per batch: skorch reads it with .item() for the history anyway.
        if torch.isfinite(loss).all():
            return
        epoch = len(self.history)
        batch = len(self.history[-1]["batches"]) if epoch else 0
        raise NonFiniteLossError(
            f"The {where} loss became {float(loss)} at epoch {epoch}, batch {batch}: training diverged and the "
            f"weights are no longer usable, so fit stopped. Lower the learning rate (lr={self.lr:g}), scale the "
            f"features (StandardScaler or Log1pTransformer in a Pipeline), check the labels' range, or check a "
            f"custom loss for NaN."
        )

    def train_step(self, batch, **fit_params):
        step = super().train_step(batch, **fit_params)
        self._check_finite(step["loss"].detach(), "training")
        return step

    def validation_step(self, batch, **fit_params):
        step = super().validation_step(batch, **fit_params)
        self._check_finite(step["loss"].detach(), "validation")
        return step

    def fit_loop(self, X, y=None, epochs=None, **fit_params):
        # skorch swallows KeyboardInterrupt in partial_fit, and its EarlyStopping raises one to
        # stop: remember a real interruption (Ctrl-C) for the estimator.
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
        devices = [torch.device(self.device)] if str(self.device).startswith("cuda") else []
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

    def score_rows(self, dataset, batch_size=None):
        """Score every row of ``dataset`` (full lists); returns float64 scores in the dataset's row order."""
        self.check_is_fitted()
        batches = QueryBatches(
            dataset.to(self.device), batch_size or max(self.batch_size, 1), device=self.device
        )
        # NaN until scored: a row that no batch reached cannot pass for a score.
        scores = torch.full((dataset.n_rows,), float("nan"), dtype=torch.float32, device=self.device)
        self.module_.eval()
        with torch.no_grad():
            for inputs, _, rows in batches.with_rows():
                predicted = self.infer(inputs)
                mask = inputs["mask"]
                scores[rows[mask]] = predicted[mask].float()
        return scores.cpu().numpy().astype(np.float64)

    def check_data(self, X, y=None):
        if not isinstance(X, QueryDataset):
            raise TypeError("RankingNet trains on a QueryDataset; use the public rankers instead.")

    def without_training_state(self):
        """A net of this class with only what prediction needs (it shares this net's trained module).

        It keeps the module, the settings that prediction reads (device, batch size,
        autocast) and the per-epoch rows of the history; not the optimizer, criterion,
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
    """:class:`QueryDataset` of rows in input order grouped by ``query_groups``."""
    return QueryDataset.from_arrays(query_groups, X, y, query_weights=query_weights, **extras)

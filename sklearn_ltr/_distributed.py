"""Data-parallel training of the neural rankers with ``torch.distributed``.

A script launched by ``torchrun --nproc_per_node N script.py`` (or ``accelerate launch``,
which sets the same environment) fits a ranker built with ``distributed=True``. Every
process holds the whole training set and draws the same sequence of *global* batches
(same seed); process ``r`` trains on the queries ``r, r + N, r + 2N, ...`` of each global
batch, always whole queries. Its loss is its queries' share of the global batch's mean,
``sum_{q in r} w_q l_q / sum_{q in batch} w_q``, and the gradients are summed over the
processes, so every step is the step one process would take on the global batch; batch
norm uses the global batch's statistics. Validation queries are shared out the same way and
their NDCG@10 is reduced over all processes, so early stopping stops every process at the
same epoch. After ``fit`` each process holds the same ordinary fitted estimator.

Why not skorch's Accelerate integration: Accelerate shards a ``DataLoader``'s batches and by
default repeats samples to even them out (``even_batches=True``), which would train on some
queries twice; its gradient averaging is a mean of per-process means, which is the global
mean only when every process holds the same number of queries; and torch's
``SyncBatchNorm``, which it relies on for batch norm, runs on GPUs only. Here the batches are
built from flat tensors by :class:`~sklearn_ltr._query_batches.QueryBatches` (no
``DataLoader``), shares are weighted exactly, and batch norm is synchronised on CPU (gloo) as
on GPU (NCCL). ``accelerate launch`` works as a launcher all the same.
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import torch
import torch.distributed as dist
from skorch.callbacks import ProgressBar

from sklearn_ltr._query_batches import QueryBatches
from sklearn_ltr._skorch import RankingNet, ValidationNDCG

__all__ = ["DistributedValidationNDCG", "ShardedQueryBatches", "data_parallel", "process_world"]

# Keys of a batch that are bookkeeping for the loss, never inputs of the module.
_SHARE, _GLOBAL_SIZE, _IDLE = "_share", "_global_size", "_idle"


def process_world():
    """``(rank, world_size, local_rank)``: from the process group, else the launcher's environment."""
    if dist.is_available() and dist.is_initialized():
        local = int(os.environ.get("LOCAL_RANK", dist.get_rank()))
        return dist.get_rank(), dist.get_world_size(), local
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    return int(os.environ.get("RANK", "0")), world_size, int(os.environ.get("LOCAL_RANK", "0"))


def _init_process_group(device):
    """Join the launcher's process group (gloo on CPU, NCCL on CUDA) unless the script already did."""
    if dist.is_initialized():
        return
    if "MASTER_ADDR" not in os.environ:
        raise RuntimeError(
            "distributed=True found WORLD_SIZE > 1 but no MASTER_ADDR: launch the script with torchrun "
            "(torchrun --nproc_per_node N script.py) or accelerate launch, or call "
            "torch.distributed.init_process_group yourself before fit."
        )
    backend = "nccl" if str(device).startswith("cuda") else "gloo"
    dist.init_process_group(backend=backend)


def _broadcast_int(value):
    """``value`` of rank 0 on every process (a fresh random int where rank 0 has ``None``)."""
    if value is None:
        value = int(np.random.default_rng().integers(2**31))
    tensor = torch.tensor([int(value)], dtype=torch.int64)
    if dist.get_backend() == "nccl":
        tensor = tensor.cuda()
    dist.broadcast(tensor, src=0)
    return int(tensor.item())


def _all_reduce(tensor):
    """Sum of ``tensor`` over every process (moved to the backend's device and back)."""
    device = tensor.device
    if dist.get_backend() == "nccl" and device.type != "cuda":
        tensor = tensor.cuda()
    dist.all_reduce(tensor)
    return tensor.to(device)


class ShardedQueryBatches(QueryBatches):
    """:class:`QueryBatches` cut into the share of one process.

    Every process draws the same global batches (the shuffling generator has the same
    seed everywhere and nothing else consumes it); process ``rank`` gets the queries
    ``rank, rank + world_size, ...`` of each. In training, a global batch with fewer
    queries than processes joins its neighbour, so that every process has a list to run
    through the network (batch norm's statistics are reduced inside the forward pass).
    Each batch carries ``_share``, the process's part of the global batch's query weight,
    and ``_global_size``, the global number of queries. A process with no query in a
    validation batch gets an ``_idle`` batch, which it skips.

    Parameters
    ----------
    *args, **kwargs
        Those of :class:`QueryBatches`.
    rank, world_size : int
        This process and the number of processes.
    subsample_generator : torch.Generator
        Draws the documents kept by ``max_list_length`` (one per process, so that the
        shuffling generator stays the same on every process).
    """

    def __init__(self, *args, rank, world_size, subsample_generator=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.rank = rank
        self.world_size = world_size
        self.subsample_generator = subsample_generator

    def __len__(self):
        return len(self._global_batches())

    def _global_batches(self):
        batches = self._batches()
        if not self.shuffle:
            return batches
        merged = []
        for queries in batches:
            if merged and len(queries) < self.world_size:
                merged[-1] = torch.cat([merged[-1], queries])
            else:
                merged.append(queries)
        if len(merged) > 1 and len(merged[0]) < self.world_size:
            merged[1] = torch.cat([merged[0], merged[1]])
            merged = merged[1:]
        return merged

    def _weights(self, queries):
        weights = self.dataset.query_weights
        if weights is None:
            return torch.ones(len(queries), dtype=torch.float64)
        return weights[queries.to(weights.device)].double().cpu()

    def __iter__(self):
        for queries in self._global_batches():
            local = queries[self.rank::self.world_size]
            if len(local) == 0:
                yield {_IDLE: True, _GLOBAL_SIZE: len(queries)}, None
                continue
            total = float(self._weights(queries).sum())
            inputs, labels, _ = self.collate(local)
            share = float(self._weights(local).sum()) / total if total > 0 else 0.0
            inputs[_SHARE] = torch.tensor(share, dtype=torch.float32, device=inputs["mask"].device)
            inputs[_GLOBAL_SIZE] = len(queries)
            yield inputs, labels

    def _subsample(self, rows, mask):
        shuffling, self.generator = self.generator, self.subsample_generator
        try:
            return super()._subsample(rows, mask)
        finally:
            self.generator = shuffling


class DistributedValidationNDCG(ValidationNDCG):
    """:class:`ValidationNDCG` over the validation queries of every process (the same value everywhere)."""

    def on_epoch_end(self, net, **kwargs):
        from sklearn_ltr.metrics import ndcg_score

        total = torch.zeros(3, dtype=torch.float64)  # sum of per-query NDCG, queries, non-finite flag
        if self._scores:
            scores = torch.cat(self._scores).numpy().astype(np.float64)
            if not np.isfinite(scores).all():
                total[2] = 1.0
            else:
                mean = ndcg_score(torch.cat(self._labels).numpy(), scores, torch.cat(self._groups).numpy(), k=self.k)
                total[0], total[1] = mean * self._n_queries, self._n_queries
        total = _all_reduce(total)
        if total[1] == 0 and total[2] == 0:
            return
        net.history.record(self.name, float("nan") if total[2] > 0 else float(total[0] / total[1]))


class DataParallelMixin:
    """Methods of a :class:`~sklearn_ltr._skorch.RankingNet` that trains on its share of each batch.

    Mixed into the net's own class for the duration of ``fit`` only (see :func:`data_parallel`):
    the fitted net is an ordinary one, which pickles and predicts without a process group.
    """

    def get_iterator(self, dataset, training=False):
        if not hasattr(self, "subsample_generator_"):
            seed = (self.random_state or 0) + 1 + self.rank_
            self.subsample_generator_ = torch.Generator().manual_seed(seed)
        return ShardedQueryBatches(
            dataset.to(self.device), self.batch_size if self.batch_size > 0 else len(dataset),
            shuffle=training, max_list_length=self.max_list_length if training else None,
            generator=getattr(self, "generator_", None), device=self.device,
            rank=self.rank_, world_size=self.world_size_, subsample_generator=self.subsample_generator_,
        )

    def infer(self, x, **fit_params):
        return super().infer({k: v for k, v in x.items() if not k.startswith("_")}, **fit_params)

    def get_loss(self, y_pred, y_true, X=None, training=False):
        # This process's part of the global batch's weighted mean: the parts sum to the mean.
        return super().get_loss(y_pred, y_true, X=X, training=training) * X[_SHARE]

    def train_step_single(self, batch, **fit_params):
        step = super().train_step_single(batch, **fit_params)
        parameters = [p for p in self.module_.parameters() if p.requires_grad]
        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in parameters]
        flat = _all_reduce(torch.cat([g.reshape(-1) for g in grads]))
        offset = 0
        for parameter, grad in zip(parameters, grads, strict=True):
            size = grad.numel()
            parameter.grad = flat[offset:offset + size].view_as(grad).clone()
            offset += size
        return step

    def _check_finite(self, loss, where):
        # Checked on the global loss (run_single_epoch), identical on every process.
        return

    def run_single_epoch(self, iterator, training, prefix, step_fn, **fit_params):
        # skorch's loop, with each batch's loss summed over the processes (the global batch's
        # loss) and the global batch size recorded, so the history is one process's history.
        if iterator is None:
            return
        batch_count = 0
        for batch in iterator:
            inputs = batch[0]
            if inputs.get(_IDLE):
                loss = torch.zeros((), dtype=torch.float32)
            else:
                self.notify("on_batch_begin", batch=batch, training=training)
                step = step_fn(batch, **fit_params)
                loss = step["loss"].detach().float().cpu()
            loss = _all_reduce(loss.reshape(1))[0]
            RankingNet._check_finite(self, loss, "training" if training else "validation")
            self.history.record_batch(prefix + "_loss", loss.item())
            self.history.record_batch(prefix + "_batch_size", int(inputs[_GLOBAL_SIZE]))
            if not inputs.get(_IDLE):
                self.notify("on_batch_end", batch=batch, training=training, **step)
            batch_count += 1
        self.history.record(prefix + "_batch_count", batch_count)

    def fit(self, X, y=None, **fit_params):
        from sklearn_ltr.nn import _mlp

        plain = self._plain_class
        _mlp.SYNC_BATCH_NORM = True
        try:
            return super().fit(X, y, **fit_params)
        finally:
            _mlp.SYNC_BATCH_NORM = False
            self.__class__ = plain
            for name in ("rank_", "world_size_", "subsample_generator_", "_plain_class"):
                self.__dict__.pop(name, None)


_CLASSES = {}


def _data_parallel_class(net_class):
    if net_class not in _CLASSES:
        _CLASSES[net_class] = type(f"DataParallel{net_class.__name__}", (DataParallelMixin, net_class), {})
    return _CLASSES[net_class]


def data_parallel(net, *, owner):
    """Make ``net`` (an unfitted RankingNet) train on this process's share of each batch.

    Returns ``net`` unchanged, with a warning, when the script runs as a single process.
    Joins the launcher's process group if the script has not; puts a CUDA net on the
    process's own GPU (``LOCAL_RANK``); keeps logging and progress bars on rank 0 only;
    gives every process rank 0's seeds.
    """
    rank, world_size, local_rank = process_world()
    if world_size < 2:
        warnings.warn(
            f"{owner}(distributed=True) runs as a single process (no process group, WORLD_SIZE unset or 1): it "
            f"trains as with distributed=False. Launch the script with torchrun --nproc_per_node N (or "
            f"accelerate launch) to train on N processes.", UserWarning, stacklevel=4,
        )
        return net
    if str(net.device).startswith("cuda"):
        net.device = f"cuda:{local_rank}"
        torch.cuda.set_device(local_rank)
    _init_process_group(net.device)
    net.random_state = _broadcast_int(net.random_state)
    split = net.train_split
    if split is not None and getattr(split, "random_state", 0) is None:
        split.random_state = _broadcast_int(None)
    callbacks = []
    for name, callback in net.callbacks:
        if isinstance(callback, ValidationNDCG):
            callback = DistributedValidationNDCG(k=callback.k)
        if rank > 0 and isinstance(callback, ProgressBar):
            continue
        callbacks.append((name, callback))
    net.callbacks = callbacks
    if rank > 0:
        net.verbose = 0
    net._plain_class = type(net)
    net.__class__ = _data_parallel_class(type(net))
    net.rank_, net.world_size_ = rank, world_size
    return net


"""Data-parallel training of the neural rankers with ``torch.distributed``.

A script launched by ``torchrun --nproc_per_node N script.py`` (or ``accelerate launch``,
which sets the same environment; N = 1 included) fits a ranker built with ``distributed=True``. Every
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

How it is composed: :class:`DataParallelRankingNet` is a class written here, chosen by the
ranker when it builds its net (:func:`net_class_for`); no class is swapped at run time and no
module-level flag is set. Synchronisation is passed to the modules and the loss that need it
(:func:`sklearn_ltr.nn.set_reduce_sum`) for the duration of ``fit``.
"""

from __future__ import annotations

import atexit
import os
import warnings

import numpy as np
import torch
import torch.distributed as dist
from skorch.callbacks import ProgressBar

from sklearn_ltr.nn import set_reduce_sum
from sklearn_ltr.training._batches import QueryBatches
from sklearn_ltr.training._device import is_cuda
from sklearn_ltr.training._net import RankingNet

__all__ = ["DataParallelMixin", "DataParallelRankingNet", "ShardedQueryBatches", "all_reduce_sum", "net_class_for",
           "process_world"]

# Keys of a batch that are bookkeeping for the loss, never inputs of the module.
_SHARE, _GLOBAL_SIZE, _IDLE = "_share", "_global_size", "_idle"


def process_world():
    """``(rank, world_size, local_rank)``: from the process group, else the launcher's environment."""
    if dist.is_available() and dist.is_initialized():
        local = int(os.environ.get("LOCAL_RANK", dist.get_rank()))
        return dist.get_rank(), dist.get_world_size(), local
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    return int(os.environ.get("RANK", "0")), world_size, int(os.environ.get("LOCAL_RANK", "0"))


def _launched():
    """Whether this process belongs to a launched job (torchrun, accelerate launch), even of one process."""
    return (dist.is_available() and dist.is_initialized()) or "WORLD_SIZE" in os.environ


def net_class_for(distributed, *, owner, plain=RankingNet, data_parallel=None):
    """The net class a ranker trains with: ``data_parallel`` under a launcher, else ``plain``.

    ``data_parallel`` defaults to :class:`DataParallelRankingNet`; a ranker with its own net
    class declares its data-parallel twin (``class X(DataParallelMixin, ItsNet)``).

    ``distributed=True`` in a script that no launcher started trains as one process, with
    a warning; under ``torchrun --nproc_per_node 1`` it joins the process group, so that the
    script's own ``torch.distributed`` calls (``dist.get_rank()``) work as with N processes.
    """
    if not distributed:
        return plain
    if not _launched():
        warnings.warn(
            f"{owner}(distributed=True) runs as a single process (no process group, WORLD_SIZE unset): it "
            f"trains as with distributed=False. Launch the script with torchrun --nproc_per_node N (or "
            f"accelerate launch) to train on N processes.", UserWarning, stacklevel=5,
        )
        return plain
    return DataParallelRankingNet if data_parallel is None else data_parallel


def _init_process_group(device):
    """Join the launcher's process group (gloo on CPU, NCCL on CUDA) unless the script already did."""
    if dist.is_initialized():
        return
    if "MASTER_ADDR" not in os.environ:
        raise RuntimeError(
            "distributed=True found WORLD_SIZE set but no MASTER_ADDR: launch the script with torchrun "
            "(torchrun --nproc_per_node N script.py) or accelerate launch, or call "
            "torch.distributed.init_process_group yourself before fit."
        )
    dist.init_process_group(backend="nccl" if is_cuda(device) else "gloo")
    # The group is the library's, so the library ends it, at exit rather than after fit: the script may still
    # call dist.get_rank() or fit again. Left to interpreter shutdown, a gloo group is torn down (or not) after
    # the interpreter's own state, and its worker threads can be destroyed unjoined: the process then aborts
    # with "terminate called without an active exception" once in a while, more often on a loaded machine.
    # atexit runs while the interpreter is whole, on a normal end as after an uncaught exception.
    atexit.unregister(_destroy_process_group)  # one registration however many groups fit creates in turn
    atexit.register(_destroy_process_group)


def _destroy_process_group():
    """Destroy the default process group if it is still there (the script may have destroyed it already)."""
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


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
    """Sum of ``tensor`` over every process (moved to the backend's device and back); not differentiable."""
    device = tensor.device
    if dist.get_backend() == "nccl" and not is_cuda(device):
        tensor = tensor.cuda()
    dist.all_reduce(tensor)
    return tensor.to(device)


class _AllReduceSum(torch.autograd.Function):
    """Sum over every process; the gradient of each input is the sum of the outputs' gradients."""

    @staticmethod
    def forward(ctx, tensor):
        return _all_reduce(tensor.clone())

    @staticmethod
    def backward(ctx, grad):
        return _all_reduce(grad.clone())


def all_reduce_sum(tensor):
    """Differentiable sum of ``tensor`` over every process: what the modules' ``reduce_sum`` receives."""
    return _AllReduceSum.apply(tensor)


class ShardedQueryBatches(QueryBatches):
    """:class:`QueryBatches` cut into the share of one process.

    Every process draws the same global batches (the shuffling generator has the same
    seed everywhere and nothing else consumes it); process ``rank`` gets the queries
    ``rank, rank + world_size, ...`` of each. In training, a global batch with fewer
    queries than processes joins its neighbour (the next one, or the one before it for the
    last batch), so that every process has a list to run through the network (batch norm's
    statistics are reduced inside the forward pass).
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
        # A batch joins the one before it only while that one is short: with batch_size below the
        # number of processes, batches pair up (or form triples...) instead of all chaining into one.
        merged = []
        for queries in batches:
            if merged and len(merged[-1]) < self.world_size:
                merged[-1] = torch.cat([merged[-1], queries])
            else:
                merged.append(queries)
        if len(merged) > 1 and len(merged[-1]) < self.world_size:
            merged[-2] = torch.cat([merged[-2], merged[-1]])
            merged = merged[:-1]
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


class DataParallelMixin:
    """What makes a :class:`~sklearn_ltr.training._net.RankingNet` train on its process's share of each batch.

    Composed with a net class where that class is written (:class:`DataParallelRankingNet`)
    and chosen when the ranker builds its net (:func:`net_class_for`). Before training it joins
    the launcher's process group, puts a CUDA net on the process's own GPU (``LOCAL_RANK``),
    gives every process rank 0's seeds and keeps logging and progress bars on rank 0; during
    ``fit`` the modules and the loss that reduce batch statistics sum them over the processes
    (:func:`sklearn_ltr.nn.set_reduce_sum`). Its inference net (``keep_training_state=False``)
    is a plain :class:`RankingNet`, which pickles and predicts without a process group.
    """

    # Each process checks the global loss in run_single_epoch, identical everywhere: a process
    # that raised on its own share would leave the others waiting in the next all-reduce.
    checks_batch_loss = False
    batches_class = ShardedQueryBatches

    @property
    def inference_class(self):
        """The net class this one composes (e.g. :class:`RankingNet`): it predicts without a process group."""
        return next(cls for cls in type(self).__mro__[1:]
                    if issubclass(cls, RankingNet) and not issubclass(cls, DataParallelMixin))

    def reduce_sum(self, tensor):
        return _all_reduce(tensor)

    def batch_options(self, dataset, training):
        if not hasattr(self, "subsample_generator_"):
            seed = (self.random_state or 0) + 1 + self.rank_
            self.subsample_generator_ = torch.Generator().manual_seed(seed)
        return {**super().batch_options(dataset, training), "rank": self.rank_, "world_size": self.world_size_,
                "subsample_generator": self.subsample_generator_}

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

    def run_single_epoch(self, iterator, training, prefix, step_fn, **fit_params):
        # skorch's loop, written out because two of its lines must differ and have no hook: the
        # history records each batch's loss and size, and here they are the global batch's (the
        # loss summed over the processes, the size from the batch's bookkeeping, which skorch's
        # get_len cannot read), so the history is one process's history; and an idle batch (no
        # query of this process) still joins the all-reduce but notifies no callback.
        if iterator is None:
            return
        batch_count = 0
        for batch in iterator:
            inputs = batch[0]
            if inputs.get(_IDLE):
                # The history's entry of this batch (skorch's on_batch_begin opens it, and no callback
                # is notified): without it, the records below would overwrite the previous batch's.
                self.history.new_batch()
                loss = torch.zeros((), dtype=torch.float32)
            else:
                self.notify("on_batch_begin", batch=batch, training=training)
                step = step_fn(batch, **fit_params)
                loss = step["loss"].detach().float().cpu()
            loss = _all_reduce(loss.reshape(1))[0]
            self.check_finite_loss(loss, "training" if training else "validation")
            self.history.record_batch(prefix + "_loss", loss.item())
            self.history.record_batch(prefix + "_batch_size", int(inputs[_GLOBAL_SIZE]))
            if not inputs.get(_IDLE):
                self.notify("on_batch_end", batch=batch, training=training, **step)
            batch_count += 1
        self.history.record(prefix + "_batch_count", batch_count)

    def _join_world(self):
        """Join the process group and agree with rank 0 on the seeds; set this process's device and logging."""
        _, _, local_rank = process_world()  # from the launcher's environment: the group is not joined yet
        if is_cuda(self.device):
            self.device = f"cuda:{local_rank}"
            torch.cuda.set_device(local_rank)
        _init_process_group(self.device)
        rank, world_size, _ = process_world()
        self.rank_, self.world_size_ = rank, world_size
        self.random_state = _broadcast_int(self.random_state)
        split = self.train_split
        if split is not None and getattr(split, "random_state", 0) is None:
            split.random_state = _broadcast_int(None)
        if rank > 0:
            # Entries are callbacks or (name, callback) pairs, as skorch takes them.
            self.callbacks = [entry for entry in self.callbacks
                              if not isinstance(entry[1] if isinstance(entry, tuple) else entry, ProgressBar)]
            self.verbose = 0

    def fit(self, X, y=None, **fit_params):
        self._join_world()
        self.__dict__.pop("subsample_generator_", None)
        try:
            return super().fit(X, y, **fit_params)
        finally:
            # The fitted modules compute local statistics again: they predict without a process group.
            for module in (getattr(self, "module_", None), getattr(self, "criterion_", None)):
                if module is not None:
                    set_reduce_sum(module, None)

    def initialize_module(self):
        super().initialize_module()
        set_reduce_sum(self.module_, all_reduce_sum)
        return self

    def initialize_criterion(self):
        super().initialize_criterion()
        set_reduce_sum(self.criterion_, all_reduce_sum)
        return self


class DataParallelRankingNet(DataParallelMixin, RankingNet):
    """:class:`~sklearn_ltr.training._net.RankingNet` with :class:`DataParallelMixin`."""

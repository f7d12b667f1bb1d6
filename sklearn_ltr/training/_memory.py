"""Memory a batch of padded lists will need, checked before torch is asked for it.

Pairwise losses and self-attention hold ``[list, list]`` tensors: their memory grows with
the square of the longest list in a batch. A query of 12,000 documents makes RankNet's
loss ask for several GB per list and the process is killed, or torch fails deep inside its
allocator. A neural ranker builds one :class:`MemoryEstimate` from the costs its module and
its loss declare and asks it twice: for the batch size to train with before the first batch
(:meth:`MemoryEstimate.training_batch_size`), and for the documents of a prediction batch
(:meth:`MemoryEstimate.prediction_documents`), so that a batch that cannot fit is refused with
a message that names the query and the fix (``max_list_length``, ``batch_size``), or
prediction batches shrink until one fits.

The estimate counts float32 values: ``quadratic`` ``[L, L]`` tensors per list and
``linear`` values per document (features and activations, with their gradients in
training). Its terms are declared where things are defined, never kept in a table here:
each loss declares its ``[L, L]`` tensors when it is registered
(:func:`sklearn_ltr.losses.register_loss`), each torch module of :mod:`sklearn_ltr.nn` its
attention shape and activation width (``memory_cost``, a
:class:`~sklearn_ltr.nn.ModuleCost`); :func:`memory_terms` combines them for a device.

Self-attention holds ``[L, L]`` weights only where PyTorch runs its reference ("math")
attention; its fused kernels hold values per document (:func:`attention_term` asks
:func:`sklearn_ltr.nn.attention_kernel` which one runs, for the masks and dtype of the
batches). The math path runs on CPU in training with attention dropout (DASALC's and
SetRank's defaults), and on CUDA where the dtype or the head width rules the fused kernels
out (e.g. bf16 with heads that are no multiple of 8); CPU prediction and CUDA training in
float32 run fused kernels. Coefficients, measured (``benchmarks/bench_training_memory.py``):
on CPU, one list of 3,000 documents: RankNet's loss about 5.4 ``[L, L]`` tensors with its
gradient, a math attention head about 4 per layer in training, activations about 5 values
per unit of declared width; on an H200 (torch 2.11, fused attention): peaks linear in the
documents, 2.0 to 2.5 values per unit of width, counted as 3. It is an estimate: a batch is
refused when it needs more than :data:`MEMORY_FRACTION` of the memory available now.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import torch

from sklearn_ltr.losses import pairwise_tensors
from sklearn_ltr.nn._cost import ATTENTION_MASKS, attention_kernel
from sklearn_ltr.training._device import is_cuda
from sklearn_ltr.utils._system import available_host_memory

__all__ = ["AUTO_BATCH_CAP", "AUTO_MIN_BATCHES", "MEMORY_FRACTION", "MemoryEstimate", "attention_term",
           "available_memory", "batch_bytes", "describe_attention", "memory_terms", "module_cost"]

#: Share of the available memory one batch may take.
MEMORY_FRACTION = 0.8

_FLOAT_BYTES = 4

#: Training activations per document per unit of declared width, by device type: CPU peaks
#: (resident memory: the CPU dropout masks and the allocator's slack included; with 5 every
#: CPU peak of ``results/training_memory_cpu.md`` is 0.55 to 0.93 of the estimate) against CUDA peaks
#: (``max_memory_allocated``, 2.0 to 2.5 measured on an H200, rounded up).
_ACTIVATION_FACTOR = {"cpu": 5, "cuda": 3}

#: ``batch_size="auto"``: at most this many queries per batch, and at least ``AUTO_MIN_BATCHES``
#: batches per epoch (see :meth:`MemoryEstimate.auto_batch_size`). DASALC's MQ2008 NDCG@10 stayed within the
#: seeds' spread from 8 to 471 queries a batch; 256 is the largest size measured with two
#: batches an epoch (``studies/results/batch_size_cpu.md``).
AUTO_BATCH_CAP = 256
AUTO_MIN_BATCHES = 2

_KERNEL_NAMES = {"flash": "flash attention", "efficient": "memory-efficient attention",
                 "cudnn": "cuDNN attention", "math": "math attention"}


def available_memory(device):
    """Bytes of memory free now on ``device`` (None when unknown).

    CUDA: ``torch.cuda.mem_get_info`` of that device (the current one for ``"cuda"`` with no
    index). CPU: the host's available memory (:func:`sklearn_ltr.utils._system.available_host_memory`).
    """
    device = torch.device(device)
    if is_cuda(device):
        index = torch.cuda.current_device() if device.index is None else device.index
        free, _ = torch.cuda.mem_get_info(index)
        return int(free)
    return available_host_memory()


def module_cost(module_class, module_kwargs):
    """The :class:`~sklearn_ltr.nn.ModuleCost` that ``module_class`` declares for ``module_kwargs``.

    Raises
    ------
    TypeError
        When the module declares no ``memory_cost`` classmethod: its cost would be a guess.
    """
    declare = getattr(module_class, "memory_cost", None)
    if declare is None:
        raise TypeError(
            f"{module_class.__name__} declares no memory cost: give it a classmethod "
            f"memory_cost(**module_kwargs) returning sklearn_ltr.nn.ModuleCost(attention_layers, attention_heads, "
            f"activation_width), so that fit can check memory before training."
        )
    return declare(**module_kwargs)


def attention_term(cost, device, *, training, precision="32-true", enabled=None, capability=None):
    """The attention kernel the memory estimate assumes for ``cost`` on ``device`` (None: no attention).

    Batches come with a boolean padding mask or, when no list is padded, none
    (:data:`sklearn_ltr.nn._cost.ATTENTION_MASKS`): where either runs the math kernel, the
    estimate assumes it (the ``[L, L]`` weights); otherwise the fused kernel of padded batches.

    Parameters
    ----------
    cost : ModuleCost
        What the module declares.
    device : str or torch.device
        Where the batch runs.
    training : bool
        Training (attention dropout, autocast under ``precision``) or prediction (float32, no dropout).
    precision : str, default="32-true"
        The ranker's ``precision``: ``"bf16-mixed"`` runs training attention in bfloat16.
    enabled, capability
        As in :func:`sklearn_ltr.nn.attention_kernel` (``None``: read from torch).
    """
    if not cost.attention_layers:
        return None
    dtype = torch.bfloat16 if training and precision == "bf16-mixed" else torch.float32
    kernels = [attention_kernel(device, dtype, mask=mask,
                                dropout=cost.attention_dropout if training else 0.0,
                                head_size=cost.attention_head_size, training=training, enabled=enabled,
                                capability=capability)
               for mask in ATTENTION_MASKS]
    return "math" if "math" in kernels else kernels[0]


def describe_attention(cost, kernel):
    """Words for the attention term of an estimate, e.g. in a refusal."""
    shape = f"{cost.attention_layers} layers x {cost.attention_heads} heads"
    if kernel == "math":
        return f"self-attention ({shape}, {_KERNEL_NAMES[kernel]}: [L, L] weights per head)"
    return f"self-attention ({shape}, {_KERNEL_NAMES[kernel]}: linear in the list length)"


def memory_terms(cost, loss_tensors, n_features, *, training, kernel="math", device="cpu"):
    """``(quadratic, linear)`` float32 values per list and per document of one batch.

    Parameters
    ----------
    cost : ModuleCost
        What the module declares.
    loss_tensors : int
        ``[L, L]`` tensors per list that the loss declares (0 when predicting or linear); they
        count on every device.
    n_features : int
        Input features per document.
    training : bool
        A training step (forward, backward, gradients) or a prediction (forward only).
    kernel : {"math", "flash", "efficient", "cudnn"}, default="math"
        The attention kernel assumed (:func:`attention_term`): the math kernel holds ``[L, L]``
        weights (about 4 per head and layer in training, measured on CPU), a fused one its
        output and log-sum-exp per head and document.
    device : str or torch.device, default="cpu"
        Where the batch runs: the training activations per unit of width differ by device.
    """
    layers, heads, width = cost.attention_layers, cost.attention_heads, cost.activation_width
    fused = layers and kernel != "math"
    attention = layers * heads * (cost.attention_head_size + 1) if fused else 0
    if training:
        quadratic = loss_tensors + (0 if fused or not layers else 4 * layers * heads + 2)
        factor = _ACTIVATION_FACTOR["cuda" if is_cuda(device) else "cpu"]
        linear = 2 * n_features + factor * width + 2 * attention
    else:
        quadratic = 0 if fused or not layers else 2 * heads + 1
        linear = n_features + 2 * width + attention
    return quadratic, linear


def batch_bytes(n_lists, list_length, *, quadratic, linear):
    """Estimated bytes of a batch of ``n_lists`` lists padded to ``list_length`` documents."""
    documents = n_lists * list_length
    return _FLOAT_BYTES * (documents * linear + n_lists * list_length**2 * quadratic)


def _gb(n_bytes):
    return f"{n_bytes / 1e9:.1f} GB" if n_bytes >= 1e8 else f"{n_bytes / 1e6:.0f} MB"


def _training_length(sizes, max_list_length):
    """``(longest, length)``: the longest training query, and the length its list is trained at."""
    longest = int(max(sizes))
    return longest, longest if max_list_length is None else min(longest, int(max_list_length))


def _longest_fitting(n_lists, quadratic, linear, budget):
    low, high = 2, 2
    while batch_bytes(n_lists, high * 2, quadratic=quadratic, linear=linear) <= budget and high < 10**7:
        high *= 2
    high *= 2
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if batch_bytes(n_lists, middle, quadratic=quadratic, linear=linear) <= budget \
            else (low, middle)
    return low


@dataclass(frozen=True)
class MemoryEstimate:
    """Memory a ranker's training and prediction batches need on one device, and what follows from it.

    It holds the terms of both passes (``[L, L]`` float32 tensors per list and values per
    document, :func:`memory_terms`) and answers the two questions of a neural ranker: the
    batch size to train with (:meth:`training_batch_size`: ``batch_size="auto"`` resolved, a
    warning for a loss of unknown cost, a refusal of a batch that cannot fit) and the padded
    documents of a prediction batch (:meth:`prediction_documents`). Rankers build it from the
    declared costs with :meth:`declared`; the fields can also be given by hand.

    Parameters
    ----------
    owner : str
        Estimator name for the messages.
    device : str or torch.device
        Where the batches run.
    training_quadratic, training_linear : float
        ``[L, L]`` tensors per list and values per document of one training step.
    prediction_quadratic, prediction_linear : float, default=0
        The same of one forward pass.
    holders : str, default="the activations"
        What holds the training memory, for the refusal (e.g. "the loss 'ranknet' (pairwise terms)").
    max_list_length : int or None, default=None
        Training lists are cut to this length.
    undeclared_loss : str or None, default=None
        Name of a training loss that declares no memory cost (a callable never registered):
        fit then warns when one ``[L, L]`` tensor of it would be large.
    training_kernel, prediction_kernel : str or None, default=None
        The attention kernels assumed (:func:`attention_term`; None: no attention).

    Examples
    --------
    Two lists of 1,000 documents, 8 ``[L, L]`` tensors per list and 10 values per document:

    >>> from sklearn_ltr.training._memory import MemoryEstimate
    >>> estimate = MemoryEstimate("R", "cpu", training_quadratic=8, training_linear=10)
    >>> estimate.training_bytes(2, 1000) == 4 * (2 * 1000 * 10 + 2 * 1000**2 * 8)
    True
    """

    owner: str
    device: object
    training_quadratic: float
    training_linear: float
    prediction_quadratic: float = 0
    prediction_linear: float = 0
    holders: str = "the activations"
    max_list_length: int | None = None
    undeclared_loss: str | None = None
    training_kernel: str | None = None
    prediction_kernel: str | None = None

    @classmethod
    def declared(cls, owner, cost, n_features, *, device, loss=None, loss_params=None, precision="32-true",
                 max_list_length=None):
        """The estimate of a module of declared ``cost`` trained with ``loss`` on ``device``.

        Parameters
        ----------
        owner : str
            Estimator name for the messages.
        cost : ModuleCost
            What the module declares (:func:`module_cost`).
        n_features : int
            Input features per document.
        device : str or torch.device
            Where the batches run.
        loss : str or callable, default=None
            The training loss: its ``[L, L]`` tensors are those it declares
            (:func:`sklearn_ltr.losses.pairwise_tensors`), times ``loss_params["n_samples"]``
            for the sampling losses; a callable never registered counts 0 and is warned about.
        loss_params : dict, default=None
            The options of ``loss``.
        precision : str, default="32-true"
            The ranker's ``precision`` (it decides the training attention kernel).
        max_list_length : int or None, default=None
            Training lists are cut to this length.
        """
        tensors = None if loss is None else pairwise_tensors(loss)
        loss_tensors = (tensors or 0) * (loss_params or {}).get("n_samples", 1)
        name = loss if isinstance(loss, str) else getattr(loss, "__name__", "the loss")
        training_kernel = attention_term(cost, device, training=True, precision=precision)
        prediction_kernel = attention_term(cost, device, training=False, precision=precision)
        training = memory_terms(cost, loss_tensors, n_features, training=True, kernel=training_kernel or "math",
                                device=device)
        prediction = memory_terms(cost, 0, n_features, training=False, kernel=prediction_kernel or "math",
                                  device=device)
        holders = []
        if loss_tensors:
            holders.append(f"the loss {name!r} (pairwise terms)")
        if cost.attention_layers:
            holders.append(describe_attention(cost, training_kernel))
        return cls(owner, device, *training, *prediction, holders=" and ".join(holders) or "the activations",
                   max_list_length=max_list_length, undeclared_loss=name if loss is not None and tensors is None
                   else None, training_kernel=training_kernel, prediction_kernel=prediction_kernel)

    def training_bytes(self, n_lists, list_length):
        """Estimated bytes of a training step on ``n_lists`` lists padded to ``list_length`` documents."""
        return batch_bytes(n_lists, list_length, quadratic=self.training_quadratic, linear=self.training_linear)

    def prediction_bytes(self, n_lists, list_length):
        """Estimated bytes of scoring ``n_lists`` lists padded to ``list_length`` documents."""
        return batch_bytes(n_lists, list_length, quadratic=self.prediction_quadratic, linear=self.prediction_linear)

    def training_batch_size(self, sizes, batch_size):
        """The queries per training batch: ``batch_size``, or the :meth:`auto_batch_size` for ``"auto"``.

        Warns for a loss of unknown cost (:meth:`warn_if_undeclared_loss`) and refuses a
        largest batch that cannot fit (:meth:`check_training`) before returning.

        Parameters
        ----------
        sizes : array-like of int
            Documents per training query.
        batch_size : int or "auto"
            The ranker's ``batch_size``.
        """
        sizes = np.asarray(sizes)
        if batch_size == "auto":
            batch_size = self.auto_batch_size(sizes)
        self.warn_if_undeclared_loss(sizes, batch_size)
        self.check_training(sizes, batch_size)
        return int(batch_size)

    def check_training(self, sizes, batch_size):
        """Raise ``MemoryError`` when the largest training batch would not fit in memory.

        The message names the batch, the estimate, what holds it and the fixes: the
        ``max_list_length`` that fits with this batch size, a ``batch_size`` at which whole
        lists fit, or both.

        Parameters
        ----------
        sizes : ndarray of int
            Documents per training query.
        batch_size : int
            Queries per batch.
        """
        if len(sizes) == 0:
            return
        longest, length = _training_length(sizes, self.max_list_length)
        # Batches are bucketed by length: the largest one holds the batch_size longest lists.
        n_lists = min(int(batch_size), len(sizes))
        needed = self.training_bytes(n_lists, length)
        free = available_memory(self.device)
        if free is None or needed <= MEMORY_FRACTION * free:
            return
        budget = MEMORY_FRACTION * free
        quadratic, linear = self.training_quadratic, self.training_linear
        subsampled = " (training lists are then subsampled; prediction still scores whole lists)"
        fix = []
        # The longest training list that fits with the current batch size.
        if self.training_bytes(n_lists, 2) <= budget:
            fix.append(f"max_list_length={_longest_fitting(n_lists, quadratic, linear, budget)}{subsampled}")
        if n_lists > 1:
            per_list = self.training_bytes(1, length)
            if per_list <= budget:
                # Whole lists fit in smaller batches: a cap longer than the list would change nothing.
                fix.append(f"batch_size={int(budget // per_list)}")
            elif self.training_bytes(1, 2) <= budget:
                cap = _longest_fitting(1, quadratic, linear, budget)
                fix.append(f"max_list_length={cap} with batch_size=1" + ("" if fix else subsampled))
        growth = "the square of the list length" if quadratic else "the documents of the batch"
        raise MemoryError(
            f"{self.owner}: the largest training batch ({n_lists} lists padded to {length} documents; the longest "
            f"query has {longest}) needs about {_gb(needed)} for {self.holders}, which grows with {growth}, "
            f"but only {_gb(free)} is available on {torch.device(self.device).type}. Set "
            f"{' or '.join(fix) or 'a smaller model'}."
        )

    def auto_batch_size(self, sizes):
        """Queries per training batch for ``batch_size="auto"``: the most that fit, up to a cap.

        The cap is :data:`AUTO_BATCH_CAP` queries and at most one query in
        :data:`AUTO_MIN_BATCHES` of the training set, so that an epoch keeps several optimiser
        steps: the range where quality held (``studies/results/batch_size_cpu.md``). Below the cap, the
        batch is the largest whose estimate (its lists padded to the longest training list, as the
        batch of the longest lists is) fits in :data:`MEMORY_FRACTION` of the memory available on
        the device now; at least 1 (:meth:`check_training` then refuses a list too long for
        memory, with the fix). The size is then lowered to ``ceil(n_queries / n_batches)`` for the
        same number of batches, so that the last batch of an epoch is not left near-empty (471
        queries: 3 batches of 157, not 235, 235 and 1).

        Parameters
        ----------
        sizes : ndarray of int
            Documents per training query.
        """
        n_queries = len(sizes)
        batch = max(1, min(AUTO_BATCH_CAP, n_queries // AUTO_MIN_BATCHES))
        if n_queries == 0:
            return batch
        _, length = _training_length(sizes, self.max_list_length)
        free = available_memory(self.device)
        if free is not None:
            batch = max(1, min(batch, int(MEMORY_FRACTION * free // self.training_bytes(1, length))))
        # As many batches as that size needs, of even sizes: no near-empty last batch. 235 queries
        # a batch left one query over on MQ2008's 471, and that batch of one cost 0.025 NDCG@10.
        n_batches = -(-n_queries // batch)
        return -(-n_queries // n_batches)

    def warn_if_undeclared_loss(self, sizes, batch_size):
        """Warn when a loss of unknown memory cost could, if pairwise, not fit: never a silent linear guess.

        The warning comes when one ``[L, L]`` float32 tensor of the largest batch would take
        more than 1% of the memory available now.
        """
        if self.undeclared_loss is None or len(sizes) == 0:
            return
        _, longest = _training_length(sizes, self.max_list_length)
        n_lists = min(int(batch_size), len(sizes))
        free = available_memory(self.device)
        one_pairwise_tensor = _FLOAT_BYTES * n_lists * longest**2
        if free is not None and one_pairwise_tensor > 0.01 * free:
            warnings.warn(
                f"{self.owner}: the loss {self.undeclared_loss!r} declares no memory cost, so fit cannot check "
                f"that its largest batch ({n_lists} lists of {longest} documents) fits: one [list, list] tensor of "
                f"it takes {one_pairwise_tensor / 1e9:.2f} GB. Register it with sklearn_ltr.losses.register_loss("
                f"name, function, pairwise_tensors=...) and pass its name.", UserWarning, stacklevel=4,
            )

    def prediction_documents(self, sizes, documents):
        """Padded documents per prediction batch: ``documents``, or fewer when memory is short.

        A batch of lists padded to ``L`` documents, ``D`` slots in all, needs about
        ``4 * D * (linear + L * quadratic)`` bytes. Prediction scores whole lists, so a list too long
        to score even alone raises a ``MemoryError`` that names its size; otherwise the result is at
        least the longest list.

        Parameters
        ----------
        sizes : ndarray of int
            Documents per query to score.
        documents : int
            The wanted padded documents per batch.
        """
        if len(sizes) == 0:
            return documents
        longest = int(max(sizes))
        free = available_memory(self.device)
        if free is None:
            return max(documents, longest)
        budget = MEMORY_FRACTION * free
        per_list = self.prediction_bytes(1, longest)
        if per_list > budget:
            raise MemoryError(
                f"{self.owner}: scoring the longest query ({longest} documents) needs about {_gb(per_list)}, but "
                f"only {_gb(free)} is available on {torch.device(self.device).type}. Prediction scores every "
                f"document of a list together; split such a query, or predict on a machine with more memory."
            )
        fitting = int(budget // (_FLOAT_BYTES * (self.prediction_linear + longest * self.prediction_quadratic)))
        return max(longest, min(int(documents), fitting))

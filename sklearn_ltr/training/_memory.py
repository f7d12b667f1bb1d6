"""Memory a batch of padded lists will need, checked before torch is asked for it.

Pairwise losses and self-attention hold ``[list, list]`` tensors: their memory grows with
the square of the longest list in a batch. A query of 12,000 documents makes RankNet's
loss ask for several GB per list and the process is killed, or torch fails deep inside its
allocator. The neural rankers call :func:`check_training_memory` before the first batch
and :func:`prediction_documents` before predicting, so that a batch that cannot fit is
refused with a message that names the query and the fix (``max_list_length``,
``batch_size``), or prediction batches shrink until one fits.

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

import torch

from sklearn_ltr.nn._cost import ATTENTION_MASKS, attention_kernel
from sklearn_ltr.training._device import is_cuda
from sklearn_ltr.utils._system import available_host_memory

__all__ = ["AUTO_BATCH_CAP", "AUTO_MIN_BATCHES", "MEMORY_FRACTION", "attention_term", "auto_batch_size",
           "available_memory", "batch_bytes", "check_training_memory", "describe_attention", "memory_terms",
           "module_cost", "prediction_documents"]

#: Share of the available memory one batch may take.
MEMORY_FRACTION = 0.8

_FLOAT_BYTES = 4

#: Training activations per document per unit of declared width, by device type: CPU peaks
#: (resident memory: the CPU dropout masks and the allocator's slack included; with 5 every
#: CPU peak of ``results/training_memory_cpu.md`` is 0.55 to 0.93 of the estimate) against CUDA peaks
#: (``max_memory_allocated``, 2.0 to 2.5 measured on an H200, rounded up).
_ACTIVATION_FACTOR = {"cpu": 5, "cuda": 3}

#: ``batch_size="auto"``: at most this many queries per batch, and at least ``AUTO_MIN_BATCHES``
#: batches per epoch (see :func:`auto_batch_size`). DASALC's MQ2008 NDCG@10 stayed within the
#: seeds' spread from 8 to 471 queries a batch; 256 is the largest size measured with two
#: batches an epoch (``benchmarks/results/batch_size_cpu.md``).
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


def check_training_memory(*, owner, sizes, batch_size, max_list_length, quadratic, linear, device, what):
    """Raise ``MemoryError`` when the largest training batch would not fit in memory.

    Parameters
    ----------
    owner : str
        Estimator name for the message.
    sizes : ndarray of int
        Documents per training query.
    batch_size : int
        Queries per batch.
    max_list_length : int or None
        Training lists are cut to this length.
    quadratic, linear : float
        ``[L, L]`` tensors per list and values per document of one training step.
    device : str or torch.device
        Where training runs.
    what : str
        What holds the quadratic tensors (e.g. "the pairwise loss 'ranknet'").
    """
    if len(sizes) == 0:
        return
    longest, length = _training_length(sizes, max_list_length)
    # Batches are bucketed by length: the largest one holds the batch_size longest lists.
    n_lists = min(int(batch_size), len(sizes))
    needed = batch_bytes(n_lists, length, quadratic=quadratic, linear=linear)
    free = available_memory(device)
    if free is None or needed <= MEMORY_FRACTION * free:
        return
    budget = MEMORY_FRACTION * free
    subsampled = " (training lists are then subsampled; prediction still scores whole lists)"
    fix = []
    # The longest training list that fits with the current batch size.
    if batch_bytes(n_lists, 2, quadratic=quadratic, linear=linear) <= budget:
        fix.append(f"max_list_length={_longest_fitting(n_lists, quadratic, linear, budget)}{subsampled}")
    if n_lists > 1:
        per_list = batch_bytes(1, length, quadratic=quadratic, linear=linear)
        if per_list <= budget:
            # Whole lists fit in smaller batches: a cap longer than the list would change nothing.
            fix.append(f"batch_size={int(budget // per_list)}")
        elif batch_bytes(1, 2, quadratic=quadratic, linear=linear) <= budget:
            cap = _longest_fitting(1, quadratic, linear, budget)
            fix.append(f"max_list_length={cap} with batch_size=1" + ("" if fix else subsampled))
    growth = "the square of the list length" if quadratic else "the documents of the batch"
    raise MemoryError(
        f"{owner}: the largest training batch ({n_lists} lists padded to {length} documents; the longest "
        f"query has {longest}) needs about {_gb(needed)} for {what}, which grows with {growth}, "
        f"but only {_gb(free)} is available on {torch.device(device).type}. Set "
        f"{' or '.join(fix) or 'a smaller model'}."
    )


def auto_batch_size(*, sizes, max_list_length, quadratic, linear, device):
    """Queries per training batch for ``batch_size="auto"``: the most that fit, up to a cap.

    The cap is :data:`AUTO_BATCH_CAP` queries and at most one query in
    :data:`AUTO_MIN_BATCHES` of the training set, so that an epoch keeps several optimiser
    steps: the range where quality held (``benchmarks/results/batch_size_cpu.md``). Below the cap, the
    batch is the largest whose estimate (its lists padded to the longest training list, as the
    batch of the longest lists is) fits in :data:`MEMORY_FRACTION` of the memory available on
    ``device`` now; at least 1 (:func:`check_training_memory` then refuses a list too long for
    memory, with the fix). The size is then lowered to ``ceil(n_queries / n_batches)`` for the
    same number of batches, so that the last batch of an epoch is not left near-empty (471
    queries: 3 batches of 157, not 235, 235 and 1).

    Parameters
    ----------
    sizes : ndarray of int
        Documents per training query.
    max_list_length : int or None
        Training lists are cut to this length.
    quadratic, linear : float
        ``[L, L]`` tensors per list and values per document of one training step.
    device : str or torch.device
        Where training runs.
    """
    n_queries = len(sizes)
    batch = max(1, min(AUTO_BATCH_CAP, n_queries // AUTO_MIN_BATCHES))
    if n_queries == 0:
        return batch
    _, length = _training_length(sizes, max_list_length)
    free = available_memory(device)
    if free is not None:
        per_list = batch_bytes(1, length, quadratic=quadratic, linear=linear)
        batch = max(1, min(batch, int(MEMORY_FRACTION * free // per_list)))
    # As many batches as that size needs, of even sizes: no near-empty last batch. 235 queries
    # a batch left one query over on MQ2008's 471, and that batch of one cost 0.025 NDCG@10.
    n_batches = -(-n_queries // batch)
    return -(-n_queries // n_batches)


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


def prediction_documents(*, owner, sizes, documents, quadratic, linear, device):
    """Padded documents per prediction batch: ``documents``, or fewer when memory is short.

    A batch of lists padded to ``L`` documents, ``D`` slots in all, needs about
    ``4 * D * (linear + L * quadratic)`` bytes. Prediction scores whole lists, so a list too long
    to score even alone raises a ``MemoryError`` that names its size; otherwise the result is at
    least the longest list.

    Parameters
    ----------
    owner : str
        Estimator name for the message.
    sizes : ndarray of int
        Documents per query to score.
    documents : int
        The wanted padded documents per batch.
    quadratic, linear : float
        ``[L, L]`` tensors per list and values per document of the forward pass.
    device : str or torch.device
        Where prediction runs.
    """
    if len(sizes) == 0:
        return documents
    longest = int(max(sizes))
    free = available_memory(device)
    if free is None:
        return max(documents, longest)
    budget = MEMORY_FRACTION * free
    per_list = batch_bytes(1, longest, quadratic=quadratic, linear=linear)
    if per_list > budget:
        raise MemoryError(
            f"{owner}: scoring the longest query ({longest} documents) needs about {_gb(per_list)}, "
            f"but only {_gb(free)} is available on {torch.device(device).type}. Prediction scores every document "
            f"of a list together; split such a query, or predict on a machine with more memory."
        )
    fitting = int(budget // (_FLOAT_BYTES * (linear + longest * quadratic)))
    return max(longest, min(int(documents), fitting))

"""Memory a batch of padded lists will need, checked before torch is asked for it.

Pairwise losses and self-attention hold ``[list, list]`` tensors: their memory grows with
the square of the longest list in a batch. A query of 12,000 documents makes RankNet's
loss ask for several GB per list and the process is killed, or torch fails deep inside its
allocator. The neural rankers call :func:`check_training_memory` before the first batch
and :func:`prediction_batch_size` before predicting, so that a batch that cannot fit is
refused with a message that names the query and the fix (``max_list_length``,
``batch_size``), or prediction batches shrink until one fits.

The estimate counts float32 values: ``quadratic`` ``[L, L]`` tensors per list and
``linear`` values per document (features and activations, with their gradients in
training). Its terms are declared where things are defined, never kept in a table here:
each loss declares its ``[L, L]`` tensors when it is registered
(:func:`sklearn_ltr.losses.register_loss`), each torch module of :mod:`sklearn_ltr.nn` its
attention shape and activation width (``memory_cost``, a
:class:`~sklearn_ltr.nn.ModuleCost`); :func:`memory_terms` combines them. The coefficients
come from measured peaks on CPU (one list of 3,000 documents: RankNet's loss about 5.4
``[L, L]`` tensors with its gradient, an attention head about 4 per layer in training),
rounded up. It is an estimate: a batch is refused when it needs more than
:data:`MEMORY_FRACTION` of the memory available now.
"""

from __future__ import annotations

import torch

from sklearn_ltr.training._device import is_cuda
from sklearn_ltr.utils._system import available_host_memory

__all__ = ["MEMORY_FRACTION", "available_memory", "batch_bytes", "check_training_memory", "memory_terms",
           "module_cost", "prediction_documents"]

#: Share of the available memory one batch may take.
MEMORY_FRACTION = 0.8

_FLOAT_BYTES = 4


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


def memory_terms(cost, loss_tensors, n_features, *, training):
    """``(quadratic, linear)`` float32 values per list and per document of one batch.

    Parameters
    ----------
    cost : ModuleCost
        What the module declares.
    loss_tensors : int
        ``[L, L]`` tensors per list that the loss declares (0 when predicting or linear).
    n_features : int
        Input features per document.
    training : bool
        A training step (forward, backward, gradients) or a prediction (forward only).
    """
    layers, heads, width = cost.attention_layers, cost.attention_heads, cost.activation_width
    if training:
        quadratic = 4 * layers * heads + (2 if layers else 0) + loss_tensors
        linear = 2 * n_features + 6 * width
    else:
        quadratic = 2 * heads + 1 if layers else 0
        linear = n_features + 2 * width
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
    longest = int(max(sizes))
    length = longest if max_list_length is None else min(longest, int(max_list_length))
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
    raise MemoryError(
        f"{owner}: the largest training batch ({n_lists} lists padded to {length} documents; the longest "
        f"query has {longest}) needs about {_gb(needed)} for {what}, which grows with the square of the list "
        f"length, but only {_gb(free)} is available on {torch.device(device).type}. Set "
        f"{' or '.join(fix) or 'a smaller model'}."
    )


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

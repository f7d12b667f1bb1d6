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
training). The coefficients come from measured peaks on CPU (one list of 3,000 documents:
RankNet's loss about 5.4 ``[L, L]`` tensors with its gradient, an attention head about 4 per
layer in training), rounded up. It is an estimate: a batch is refused when it needs more
than :data:`MEMORY_FRACTION` of the memory available now.
"""

from __future__ import annotations

import os

import torch

__all__ = ["MEMORY_FRACTION", "available_memory", "batch_bytes", "check_training_memory", "prediction_batch_size"]

#: Share of the available memory one batch may take.
MEMORY_FRACTION = 0.8

_FLOAT_BYTES = 4


def available_memory(device):
    """Bytes of memory free now on ``device`` (None when unknown).

    CUDA: ``torch.cuda.mem_get_info``. CPU: ``MemAvailable`` of ``/proc/meminfo`` (Linux),
    else the free physical pages.
    """
    device = torch.device(device)
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        return int(free)
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


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
    # The longest training list that fits with the current batch size, and with batch_size=1.
    fits = [n for n in (n_lists, 1) if batch_bytes(n, 2, quadratic=quadratic, linear=linear) <= budget]
    advice = []
    for n in fits:
        cap = _longest_fitting(n, quadratic, linear, budget)
        advice.append(f"max_list_length={cap}" + ("" if n == n_lists else " with batch_size=1"))
    fix = (" or ".join(advice) + " (training lists are then subsampled; prediction still scores whole lists)"
           if advice else "a smaller model")
    raise MemoryError(
        f"{owner}: the largest training batch ({n_lists} lists padded to {length} documents; the longest "
        f"query has {longest}) needs about {_gb(needed)} for {what}, which grows with the square of the list "
        f"length, but only {_gb(free)} is available on {torch.device(device).type}. Set {fix}."
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


def prediction_batch_size(*, owner, sizes, batch_size, quadratic, linear, device):
    """Queries per prediction batch: ``batch_size``, or fewer when the longest lists would not fit.

    Prediction scores whole lists, so a list too long to score even alone raises a
    ``MemoryError`` that names its size.
    """
    if len(sizes) == 0:
        return batch_size
    longest = int(max(sizes))
    free = available_memory(device)
    if free is None:
        return batch_size
    budget = MEMORY_FRACTION * free
    per_list = batch_bytes(1, longest, quadratic=quadratic, linear=linear)
    if per_list > budget:
        raise MemoryError(
            f"{owner}: scoring the longest query ({longest} documents) needs about {_gb(per_list)}, "
            f"but only {_gb(free)} is available on {torch.device(device).type}. Prediction scores every document "
            f"of a list together; split such a query, or predict on a machine with more memory."
        )
    return max(1, min(int(batch_size), int(budget // per_list)))

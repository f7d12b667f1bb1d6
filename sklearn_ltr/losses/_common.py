"""Helpers shared by every loss: input checks, masking, the batch reduction and NDCG pieces.

Conventions (the same for every loss of :mod:`sklearn_ltr.losses`):

- ``scores``, ``labels`` and ``mask`` are ``[batch, list]``; ``mask`` is boolean, True for
  a real document. Padded slots may hold anything, NaN and inf included: they are replaced
  with :func:`torch.where` before any arithmetic, so they reach neither the value nor the
  gradient.
- Half-precision scores (fp16/bf16, e.g. under autocast) are upcast to float32 inside the
  loss; the gradient flows back through the cast.
- Each loss computes one value per query (row) and returns their mean over the rows that
  hold at least one real document. A query with nothing to learn from (no valid pair, no
  relevant document) contributes 0 and still counts in that mean, so the value of a batch
  is exactly the mean of the values of its queries taken one by one. Rows with no real
  document are ignored; a batch of such rows gives 0 (with a gradient of 0).
"""

from __future__ import annotations

import math
import numbers

import torch

__all__ = []


def check_inputs(scores, labels, mask):
    """Validate shapes and return float scores, float labels and a bool mask, padding zeroed."""
    if not isinstance(scores, torch.Tensor):
        raise TypeError(f"scores must be a torch.Tensor; got {type(scores).__name__}.")
    if scores.ndim != 2:
        raise ValueError(f"scores must be 2-D [batch, list]; got shape {tuple(scores.shape)}.")
    if not scores.is_floating_point():
        raise TypeError(f"scores must be a floating-point tensor; got {scores.dtype}.")
    if scores.dtype in (torch.float16, torch.bfloat16):
        scores = scores.float()
    labels = torch.as_tensor(labels, device=scores.device)
    if labels.shape != scores.shape:
        raise ValueError(f"labels must have the shape of scores {tuple(scores.shape)}; got {tuple(labels.shape)}.")
    labels = labels.to(scores.dtype)
    if mask is None:
        mask = torch.ones(scores.shape, dtype=torch.bool, device=scores.device)
    else:
        mask = torch.as_tensor(mask, device=scores.device)
        if mask.shape != scores.shape:
            raise ValueError(f"mask must have the shape of scores {tuple(scores.shape)}; got {tuple(mask.shape)}.")
        mask = mask.bool()
    zero = scores.new_zeros(())
    # torch.where, not multiplication: NaN * 0 is NaN, and its gradient would be too.
    return torch.where(mask, scores, zero), torch.where(mask, labels, zero), mask


def check_positive(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not value > 0:
        raise ValueError(f"{name} must be a positive number; got {value!r}.")
    return float(value)


def check_k(k):
    if k is None:
        return None
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1:
        raise ValueError(f"k must be None or a positive integer; got {k!r}.")
    return int(k)


def check_int(name, value, minimum=1):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value!r}.")
    return int(value)


def mean_over_queries(per_query, mask):
    """Mean of ``per_query`` [batch] over rows with at least one real document."""
    has_docs = mask.any(dim=1)
    per_query = torch.where(has_docs, per_query, per_query.new_zeros(()))
    return per_query.sum() / has_docs.sum().clamp(min=1).to(per_query.dtype)


def safe_divide(numerator, denominator):
    """``numerator / denominator`` where the denominator is positive, else 0 (no NaN anywhere)."""
    positive = denominator > 0
    return torch.where(positive, numerator, 0.0) / torch.where(positive, denominator, 1.0)


def gains(labels, mask):
    """Exponential gain ``2**y - 1``, 0 on padding."""
    return torch.where(mask, torch.exp2(labels) - 1.0, 0.0)


def discount(ranks, k=None):
    """``1 / log2(1 + rank)`` for 1-based (possibly fractional) ranks; 0 past ``k``."""
    d = 1.0 / torch.log2(1.0 + ranks)
    if k is not None:
        d = torch.where(ranks <= k, d, 0.0)
    return d


def ideal_dcg(gain, mask, k=None):
    """Ideal DCG@k of each row: gains sorted in decreasing order (padding has gain 0, sorts last)."""
    ideal = torch.sort(torch.where(mask, gain, -math.inf), dim=1, descending=True).values
    ranks = torch.arange(1, gain.shape[1] + 1, device=gain.device, dtype=gain.dtype)
    ideal = torch.where(torch.isfinite(ideal), ideal, 0.0)
    return (ideal * discount(ranks, k)).sum(dim=1)


def sort_ranks(scores, mask):
    """1-based rank of each document by decreasing score (ties by position; padding last)."""
    keyed = torch.where(mask, scores, -math.inf).detach()
    order = torch.sort(keyed, dim=1, descending=True, stable=True).indices
    ranks = torch.empty_like(order)
    positions = torch.arange(1, scores.shape[1] + 1, device=scores.device).expand_as(order)
    ranks.scatter_(1, order, positions)
    return ranks.to(scores.dtype)


def gumbel_noise(like, generator=None, n_samples=1):
    """Standard Gumbel noise ``-log(-log(U))`` of shape ``[n_samples, *like.shape]``."""
    tiny = torch.finfo(like.dtype).tiny
    u = torch.rand((n_samples, *like.shape), generator=generator, device=like.device, dtype=like.dtype)
    exponential = (-torch.log(u.clamp(min=tiny))).clamp(min=tiny)
    return -torch.log(exponential)

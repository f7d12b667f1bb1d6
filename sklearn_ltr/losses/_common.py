r"""Helpers shared by every loss: input checks, masking, the batch reduction and NDCG pieces.

Conventions (the same for every loss of :mod:`sklearn_ltr.losses`):

- ``scores``, ``labels`` and ``mask`` are ``[batch, list]``; ``mask`` is boolean, True for
  a real document. Padded slots may hold anything, NaN and inf included: they are replaced
  with :func:`torch.where` before any arithmetic, so they reach neither the value nor the
  gradient.
- Half-precision scores (fp16/bf16, e.g. under autocast) are upcast to float32 inside the
  loss; the gradient flows back through the cast.
- Each loss computes one value :math:`\ell_q` per query (row) and reduces them with
  :func:`reduce_queries`: ``reduction="mean"`` (the default) is the mean over the rows that
  hold at least one real document, ``"sum"`` their sum, ``"none"`` the ``[batch]`` tensor of
  the values (0 on rows without a real document). Per-query ``weights`` :math:`w_q \ge 0`
  make them :math:`\sum_q w_q \ell_q / \sum_q w_q`, :math:`\sum_q w_q \ell_q` and
  :math:`w_q \ell_q`. A query with nothing to learn from (no valid pair, no relevant
  document) contributes 0 and still counts in the mean, so the value of a batch is exactly
  the mean of the values of its queries taken one by one. Rows with no real document are
  ignored; a batch of such rows gives 0 (with a gradient of 0).
- Gains :math:`2^y - 1` are scaled by :math:`2^{-m}`, with :math:`m` the largest label of the
  query (or 0), by :func:`gains`: NDCG and its pieces are ratios of gains, so the scale
  cancels exactly, and the scaled gains never overflow, whatever the labels.
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


REDUCTIONS = ("mean", "sum", "none")


def check_weights(weights, per_query):
    """Per-query weights as a ``[batch]`` tensor of ``per_query``'s dtype: finite and >= 0."""
    try:
        weights = torch.as_tensor(weights, device=per_query.device)
    except (TypeError, ValueError, RuntimeError) as err:
        raise TypeError(
            f"weights must be None or a tensor of per-query weights, got {type(weights).__name__}."
        ) from err
    if weights.is_complex():
        raise TypeError(f"weights must be real; got {weights.dtype}.")
    if weights.shape != per_query.shape:
        raise ValueError(
            f"weights must have one value per query, shape {tuple(per_query.shape)}; got {tuple(weights.shape)}."
        )
    weights = weights.to(per_query.dtype)
    with torch.no_grad():
        bad = ~(torch.isfinite(weights) & (weights >= 0))
        if bool(bad.any()):  # one host sync, only when weights are given
            query = int(bad.nonzero()[0, 0])
            raise ValueError(f"weights must be finite and >= 0; got {weights[query].item()} for query {query}.")
    return weights


def relevant_weights(click_weights, labels, mask):
    """Weight of each document's relevance in a click loss: its click weight where ``label > 0``, else 1.

    ``click_weights`` (None, or ``[batch, list]``, finite and >= 0) are the documents' inverse-propensity
    weights (:func:`sklearn_ltr.clicks.inverse_propensity_weights`); they scale what a clicked document
    contributes and leave the rest alone, so all-ones weights give the unweighted loss exactly.
    Returns None when ``click_weights`` is None.
    """
    if click_weights is None:
        return None
    if is_affine_click_weights(click_weights):
        raise ValueError("this loss takes no affine click weights ([batch, list, 2]): use 'sigmoid_ce', 'softmax', "
                         "'ranknet' or 'hinge', whose affine-corrected forms are unbiased under trust bias.")
    click_weights = torch.as_tensor(click_weights, device=labels.device)
    if click_weights.shape != labels.shape:
        raise ValueError(f"click_weights must have the shape of scores {tuple(labels.shape)} (one weight per "
                         f"document); got {tuple(click_weights.shape)}.")
    click_weights = click_weights.to(labels.dtype)
    with torch.no_grad():
        bad = mask & ~(torch.isfinite(click_weights) & (click_weights >= 0))
        if bool(bad.any()):
            query, slot = (int(i) for i in bad.nonzero()[0])
            raise ValueError(f"click_weights must be finite and >= 0; got {click_weights[query, slot].item()} for "
                             f"document {slot} of query {query}.")
    return torch.where(mask & (labels > 0), click_weights, 1.0)


def is_affine_click_weights(click_weights):
    """Whether ``click_weights`` hold the affine correction's ``[batch, list, 2]`` pairs ``(w, b)``."""
    return click_weights is not None and getattr(click_weights, "ndim", 0) == 3


def affine_relevance(click_weights, target, mask):
    r"""The affine estimate of each document's relevance, :math:`\hat\gamma_i = t_i w_i - b_i`; 0 on padding.

    ``click_weights`` is ``[batch, list, 2]``: :math:`w_i = 1 / \alpha_i` and :math:`b_i = \beta_i / \alpha_i`
    (:func:`sklearn_ltr.clicks.affine_click_weights`), finite and >= 0; ``target`` the click (0/1) of each
    document. Under trust bias (:math:`P(c_i = 1) = \alpha_i \gamma_i + \beta_i`) :math:`E[\hat\gamma_i] =
    \gamma_i` (Vardasbi et al., 2020): a loss linear in the target is then unbiased with :math:`\hat\gamma`
    in its place.
    """
    click_weights = torch.as_tensor(click_weights, device=target.device)
    if click_weights.shape != (*target.shape, 2):
        raise ValueError(f"affine click_weights must have shape {(*target.shape, 2)} (a weight w = 1 / alpha and "
                         f"an offset b = beta / alpha per document); got {tuple(click_weights.shape)}.")
    click_weights = click_weights.to(target.dtype)
    with torch.no_grad():
        bad = mask[:, :, None] & ~(torch.isfinite(click_weights) & (click_weights >= 0))
        if bool(bad.any()):
            query, slot, column = (int(i) for i in bad.nonzero()[0])
            raise ValueError(f"click_weights must be finite and >= 0; got {click_weights[query, slot, column].item()} "
                             f"for document {slot} of query {query}.")
    estimate = target * click_weights[..., 0] - click_weights[..., 1]
    return torch.where(mask, estimate, 0.0)


def reduce_queries(per_query, mask, reduction="mean", weights=None):
    """Reduce the ``[batch]`` values of the queries; see the module docstring.

    Rows of ``mask`` with no real document and rows of weight 0 are taken out with
    :func:`torch.where`, so whatever they hold reaches neither the value nor the gradient.
    """
    if not isinstance(reduction, str) or reduction not in REDUCTIONS:
        raise ValueError(f"reduction must be one of {list(REDUCTIONS)}; got {reduction!r}.")
    has_docs = mask.any(dim=1)
    if weights is None:
        weight = has_docs.to(per_query.dtype)
    else:
        weight = torch.where(has_docs, check_weights(weights, per_query), 0.0)
    weighted = torch.where(weight > 0, weight * per_query, 0.0)
    if reduction == "none":
        return weighted
    total = weighted.sum()
    return total if reduction == "sum" else safe_divide(total, weight.sum())


def safe_divide(numerator, denominator):
    """``numerator / denominator`` where the denominator is positive, else 0 (no NaN anywhere)."""
    positive = denominator > 0
    return torch.where(positive, numerator, 0.0) / torch.where(positive, denominator, 1.0)


def gains(labels, mask):
    """Exponential gains ``2**y - 1`` scaled by ``2**-m``, ``m`` the row's largest label (or 0); 0 on padding.

    ``(2**y - 1) * 2**-m = 2**(y - m) - 2**-m`` lies in ``(-1, 1)`` for every finite label, so
    it never overflows, where ``2**y`` does from ``y = 128`` in float32 (1024 in float64). Every
    use of the gains is a ratio (NDCG, |delta NDCG|), in which the scale cancels exactly. For
    integer labels within 24 (float32) or 53 (float64) of the top one, the scaled gains are the
    exact gains times a power of 2, so small grades give the unscaled values bit for bit.
    """
    top = torch.where(mask, labels, -math.inf).amax(dim=1, keepdim=True).clamp(min=0.0)
    return torch.where(mask, torch.exp2(labels - top) - torch.exp2(-top), 0.0)


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

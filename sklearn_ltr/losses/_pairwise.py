"""Pairwise losses: RankNet and LambdaRank, on one broadcast ``[batch, L, L]`` kernel."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from sklearn_ltr.losses._common import (
    affine_relevance,
    check_inputs,
    check_k,
    check_positive,
    discount,
    gains,
    ideal_dcg,
    is_affine_click_weights,
    reduce_queries,
    relevant_weights,
    safe_divide,
    sort_ranks,
)

__all__ = ["lambdarank", "ranknet"]


def _pairwise(scores, labels, mask, *, sigma, ties):
    """The one pairwise kernel: every (i, j) pair of a list, broadcast to ``[batch, L, L]``.

    Each unordered pair is taken once, as ``i < j``. Returns

    - ``logits[b, i, j] = sigma * (s_i - s_j)`` (the only pairwise tensor on the autograd
      graph);
    - ``target[b, i, j] = (1 + S_ij) / 2`` with ``S_ij = sign(y_i - y_j)``: Burges' target
      probability that i ranks above j (1, 1/2 for a tie, 0);
    - ``pairs[b, i, j]``: both documents real, ``i < j``, and labels different unless
      ``ties``.

    Inputs must come from :func:`check_inputs` (padding already replaced by zeros), so every
    entry is finite and the masked ones only need a zero weight.
    """
    scaled = sigma * scores
    logits = scaled[:, :, None] - scaled[:, None, :]
    with torch.no_grad():
        target = (torch.sign(labels[:, :, None] - labels[:, None, :]) + 1.0) * 0.5
        length = scores.shape[1]
        upper = torch.ones(length, length, dtype=torch.bool, device=scores.device).triu_(1)
        pairs = upper & mask[:, :, None] & mask[:, None, :]
        if not ties:
            pairs &= target != 0.5
    return logits, target, pairs


def affine_pair_loss(scores, labels, mask, click_weights, cost_above, *, sigma, reduction, weights):
    """A pairwise loss under the affine correction: every pair, each side weighted by its document's estimate.

    ``cost_above(d)`` is the cost of the pair ``(i, j)`` for "``i`` above ``j``" at the scaled score
    difference ``d = sigma (s_i - s_j)``; "``j`` above ``i``" costs ``cost_above(-d)``. The value is
    :math:`\frac{1}{|P|}\\sum_{i<j} \\hat\\gamma_i c(d_{ij}) + \\hat\\gamma_j c(-d_{ij})`, linear in the clicks.
    """
    estimate = affine_relevance(click_weights, (labels > 0).to(scores.dtype), mask)
    difference, _, pairs = _pairwise(scores, labels, mask, sigma=sigma, ties=True)
    weight = pairs.to(scores.dtype)
    cost = estimate[:, :, None] * cost_above(difference) + estimate[:, None, :] * cost_above(-difference)
    per_query = (weight * cost).sum(dim=(1, 2))
    return reduce_queries(safe_divide(per_query, weight.sum(dim=(1, 2))), mask, reduction, weights)


def _pair_cost_per_query(logits, target, weight):
    """Per-query sum of ``weight * C`` with C the RankNet cost of each pair.

    ``C = -P log sigmoid(o) - (1 - P) log sigmoid(-o)`` with ``o = logits`` and
    ``P = target`` equals ``(1 - S) sigma d / 2 + log(1 + exp(-sigma d))``. One fused
    ``binary_cross_entropy_with_logits`` keeps only its inputs for the backward pass.
    """
    cost = F.binary_cross_entropy_with_logits(logits, target, weight=weight, reduction="none")
    return cost.sum(dim=(1, 2))


def ranknet(scores, labels, mask=None, *, sigma=1.0, include_ties=True, reduction="mean", weights=None,
            click_weights=None):
    r"""RankNet: logistic loss on the score difference of every pair of documents.

    For documents :math:`i, j` of one list with :math:`S_{ij} = \operatorname{sign}(y_i - y_j)`
    (Burges, 2010):

    .. math::
        C_{ij} = \tfrac{1}{2}(1 - S_{ij})\,\sigma(s_i - s_j)
                 + \log\!\big(1 + e^{-\sigma(s_i - s_j)}\big),
        \qquad
        \ell_q = \frac{1}{|P_q|} \sum_{\{i, j\} \in P_q} C_{ij}

    where :math:`P_q` holds each unordered pair once (:math:`C_{ij} = C_{ji}`). A pair with
    tied labels has :math:`S_{ij} = 0`, target probability 1/2 and cost
    :math:`\log(2\cosh(\sigma(s_i - s_j)/2))`, which pulls the two scores together. By
    default the loss is the mean of :math:`\ell_q` over queries; a query without pairs
    contributes 0.

    With ``click_weights`` :math:`w_i` (inverse propensities of clicks), each pair's cost is
    weighted by the weight of its clicked document (:math:`\max(w_i, w_j)` over the pair's
    clicked documents, 1 for a pair of non-clicks) and the mean stays over :math:`|P_q|`: the
    loss is linear in the weights, the inverse-propensity-weighted pairwise loss of Joachims
    et al. (2017), and all-ones weights give the unweighted loss.

    With affine ``click_weights`` (``[batch, list, 2]``: :math:`w_i = 1 / \alpha_i`,
    :math:`b_i = \beta_i / \alpha_i`, from per-row :math:`(\alpha_i, \beta_i)` of trust bias),
    the loss is the pairwise loss linear in relevance of Joachims et al. (2017), "each relevant
    document above every other one", with each document's relevance replaced by its affine
    estimate :math:`\hat\gamma_i = (c_i - \beta_i) / \alpha_i` (Vardasbi et al., 2020):

    .. math::
        \ell_q = \frac{1}{|P_q|} \sum_{\{i, j\} \in P_q} \Big[\hat\gamma_i
            \log\big(1 + e^{-\sigma(s_i - s_j)}\big) + \hat\gamma_j
            \log\big(1 + e^{-\sigma(s_j - s_i)}\big)\Big]

    over every pair :math:`P_q` of real documents, :math:`|P_q| = n_q (n_q - 1) / 2` (a count
    that does not depend on the clicks; ``include_ties`` does not apply). It is linear in the
    clicks, so under trust bias (:math:`P(c_i = 1) = \alpha_i \gamma_i + \beta_i`) its
    expectation over clicks is exactly the same loss on the relevance probabilities
    :math:`\gamma_i`. For 0/1 relevance it is RankNet's cost on pairs of different labels plus
    twice the tied cost on pairs of relevant documents.

    Parameters
    ----------
    scores, labels : torch.Tensor of shape (batch, list)
        Ranking scores and relevance labels; values in padded slots are ignored.
    mask : torch.Tensor of bool, shape (batch, list), default=None
        True for real documents; None means every slot is real.
    sigma : float, default=1.0
        Steepness :math:`\sigma` of the logistic.
    include_ties : bool, default=True
        Whether pairs with equal labels are in :math:`P_q`. True follows the cost as Burges
        defines it (:math:`S_{ij} \in \{-1, 0, 1\}`; the original RankNet trains with target
        probability 1/2 on ties). False keeps only pairs with different labels, the set
        :math:`I` over which Burges factorises the gradient into lambdas, and what LightGBM,
        TF-Ranking and allRank use.
    reduction : {"mean", "sum", "none"}, default="mean"
        Mean or sum of the per-query values over the queries with a real document, or the
        ``[batch]`` tensor of them; see :mod:`sklearn_ltr.losses`.
    weights : torch.Tensor of shape (batch,), default=None
        Non-negative weight of each query in the reduction; None weighs every query 1.
    click_weights : torch.Tensor of shape (batch, list) or (batch, list, 2), default=None
        Non-negative weight of each relevant (clicked, label > 0) document, e.g. its clipped
        inverse examination propensity; None (or all ones) is the unweighted loss. With a last
        dimension of 2, the affine correction's :math:`(w_i, b_i)` (see above).

    Returns
    -------
    torch.Tensor
        Scalar: mean over queries of the mean pair cost (a ``[batch]`` tensor with
        ``reduction="none"``). A single-document list has no pair and gives 0.

    References
    ----------
    .. [1] Burges, Shaked, Renshaw, Lazier, Deeds, Hamilton, Hullender. "Learning to Rank
       using Gradient Descent." ICML 2005.
    .. [2] Burges. "From RankNet to LambdaRank to LambdaMART: An Overview." Microsoft
       Research Technical Report MSR-TR-2010-82, 2010.
    .. [3] Joachims, Swaminathan, Schnabel. "Unbiased Learning-to-Rank with Biased Feedback."
       WSDM 2017.
    .. [4] Vardasbi, Oosterhuis, de Rijke. "When Inverse Propensity Scoring does not Work: Affine
       Corrections for Unbiased Learning to Rank." CIKM 2020.

    Examples
    --------
    One query of two documents, the relevant one scored 2 higher: the only pair costs
    :math:`\log(1 + e^{-2})`.

    >>> import torch
    >>> from sklearn_ltr.losses import ranknet
    >>> labels = torch.tensor([[1.0, 0.0]])
    >>> round(ranknet(torch.tensor([[2.0, 0.0]]), labels).item(), 4)
    0.1269

    A padded slot (``mask`` False) changes neither the value nor the gradient, even when
    it holds NaN:

    >>> scores = torch.tensor([[2.0, 0.0, float("nan")]], requires_grad=True)
    >>> labels = torch.tensor([[1.0, 0.0, 0.0]])
    >>> mask = torch.tensor([[True, True, False]])
    >>> loss = ranknet(scores, labels, mask)
    >>> loss.backward()
    >>> round(loss.item(), 4), [round(g, 4) for g in scores.grad[0].tolist()]
    (0.1269, [-0.1192, 0.1192, 0.0])

    Tied labels form pairs with target 1/2 (cost :math:`\log 2` at equal scores) unless
    ``include_ties=False``:

    >>> scores, labels = torch.tensor([[1.0, 0.0, 0.0]]), torch.tensor([[1.0, 0.0, 0.0]])
    >>> round(ranknet(scores, labels).item(), 4)  # (2 log(1 + e^-1) + log 2) / 3
    0.4399
    >>> round(ranknet(scores, labels, include_ties=False).item(), 4)  # log(1 + e^-1)
    0.3133

    Affine correction, :math:`\alpha = 0.5, \beta = 0.25`: the click (estimate 1.5) scored 2
    above the non-click (estimate -0.5), :math:`1.5 \log(1 + e^{-2}) - 0.5 \log(1 + e^{2})`:

    >>> affine = torch.tensor([[[2.0, 0.5], [2.0, 0.5]]])
    >>> round(ranknet(torch.tensor([[2.0, 0.0]]), torch.tensor([[1.0, 0.0]]), click_weights=affine).item(), 4)
    -0.8731
    """
    sigma = check_positive("sigma", sigma)
    scores, labels, mask = check_inputs(scores, labels, mask)
    if is_affine_click_weights(click_weights):
        # Every pair, each document's affine estimate on "above the other": linear in the clicks.
        return affine_pair_loss(scores, labels, mask, click_weights, lambda logits: F.softplus(-logits),
                                sigma=sigma, reduction=reduction, weights=weights)
    logits, target, pairs = _pairwise(scores, labels, mask, sigma=sigma, ties=bool(include_ties))
    weight = pairs.to(scores.dtype)
    count = weight.sum(dim=(1, 2))
    relevant = relevant_weights(click_weights, labels, mask)
    if relevant is not None:
        # A pair is weighted by its clicked document's weight (the larger one if both were clicked);
        # the mean stays over the unweighted pairs, so the loss is linear in the weights.
        weight = weight * torch.maximum(relevant[:, :, None], relevant[:, None, :])
    per_query = _pair_cost_per_query(logits, target, weight)
    return reduce_queries(safe_divide(per_query, count), mask, reduction, weights)


def lambdarank(scores, labels, mask=None, *, sigma=1.0, k=None, reduction="mean", weights=None):
    r"""LambdaRank: RankNet with every pair weighted by the NDCG change of swapping it.

    .. math::
        \ell_q = \sum_{\{i, j\}:\, y_i \neq y_j} |\Delta \mathrm{NDCG}_{ij}|\, C_{ij},
        \qquad
        |\Delta \mathrm{NDCG}_{ij}| = \frac{|G(y_i) - G(y_j)|\,
            |D(r_i) - D(r_j)|}{\mathrm{IDCG@}k}

    with :math:`C_{ij}` the RankNet cost (see :func:`ranknet`), gain
    :math:`G(y) = 2^y - 1`, discount :math:`D(r) = 1 / \log_2(1 + r)` (0 for
    :math:`r > k`), and :math:`r_i` the rank of document :math:`i` in the current ranking by
    score (ties in score broken by position). The weights are constants for autograd, so the
    gradient of :math:`\ell_q` with respect to :math:`s_i` is Burges' lambda
    :math:`\lambda_i = \sum_j |\Delta \mathrm{NDCG}_{ij}|\, \partial C_{ij} / \partial s_i`.
    Pairs are summed, not averaged, as in LambdaMART; by default the loss is the mean of
    :math:`\ell_q` over queries. Tied labels have zero weight; a query with no relevant
    document (ideal DCG 0) contributes 0. The gains are computed as
    :math:`2^{y - m} - 2^{-m}`, with :math:`m` the largest label of the query, which leaves
    :math:`|\Delta \mathrm{NDCG}_{ij}|` unchanged and never overflows.

    Parameters
    ----------
    scores, labels : torch.Tensor of shape (batch, list)
        Ranking scores and relevance labels (non-negative grades); padded slots are ignored.
    mask : torch.Tensor of bool, shape (batch, list), default=None
        True for real documents; None means every slot is real.
    sigma : float, default=1.0
        Steepness of the RankNet logistic.
    k : int, default=None
        Truncation: optimise NDCG@k (discounts past rank k are 0, so only pairs with at least
        one document in the current top k count). None uses the whole list.
    reduction : {"mean", "sum", "none"}, default="mean"
        Mean or sum of the per-query values over the queries with a real document, or the
        ``[batch]`` tensor of them; see :mod:`sklearn_ltr.losses`.
    weights : torch.Tensor of shape (batch,), default=None
        Non-negative weight of each query in the reduction; None weighs every query 1.

    Returns
    -------
    torch.Tensor
        Scalar loss (a ``[batch]`` tensor with ``reduction="none"``). A single-document list
        gives 0.

    References
    ----------
    .. [1] Burges, Ragno, Le. "Learning to Rank with Nonsmooth Cost Functions." NIPS 2006.
    .. [2] Burges. "From RankNet to LambdaRank to LambdaMART: An Overview." Microsoft
       Research Technical Report MSR-TR-2010-82, 2010.

    Examples
    --------
    Two documents with equal scores, the relevant one listed first (so ranked first):
    swapping them changes NDCG by :math:`1 - 1/\log_2 3`, and the pair costs
    :math:`\log 2`.

    >>> import torch
    >>> from sklearn_ltr.losses import lambdarank
    >>> scores, labels = torch.zeros(1, 2), torch.tensor([[1.0, 0.0]])
    >>> round(lambdarank(scores, labels).item(), 4)  # (1 - 1 / log2(3)) * log(2)
    0.2558

    With ``k=1`` rank 2 has discount 0, so the swap changes NDCG@1 by 1:

    >>> round(lambdarank(scores, labels, k=1).item(), 4)  # log(2)
    0.6931
    """
    sigma = check_positive("sigma", sigma)
    k = check_k(k)
    scores, labels, mask = check_inputs(scores, labels, mask)
    logits, target, pairs = _pairwise(scores, labels, mask, sigma=sigma, ties=False)
    with torch.no_grad():
        gain = gains(labels, mask)
        disc = discount(sort_ranks(scores, mask), k)
        inverse_idcg = safe_divide(torch.ones_like(gain[:, 0]), ideal_dcg(gain, mask, k))
        weight = (gain[:, :, None] - gain[:, None, :]).abs_()
        weight *= (disc[:, :, None] - disc[:, None, :]).abs_()
        weight *= inverse_idcg[:, None, None]
        weight = torch.where(pairs, weight, 0.0)
    return reduce_queries(_pair_cost_per_query(logits, target, weight), mask, reduction, weights)

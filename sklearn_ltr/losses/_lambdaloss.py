"""The LambdaLoss framework (Wang et al., CIKM 2018): metric-weighted logistic losses on pairs."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from sklearn_ltr.losses._common import (
    check_inputs,
    check_k,
    check_positive,
    gains,
    ideal_dcg,
    reduce_queries,
    safe_divide,
    sort_ranks,
)

__all__ = ["WEIGHING_SCHEMES", "lambdaloss"]

#: The weighing schemes of :func:`lambdaloss`, by name.
WEIGHING_SCHEMES = ("ndcg_loss1", "ndcg_loss2", "ndcg_loss2pp", "arp_loss1", "arp_loss2", "lambdarank", "ranknet")
#: Schemes that sum over every ordered pair ``(i, j)``, ``j = i`` included (the paper's Loss1 bounds).
_ALL_PAIRS = ("ndcg_loss1", "arp_loss1")


def _check_scheme(scheme):
    if not isinstance(scheme, str) or scheme not in WEIGHING_SCHEMES:
        raise ValueError(f"weighing_scheme must be one of {list(WEIGHING_SCHEMES)}; got {scheme!r}.")
    return scheme


def _pair_weights(scores, labels, mask, scheme, k, mu):
    """``[batch, L, L]`` weight of each ordered pair ``(i, j)``, 0 outside the scheme's pairs (no gradient)."""
    length = scores.shape[1]
    ranks = sort_ranks(scores, mask)  # 1-based, ties in score by position, padding last
    real = mask[:, :, None] & mask[:, None, :]
    if k is not None:  # both documents in the current top k (allRank's truncation)
        real = real & (ranks <= k)[:, :, None] & (ranks <= k)[:, None, :]
    if scheme in _ALL_PAIRS:
        pairs = real
    else:
        pairs = real & (labels[:, :, None] > labels[:, None, :])
    if scheme == "ranknet":
        return pairs.to(scores.dtype)
    if scheme.startswith("arp"):
        relevance = labels.clamp(min=0.0)
        if scheme == "arp_loss1":
            weight = relevance[:, :, None].expand(-1, -1, length)
        else:
            weight = (relevance[:, :, None] - relevance[:, None, :]).abs()
        return torch.where(pairs, weight, 0.0)
    gain = gains(labels, mask)
    gain = gain * safe_divide(torch.ones_like(gain[:, 0]), ideal_dcg(gain, mask, k))[:, None]  # G_i = gain / IDCG@k
    disc = 1.0 / torch.log2(1.0 + ranks)  # 1 / D_i, untruncated
    if scheme == "ndcg_loss1":
        return torch.where(pairs, (gain * disc)[:, :, None].expand(-1, -1, length), 0.0)
    gain_gap = (gain[:, :, None] - gain[:, None, :]).abs()
    weight = 0.0
    if scheme in ("ndcg_loss2", "ndcg_loss2pp"):
        gap = (ranks[:, :, None] - ranks[:, None, :]).abs().clamp(min=1.0)  # |r_i - r_j|, >= 1 off the diagonal
        delta = 1.0 / torch.log2(1.0 + gap) - 1.0 / torch.log2(2.0 + gap)
        weight = delta * gain_gap * (mu if scheme == "ndcg_loss2pp" else 1.0)
    if scheme in ("lambdarank", "ndcg_loss2pp"):
        weight = weight + (disc[:, :, None] - disc[:, None, :]).abs() * gain_gap
    return torch.where(pairs, weight, 0.0)


def lambdaloss(scores, labels, mask=None, *, weighing_scheme="ndcg_loss2pp", k=None, sigma=1.0, mu=10.0,
               reduction="mean", weights=None):
    r"""LambdaLoss: the pairwise logistic loss in bits, each pair weighted by a ranking metric's scheme.

    The LambdaLoss framework (Wang et al., 2018) bounds a ranking metric by a sum over
    ordered pairs :math:`(i, j)` of a list, weighted by :math:`\rho_{ij}`, the weighing
    scheme, which is computed on the current ranking (hard assignment) and is a constant
    for autograd:

    .. math::
        \ell_q = -\sum_{(i, j) \in P_q} \rho_{ij}\,
                 \log_2 \frac{1}{1 + e^{-\sigma (s_i - s_j)}}

    with :math:`G_i = (2^{y_i} - 1) / \mathrm{IDCG@}k` (0 when IDCG@k is 0),
    :math:`D_i = \log_2(1 + r_i)` for the current rank :math:`r_i` of document :math:`i` by
    decreasing score, and :math:`\delta_{ij} = \big|1 / \log_2(1 + |r_i - r_j|) -
    1 / \log_2(2 + |r_i - r_j|)\big|`. The schemes, with :math:`P_q` the pairs with
    :math:`y_i > y_j` unless said otherwise:

    ========================  =============================================  ==========================
    ``weighing_scheme``       :math:`\rho_{ij}`                              paper's name
    ========================  =============================================  ==========================
    ``"ndcg_loss1"``          :math:`G_i / D_i`, over every :math:`(i, j)`   NDCG-Loss1
    ``"ndcg_loss2"``          :math:`\delta_{ij} |G_i - G_j|`                NDCG-Loss2
    ``"ndcg_loss2pp"``        :math:`(\mu \delta_{ij} + |1/D_i - 1/D_j|)     NDCG-Loss2++
                              |G_i - G_j|`
    ``"arp_loss1"``           :math:`y_i`, over every :math:`(i, j)`         ARP-Loss1
    ``"arp_loss2"``           :math:`|y_i - y_j|`                            ARP-Loss2
    ``"lambdarank"``          :math:`|1/D_i - 1/D_j|\, |G_i - G_j|`          LambdaRank
    ``"ranknet"``             1                                              RankNet
    ========================  =============================================  ==========================

    The two Loss1 schemes sum over every ordered pair, :math:`j = i` and tied labels
    included, as the paper writes them: the :math:`j = i` term is the bound
    :math:`\log_2 2 = 1` of the leading 1 of :math:`r_i = 1 + \sum_{j \ne i}
    \mathbb{1}[s_j > s_i]`, so ARP-Loss1 bounds :math:`\sum_i y_i r_i` from above; it adds a
    constant (no gradient), and a list of one document gets that constant. The other schemes
    take each pair of different labels once and give ties and lists of one 0. The ARP
    schemes read the labels clipped at 0. With ``"lambdarank"`` and no ``k`` the loss is
    :func:`lambdarank` divided by :math:`\ln 2`.

    Truncation at ``k`` keeps the pairs whose two documents both lie in the current top
    :math:`k` and normalises by IDCG@k, as allRank does (:func:`lambdarank` keeps pairs with
    at least one document in the top :math:`k`). Ties in score are ranked by position in the
    list (allRank sorts them in an unspecified order). The logistic cost is computed as
    :math:`\operatorname{softplus}(-\sigma(s_i - s_j)) / \ln 2`, finite for every score and
    never clipped (allRank clips the pair's probability, and its power :math:`\rho_{ij}`, at
    :math:`10^{-10}`: a pair's cost, weighted or not, stops at 33.2 bits, with no gradient
    beyond). Pairs are summed within a query; by default the loss is the mean over queries
    (allRank's ``reduction="sum"`` is ``reduction="sum"`` here). Gains are computed as
    :math:`2^{y - m} - 2^{-m}`, :math:`m` the query's largest label, which leaves
    :math:`G_i` unchanged and never overflows.

    Parameters
    ----------
    scores, labels : torch.Tensor of shape (batch, list)
        Ranking scores and relevance labels (non-negative grades); padded slots are ignored.
    mask : torch.Tensor of bool, shape (batch, list), default=None
        True for real documents; None means every slot is real.
    weighing_scheme : str, default="ndcg_loss2pp"
        One of ``"ndcg_loss1"``, ``"ndcg_loss2"``, ``"ndcg_loss2pp"``, ``"arp_loss1"``,
        ``"arp_loss2"``, ``"lambdarank"``, ``"ranknet"`` (the table above). NDCG-Loss2++ is the
        paper's best on its three data sets.
    k : int, default=None
        Truncation: only pairs of two documents in the current top ``k``, and IDCG@k. None
        uses the whole list.
    sigma : float, default=1.0
        Steepness :math:`\sigma` of the logistic.
    mu : float, default=10.0
        Weight :math:`\mu` of NDCG-Loss2 in NDCG-Loss2++ (allRank's default); read only by
        ``"ndcg_loss2pp"``.
    reduction : {"mean", "sum", "none"}, default="mean"
        Mean or sum of the per-query values over the queries with a real document, or the
        ``[batch]`` tensor of them; see :mod:`sklearn_ltr.losses`.
    weights : torch.Tensor of shape (batch,), default=None
        Non-negative weight of each query in the reduction; None weighs every query 1.

    Returns
    -------
    torch.Tensor
        Scalar loss (a ``[batch]`` tensor with ``reduction="none"``). A list with no pair
        of different labels, or with no relevant document for the NDCG schemes, gives 0,
        except for the constant of the Loss1 schemes.

    Raises
    ------
    ValueError
        For an unknown ``weighing_scheme`` (the message lists them), a ``k`` that is not a
        positive integer, or a ``sigma`` or ``mu`` that is not positive.

    References
    ----------
    .. [1] X. Wang, C. Li, N. Golbandi, M. Bendersky and M. Najork. "The LambdaLoss Framework
       for Ranking Metric Optimization." CIKM 2018.
    .. [2] P. Pobrotyn, T. Bartczak, M. Synowiec, R. Białobrzeski and J. Bojar. "Context-Aware
       Learning to Rank with Self-Attention." SIGIR eCom 2020 (allRank, whose ``lambdaLoss``
       this function equals on the shared schemes; see
       ``benchmarks/results/lambdaloss_allrank.md``).

    Examples
    --------
    Two documents, the relevant one ranked second: NDCG-Loss2 weighs the pair by
    :math:`\delta = 1 - 1/\log_2 3`, and the pair costs :math:`\log_2(1 + e^{1})` bits.

    >>> import math
    >>> import torch
    >>> from sklearn_ltr.losses import lambdaloss
    >>> scores, labels = torch.tensor([[0.5, -0.5]]), torch.tensor([[0.0, 1.0]])
    >>> delta, cost = 1 - 1 / math.log2(3), math.log2(1 + math.e)
    >>> round(lambdaloss(scores, labels, weighing_scheme="ndcg_loss2").item(), 4), round(delta * cost, 4)
    (0.6993, 0.6993)

    NDCG-Loss2++ adds the LambdaRank weight, here the same :math:`\delta`, to :math:`\mu`
    times it:

    >>> round(lambdaloss(scores, labels).item(), 4), round(11 * delta * cost, 4)
    (7.6918, 7.6918)

    The RankNet scheme in bits is :func:`ranknet` (without ties) divided by :math:`\ln 2`:

    >>> from sklearn_ltr.losses import ranknet
    >>> round(lambdaloss(scores, labels, weighing_scheme="ranknet").item(), 4)
    1.8946
    >>> round(ranknet(scores, labels).item() / math.log(2), 4)
    1.8946
    """
    scheme = _check_scheme(weighing_scheme)
    k = check_k(k)
    sigma = check_positive("sigma", sigma)
    mu = check_positive("mu", mu)
    scores, labels, mask = check_inputs(scores, labels, mask)
    scaled = sigma * scores
    logits = scaled[:, :, None] - scaled[:, None, :]  # sigma (s_i - s_j), the only pairwise tensor on the graph
    with torch.no_grad():
        weight = _pair_weights(scores, labels, mask, scheme, k, mu)
    # -log2 sigmoid(o) = softplus(-o) / ln 2, fused: autograd keeps only the inputs.
    cost = F.binary_cross_entropy_with_logits(logits, torch.ones_like(logits), weight=weight, reduction="none")
    return reduce_queries(cost.sum(dim=(1, 2)) / math.log(2.0), mask, reduction, weights)

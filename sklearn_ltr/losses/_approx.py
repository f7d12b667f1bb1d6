"""ApproxNDCG and its Gumbel-perturbed variant."""

from __future__ import annotations

import torch

from sklearn_ltr.losses._common import (
    check_inputs,
    check_positive,
    discount,
    gains,
    ideal_dcg,
    reduce_queries,
    safe_divide,
)
from sklearn_ltr.losses._gumbel import gumbel_loss

__all__ = ["approx_ndcg", "gumbel_approx_ndcg"]


def approx_ranks(scores, mask, temperature):
    r"""Smooth ranks :math:`\hat\pi_i = 1 + \sum_{j \neq i} \operatorname{sigmoid}((s_j - s_i) / T)`.

    Sums over the real documents of each row (padding, already zeroed by the caller, gets
    weight 0); the ``j = i`` term, ``sigmoid(0) = 1/2``, stands for half of the leading 1.
    One ``[batch, L, L]`` tensor is kept for the backward pass.
    """
    scaled = scores / temperature
    beats = torch.sigmoid(scaled[:, None, :] - scaled[:, :, None])  # [b, i, j]: j above i
    real = mask.to(scores.dtype).unsqueeze(2)
    return 0.5 + torch.bmm(beats, real).squeeze(2)


def _one_minus_approx_ndcg(scores, labels, mask, temperature):
    gain = gains(labels, mask)
    inverse_idcg = safe_divide(torch.ones_like(gain[:, 0]), ideal_dcg(gain, mask))
    dcg = (gain * discount(approx_ranks(scores, mask, temperature))).sum(dim=1)
    return torch.where(inverse_idcg > 0, 1.0 - dcg * inverse_idcg, 0.0)


def approx_ndcg(scores, labels, mask=None, *, temperature=0.1, reduction="mean", weights=None):
    r"""ApproxNDCG: one minus NDCG computed with smooth ranks.

    Each rank, a count of the documents scored above, is replaced by a sum of sigmoids:

    .. math::
        \hat\pi_i = 1 + \sum_{j \neq i} \frac{1}{1 + e^{-(s_j - s_i)/T}},
        \qquad
        \ell_q = 1 - \frac{1}{\mathrm{IDCG}} \sum_{i=1}^{n_q}
                 \frac{2^{y_i} - 1}{\log_2(1 + \hat\pi_i)}

    As :math:`T \to 0`, :math:`\hat\pi_i` tends to the true rank and the loss to 1 - NDCG
    (for distinct scores); Bruch et al. (2019) bound the gap by
    :math:`\varepsilon / (2 \ln 2)` when every :math:`|\hat\pi_i - \pi_i| \le \varepsilon`.
    By default the loss is the mean of :math:`\ell_q` over queries; a query with no relevant
    document (IDCG = 0) contributes 0. The gains are computed as :math:`2^{y - m} - 2^{-m}`,
    with :math:`m` the largest label of the query, which leaves the ratio unchanged and never
    overflows.

    Parameters
    ----------
    scores, labels : torch.Tensor of shape (batch, list)
        Ranking scores and relevance labels (non-negative grades); padded slots are ignored.
    mask : torch.Tensor of bool, shape (batch, list), default=None
        True for real documents; None means every slot is real.
    temperature : float, default=0.1
        Temperature :math:`T = 1 / \alpha` of the sigmoid; smaller is closer to the true
        ranks and less smooth. 0.1 is TF-Ranking's default.
    reduction : {"mean", "sum", "none"}, default="mean"
        Mean or sum of the per-query values over the queries with a real document, or the
        ``[batch]`` tensor of them; see :mod:`sklearn_ltr.losses`.
    weights : torch.Tensor of shape (batch,), default=None
        Non-negative weight of each query in the reduction; None weighs every query 1.

    Returns
    -------
    torch.Tensor
        Scalar loss (1 - ApproxNDCG; near 0 for a perfect ranking with well-separated scores),
        or a ``[batch]`` tensor with ``reduction="none"``. A single-document list gives 0.

    References
    ----------
    .. [1] Qin, Liu, Li. "A General Approximation Framework for Direct Optimization of
       Information Retrieval Measures." Information Retrieval 13(4), 2010.
    .. [2] Bruch, Zoghi, Bendersky, Najork. "Revisiting Approximate Metric Optimization in
       the Age of Deep Neural Networks." SIGIR 2019.

    Examples
    --------
    Two documents with equal scores both get the smooth rank 1.5, so the relevant one's
    discount is :math:`1 / \log_2 2.5`:

    >>> import torch
    >>> from sklearn_ltr.losses import approx_ndcg
    >>> labels = torch.tensor([[1.0, 0.0]])
    >>> round(approx_ndcg(torch.zeros(1, 2), labels).item(), 4)  # 1 - 1 / log2(2.5)
    0.2435

    Well-separated scores in label order give (almost exactly) the true ranks:

    >>> round(approx_ndcg(torch.tensor([[10.0, 0.0]]), labels).item(), 4)
    0.0
    """
    temperature = check_positive("temperature", temperature)
    scores, labels, mask = check_inputs(scores, labels, mask)
    return reduce_queries(_one_minus_approx_ndcg(scores, labels, mask, temperature), mask, reduction, weights)


def gumbel_approx_ndcg(
    scores, labels, mask=None, *, temperature=0.1, n_samples=1, generator=None, reduction="mean", weights=None
):
    r"""GumbelApproxNDCG: ApproxNDCG on scores perturbed with Gumbel noise.

    .. math::
        \ell_q = \frac{1}{S} \sum_{m=1}^{S} \ell^{\mathrm{Approx}}_q(s + g^{(m)}),
        \qquad g^{(m)}_i \sim \mathrm{Gumbel}(0, 1) \text{ i.i.d.}

    Sorting :math:`s + g` draws a ranking from the Plackett-Luce distribution with logits
    :math:`s`, so the loss is a stochastic estimate of the expected ApproxNDCG loss over that
    distribution. Each call draws fresh noise; the value is random. This is
    ``gumbel_loss(approx_ndcg, ...)``; see :func:`gumbel_loss`.

    Parameters
    ----------
    scores, labels : torch.Tensor of shape (batch, list)
        Ranking scores and relevance labels; padded slots are ignored.
    mask : torch.Tensor of bool, shape (batch, list), default=None
        True for real documents; None means every slot is real.
    temperature : float, default=0.1
        Temperature of the smooth ranks (see :func:`approx_ndcg`).
    n_samples : int, default=1
        Number of noise draws averaged. Memory grows linearly with it (TF-Ranking draws 8).
    generator : torch.Generator, default=None
        Source of the noise, on the scores' device; None uses torch's global generator. The
        noise is ``-log(-log(U))`` with ``U = torch.rand((n_samples, batch, list))``.
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
    .. [1] Bruch, Han, Bendersky, Najork. "A Stochastic Treatment of Learning to Rank Scoring
       Functions." WSDM 2020.

    Examples
    --------
    The value is random; a seeded ``generator`` makes it reproducible:

    >>> import torch
    >>> from sklearn_ltr.losses import gumbel_approx_ndcg
    >>> scores, labels = torch.tensor([[1.0, 0.0, -1.0]]), torch.tensor([[2.0, 1.0, 0.0]])
    >>> first = gumbel_approx_ndcg(scores, labels, n_samples=8, generator=torch.Generator().manual_seed(0))
    >>> again = gumbel_approx_ndcg(scores, labels, n_samples=8, generator=torch.Generator().manual_seed(0))
    >>> first.shape, bool(first == again)
    (torch.Size([]), True)

    Scores much further apart than the noise keep their order, and the loss is that of
    :func:`approx_ndcg`:

    >>> round(gumbel_approx_ndcg(torch.tensor([[100.0, 0.0]]), torch.tensor([[1.0, 0.0]])).item(), 4)
    0.0
    """
    return gumbel_loss(
        approx_ndcg,
        scores,
        labels,
        mask,
        n_samples=n_samples,
        generator=generator,
        reduction=reduction,
        weights=weights,
        temperature=temperature,
    )

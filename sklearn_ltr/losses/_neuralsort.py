"""NeuralNDCG: NDCG through the NeuralSort relaxation of sorting, plain and Gumbel-perturbed."""

from __future__ import annotations

import math

import torch

from sklearn_ltr._params import check_int
from sklearn_ltr.losses._common import (
    check_inputs,
    check_k,
    check_positive,
    discount,
    gains,
    ideal_dcg,
    reduce_queries,
    safe_divide,
)
from sklearn_ltr.losses._gumbel import gumbel_loss

__all__ = ["gumbel_neuralsort_ndcg", "neuralsort_ndcg"]


def neural_sort(scores, mask, temperature):
    r"""NeuralSort's relaxed permutation matrix, over each row's real documents.

    ``P[b, r, j]`` is the weight of document ``j`` at rank ``r`` (0-based):

    .. math::
        \hat P_{r, :} = \operatorname{softmax}\!\Big(\frac{(n + 1 - 2(r + 1))\, s
                        - A_s \mathbf{1}}{\tau}\Big),
        \qquad (A_s \mathbf{1})_j = \sum_{k} |s_j - s_k|

    with :math:`n` and the sums over the real documents; padded columns get weight 0. Rows
    ``r >= n`` are left as they come (the caller gives them weight 0). Scores must already
    be zero on padding. Two ``[batch, L, L]`` tensors stay on the autograd graph.
    """
    dtype = scores.dtype
    length = scores.shape[1]
    n = mask.sum(dim=1, keepdim=True).to(dtype)
    # sum over real k of |s_j - s_k|: padded k hold s_k = 0 and add |s_j| each, taken back out.
    spread = (scores[:, :, None] - scores[:, None, :]).abs().sum(dim=2) - (length - n) * scores.abs()
    positions = torch.arange(1, length + 1, device=scores.device, dtype=dtype)
    coefficient = (n + 1.0 - 2.0 * positions) / temperature  # [b, r]
    # Padded columns get -inf (weight 0); a row without any real document gets 0 instead, so
    # that no softmax row is all -inf (NaN).
    filler = torch.where(mask.any(dim=1, keepdim=True), -math.inf, 0.0)
    offset = torch.where(mask, -spread / temperature, filler)
    # One [b, L, L] allocation: logits[b, r, j] = coefficient[b, r] * s[b, j] + offset[b, j].
    logits = torch.baddbmm(offset.unsqueeze(1).expand(-1, length, -1), coefficient.unsqueeze(2), scores.unsqueeze(1))
    return torch.softmax(logits, dim=2)


def _matvec(matrix, vector):
    return torch.bmm(matrix, vector.unsqueeze(2)).squeeze(2)


def _rmatvec(matrix, vector):
    return torch.bmm(vector.unsqueeze(1), matrix).squeeze(1)


class _Sinkhorn(torch.autograd.Function):
    """Sinkhorn scaling factors ``u, v`` with ``diag(u) K diag(v)`` doubly stochastic.

    Alternates ``v = 1 / (K^T u)`` (columns) and ``u = 1 / (K v)`` (rows), starting from
    ``u = rows`` (1 on real ranks, 0 past the list length). Each query stops on its own once
    its real columns sum to 1 within ``tol`` (so its value does not depend on the rest of the
    batch), all of them after ``max_iter`` rounds. Sums below ``floor`` (empty rows or
    columns) are left unscaled. Working on the vectors keeps O(rounds * L) memory instead of
    one ``[batch, L, L]`` tensor per round; the hand-written backward pass sums the per-round
    gradients of ``K`` (outer products) with one batched matrix product.
    """

    @staticmethod
    def forward(ctx, kernel, rows, columns, max_iter, tol):
        floor = torch.finfo(kernel.dtype).eps ** 2
        # Tensors kept on ctx are fresh ones, never the Function's inputs or outputs (which
        # would make reference cycles through the graph).
        u, v = rows.clone(), torch.ones_like(columns)
        active = torch.ones_like(rows[:, :1], dtype=torch.bool)
        history = []  # per round: (active, u before, column keep, new v, row keep, new u)
        for _ in range(max_iter):
            column_sums = _rmatvec(kernel, u)
            error = torch.where(columns > 0, (v * column_sums - 1.0).abs(), 0.0).amax(dim=1, keepdim=True)
            active = active & (error > tol)
            if not active.any().item():  # one host sync per round
                break
            keep_c = column_sums > floor
            v_new = torch.where(keep_c, 1.0 / torch.where(keep_c, column_sums, 1.0), 1.0)
            row_sums = _matvec(kernel, v_new)
            keep_r = (row_sums > floor) & (rows > 0)
            u_new = torch.where(keep_r, 1.0 / torch.where(keep_r, row_sums, 1.0), rows)
            history.append((active, u, keep_c, v_new, keep_r, u_new))
            u = torch.where(active, u_new, u)
            v = torch.where(active, v_new, v)
        ctx.history = history
        ctx.save_for_backward(kernel)
        return u.clone(), v.clone()

    @staticmethod
    def backward(ctx, grad_u, grad_v):
        (kernel,) = ctx.saved_tensors
        history = ctx.history
        if not history:
            return None, None, None, None, None
        grad_u = torch.zeros_like(history[0][1]) if grad_u is None else grad_u
        grad_v = torch.zeros_like(history[0][3]) if grad_v is None else grad_v
        left, right = [], []
        for active, u_before, keep_c, v_new, keep_r, u_new in reversed(history):
            # Frozen (converged) queries pass their gradients through this round unchanged.
            grad_rows = torch.where(keep_r & active, -grad_u * u_new * u_new, 0.0)  # d/d(K v)
            grad_v_new = torch.where(active, grad_v, 0.0) + _rmatvec(kernel, grad_rows)
            grad_columns = torch.where(keep_c & active, -grad_v_new * v_new * v_new, 0.0)  # d/d(K^T u)
            grad_u = torch.where(active, _matvec(kernel, grad_columns), grad_u)
            grad_v = torch.where(active, 0.0, grad_v)
            left += [grad_rows, u_before]
            right += [v_new, grad_columns]
        grad_kernel = torch.bmm(torch.stack(left, dim=2), torch.stack(right, dim=1))
        return grad_kernel, None, None, None, None


def _one_minus_neural_ndcg(scores, labels, mask, temperature, k, max_iter, tol):
    gain = gains(labels, mask)
    inverse_idcg = safe_divide(torch.ones_like(gain[:, 0]), ideal_dcg(gain, mask, k))
    kernel = neural_sort(scores, mask, temperature)
    dtype = scores.dtype
    positions = torch.arange(1, scores.shape[1] + 1, device=scores.device, dtype=dtype)
    rows = (positions[None, :] <= mask.sum(dim=1, keepdim=True)).to(dtype)
    u, v = _Sinkhorn.apply(kernel, rows, mask.to(dtype), max_iter, tol)
    # Gains "sorted" by the scaled matrix diag(u) K diag(v), never materialised.
    gain_at_rank = u * _matvec(kernel, v * gain)
    dcg = (gain_at_rank * discount(positions, k)).sum(dim=1)
    return torch.where(inverse_idcg > 0, 1.0 - dcg * inverse_idcg, 0.0)


def _check_options(temperature, k, sinkhorn_iters, tol):
    return (
        check_positive("temperature", temperature),
        check_k(k),
        check_int(sinkhorn_iters, "sinkhorn_iters", minimum=0),
        check_positive("tol", tol),
    )


def neuralsort_ndcg(
    scores,
    labels,
    mask=None,
    *,
    temperature=1.0,
    k=None,
    sinkhorn_iters=50,
    tol=1e-6,
    reduction="mean",
    weights=None,
):
    r"""NeuralNDCG: one minus NDCG@k with the sort replaced by NeuralSort.

    NeuralSort (Grover et al. 2019) relaxes the permutation matrix that sorts the scores
    into a row-stochastic :math:`\hat P` (row :math:`r` is a softmax, at temperature
    :math:`\tau`, over which document takes rank :math:`r`); Sinkhorn scaling makes it
    doubly stochastic; the gains are then "sorted" by it:

    .. math::
        \ell_q = 1 - \frac{1}{\mathrm{IDCG@}k} \sum_{r=1}^{\min(k, n_q)}
                 \frac{\big(\operatorname{Sinkhorn}(\hat P)\, g\big)_r}{\log_2(1 + r)},
        \qquad g_i = 2^{y_i} - 1

    As :math:`\tau \to 0` the loss tends to 1 - NDCG@k. By default the loss is the mean of
    :math:`\ell_q` over queries; a query with no relevant document contributes 0. The gains
    are computed as :math:`2^{y - m} - 2^{-m}`, with :math:`m` the largest label of the query,
    which leaves the ratio unchanged and never overflows.

    Parameters
    ----------
    scores, labels : torch.Tensor of shape (batch, list)
        Ranking scores and relevance labels (non-negative grades); padded slots are ignored.
    mask : torch.Tensor of bool, shape (batch, list), default=None
        True for real documents; None means every slot is real.
    temperature : float, default=1.0
        NeuralSort temperature :math:`\tau` (allRank's default).
    k : int, default=None
        Truncation of NDCG; None uses the whole list.
    sinkhorn_iters : int, default=50
        Maximum number of Sinkhorn iterations (0 skips the scaling); it stops early once every
        column sums to 1 within ``tol``. Iterations cost two batched matrix-vector products
        each and O(list) memory.
    tol : float, default=1e-6
        Sinkhorn stopping tolerance.
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
    .. [1] Pobrotyn, Białobrzeski. "NeuralNDCG: Direct Optimisation of a Ranking Metric via
       Differentiable Relaxation of Sorting." arXiv:2102.07831, 2021.
    .. [2] Grover, Wang, Zweig, Ermon. "Stochastic Optimization of Sorting Networks via
       Continuous Relaxations." ICLR 2019.

    Examples
    --------
    With equal scores every document is spread evenly over the ranks, so each rank holds
    half the relevant document's gain:

    >>> import torch
    >>> from sklearn_ltr.losses import neuralsort_ndcg
    >>> labels = torch.tensor([[1.0, 0.0]])
    >>> round(neuralsort_ndcg(torch.zeros(1, 2), labels).item(), 4)  # 1 - (1/2 + 1 / (2 log2(3)))
    0.1845

    Well-separated scores in label order give (almost exactly) the sorted gains:

    >>> round(neuralsort_ndcg(torch.tensor([[10.0, 0.0]]), labels).item(), 4)
    0.0
    """
    temperature, k, sinkhorn_iters, tol = _check_options(temperature, k, sinkhorn_iters, tol)
    scores, labels, mask = check_inputs(scores, labels, mask)
    per_query = _one_minus_neural_ndcg(scores, labels, mask, temperature, k, sinkhorn_iters, tol)
    return reduce_queries(per_query, mask, reduction, weights)


def gumbel_neuralsort_ndcg(
    scores,
    labels,
    mask=None,
    *,
    temperature=1.0,
    k=None,
    sinkhorn_iters=50,
    tol=1e-6,
    n_samples=1,
    generator=None,
    reduction="mean",
    weights=None,
):
    r"""Stochastic NeuralNDCG: NeuralNDCG on scores perturbed with Gumbel noise.

    .. math::
        \ell_q = \frac{1}{S} \sum_{m=1}^{S} \ell^{\mathrm{NeuralNDCG}}_q(s + g^{(m)}),
        \qquad g^{(m)}_i \sim \mathrm{Gumbel}(0, 1) \text{ i.i.d.}

    the stochastic NeuralSort of Grover et al. (2019): sorting :math:`s + g` samples a
    ranking from the Plackett-Luce distribution with logits :math:`s`. Each call draws fresh
    noise; the value is random. This is ``gumbel_loss(neuralsort_ndcg, ...)``; see
    :func:`gumbel_loss`.

    Parameters
    ----------
    scores, labels : torch.Tensor of shape (batch, list)
        Ranking scores and relevance labels; padded slots are ignored.
    mask : torch.Tensor of bool, shape (batch, list), default=None
        True for real documents; None means every slot is real.
    temperature : float, default=1.0
        NeuralSort temperature; see :func:`neuralsort_ndcg`.
    k : int, default=None
        Truncation of NDCG; None uses the whole list.
    sinkhorn_iters : int, default=50
        Maximum number of Sinkhorn iterations; see :func:`neuralsort_ndcg`.
    tol : float, default=1e-6
        Sinkhorn stopping tolerance.
    n_samples : int, default=1
        Number of noise draws averaged; memory grows linearly with it (allRank draws 32,
        which does not fit long lists).
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
    .. [1] Pobrotyn, Białobrzeski. "NeuralNDCG: Direct Optimisation of a Ranking Metric via
       Differentiable Relaxation of Sorting." arXiv:2102.07831, 2021.
    .. [2] Grover, Wang, Zweig, Ermon. "Stochastic Optimization of Sorting Networks via
       Continuous Relaxations." ICLR 2019.

    Examples
    --------
    The value is random; a seeded ``generator`` makes it reproducible:

    >>> import torch
    >>> from sklearn_ltr.losses import gumbel_neuralsort_ndcg
    >>> scores, labels = torch.tensor([[1.0, 0.0, -1.0]]), torch.tensor([[2.0, 1.0, 0.0]])
    >>> first = gumbel_neuralsort_ndcg(scores, labels, n_samples=4, generator=torch.Generator().manual_seed(0))
    >>> again = gumbel_neuralsort_ndcg(scores, labels, n_samples=4, generator=torch.Generator().manual_seed(0))
    >>> first.shape, bool(first == again)
    (torch.Size([]), True)

    Scores much further apart than the noise keep their order, and the loss is that of
    :func:`neuralsort_ndcg`:

    >>> round(gumbel_neuralsort_ndcg(torch.tensor([[100.0, 0.0]]), torch.tensor([[1.0, 0.0]])).item(), 4)
    0.0
    """
    return gumbel_loss(
        neuralsort_ndcg,
        scores,
        labels,
        mask,
        n_samples=n_samples,
        generator=generator,
        reduction=reduction,
        weights=weights,
        temperature=temperature,
        k=k,
        sinkhorn_iters=sinkhorn_iters,
        tol=tol,
    )

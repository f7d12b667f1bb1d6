r"""The two-tower click loss: the clicks' likelihood under the two towers, and the adversary of gradient reversal.

:class:`TwoTowerClickLoss` scores a :class:`TwoTowerOutput` of
:class:`~sklearn_ltr.nn.TwoTowerScorer` against the clicks: the binary cross-entropy of
:func:`click_log_likelihood`, averaged per query, plus, when the scorer reverses the
observation logit's gradient, the closed-form linear adversary of
:func:`linear_adversary_loss`.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["ADVERSARY_RIDGE", "COMBINATIONS", "DLA_MAX_WEIGHT", "REVERSAL_TARGETS", "TwoTowerClickLoss",
           "TwoTowerOutput", "click_log_likelihood", "dual_learning_loss", "linear_adversary_loss"]

#: How the two towers' logits :math:`r` and :math:`o` make a click probability: ``"additive"``,
#: :math:`\sigma(r + o)`, or ``"multiplicative"`` (PAL), :math:`\sigma(r)\,\sigma(o)`. The values of
#: the ``combination`` parameter of :class:`TwoTowerClickLoss`, :func:`click_log_likelihood` and
#: ``TwoTowerDebiasedRanker``; ``"dla"`` (:class:`TwoTowerClickLoss` and the ranker only) is the dual
#: learning algorithm, which has no click likelihood (see :func:`dual_learning_loss`).
COMBINATIONS = ("additive", "multiplicative", "dla")
#: Largest inverse weight of the dual learning algorithm: ``1 / sklearn_ltr.clicks.PROPENSITY_CLIP``.
DLA_MAX_WEIGHT = 20.0
#: Targets the adversary predicts from the observation logit (see :func:`linear_adversary_loss`).
REVERSAL_TARGETS = ("relevance", "clicks")
#: Ridge :math:`\mu` of the adversary's least squares, in squared logit units (see :func:`linear_adversary_loss`).
ADVERSARY_RIDGE = 1.0


class TwoTowerOutput(NamedTuple):
    r"""Training-time output of :class:`TwoTowerScorer`, each ``[batch, list]`` (0 on padding).

    Parameters
    ----------
    relevance : torch.Tensor of shape (batch, list)
        Relevance-tower logits :math:`r`.
    observation : torch.Tensor of shape (batch, list)
        Observation-tower logits :math:`o` (after observation dropout in training).
    adversary : torch.Tensor of shape (batch, list) or None
        The adversary's input: :math:`\mathrm{GRL}_\lambda(o)`, the observation logits before
        observation dropout, whose gradient comes back reversed and scaled by :math:`\lambda`.
        None without gradient reversal and in evaluation mode.

    Examples
    --------
    >>> import torch
    >>> from sklearn_ltr.nn import TwoTowerOutput
    >>> output = TwoTowerOutput(torch.zeros(1, 3), torch.ones(1, 3), None)
    >>> output._fields
    ('relevance', 'observation', 'adversary')
    >>> output.observation.shape, output.adversary is None
    (torch.Size([1, 3]), True)
    """

    relevance: torch.Tensor
    observation: torch.Tensor
    adversary: torch.Tensor | None


def click_log_likelihood(relevance, observation, clicks, combination="additive"):
    r"""Per-document log-likelihood of the clicks under a two-tower click model.

    The log-likelihood of a click :math:`c \in \{0, 1\}` is :math:`c \log P(c=1) + (1 - c) \log P(c=0)`, where

    - ``"additive"``: :math:`P(c=1) = \sigma(r + o)`;
    - ``"multiplicative"`` (PAL, Guo et al., 2019): :math:`P(c=1) = \sigma(r)\,\sigma(o)`, with

      .. math::
          \log P(c=1) = \log\sigma(r) + \log\sigma(o), \qquad
          \log P(c=0) = \log\left(e^{-r} + e^{-o} + e^{-r-o}\right) + \log\sigma(r) + \log\sigma(o),

      the exact identity :math:`1 - \sigma(r)\sigma(o) = (e^{-r} + e^{-o} + e^{-r-o})\,\sigma(r)\sigma(o)`
      computed with ``logsumexp`` and ``logsigmoid``: finite for every finite :math:`r, o`, even where
      :math:`P(c=1)` rounds to 1 (where ``log1p(-exp(log p))`` would give ``-inf``).

    Parameters
    ----------
    relevance : torch.Tensor
        Relevance logits :math:`r`.
    observation : torch.Tensor
        Observation logits :math:`o`, broadcastable with ``relevance``.
    clicks : torch.Tensor
        Clicks :math:`c`, 1 (clicked) or 0, broadcastable with ``relevance``.
    combination : {"additive", "multiplicative"}, default="additive"
        How :math:`r` and :math:`o` make the click probability (see :data:`COMBINATIONS`).

    Returns
    -------
    log_likelihood : torch.Tensor
        :math:`c \log P(c=1) + (1 - c) \log P(c=0)`, elementwise, the broadcast shape of the
        inputs.

    References
    ----------
    H. Guo, J. Yu, Q. Liu, R. Tang and Y. Zhang. "PAL: a Position-bias Aware Learning
    Framework for CTR Prediction in Live Recommender Systems." RecSys 2019.

    Examples
    --------
    >>> import torch
    >>> from sklearn_ltr.nn import click_log_likelihood
    >>> r, o = torch.tensor([0.5, -1.0]), torch.tensor([1.0, 2.0])
    >>> clicks = torch.tensor([1.0, 0.0])
    >>> additive = click_log_likelihood(r, o, clicks, "additive")
    >>> p = torch.sigmoid(r + o)
    >>> torch.allclose(additive, torch.log(torch.where(clicks == 1, p, 1 - p)))
    True
    >>> multiplicative = click_log_likelihood(r, o, clicks, "multiplicative")
    >>> p = torch.sigmoid(r) * torch.sigmoid(o)
    >>> torch.allclose(multiplicative, torch.log(torch.where(clicks == 1, p, 1 - p)))
    True

    A non-click stays finite where :math:`P(c=1)` rounds to 1 in float32
    (:math:`\log P(c=0) \approx \log 2 - 40`):

    >>> click_log_likelihood(torch.tensor([40.0]), torch.tensor([40.0]), torch.tensor([0.0]), "multiplicative")
    tensor([-39.3069])
    """
    if combination == "additive":
        logit = relevance + observation
        return clicks * F.logsigmoid(logit) + (1 - clicks) * F.logsigmoid(-logit)
    if combination != "multiplicative":
        raise ValueError(
            f"combination must be 'additive' or 'multiplicative' (a click likelihood); got {combination!r}.")
    log_click = F.logsigmoid(relevance) + F.logsigmoid(observation)
    log_rest = torch.logsumexp(torch.stack([-relevance, -observation, -relevance - observation]), dim=0)
    return clicks * log_click + (1 - clicks) * (log_rest + log_click)


def _inverse_ratio(logits, mask, max_weight):
    """``min(exp(max_j z_j - z_i), max_weight)`` over each list's real documents, detached; 1 on padding."""
    logits = torch.where(mask, logits.detach(), -torch.inf)
    top = logits.max(dim=1, keepdim=True).values
    ratio = torch.exp(torch.where(mask, top - logits, 0.0))
    return ratio.clamp(max=max_weight)


def _weighted_softmax_ce(logits, clicks, weights, mask):
    """Per list ``-sum_i c_i w_i log softmax(z)_i / sum_i c_i`` (0 for a list without a click)."""
    log_p = torch.log_softmax(torch.where(mask, logits, -torch.inf), dim=1)
    per_doc = torch.where(mask & (clicks > 0), clicks * weights * log_p, 0.0)
    n_clicks = clicks.sum(dim=1)
    return -per_doc.sum(dim=1) / n_clicks.clamp(min=1.0)


def dual_learning_loss(relevance, observation, clicks, mask, weights=None, *, max_weight=DLA_MAX_WEIGHT):
    r"""The dual learning algorithm (DLA): relevance and examination, each learned by inverse weighting with the other.

    Ai et al. (2018) treat the estimation of examination propensities as the mirror image of
    learning relevance from clicks: a click needs the document examined *and* relevant, so
    the clicks weighted by the inverse relevance estimate are an unbiased signal of
    examination, as the clicks weighted by the inverse propensity are of relevance. With
    :math:`\hat P_i = \mathrm{softmax}(o)_i` and :math:`\hat R_i = \mathrm{softmax}(r)_i` over
    the documents of a list, both towers minimise a softmax cross-entropy on the clicks:

    .. math::
        \ell^{r}_q = -\frac{1}{\sum_i c_i} \sum_i c_i\, \frac{\hat P_{\max}}{\hat P_i} \log \hat R_i,
        \qquad
        \ell^{o}_q = -\frac{1}{\sum_i c_i} \sum_i c_i\, \frac{\hat R_{\max}}{\hat R_i} \log \hat P_i,

    with :math:`\hat P_{\max}` the largest estimate of the list (the best-examined position
    shown; position 1 when it is there) and likewise :math:`\hat R_{\max}`. The weights are
    constants for autograd and clipped at ``max_weight``; the loss is :math:`\ell^r_q +
    \ell^o_q`, averaged over the lists with a click (weighted by ``weights``).

    Parameters
    ----------
    relevance, observation : torch.Tensor of shape (batch, list)
        The relevance logits :math:`r` and observation logits :math:`o` of the documents.
    clicks : torch.Tensor of shape (batch, list)
        1 where a document was clicked, else 0.
    mask : torch.Tensor of bool, shape (batch, list)
        True on real documents.
    weights : torch.Tensor of shape (batch,), default=None
        Non-negative weight of each list (None: all 1).
    max_weight : float, default=DLA_MAX_WEIGHT
        Clip of the inverse weights (20: the inverse of :data:`sklearn_ltr.clicks.PROPENSITY_CLIP`).

    Returns
    -------
    loss : torch.Tensor of shape ()

    References
    ----------
    Q. Ai, K. Bi, C. Luo, J. Guo and W. B. Croft. "Unbiased Learning to Rank with Unbiased
    Propensity Estimation." SIGIR 2018.

    Examples
    --------
    One list of two documents, the first clicked: the relevance tower learns to put it first,
    the observation tower to make its position the most examined.

    >>> import torch
    >>> from sklearn_ltr.nn import dual_learning_loss
    >>> r = torch.zeros(1, 2, requires_grad=True)
    >>> o = torch.zeros(1, 2, requires_grad=True)
    >>> loss = dual_learning_loss(r, o, torch.tensor([[1.0, 0.0]]), torch.ones(1, 2, dtype=torch.bool))
    >>> round(loss.item(), 4)  # 2 log 2: both softmaxes uniform, both weights 1
    1.3863
    >>> loss.backward()
    >>> r.grad, o.grad
    (tensor([[-0.5000,  0.5000]]), tensor([[-0.5000,  0.5000]]))
    """
    clicks = torch.where(mask, clicks.float(), 0.0)
    relevance, observation = relevance.float(), observation.float()
    per_list = (_weighted_softmax_ce(relevance, clicks, _inverse_ratio(observation, mask, max_weight), mask)
                + _weighted_softmax_ce(observation, clicks, _inverse_ratio(relevance, mask, max_weight), mask))
    has_click = (clicks.sum(dim=1) > 0).to(per_list.dtype)
    weight = has_click if weights is None else has_click * weights.to(per_list.dtype)
    return (weight * per_list).sum() / weight.sum().clamp(min=torch.finfo(per_list.dtype).tiny)


def _mean_per_query(per_doc, mask, weights=None):
    """Mean over each query's documents, then (weighted) over the queries with documents (as ``sigmoid_ce``)."""
    per_doc = torch.where(mask, per_doc, 0.0)
    n_docs = mask.sum(dim=1)
    per_query = per_doc.sum(dim=1) / n_docs.clamp(min=1)
    has_docs = (n_docs > 0).to(per_query.dtype)
    weights = has_docs if weights is None else has_docs * weights.to(per_query.dtype)
    return (weights * per_query).sum() / weights.sum().clamp(min=torch.finfo(per_query.dtype).tiny)


def _row_weights(mask, weights):
    """Weight of each document in :func:`_mean_per_query`, up to the normalisation: its query's over its length."""
    n_docs = mask.sum(dim=1, keepdim=True).clamp(min=1).to(torch.float64)
    query = torch.ones_like(n_docs) if weights is None else weights.to(torch.float64)[:, None]
    return torch.where(mask, query / n_docs, 0.0)


def linear_adversary_loss(observation, target, mask, weights=None, *, ridge=ADVERSARY_RIDGE, eps=1e-4,
                          reduce_sum=None):
    r"""Squared error of the best linear prediction of the standardised target from the observation logit.

    The adversary of gradient reversal, solved exactly on each batch rather than trained by
    gradient steps. With the documents weighted as in the loss (:math:`\rho_i`: the query's
    weight over its number of documents, normalised), :math:`\bar o, \bar t` the weighted
    means, :math:`v_o, v_t` the weighted variances, the standardised target
    :math:`\tilde t_i = (t_i - \bar t) / \sqrt{v_t + \epsilon}` and
    :math:`c = \mathrm{cov}_\rho(o, \tilde t)`, the adversary is the ridge regression

    .. math::
        \hat\beta = \arg\min_\beta \sum_i \rho_i \bigl(\beta (o_i - \bar o) - \tilde t_i\bigr)^2
            + \mu \beta^2 = \frac{c}{v_o + \mu},
        \qquad \ell_i = \bigl(\hat\beta (o_i - \bar o) - \tilde t_i\bigr)^2,

    and the function returns :math:`\sum_i \rho_i \ell_i = 1 - c^2 (v_o + 2\mu) / (v_o + \mu)^2`,
    in :math:`(0, 1]`: 1 when :math:`o` predicts nothing of :math:`t` linearly, less the more it does.
    :math:`\hat\beta`, the means and the variances are constants for autograd; since
    :math:`\hat\beta` is optimal, the gradient that reaches :math:`o` is that of the adversary's
    optimal objective :math:`F(o) = 1 - c^2 / (v_o + \mu)` (envelope theorem), and it never shifts
    all logits alike (its weighted sum is 0). Behind a gradient reversal layer of weight
    :math:`\lambda`, training therefore adds the penalty :math:`\lambda c^2 / (v_o + \mu) \le
    \lambda` on the observation tower: about :math:`\lambda \rho^2(o, t)` (scale-free) for a
    spread-out :math:`o`, :math:`\lambda c^2 / \mu` for a nearly flat one. It can neither blow
    :math:`o` up, as the reversed error of a learned, unbounded linear head does (that error
    grows with the scale of :math:`o`), nor pin it flat, as a scale-free penalty does.

    During data-parallel training the weighted sums behind these statistics are reduced over
    the processes, so that each process fits the adversary of the global batch.

    Parameters
    ----------
    observation : torch.Tensor of shape (batch, list)
        Observation logits :math:`o` (usually behind :func:`gradient_reversal`).
    target : torch.Tensor of shape (batch, list)
        What the adversary predicts: clicks, or the relevance tower's detached probability.
    mask : torch.Tensor of bool, shape (batch, list)
        True on real documents.
    weights : torch.Tensor of shape (batch,), default=None
        Non-negative weight of each query (None: all 1).
    ridge : float, default=ADVERSARY_RIDGE
        :math:`\mu`, in squared logit units: below a variance of about :math:`\mu`, the
        observation logits are treated as nearly flat.
    eps : float, default=1e-4
        :math:`\epsilon`, which keeps a near-constant target from being blown up to unit variance.
    reduce_sum : callable, default=None
        Sum of a tensor over the processes of data-parallel training, so that the line is
        fitted on the global batch; ``None`` fits it on this batch.

    Returns
    -------
    loss : torch.Tensor of shape ()
        :math:`\sum_i \rho_i \ell_i`, averaged over each query's documents, then over queries.

    See Also
    --------
    gradient_reversal : The layer that turns this adversary's gradient against the observation tower.
    TwoTowerClickLoss : Adds this loss to the click loss.

    Examples
    --------
    Observation logits that follow the target leave the adversary little error; flat or
    unrelated ones leave it all of it:

    >>> import torch
    >>> from sklearn_ltr.nn import linear_adversary_loss
    >>> mask = torch.ones(1, 6, dtype=torch.bool)
    >>> target = torch.tensor([[1.0, 1.0, 0.0, 0.0, 0.0, 0.0]])
    >>> informative = torch.tensor([[3.0, 2.5, 0.0, -0.5, -1.0, -1.0]])
    >>> round(linear_adversary_loss(informative, target, mask).item(), 3)
    0.121
    >>> linear_adversary_loss(torch.zeros(1, 6), target, mask).item()
    1.0

    Its gradient moves no logit when they carry nothing of the target, and sums to zero:

    >>> o = informative.clone().requires_grad_()
    >>> linear_adversary_loss(o, target, mask).backward()
    >>> bool(o.grad.sum().abs() < 1e-6)
    True
    """
    row = _row_weights(mask, weights)
    o, t = observation.to(torch.float64), target.to(torch.float64)
    with torch.no_grad():
        o_row, t_row = torch.where(mask, o, 0.0), torch.where(mask, t, 0.0)
        sums = torch.stack([row.sum(), (row * o_row).sum(), (row * o_row * o_row).sum(), (row * t_row).sum(),
                            (row * t_row * t_row).sum(), (row * o_row * t_row).sum()])
        if reduce_sum is not None:  # data-parallel training: the statistics of the global batch
            sums = reduce_sum(sums)
        total = sums[0].clamp(min=torch.finfo(torch.float64).tiny)
        mean_o, mean_t = sums[1] / total, sums[3] / total
        var_o = (sums[2] / total - mean_o**2).clamp(min=0.0)
        scale_t = torch.sqrt((sums[4] / total - mean_t**2).clamp(min=0.0) + eps)
        slope = (sums[5] / total - mean_o * mean_t) / scale_t / (var_o + ridge)
    per_doc = (slope * (o - mean_o) - (t - mean_t) / scale_t).square()
    return _mean_per_query(per_doc.to(observation.dtype), mask, weights)


class TwoTowerClickLoss(nn.Module):
    r"""Binary cross-entropy of the clicks under the two-tower model, plus the adversary's loss.

    .. math::
        \mathcal{L} = -\frac{1}{|Q|}\sum_q \frac{1}{n_q}\sum_i \log P(c_i \mid r_i, o_i)
            \;+\; \frac{1}{|Q|}\sum_q \frac{1}{n_q}\sum_i \ell_i

    with :func:`click_log_likelihood` and, when the output carries the adversary's input
    (gradient reversal, in training), :math:`\ell_i` the squared error of the best linear
    prediction of the standardised target :math:`t_i` from :math:`o_i` on the batch
    (:func:`linear_adversary_loss`). The target is the click (``reversal_target="clicks"``) or
    :math:`\sigma(r_i)` with the gradient stopped (``"relevance"``). The adversary minimises
    the second term (exactly, in closed form); the gradient reversal layer in
    :class:`TwoTowerScorer` makes the observation tower maximise it (scaled by :math:`\lambda`).
    A plain tensor ``output`` (no observation tower) is read as :math:`o = 0` (additive) and gives
    the sigmoid cross-entropy of :func:`sklearn_ltr.losses.sigmoid_cross_entropy`.

    Parameters
    ----------
    combination : {"additive", "multiplicative", "dla"}, default="additive"
        How the two towers make the click probability (see :func:`click_log_likelihood`), or
        ``"dla"``: the dual learning algorithm (:func:`dual_learning_loss`) in place of the likelihood.
    reversal_target : {"relevance", "clicks"}, default="relevance"
        Target :math:`t_i` of the adversary: the detached :math:`\sigma(r_i)` or the click.
    adversary_ridge : float, default=ADVERSARY_RIDGE
        Ridge :math:`\mu` of the adversary (see :func:`linear_adversary_loss`).
    max_weight : float, default=DLA_MAX_WEIGHT
        Clip of the dual learning algorithm's inverse weights.

    See Also
    --------
    TwoTowerScorer : The model whose output this loss reads.

    Examples
    --------
    >>> import torch
    >>> from sklearn_ltr.nn import TwoTowerClickLoss, TwoTowerScorer
    >>> from sklearn_ltr.losses import sigmoid_cross_entropy
    >>> _ = torch.manual_seed(0)
    >>> model = TwoTowerScorer(n_features=3, hidden_sizes=(8,), max_position=5)
    >>> X = torch.randn(2, 4, 3)
    >>> mask = torch.tensor([[True, True, True, True], [True, True, True, False]])
    >>> positions = torch.tensor([[1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 0.0]])
    >>> clicks = torch.tensor([[1.0, 0.0, 0.0, 1.0], [0.0, 1.0, 0.0, 0.0]])
    >>> loss = TwoTowerClickLoss(combination="multiplicative")(model(X, mask, positions=positions), clicks, mask)
    >>> loss.shape, bool(loss > 0)
    (torch.Size([]), True)
    >>> loss.backward()  # trains both towers
    >>> model.observation[0].weight.grad.shape
    torch.Size([1, 5])

    Relevance scores alone give the sigmoid cross-entropy:

    >>> scores = torch.randn(2, 4)
    >>> torch.allclose(TwoTowerClickLoss()(scores, clicks, mask), sigmoid_cross_entropy(scores, clicks, mask))
    True
    """

    #: Sum over the processes of data-parallel training (set by ``nn.set_reduce_sum``), or None.
    reduce_sum = None

    def __init__(self, combination="additive", reversal_target="relevance", adversary_ridge=ADVERSARY_RIDGE,
                 max_weight=DLA_MAX_WEIGHT):
        super().__init__()
        self.combination = combination
        self.max_weight = max_weight
        self.reversal_target = reversal_target
        self.adversary_ridge = adversary_ridge

    def forward(self, output, clicks, mask, weights=None):
        r"""Mean loss over the queries of a batch.

        Parameters
        ----------
        output : TwoTowerOutput or torch.Tensor of shape (batch, list)
            The model's training output, or relevance logits alone (read as :math:`o = 0`).
        clicks : torch.Tensor of shape (batch, list)
            1 where a document was clicked, else 0; values on padding are ignored.
        mask : torch.Tensor of bool, shape (batch, list)
            True on real documents.
        weights : torch.Tensor of shape (batch,), default=None
            Non-negative weight of each query in the mean over queries (None: all 1).

        Returns
        -------
        loss : torch.Tensor of shape ()
            :math:`\mathcal{L}`, averaged over the documents of each query, then over queries.
        """
        if isinstance(output, torch.Tensor):
            output = TwoTowerOutput(output, torch.zeros_like(output), None)
            combination = "additive"
        else:
            combination = self.combination
        relevance, observation = output.relevance.float(), output.observation.float()
        clicks = torch.where(mask, clicks.float(), 0.0)
        if combination == "dla":
            loss = dual_learning_loss(relevance, observation, clicks, mask, weights, max_weight=self.max_weight)
        else:
            loss = _mean_per_query(-click_log_likelihood(relevance, observation, clicks, combination), mask, weights)
        if output.adversary is not None:
            target = clicks if self.reversal_target == "clicks" else torch.sigmoid(relevance).detach()
            loss = loss + linear_adversary_loss(output.adversary.float(), target, mask, weights,
                                                ridge=self.adversary_ridge, reduce_sum=self.reduce_sum)
        return loss

"""Pointwise loss: sigmoid cross-entropy."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from sklearn_ltr.losses._common import (
    affine_relevance,
    check_inputs,
    check_positive,
    is_affine_click_weights,
    reduce_queries,
    relevant_weights,
    safe_divide,
)

__all__ = ["sigmoid_cross_entropy"]


def sigmoid_cross_entropy(scores, labels, mask=None, *, max_label=None, reduction="mean", weights=None,
                          click_weights=None):
    r"""Sigmoid (binary) cross-entropy of each document's score against its scaled label.

    Each score is the logit of the probability that its document is relevant:

    .. math::
        \ell_q = \frac{1}{n_q} \sum_{i=1}^{n_q}
            -\big[t_i \log \sigma(s_i) + (1 - t_i) \log(1 - \sigma(s_i))\big],
        \qquad
        t_i = \begin{cases}
            \mathbb{1}[y_i > 0] & \text{if max\_label is None} \\
            \min(\max(y_i / \text{max\_label}, 0), 1) & \text{otherwise}
        \end{cases}

    computed as ``-t * logsigmoid(s) - (1 - t) * logsigmoid(-s)``, which is finite for any
    finite score. By default the loss is the mean of :math:`\ell_q` over the queries of the batch.

    With ``click_weights`` :math:`w_i` (inverse propensities of clicks), the relevance term of
    each clicked document is weighted, :math:`-w_i t_i \log \sigma(s_i) - (1 - t_i) \log(1 -
    \sigma(s_i))`: the inverse-propensity-weighted pointwise loss (Wang et al., 2016; Joachims
    et al., 2017), whose relevance term is, in expectation over the examination, that of a user
    who examines every document. The non-click term stays unweighted (a non-click is no evidence
    either way where the document was not examined; weighting it would need the examination
    probability of the *non*-clicks, and makes the loss unbounded below).

    With affine ``click_weights`` (``[batch, list, 2]``: :math:`w_i = 1 / \alpha_i` and
    :math:`b_i = \beta_i / \alpha_i`, from ``fit(..., propensity=...)`` with per-row
    :math:`(\alpha_i, \beta_i)`), the target is replaced by the affine estimate of relevance
    :math:`\hat\gamma_i = t_i w_i - b_i = (c_i - \beta_i) / \alpha_i` in *both* terms
    (Vardasbi, Oosterhuis and de Rijke, 2020):

    .. math::
        \ell_q = \frac{1}{n_q} \sum_{i=1}^{n_q}
            -\big[\hat\gamma_i \log \sigma(s_i) + (1 - \hat\gamma_i) \log(1 - \sigma(s_i))\big].

    It is linear in the clicks, so under trust bias (:math:`P(c_i = 1) = \alpha_i \gamma_i +
    \beta_i`) its expectation over clicks is exactly the cross-entropy against the relevance
    probabilities :math:`\gamma_i`. The estimate is negative for non-clicks and above 1 for
    clicks, so a single sample of the loss is unbounded below in the scores: keep the scores
    bounded (weight decay, early stopping on the affine metric).

    Parameters
    ----------
    scores : torch.Tensor of shape (batch, list)
        Ranking scores (logits). Values in padded slots are ignored.
    labels : torch.Tensor of shape (batch, list)
        Relevance labels (graded or clicks).
    mask : torch.Tensor of bool, shape (batch, list), default=None
        True for real documents; None means every slot is real.
    max_label : float, default=None
        None binarises the labels (a document is relevant when its label is positive, the
        right reading of clicks). A number scales graded labels to the target
        ``y / max_label``, clipped to [0, 1] (e.g. ``max_label=4`` for 0-4 grades).
    reduction : {"mean", "sum", "none"}, default="mean"
        Mean or sum of the per-query values over the queries with a real document, or the
        ``[batch]`` tensor of them; see :mod:`sklearn_ltr.losses`.
    weights : torch.Tensor of shape (batch,), default=None
        Non-negative weight of each query in the reduction; None weighs every query 1.
    click_weights : torch.Tensor of shape (batch, list) or (batch, list, 2), default=None
        Non-negative weight of each relevant (clicked, label > 0) document's term, e.g. its
        clipped inverse examination propensity; None (or all ones) is the unweighted loss.
        With a last dimension of 2, the affine correction's :math:`(w_i, b_i)` (see above).

    Returns
    -------
    torch.Tensor
        Scalar: the mean over queries of the per-query mean over documents (a ``[batch]``
        tensor with ``reduction="none"``). A single-document list gives that document's
        cross-entropy.

    References
    ----------
    .. [1] Qin, Yan, Zhuang, Tay, Pasumarthi, Wang, Bendersky, Najork. "Are Neural Rankers
       still Outperformed by Gradient Boosted Decision Trees?" ICLR 2021 (the loss comparison
       in which it appears, from TF-Ranking's ``SigmoidCrossEntropyLoss``).
    .. [2] X. Wang, M. Bendersky, D. Metzler and M. Najork. "Learning to Rank with Selection Bias
       in Personal Search." SIGIR 2016.
    .. [3] T. Joachims, A. Swaminathan and T. Schnabel. "Unbiased Learning-to-Rank with Biased
       Feedback." WSDM 2017.
    .. [4] A. Vardasbi, H. Oosterhuis and M. de Rijke. "When Inverse Propensity Scoring does not
       Work: Affine Corrections for Unbiased Learning to Rank." CIKM 2020.

    Examples
    --------
    A relevant document scored 2 and an irrelevant one scored -1:
    :math:`(\log(1 + e^{-2}) + \log(1 + e^{-1})) / 2`.

    >>> import torch
    >>> from sklearn_ltr.losses import sigmoid_cross_entropy
    >>> scores = torch.tensor([[2.0, -1.0]])
    >>> round(sigmoid_cross_entropy(scores, torch.tensor([[1.0, 0.0]])).item(), 4)
    0.2201

    Graded labels 4 and 2 with ``max_label=4`` are the targets 1 and 1/2; a score of 0
    costs :math:`\log 2` whatever its target:

    >>> scores, labels = torch.tensor([[2.0, 0.0]]), torch.tensor([[4.0, 2.0]])
    >>> round(sigmoid_cross_entropy(scores, labels, max_label=4).item(), 4)  # (log(1 + e^-2) + log 2) / 2
    0.41

    Affine correction, :math:`\alpha = 0.5, \beta = 0.25`: a click is the target 1.5, a
    non-click -0.5; at score 0 each term costs :math:`\log 2` whatever its target:

    >>> affine = torch.tensor([[[2.0, 0.5], [2.0, 0.5]]])  # (1 / alpha, beta / alpha)
    >>> round(sigmoid_cross_entropy(torch.zeros(1, 2), torch.tensor([[1.0, 0.0]]), click_weights=affine).item(), 4)
    0.6931
    """
    scores, labels, mask = check_inputs(scores, labels, mask)
    if max_label is None:
        target = (labels > 0).to(scores.dtype)
    else:
        target = (labels / check_positive("max_label", max_label)).clamp(0.0, 1.0)
    if is_affine_click_weights(click_weights):
        # The affine estimate of relevance in both terms: linear in the clicks, hence unbiased.
        estimate = affine_relevance(click_weights, target, mask)
        positive, target = estimate, estimate
    else:
        relevant = relevant_weights(click_weights, labels, mask)
        positive = target if relevant is None else target * relevant
    per_doc = -(positive * F.logsigmoid(scores) + (1.0 - target) * F.logsigmoid(-scores))
    per_doc = torch.where(mask, per_doc, 0.0)
    n_docs = mask.sum(dim=1).to(scores.dtype)
    return reduce_queries(safe_divide(per_doc.sum(dim=1), n_docs), mask, reduction, weights)

"""Pairwise hinge loss (RankSVM), on the pairwise losses' broadcast ``[batch, L, L]`` kernel."""

from __future__ import annotations

import torch

from sklearn_ltr.losses._common import (
    check_inputs,
    check_positive,
    is_affine_click_weights,
    reduce_queries,
    relevant_weights,
    safe_divide,
)
from sklearn_ltr.losses._pairwise import _pairwise, affine_pair_loss

__all__ = ["hinge"]


def hinge(scores, labels, mask=None, *, margin=1.0, reduction="mean", weights=None, click_weights=None):
    r"""Pairwise hinge loss (RankSVM): a margin between every pair of documents with different labels.

    For each pair of one list in which document :math:`i` has the higher label:

    .. math::
        \ell_q = \frac{1}{|P_q|} \sum_{(i, j) \in P_q} \max\big(0,\ m - (s_i - s_j)\big),
        \qquad P_q = \{(i, j) : y_i > y_j\}

    with :math:`m` the ``margin``: the empirical risk of the ranking SVM (Herbrich et al.,
    2000; Joachims, 2002) on the pairs of the query, without its norm penalty (weight decay
    plays that part). Pairs of tied labels carry no preference and are left out; a query with
    no pair contributes 0. By default the loss is the mean of :math:`\ell_q` over queries. At
    the hinge's kink the gradient is 0 (as for :func:`torch.relu`).

    With ``click_weights`` :math:`w_i` (inverse propensities of clicks), each pair's term is
    weighted by the weight of its clicked document (the larger one if both are, as in
    :func:`ranknet`) and the mean stays over :math:`|P_q|`: the Propensity SVM-Rank loss of
    Joachims et al. (2017); all-ones weights give the unweighted loss.

    With affine ``click_weights`` (``[batch, list, 2]``: :math:`w_i = 1 / \alpha_i`,
    :math:`b_i = \beta_i / \alpha_i`, from per-row :math:`(\alpha_i, \beta_i)` of trust bias),
    the loss is Propensity SVM-Rank's form linear in relevance, each document above every other
    one, with the affine estimate :math:`\hat\gamma_i = (c_i - \beta_i) / \alpha_i` as its
    relevance (Vardasbi, Oosterhuis and de Rijke, 2020), over every pair of real documents:

    .. math::
        \ell_q = \frac{1}{|P_q|} \sum_{\{i, j\}} \Big[\hat\gamma_i \max\big(0,\ m - (s_i - s_j)\big)
            + \hat\gamma_j \max\big(0,\ m - (s_j - s_i)\big)\Big], \qquad |P_q| = \frac{n_q (n_q - 1)}{2},

    linear in the clicks, so that under trust bias its expectation over clicks is the same loss
    on the relevance probabilities.

    Parameters
    ----------
    scores, labels : torch.Tensor of shape (batch, list)
        Ranking scores and relevance labels; values in padded slots are ignored.
    mask : torch.Tensor of bool, shape (batch, list), default=None
        True for real documents; None means every slot is real.
    margin : float, default=1.0
        The margin :math:`m > 0` by which a better document should outscore a worse one.
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
        Scalar: mean over queries of the mean hinge over the pairs (a ``[batch]`` tensor with
        ``reduction="none"``). A single-document list gives 0.

    Raises
    ------
    ValueError
        For a ``margin`` that is not a positive number.

    References
    ----------
    .. [1] R. Herbrich, T. Graepel and K. Obermayer. "Large Margin Rank Boundaries for Ordinal
       Regression." In Advances in Large Margin Classifiers, MIT Press, 2000.
    .. [2] T. Joachims. "Optimizing Search Engines using Clickthrough Data." KDD 2002.
    .. [3] T. Joachims, A. Swaminathan and T. Schnabel. "Unbiased Learning-to-Rank with Biased
       Feedback." WSDM 2017.
    .. [4] A. Vardasbi, H. Oosterhuis and M. de Rijke. "When Inverse Propensity Scoring does not
       Work: Affine Corrections for Unbiased Learning to Rank." CIKM 2020.

    Examples
    --------
    Three documents; the pairs (0, 1) and (0, 2) meet the margin, (2, 1) misses it by
    :math:`1 - (-0.5 - 0) = 1.5`:

    >>> import torch
    >>> from sklearn_ltr.losses import hinge
    >>> scores, labels = torch.tensor([[2.0, 0.0, -0.5]]), torch.tensor([[2.0, 0.0, 1.0]])
    >>> hinge(scores, labels).item()  # (0 + 0 + 1.5) / 3
    0.5
    >>> round(hinge(scores, labels, margin=3.0).item(), 4)  # (1 + 0.5 + 3.5) / 3
    1.6667
    """
    margin = check_positive("margin", margin)
    scores, labels, mask = check_inputs(scores, labels, mask)
    if is_affine_click_weights(click_weights):
        # Every pair, each document's affine estimate on "above the other by the margin": linear in the clicks.
        return affine_pair_loss(scores, labels, mask, click_weights, lambda difference: torch.relu(margin - difference),
                                sigma=1.0, reduction=reduction, weights=weights)
    difference, target, pairs = _pairwise(scores, labels, mask, sigma=1.0, ties=False)
    with torch.no_grad():
        sign = 2.0 * target - 1.0  # +1 where i has the higher label, -1 where j has
        weight = pairs.to(scores.dtype)
        count = weight.sum(dim=(1, 2))
        relevant = relevant_weights(click_weights, labels, mask)
        if relevant is not None:
            weight = weight * torch.maximum(relevant[:, :, None], relevant[:, None, :])
    per_query = (weight * torch.relu(margin - sign * difference)).sum(dim=(1, 2))
    return reduce_queries(safe_divide(per_query, count), mask, reduction, weights)

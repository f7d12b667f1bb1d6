"""Listwise losses on the softmax of the scores: ListNet, ListMLE and DLCM's attention rank."""

from __future__ import annotations

import math

import torch

from sklearn_ltr.losses._common import (
    affine_relevance,
    check_inputs,
    is_affine_click_weights,
    reduce_queries,
    relevant_weights,
    safe_divide,
)

__all__ = ["attention_rank", "listmle", "softmax_cross_entropy"]

_TARGETS = ("linear", "softmax")


def _masked_log_softmax(scores, mask):
    """log-softmax over the real documents of each row; -inf on padding, 0 on empty rows."""
    has_docs = mask.any(dim=1, keepdim=True)
    # Padding gets -inf (zero probability); a row with no real document gets zeros instead so
    # that no row is all -inf (whose log-softmax, and gradient, would be NaN).
    filler = torch.where(has_docs, -math.inf, 0.0)
    return torch.log_softmax(torch.where(mask, scores, filler), dim=1)


def softmax_cross_entropy(scores, labels, mask=None, *, target="linear", reduction="mean", weights=None,
                          click_weights=None):
    r"""Softmax cross-entropy (ListNet's top-one loss).

    Cross-entropy between a target distribution over the documents of a list, built from the
    labels, and the softmax of the scores:

    .. math::
        \ell_q = -\sum_{i=1}^{n_q} t_i \log \frac{e^{s_i}}{\sum_{k=1}^{n_q} e^{s_k}},
        \qquad
        t_i = \frac{y_i}{\sum_k y_k} \;(\text{target="linear"})
        \quad\text{or}\quad
        t_i = \frac{e^{y_i}}{\sum_k e^{y_k}} \;(\text{target="softmax"})

    computed with ``log_softmax`` (padding at :math:`-\infty`), so it is finite for any
    finite scores, and the softmax target is computed the same way, so labels as large as
    you like stay finite. By default the loss is the mean of :math:`\ell_q` over queries.

    With ``click_weights`` :math:`w_i` (inverse propensities of clicks) and the linear target,
    :math:`t_i = w_i y_i / \sum_k y_k`: each clicked document's term is weighted while the
    normaliser stays the unweighted click count, so the loss is linear in the weights, the
    inverse-propensity-weighted softmax loss of Ai et al. (2018) and Joachims et al. (2017),
    and all-ones weights give the unweighted loss.

    With affine ``click_weights`` (``[batch, list, 2]``: :math:`w_i = 1 / \alpha_i`,
    :math:`b_i = \beta_i / \alpha_i`, from per-row :math:`(\alpha_i, \beta_i)` of trust bias),
    each document's target is its affine estimate of relevance :math:`\hat\gamma_i = c_i w_i -
    b_i = (c_i - \beta_i) / \alpha_i`, not normalised (a normaliser that depends on the clicks
    would make the estimate a biased ratio), as in Vardasbi, Oosterhuis and de Rijke (2020):

    .. math::
        \ell_q = -\sum_{i=1}^{n_q} \hat\gamma_i \log \frac{e^{s_i}}{\sum_{k=1}^{n_q} e^{s_k}} .

    Under trust bias (:math:`P(c_i = 1) = \alpha_i \gamma_i + \beta_i`) its expectation over
    clicks is exactly :math:`-\sum_i \gamma_i \log \mathrm{softmax}(s)_i`, the linear-target loss
    on the relevance probabilities times their sum; non-clicks (negative targets) push their
    documents down. ``target="linear"`` only.

    Parameters
    ----------
    scores, labels : torch.Tensor of shape (batch, list)
        Ranking scores and relevance labels (non-negative grades; negative ones count as 0
        with ``target="linear"``). Padded slots are ignored.
    mask : torch.Tensor of bool, shape (batch, list), default=None
        True for real documents; None means every slot is real.
    target : {"linear", "softmax"}, default="linear"
        ``"linear"`` normalises the labels, as TF-Ranking's softmax loss used by the DASALC
        paper does; a list with no relevant document then has no target and contributes 0.
        ``"softmax"`` is ListNet's top-one probability of the labels (Cao et al. 2007, with
        :math:`\phi = \exp`, as in allRank); an all-zero list then has a uniform target.
    reduction : {"mean", "sum", "none"}, default="mean"
        Mean or sum of the per-query values over the queries with a real document, or the
        ``[batch]`` tensor of them; see :mod:`sklearn_ltr.losses`.
    weights : torch.Tensor of shape (batch,), default=None
        Non-negative weight of each query in the reduction; None weighs every query 1.
    click_weights : torch.Tensor of shape (batch, list) or (batch, list, 2), default=None
        Non-negative weight of each relevant (clicked, label > 0) document, e.g. its clipped
        inverse examination propensity; with a last dimension of 2, the affine correction's
        :math:`(w_i, b_i)` (see above). ``target="linear"`` only.

    Returns
    -------
    torch.Tensor
        Scalar loss (a ``[batch]`` tensor with ``reduction="none"``). A single-document list
        gives 0.

    Notes
    -----
    TF-Ranking weights each list by its label sum in the batch mean; here every query has
    the same weight, like every other loss of this module, unless ``weights`` says otherwise
    (e.g. ``weights=labels.sum(dim=1)`` for non-negative labels).

    References
    ----------
    .. [1] Cao, Qin, Liu, Tsai, Li. "Learning to Rank: From Pairwise Approach to Listwise
       Approach." ICML 2007.
    .. [2] Bruch, Wang, Bendersky, Najork. "An Analysis of the Softmax Cross Entropy Loss for
       Learning-to-Rank with Binary Relevance." ICTIR 2019.
    .. [3] Vardasbi, Oosterhuis, de Rijke. "When Inverse Propensity Scoring does not Work: Affine
       Corrections for Unbiased Learning to Rank." CIKM 2020.

    Examples
    --------
    With one relevant document the linear target puts all its mass on it, and the loss is
    minus the log of its softmax probability, :math:`-\log(e / (e + 2))`:

    >>> import torch
    >>> from sklearn_ltr.losses import softmax_cross_entropy
    >>> scores, labels = torch.tensor([[1.0, 0.0, 0.0]]), torch.tensor([[1.0, 0.0, 0.0]])
    >>> round(softmax_cross_entropy(scores, labels).item(), 4)  # log(e + 2) - 1
    0.5514
    >>> round(softmax_cross_entropy(scores, labels, target="softmax").item(), 4)
    0.9753

    A query with no relevant document contributes 0 (with the linear target) and still
    counts in the batch mean:

    >>> labels = torch.tensor([[1.0, 0.0], [0.0, 0.0]])
    >>> round(softmax_cross_entropy(torch.zeros(2, 2), labels).item(), 4)  # (log 2 + 0) / 2
    0.3466

    Affine correction with :math:`\alpha = 0.5, \beta = 0.25` for both documents: targets 1.5
    (click) and -0.5, so at equal scores the loss is :math:`(1.5 - 0.5) \log 2`:

    >>> affine = torch.tensor([[[2.0, 0.5], [2.0, 0.5]]])
    >>> round(softmax_cross_entropy(torch.zeros(1, 2), torch.tensor([[1.0, 0.0]]), click_weights=affine).item(), 4)
    0.6931
    """
    if target not in _TARGETS:
        raise ValueError(f"target must be one of {list(_TARGETS)}; got {target!r}.")
    scores, labels, mask = check_inputs(scores, labels, mask)
    if is_affine_click_weights(click_weights):
        if target != "linear":
            raise ValueError("click_weights need target='linear': the softmax target gives every document mass, "
                             "clicked or not.")
        # The affine estimates of relevance, unnormalised: linear in the clicks, hence unbiased.
        estimate = affine_relevance(click_weights, (labels > 0).to(scores.dtype), mask)
        per_doc = estimate * torch.where(mask, _masked_log_softmax(scores, mask), 0.0)
        return reduce_queries(-per_doc.sum(dim=1), mask, reduction, weights)
    relevant = relevant_weights(click_weights, labels, mask)
    if relevant is not None and target != "linear":
        raise ValueError("click_weights need target='linear': the softmax target gives every document mass, "
                         "clicked or not.")
    if target == "linear":
        positive = labels.clamp(min=0.0)
        # Normalised by the unweighted label sum, so that the weights enter linearly (the IPS estimate).
        weighted = positive if relevant is None else positive * relevant
        probabilities = safe_divide(weighted, positive.sum(dim=1, keepdim=True))
    else:
        probabilities = torch.exp(_masked_log_softmax(labels, mask))
    log_p = _masked_log_softmax(scores, mask)
    per_doc = probabilities * torch.where(mask, log_p, 0.0)
    return reduce_queries(-per_doc.sum(dim=1), mask, reduction, weights)


def listmle(scores, labels, mask=None, *, shuffle_ties=True, generator=None, reduction="mean", weights=None):
    r"""ListMLE: negative log-likelihood of the label ordering under the Plackett-Luce model.

    With :math:`\pi` the documents sorted by decreasing label:

    .. math::
        \ell_q = -\sum_{r=1}^{n_q} \Big( s_{\pi(r)}
                 - \log \sum_{m=r}^{n_q} e^{s_{\pi(m)}} \Big)

    with the inner sums computed by ``logcumsumexp``, so the loss is finite for any finite
    scores. By default the loss is the mean of :math:`\ell_q` over queries.

    Parameters
    ----------
    scores, labels : torch.Tensor of shape (batch, list)
        Ranking scores and relevance labels; padded slots are ignored.
    mask : torch.Tensor of bool, shape (batch, list), default=None
        True for real documents; None means every slot is real.
    shuffle_ties : bool, default=True
        Order documents with equal labels uniformly at random, a fresh draw at each call (the
        label order is then a random one of the orders the labels allow, as in TF-Ranking and
        allRank). False keeps them in input order, which makes the loss deterministic but
        dependent on how the documents are listed.
    generator : torch.Generator, default=None
        Source of the random tie order, on the scores' device; None uses torch's global
        generator (so ``torch.manual_seed`` makes training reproducible).
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
    .. [1] Xia, Liu, Wang, Zhang, Li. "Listwise Approach to Learning to Rank: Theory and
       Algorithm." ICML 2008.

    Examples
    --------
    Two documents with equal scores: the Plackett-Luce probability of the label order is
    1/2, so the loss is :math:`\log 2`.

    >>> import torch
    >>> from sklearn_ltr.losses import listmle
    >>> round(listmle(torch.zeros(1, 2), torch.tensor([[1.0, 0.0]])).item(), 4)
    0.6931

    Three documents scored in label order, 2, 1, 0:
    :math:`\log(1 + e^{-1} + e^{-2}) + \log(1 + e^{-1})`.

    >>> scores, labels = torch.tensor([[2.0, 1.0, 0.0]]), torch.tensor([[2.0, 1.0, 0.0]])
    >>> round(listmle(scores, labels).item(), 4)
    0.7209
    """
    scores, labels, mask = check_inputs(scores, labels, mask)
    # Sort key: padded slots first (+inf), then labels decreasing. Putting padding *first*
    # means the reverse cumulative log-sum-exp of every real position covers real documents
    # only, so no -inf ever enters logcumsumexp (whose backward would turn it into NaN).
    key = torch.where(mask, labels, math.inf)
    if shuffle_ties:
        shuffle = torch.argsort(torch.rand(key.shape, generator=generator, device=key.device), dim=1)
        key = torch.gather(key, 1, shuffle)
        order = torch.gather(shuffle, 1, torch.sort(key, dim=1, descending=True, stable=True).indices)
    else:
        order = torch.sort(key, dim=1, descending=True, stable=True).indices
    ordered = torch.gather(scores, 1, order)
    ordered_mask = torch.gather(mask, 1, order)
    tail = torch.logcumsumexp(ordered.flip(1), dim=1).flip(1)
    per_position = torch.where(ordered_mask, tail - ordered, 0.0)
    return reduce_queries(per_position.sum(dim=1), mask, reduction, weights)


def _log_sum_exp_others(scores, mask):
    """``log(sum_{k != i} exp(s_k))`` over real documents, exact even when one score dominates.

    O(list) memory: with ``m`` the largest score, the sum for every document but the argmax
    is ``m + log(sum_k e^{s_k - m} - e^{s_i - m})`` (the argmax's own term is 1 there, so no
    cancellation), and for the argmax it is ``m2 + log(sum_{k != argmax} e^{s_k - m2})``
    with ``m2`` the second largest score. Rows with fewer than two documents give 0 (the
    caller masks them).
    """
    keyed = torch.where(mask, scores, -math.inf)
    top = torch.topk(keyed.detach(), k=min(2, scores.shape[1]), dim=1)
    enough = mask.sum(dim=1, keepdim=True) > 1
    first = top.values[:, :1]
    first = torch.where(torch.isfinite(first), first, 0.0)  # so that every exp below is <= 1
    second = torch.where(enough, top.values[:, -1:], first)
    is_top = torch.zeros_like(mask).scatter_(1, top.indices[:, :1], True) & enough
    # exp(-inf) = 0 on the excluded slots, so no inf (and no inf * 0 in the backward pass).
    relative = torch.exp(torch.where(mask, scores - first, -math.inf))
    others = relative.sum(dim=1, keepdim=True) - relative
    others_top = torch.exp(torch.where(mask & ~is_top, scores - second, -math.inf)).sum(dim=1, keepdim=True)
    rest = torch.where(is_top, others_top, others)
    value = torch.where(is_top, second, first) + torch.log(torch.where(enough & mask, rest, 1.0))
    return torch.where(enough & mask, value, 0.0)


def attention_rank(scores, labels, mask=None, *, complement=True, reduction="mean", weights=None):
    r"""DLCM's attention rank loss (AttRank).

    The labels define an attention distribution over the documents with the rectified
    exponential :math:`\psi(y) = e^y` for :math:`y > 0`, else 0; the scores define another by a
    softmax; the loss is their cross-entropy, taken document by document as Ai et al. (2018)
    define it:

    .. math::
        a^y_i = \frac{\psi(y_i)}{\sum_k \psi(y_k)}, \qquad
        a^s_i = \frac{e^{s_i}}{\sum_k e^{s_k}}, \qquad
        \ell_q = -\sum_{i=1}^{n_q} \Big( a^y_i \log a^s_i
                 + (1 - a^y_i) \log (1 - a^s_i) \Big)

    :math:`\log a^s_i` is a ``log_softmax`` and :math:`\log(1 - a^s_i)` is computed as
    :math:`\log \sum_{k \neq i} e^{s_k} - \log \sum_k e^{s_k}`, exactly, so the loss stays
    finite when one score dominates; :math:`\psi(y_i) / \sum_k \psi(y_k)` is a softmax of
    the labels, finite for any labels. By default the loss is the mean of :math:`\ell_q` over
    queries; a query with no relevant document has no attention target and contributes 0.

    Parameters
    ----------
    scores, labels : torch.Tensor of shape (batch, list)
        Ranking scores and relevance labels; padded slots are ignored.
    mask : torch.Tensor of bool, shape (batch, list), default=None
        True for real documents; None means every slot is real.
    complement : bool, default=True
        Include the :math:`(1 - a^y_i) \log(1 - a^s_i)` term of the paper's definition. False
        keeps only :math:`-\sum_i a^y_i \log a^s_i`, the softmax cross-entropy that the
        authors' released code trains with.
    reduction : {"mean", "sum", "none"}, default="mean"
        Mean or sum of the per-query values over the queries with a real document, or the
        ``[batch]`` tensor of them; see :mod:`sklearn_ltr.losses`.
    weights : torch.Tensor of shape (batch,), default=None
        Non-negative weight of each query in the reduction; None weighs every query 1.

    Returns
    -------
    torch.Tensor
        Scalar loss (a ``[batch]`` tensor with ``reduction="none"``). A single-document list
        gives 0 (its attention is 1 on both sides).

    References
    ----------
    .. [1] Ai, Bi, Guo, Croft. "Learning a Deep Listwise Context Model for Ranking
       Refinement." SIGIR 2018.

    Examples
    --------
    Two documents with equal scores, one relevant: the label attention is (1, 0) and the
    score attention (1/2, 1/2), so each document costs :math:`\log 2`.

    >>> import torch
    >>> from sklearn_ltr.losses import attention_rank
    >>> scores, labels = torch.zeros(1, 2), torch.tensor([[1.0, 0.0]])
    >>> round(attention_rank(scores, labels).item(), 4)  # 2 log 2
    1.3863
    >>> round(attention_rank(scores, labels, complement=False).item(), 4)  # log 2
    0.6931
    """
    scores, labels, mask = check_inputs(scores, labels, mask)
    relevant = mask & (labels > 0)
    # psi(y) / sum psi(y) = softmax of the labels over the relevant documents.
    top_label = torch.where(relevant, labels, -math.inf).amax(dim=1, keepdim=True)
    top_label = torch.where(torch.isfinite(top_label), top_label, 0.0)
    psi = torch.where(relevant, torch.exp(labels - top_label), 0.0)
    attention = safe_divide(psi, psi.sum(dim=1, keepdim=True))
    log_p = _masked_log_softmax(scores, mask)
    per_doc = attention * torch.where(mask, log_p, 0.0)
    if complement:
        log_total = torch.where(mask, scores - log_p, 0.0)  # log sum_k e^{s_k}, per row
        log_rest = _log_sum_exp_others(scores, mask) - log_total
        several = (mask.sum(dim=1, keepdim=True) > 1) & mask
        per_doc = per_doc + torch.where(several, (1.0 - attention) * torch.where(several, log_rest, 0.0), 0.0)
    has_target = relevant.any(dim=1)
    per_query = torch.where(has_target, -torch.where(mask, per_doc, 0.0).sum(dim=1), 0.0)
    return reduce_queries(per_query, mask, reduction, weights)

"""A loss from any ranking metric, its ranks made smooth (rax's ``approx_t12n``)."""

from __future__ import annotations

import functools

from sklearn_ltr.losses._approx import approx_ranks
from sklearn_ltr.losses._common import check_inputs, check_positive, reduce_queries

__all__ = ["approx_t12n"]


def _approx_metric_loss(scores, labels, mask=None, *, metric, temperature, reduction="mean", weights=None):
    scores, labels, mask = check_inputs(scores, labels, mask)
    values = metric(approx_ranks(scores, mask, temperature), labels, mask)
    if getattr(values, "shape", None) != scores.shape[:1]:
        raise ValueError(f"metric must return one value per query, shape {tuple(scores.shape[:1])}; got "
                         f"{getattr(values, 'shape', type(values).__name__)}. Sum over dim=1 of the list.")
    return reduce_queries(-values, mask, reduction, weights)


def approx_t12n(metric, *, temperature=0.1):
    r"""Build the loss :math:`-\mathrm{metric}`, the metric computed on smooth ranks (Qin et al., 2010).

    Each rank is replaced by :math:`\hat\pi_i = 1 + \sum_{j \neq i} \operatorname{sigmoid}((s_j
    - s_i) / T)` (the ranks of :func:`approx_ndcg`), so any metric written as a differentiable
    function of the ranks becomes a loss: :math:`\ell_q = -M(\hat\pi, y)`. As :math:`T \to 0`
    the ranks tend to the true ones (distinct scores) and the loss to :math:`-M`. In the manner
    of rax's ``approx_t12n`` transformation.

    Parameters
    ----------
    metric : callable
        ``metric(ranks, labels, mask) -> [batch]`` tensor: the metric of each query from 1-based
        (fractional) ranks, labels and the mask (padded slots of ``ranks`` hold finite values
        to be ignored). A module-level function keeps the loss picklable.
    temperature : float, default=0.1
        Temperature :math:`T` of the sigmoids.

    Returns
    -------
    loss : functools.partial
        ``loss(scores, labels, mask=None, *, reduction="mean", weights=None)``, a loss of
        :mod:`sklearn_ltr.losses`. Not registered: ``register_loss(name, loss,
        pairwise_tensors=5)`` declares its memory (that of :func:`approx_ndcg`).

    References
    ----------
    .. [1] T. Qin, T.-Y. Liu and H. Li. "A General Approximation Framework for Direct
       Optimization of Information Retrieval Measures." Information Retrieval 13(4), 2010.

    Examples
    --------
    Reciprocal rank of binary labels, :math:`\sum_i y_i / \pi_i` for one relevant document:

    >>> import torch
    >>> from sklearn_ltr.losses import approx_t12n
    >>> def reciprocal_rank(ranks, labels, mask):
    ...     return torch.where(mask & (labels > 0), 1.0 / ranks, 0.0).sum(dim=1)
    >>> loss = approx_t12n(reciprocal_rank, temperature=0.01)
    >>> scores, labels = torch.tensor([[2.0, 1.0, 0.0]]), torch.tensor([[0.0, 1.0, 0.0]])
    >>> round(loss(scores, labels).item(), 4)  # -1/2: the relevant document is second
    -0.5
    """
    if not callable(metric):
        raise ValueError(f"metric must be a callable metric(ranks, labels, mask) -> [batch]; got {metric!r}.")
    temperature = check_positive("temperature", temperature)
    return functools.partial(_approx_metric_loss, metric=metric, temperature=temperature)

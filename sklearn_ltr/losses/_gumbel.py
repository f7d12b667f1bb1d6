"""The stochastic treatment of any ranking loss: its mean over Gumbel-perturbed scores."""

from __future__ import annotations

import torch

from sklearn_ltr._params import check_int
from sklearn_ltr.losses._common import check_inputs, gumbel_noise, reduce_queries

__all__ = ["gumbel_loss"]


def gumbel_loss(
    base_loss,
    scores,
    labels,
    mask=None,
    *,
    n_samples=1,
    generator=None,
    reduction="mean",
    weights=None,
    **options,
):
    r"""Stochastic treatment of a ranking loss: its mean over Gumbel-perturbed scores.

    .. math::
        \ell_q = \frac{1}{S} \sum_{m=1}^{S} \ell^{\mathrm{base}}_q\big(s + g^{(m)}\big),
        \qquad g^{(m)}_i \sim \mathrm{Gumbel}(0, 1) \text{ i.i.d.}

    Sorting :math:`s + g` draws a ranking from the Plackett-Luce distribution with logits
    :math:`s` (the Gumbel-max trick), so :math:`\ell_q` is a stochastic estimate of the base
    loss's expectation over that distribution, which smooths a loss of a deterministic ranking
    (Bruch et al., 2020). The :math:`S` perturbed copies of the batch go through ``base_loss``
    as one batch of ``S * batch`` rows with ``reduction="none"``; the wrapper averages each
    query's values over the copies and then applies ``reduction`` and ``weights`` itself.
    Each call draws fresh noise; the value is random.

    Bind the base loss with :func:`functools.partial` to make a loss of the usual signature,
    picklable when the base loss is (as every loss of this module is):
    ``functools.partial(gumbel_loss, ranknet, n_samples=4)``.
    :func:`gumbel_approx_ndcg` and :func:`gumbel_neuralsort_ndcg` are defined this way.

    Parameters
    ----------
    base_loss : callable
        The loss to perturb: a loss of this module, or any function
        ``base_loss(scores, labels, mask, reduction="none", **options)`` that returns one
        value per row.
    scores, labels : torch.Tensor of shape (batch, list)
        Ranking scores and relevance labels; padded slots are ignored.
    mask : torch.Tensor of bool, shape (batch, list), default=None
        True for real documents; None means every slot is real.
    n_samples : int, default=1
        Number :math:`S` of noise draws averaged. Memory grows linearly with it.
    generator : torch.Generator, default=None
        Source of the noise, on the scores' device; None uses torch's global generator. The
        noise is ``-log(-log(U))`` with ``U = torch.rand((n_samples, batch, list))``. It is not
        passed on: a base loss with randomness of its own (ListMLE's tie order) draws it from
        torch's global generator.
    reduction : {"mean", "sum", "none"}, default="mean"
        Mean or sum of the per-query values over the queries with a real document, or the
        ``[batch]`` tensor of them; see :mod:`sklearn_ltr.losses`.
    weights : torch.Tensor of shape (batch,), default=None
        Non-negative weight of each query in the reduction; None weighs every query 1.
    **options
        Keyword options of ``base_loss`` (``temperature``, ``k``, ...).

    Returns
    -------
    torch.Tensor
        Scalar loss (a ``[batch]`` tensor with ``reduction="none"``).

    Raises
    ------
    TypeError
        If ``base_loss`` is not callable.
    ValueError
        If ``base_loss`` does not return one value per row with ``reduction="none"``, or for
        a bad ``n_samples``, ``reduction`` or ``weights``.

    See Also
    --------
    gumbel_approx_ndcg : ApproxNDCG through this wrapper.
    gumbel_neuralsort_ndcg : NeuralNDCG through this wrapper.

    References
    ----------
    .. [1] Bruch, Han, Bendersky, Najork. "A Stochastic Treatment of Learning to Rank Scoring
       Functions." WSDM 2020.

    Examples
    --------
    The Gumbel losses of the registry are this wrapper around their base loss:

    >>> import functools
    >>> import torch
    >>> from sklearn_ltr.losses import approx_ndcg, gumbel_approx_ndcg, gumbel_loss, ranknet
    >>> scores, labels = torch.tensor([[1.0, 0.0, -1.0]]), torch.tensor([[2.0, 1.0, 0.0]])
    >>> value = gumbel_loss(approx_ndcg, scores, labels, n_samples=8, generator=torch.Generator().manual_seed(0))
    >>> same = gumbel_approx_ndcg(scores, labels, n_samples=8, generator=torch.Generator().manual_seed(0))
    >>> bool(value == same)
    True

    Scores much further apart than the noise keep their order, and the loss is the base
    loss's:

    >>> far = torch.tensor([[100.0, 0.0, -100.0]])
    >>> round(gumbel_loss(approx_ndcg, far, labels, temperature=1.0).item(), 4)
    0.0

    Any loss can be perturbed; bound with :func:`functools.partial`, it is a loss of its own,
    for a ranker's ``loss`` or :func:`get_loss`:

    >>> stochastic_ranknet = functools.partial(gumbel_loss, ranknet, n_samples=4)
    >>> stochastic_ranknet(scores, labels, reduction="none").shape
    torch.Size([1])
    """
    if not callable(base_loss):
        raise TypeError(f"base_loss must be a callable loss; got {type(base_loss).__name__}.")
    n_samples = check_int(n_samples, "n_samples")
    scores, labels, mask = check_inputs(scores, labels, mask)
    batch, length = scores.shape
    noise = gumbel_noise(scores, generator, n_samples)
    noisy = torch.where(mask, scores + noise, 0.0).reshape(n_samples * batch, length)
    per_sample = base_loss(noisy, labels.repeat(n_samples, 1), mask.repeat(n_samples, 1), reduction="none", **options)
    if not isinstance(per_sample, torch.Tensor) or per_sample.shape != (n_samples * batch,):
        shape = tuple(per_sample.shape) if isinstance(per_sample, torch.Tensor) else type(per_sample).__name__
        raise ValueError(
            f"base_loss must return one value per row with reduction='none', shape ({n_samples * batch},); got {shape}."
        )
    return reduce_queries(per_sample.reshape(n_samples, batch).mean(dim=0), mask, reduction, weights)

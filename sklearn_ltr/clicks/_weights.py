r"""Inverse-propensity weights of clicks, clipped: the one place that turns propensities into weights.

Training (``fit(..., propensity=...)``) and counterfactual evaluation
(:func:`sklearn_ltr.metrics.ips_dcg_score` and its relatives) read their weights from here, so
that both clip alike.
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["PROPENSITY_CLIP", "check_propensity", "inverse_propensity_weights"]

#: Default lower bound :math:`\tau` of the propensities before they are inverted: weights are at most
#: :math:`1 / \tau = 20`. Clipping trades a little bias (only where the true propensity is below
#: :math:`\tau`: beyond position 20 under a :math:`1/p` curve) for a bounded variance (Strehl et al.,
#: 2010; Joachims et al., 2017).
PROPENSITY_CLIP = 0.05


def check_propensity(propensity, n_samples=None, *, name="propensity"):
    """Validated per-row examination propensities: a float64 array of finite values in (0, 1].

    Parameters
    ----------
    propensity : array-like of shape (n_samples,)
        Probability that each row's document was examined where it was shown (not its inverse).
    n_samples : int, default=None
        Rows the propensities must match (the rows of ``X``); None skips the check.
    name : str, default="propensity"
        The argument's name in error messages.

    Returns
    -------
    propensity : ndarray of float64 of shape (n_samples,)

    Raises
    ------
    ValueError
        Not one number per row, NaN or infinite values, values outside (0, 1] (a value above 1 is most
        likely an inverse-propensity weight given in place of the propensity).

    Examples
    --------
    >>> from sklearn_ltr.clicks import check_propensity
    >>> check_propensity([1, 0.5, 0.25])
    array([1.  , 0.5 , 0.25])
    >>> check_propensity([1, 2, 4])
    Traceback (most recent call last):
    ...
    ValueError: propensity must hold examination probabilities in (0, 1]; got 2. Values above 1 look like ...
    """
    if hasattr(propensity, "to_numpy"):
        propensity = propensity.to_numpy()
    values = np.asarray(propensity)
    if values.dtype.kind not in "biuf" or values.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array of numbers, one examination propensity per row; got dtype "
                         f"{values.dtype} and shape {values.shape}.")
    if n_samples is not None and values.shape[0] != n_samples:
        raise ValueError(f"{name} has {values.shape[0]} values but X has {n_samples} rows; pass one examination "
                         f"propensity per row.")
    values = values.astype(np.float64)
    if not np.isfinite(values).all():
        raise ValueError(f"{name} contains NaN or infinite values; every row needs a propensity in (0, 1].")
    if values.size and (values.min() <= 0 or values.max() > 1):
        bad = values[(values <= 0) | (values > 1)][0]
        hint = (" Values above 1 look like inverse-propensity weights: pass the propensities themselves "
                "(1 / weight)." if bad > 1 else "")
        raise ValueError(f"{name} must hold examination probabilities in (0, 1]; got {bad:g}.{hint}")
    return values


def inverse_propensity_weights(propensity, *, clip=PROPENSITY_CLIP, n_samples=None, name="propensity"):
    r"""Clipped inverse-propensity weights :math:`w_i = 1 / \max(p_i, \tau)`.

    A click at a position examined with probability :math:`p_i` stands for :math:`1 / p_i`
    clicks of a user who examines everything, so that, for a loss or a metric that is linear
    in the relevance of the clicked documents, the weighted sum over clicks is an unbiased
    estimate of its value on the true relevance (Joachims et al., 2017). Raising the
    propensities to at least :math:`\tau` bounds the weights by :math:`1 / \tau` (Strehl et
    al., 2010): unbiased for every position examined with probability at least :math:`\tau`,
    with a variance that no rarely examined click can blow up.

    Parameters
    ----------
    propensity : array-like of shape (n_samples,)
        Examination propensity :math:`p_i \in (0, 1]` of each row (see :func:`check_propensity`).
    clip : float, default=PROPENSITY_CLIP
        :math:`\tau \in (0, 1]`; ``clip=1`` gives every row weight 1 (no debiasing).
    n_samples : int, default=None
        Rows the propensities must match; None skips the check.
    name : str, default="propensity"
        The argument's name in error messages.

    Returns
    -------
    weights : ndarray of float64 of shape (n_samples,)
        :math:`1 / \max(p_i, \tau)`, each in :math:`[1, 1 / \tau]`.

    References
    ----------
    T. Joachims, A. Swaminathan and T. Schnabel. "Unbiased Learning-to-Rank with Biased
    Feedback." WSDM 2017.

    A. Strehl, J. Langford, L. Li and S. Kakade. "Learning from Logged Implicit Exploration
    Data." NeurIPS 2010.

    Examples
    --------
    >>> from sklearn_ltr.clicks import inverse_propensity_weights
    >>> inverse_propensity_weights([1.0, 0.5, 0.1, 0.01])
    array([ 1.,  2., 10., 20.])
    >>> inverse_propensity_weights([1.0, 0.5, 0.1, 0.01], clip=0.01)
    array([  1.,   2.,  10., 100.])
    """
    if isinstance(clip, bool) or not isinstance(clip, numbers.Real) or not 0 < clip <= 1:
        raise ValueError(f"clip must be a number in (0, 1] (the smallest propensity kept); got {clip!r}.")
    values = check_propensity(propensity, n_samples, name=name)
    return 1.0 / np.maximum(values, float(clip))

r"""Inverse-propensity weights of clicks, clipped: the one place that turns propensities into weights.

Training (``fit(..., propensity=...)``) and counterfactual evaluation
(:func:`sklearn_ltr.metrics.ips_dcg_score` and its relatives) read their weights from here, so
that both clip alike.

``propensity`` is either one examination probability per row (position bias, inverse
propensity scoring) or, for trust bias, an ``(n_samples, 2)`` array of each row's affine click
parameters :math:`(\alpha_i, \beta_i)`, :math:`P(c_i = 1) = \alpha_i P(R_i = 1) + \beta_i`
(:func:`affine_click_weights`; Vardasbi et al., 2020).
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = [
    "PROPENSITY_CLIP",
    "affine_click_weights",
    "check_affine",
    "check_propensity",
    "click_weights",
    "inverse_propensity_weights",
    "is_affine",
]

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


def is_affine(propensity):
    """Whether ``propensity`` holds affine click parameters, one ``(alpha, beta)`` pair per row (a 2-D array)."""
    return np.ndim(propensity) == 2


def check_affine(propensity, n_samples=None, *, name="propensity"):
    r"""Validated per-row affine click parameters :math:`(\alpha_i, \beta_i)` of the trust-bias model.

    Under trust bias (Agarwal et al., 2019) a document shown at position :math:`k` is clicked
    with probability :math:`\theta_k(\epsilon^+_k \gamma + \epsilon^-_k (1 - \gamma)) = \alpha_k
    \gamma + \beta_k`, with :math:`\gamma = P(R = 1)`, :math:`\alpha_k = \theta_k(\epsilon^+_k -
    \epsilon^-_k)` and :math:`\beta_k = \theta_k \epsilon^-_k`.

    Parameters
    ----------
    propensity : array-like of shape (n_samples, 2)
        Column 0: :math:`\alpha_i \in (0, 1]`; column 1: :math:`\beta_i \in [0, 1)`, with
        :math:`\alpha_i + \beta_i \le 1` (the click probability of a relevant document).
    n_samples : int, default=None
        Rows the parameters must match; None skips the check.
    name : str, default="propensity"
        The argument's name in error messages.

    Returns
    -------
    affine : ndarray of float64 of shape (n_samples, 2)

    Raises
    ------
    ValueError
        Not two columns, not one row per sample, NaN or infinite values, or values outside the
        ranges above (the message names the argument and the fix).

    Examples
    --------
    >>> from sklearn_ltr.clicks import check_affine
    >>> check_affine([[0.8, 0.1], [0.3, 0.05]])
    array([[0.8 , 0.1 ],
           [0.3 , 0.05]])
    >>> check_affine([[0.8, 0.3]])
    Traceback (most recent call last):
    ...
    ValueError: propensity holds (alpha, beta) with alpha + beta > 1 in row 0 (0.8 + 0.3): ...
    """
    if hasattr(propensity, "to_numpy"):
        propensity = propensity.to_numpy()
    values = np.asarray(propensity)
    if values.dtype.kind not in "biuf" or values.ndim != 2 or values.shape[1] != 2:
        raise ValueError(f"{name} must be a 1-D array of examination propensities or an (n_samples, 2) array of "
                         f"affine click parameters (alpha, beta) per row; got dtype {values.dtype} and shape "
                         f"{values.shape}.")
    if n_samples is not None and values.shape[0] != n_samples:
        raise ValueError(f"{name} has {values.shape[0]} rows but X has {n_samples} rows; pass one (alpha, beta) "
                         f"pair per row (e.g. estimate.affine_of(positions)).")
    values = values.astype(np.float64)
    if not np.isfinite(values).all():
        raise ValueError(f"{name} contains NaN or infinite values; every row needs finite (alpha, beta).")
    alpha, beta = values[:, 0], values[:, 1]
    bad = np.flatnonzero((alpha <= 0) | (alpha > 1))
    if bad.size:
        raise ValueError(f"{name}[:, 0] (alpha, the click probability a relevant document gains over a "
                         f"non-relevant one) must be in (0, 1]; got {alpha[bad[0]]:g} in row {bad[0]}. A "
                         f"non-positive alpha makes clicks carry no evidence of relevance there.")
    bad = np.flatnonzero((beta < 0) | (beta >= 1))
    if bad.size:
        raise ValueError(f"{name}[:, 1] (beta, the click probability of a non-relevant document) must be in "
                         f"[0, 1); got {beta[bad[0]]:g} in row {bad[0]}.")
    bad = np.flatnonzero(alpha + beta > 1 + 1e-9)
    if bad.size:
        i = bad[0]
        raise ValueError(f"{name} holds (alpha, beta) with alpha + beta > 1 in row {i} ({alpha[i]:g} + "
                         f"{beta[i]:g}): alpha + beta is the click probability of a relevant document. Pass "
                         f"alpha = theta * (eps_plus - eps_minus) and beta = theta * eps_minus.")
    return values


def affine_click_weights(propensity, *, clip=PROPENSITY_CLIP, n_samples=None, name="propensity"):
    r"""Per-row weight and offset :math:`(w_i, b_i)` of the affine correction of trust bias.

    The affine estimate of a row's relevance from its click :math:`c_i` (Vardasbi, Oosterhuis
    and de Rijke, 2020) is

    .. math::
        \hat\gamma_i = \frac{c_i - \beta_i}{\max(\alpha_i, \tau)} = c_i w_i - b_i,
        \qquad w_i = \frac{1}{\max(\alpha_i, \tau)}, \quad b_i = \beta_i w_i .

    When :math:`P(c_i = 1) = \alpha_i \gamma_i + \beta_i` (trust bias: Agarwal, Wang, Li,
    Bendersky and Najork, 2019) and :math:`\alpha_i \ge \tau`, :math:`E[\hat\gamma_i] = \gamma_i`:
    the estimate is unbiased, where the inverse-propensity estimate :math:`c_i / p_i` is not,
    whatever :math:`p_i` (it cannot remove the :math:`\beta_i` clicks of non-relevant documents).
    A non-click gives the negative estimate :math:`-b_i`. The clip :math:`\tau` bounds the weights
    by :math:`1 / \tau`, as for :func:`inverse_propensity_weights`; with :math:`\beta_i = 0` (no
    trust bias, :math:`\alpha_i` the examination propensity) the weight is the clipped
    inverse-propensity weight.

    Parameters
    ----------
    propensity : array-like of shape (n_samples, 2)
        Per-row :math:`(\alpha_i, \beta_i)` (see :func:`check_affine`), e.g.
        ``estimate.affine_of(positions)`` of :func:`estimate_trust_bias_em`.
    clip : float, default=PROPENSITY_CLIP
        :math:`\tau \in (0, 1]`, the smallest :math:`\alpha` kept.
    n_samples : int, default=None
        Rows the parameters must match; None skips the check.
    name : str, default="propensity"
        The argument's name in error messages.

    Returns
    -------
    weights : ndarray of float64 of shape (n_samples, 2)
        Column 0: :math:`w_i`; column 1: :math:`b_i`.

    References
    ----------
    A. Agarwal, X. Wang, C. Li, M. Bendersky and M. Najork. "Addressing Trust Bias for
    Unbiased Learning-to-Rank." WWW 2019.

    A. Vardasbi, H. Oosterhuis and M. de Rijke. "When Inverse Propensity Scoring does not Work:
    Affine Corrections for Unbiased Learning to Rank." CIKM 2020.

    Examples
    --------
    :math:`\alpha = 0.5, \beta = 0.25`: a click estimates :math:`(1 - 0.25) / 0.5 = 1.5`, a
    non-click :math:`-0.5`.

    >>> from sklearn_ltr.clicks import affine_click_weights
    >>> affine_click_weights([[1.0, 0.0], [0.5, 0.25]])
    array([[1. , 0. ],
           [2. , 0.5]])
    """
    if isinstance(clip, bool) or not isinstance(clip, numbers.Real) or not 0 < clip <= 1:
        raise ValueError(f"clip must be a number in (0, 1] (the smallest propensity kept); got {clip!r}.")
    values = check_affine(propensity, n_samples, name=name)
    weights = 1.0 / np.maximum(values[:, 0], float(clip))
    return np.column_stack([weights, values[:, 1] * weights])


def click_weights(propensity, *, clip=PROPENSITY_CLIP, n_samples=None, name="propensity"):
    r"""The weights of ``propensity`` whatever its form: 1-D inverse-propensity weights, or 2-D affine ``(w, b)``.

    Dispatches to :func:`inverse_propensity_weights` (one propensity per row) or to
    :func:`affine_click_weights` (an ``(n_samples, 2)`` array of ``(alpha, beta)``).

    Parameters
    ----------
    propensity : array-like of shape (n_samples,) or (n_samples, 2)
        Examination propensities, or per-row affine click parameters ``(alpha, beta)``.
    clip : float, default=PROPENSITY_CLIP
        Smallest propensity (or ``alpha``) kept.
    n_samples : int, default=None
        Rows the values must match; None skips the check.
    name : str, default="propensity"
        The argument's name in error messages.

    Returns
    -------
    weights : ndarray of float64 of shape (n_samples,) or (n_samples, 2)
        :math:`1 / \max(p_i, \tau)`, or the pairs :math:`(w_i, b_i)`.

    Examples
    --------
    >>> from sklearn_ltr.clicks import click_weights
    >>> click_weights([1.0, 0.5]).tolist(), click_weights([[1.0, 0.0], [0.5, 0.25]]).tolist()
    ([1.0, 2.0], [[1.0, 0.0], [2.0, 0.5]])
    """
    if is_affine(propensity):
        return affine_click_weights(propensity, clip=clip, n_samples=n_samples, name=name)
    return inverse_propensity_weights(propensity, clip=clip, n_samples=n_samples, name=name)

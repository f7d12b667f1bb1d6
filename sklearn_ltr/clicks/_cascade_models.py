"""The cascade family of click models: the user scans a page from the top and may stop.

:class:`CascadeModel`, :class:`DependentClickModel` and :class:`DynamicBayesianNetwork` share
one structure: position 1 is examined; an examined document is clicked with its attractiveness
:math:`a_k`; the user goes on to position :math:`k + 1` with probability :math:`q^1_k` after a
click and :math:`q^0_k` after a skip, and never comes back once stopped. Their exact click
probabilities follow from one forward recursion over positions, vectorised over pages.
:class:`UserBrowsingModel` examines every position with a probability that depends on the
position and on the distance to the last click.

Reference: A. Chuklin, I. Markov and M. de Rijke, "Click Models for Web Search", 2015, chapter 3.
"""

from __future__ import annotations

import numbers

import numpy as np

from sklearn_ltr.clicks._click_models import ClickModel, check_unit

__all__ = ["CascadeModel", "DependentClickModel", "DynamicBayesianNetwork", "UserBrowsingModel"]


def _per_position(value, name, n_positions, fix):
    """A scalar probability, or an array of one probability per position 1, 2, ..., as a float array."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return np.full(n_positions, check_unit(value, name))
    values = np.asarray(value, dtype=np.float64) if not isinstance(value, str) else np.asarray([np.nan])
    if values.ndim != 1 or values.size == 0 or not np.isfinite(values).all() or values.min() < 0 \
            or values.max() > 1:
        raise ValueError(f"{name} must be a probability in [0, 1] or a 1-D array of one per position; "
                         f"got {value!r}.")
    if values.shape[0] < n_positions:
        raise ValueError(f"{name} gives {values.shape[0]} positions but a page shows {n_positions}; {fix}.")
    return values[:n_positions]


class _CascadeFamily(ClickModel):
    """Click models with an examination chain: stop for good, or go on to the next position."""

    _sequential = True

    def _attraction(self, r):
        return self.epsilon + (1 - self.epsilon) * r

    def _continuation(self, r, layout):
        """``(q_click, q_skip)``: probabilities of going on after a click / a skip, ``[n_pages, n_positions]``."""
        raise NotImplementedError

    def _matrices(self, r, layout):
        a = layout.pad(self._attraction(r))
        q_click, q_skip = self._continuation(r, layout)
        return a, q_click, q_skip

    def _marginal(self, r, positions, layout):
        a, q_click, q_skip = self._matrices(r, layout)
        examined = np.ones(layout.n_pages)  # P(E_k = 1)
        out = np.empty_like(a)
        for k in range(layout.n_positions):
            out[:, k] = examined * a[:, k]
            examined = examined * (a[:, k] * q_click[:, k] + (1 - a[:, k]) * q_skip[:, k])
        return layout.unpad(out)

    def _conditional(self, r, positions, layout, clicks):
        a, q_click, q_skip = self._matrices(r, layout)
        c = layout.pad(clicks, 0)
        examined = np.ones(layout.n_pages)  # P(E_k = 1 | clicks above k)
        out = np.empty_like(a)
        for k in range(layout.n_positions):
            p = examined * a[:, k]
            out[:, k] = p
            with np.errstate(divide="ignore", invalid="ignore"):  # 1 - p = 0: a skip the model rules out
                skipped = np.where(p < 1, examined * (1 - a[:, k]) / (1 - p), 0.0)
            examined = np.where(c[:, k] == 1, q_click[:, k], skipped * q_skip[:, k])
        return layout.unpad(out)

    def _sample(self, r, positions, layout, rng):
        a, q_click, q_skip = self._matrices(r, layout)
        examined = np.ones(layout.n_pages, dtype=bool)
        clicks = np.zeros(a.shape, dtype=np.int64)
        for k in range(layout.n_positions):
            clicked = examined & (rng.random(layout.n_pages) < a[:, k])
            clicks[:, k] = clicked
            go_on = rng.random(layout.n_pages) < np.where(clicked, q_click[:, k], q_skip[:, k])
            examined = examined & go_on
        return layout.unpad(clicks)


class CascadeModel(_CascadeFamily):
    """Cascade model (CM): scan from the top, click with the attractiveness, stop at the first click.

    Position 1 is examined; an examined document is clicked with probability
    :math:`a(y) = \\epsilon + (1 - \\epsilon) r(y)`, :math:`r(y) = (2^y - 1) / (2^{y_{max}} - 1)`;
    after a click the user stops, after a skip the next position is examined. Hence

    .. math:: P(C_k = 1) = a_k \\prod_{j < k} (1 - a_j), \\qquad
              P(C_k = 1 \\mid C_{<k}) = a_k \\text{ if no click above } k, \\text{ else } 0.

    At most one click per page.

    Parameters
    ----------
    epsilon : float in [0, 1], default=0.1
        Click noise: the attractiveness of an irrelevant document.

    See Also
    --------
    DependentClickModel : goes on after a click with probability :math:`\\lambda_k`.
    DynamicBayesianNetwork : satisfaction after a click and perseverance :math:`\\gamma`.

    References
    ----------
    N. Craswell, O. Zoeter, M. Taylor and B. Ramsey, "An Experimental Comparison of Click
    Position-Bias Models", WSDM 2008.
    A. Chuklin, I. Markov and M. de Rijke, "Click Models for Web Search", 2015, section 3.3.

    Examples
    --------
    >>> from sklearn_ltr.clicks import CascadeModel
    >>> model = CascadeModel(epsilon=0.0)
    >>> model.marginal_click_probability([1, 1, 1], [1, 2, 3], y_max=2)  # r = 1/3
    array([0.33333333, 0.22222222, 0.14814815])
    >>> model.conditional_click_probability([1, 1, 1], [1, 2, 3], [1, 0, 0], y_max=2)
    array([0.33333333, 0.        , 0.        ])
    """

    def __init__(self, epsilon=0.1):
        self.epsilon = epsilon

    def _check_params(self):
        check_unit(self.epsilon, "epsilon")

    def _continuation(self, r, layout):
        shape = (layout.n_pages, layout.n_positions)
        return np.zeros(shape), np.ones(shape)


class DependentClickModel(_CascadeFamily):
    """Dependent click model (DCM): a cascade that goes on after a click at rank k with probability lambda_k.

    Position 1 is examined; an examined document is clicked with probability
    :math:`a(y) = \\epsilon + (1 - \\epsilon) r(y)`; after a skip the next position is
    examined, after a click at rank :math:`k` with probability :math:`\\lambda_k`:

    .. math:: P(E_{k+1} = 1 \\mid E_k = 1, C_k = 1) = \\lambda_k, \\quad
              P(E_{k+1} = 1 \\mid E_k = 1, C_k = 0) = 1, \\quad
              P(E_k = 1) = \\prod_{j < k} (1 - a_j + a_j \\lambda_j),

    and :math:`P(C_k = 1) = a_k P(E_k = 1)`. ``continuation=0`` is the cascade model.

    Parameters
    ----------
    continuation : float or array-like of float in [0, 1], default=0.5
        :math:`\\lambda_k`: one probability for every rank, or one per rank 1, 2, ... (at least
        as many as the deepest position shown).
    epsilon : float in [0, 1], default=0.1
        Click noise: the attractiveness of an irrelevant document.

    See Also
    --------
    CascadeModel, DynamicBayesianNetwork

    References
    ----------
    F. Guo, C. Liu and Y. M. Wang, "Efficient Multiple-Click Models in Web Search", WSDM 2009.
    A. Chuklin, I. Markov and M. de Rijke, "Click Models for Web Search", 2015, section 3.5.

    Examples
    --------
    >>> from sklearn_ltr.clicks import DependentClickModel
    >>> model = DependentClickModel(continuation=0.5, epsilon=0.0)
    >>> model.marginal_click_probability([2, 2], [1, 2], y_max=2)  # a = 1: P(E_2) = 0.5
    array([1. , 0.5])
    """

    def __init__(self, continuation=0.5, epsilon=0.1):
        self.continuation = continuation
        self.epsilon = epsilon

    def _check_params(self):
        check_unit(self.epsilon, "epsilon")
        _per_position(self.continuation, "continuation", 0, "")

    def _continuation(self, r, layout):
        lam = _per_position(self.continuation, "continuation", layout.n_positions,
                            "give one per position, or pass top_k")
        shape = (layout.n_pages, layout.n_positions)
        return np.broadcast_to(lam, shape), np.ones(shape)


class DynamicBayesianNetwork(_CascadeFamily):
    """Dynamic Bayesian network model (DBN): attractiveness, satisfaction after a click, perseverance gamma.

    Position 1 is examined; an examined document is clicked with probability
    :math:`a(y) = \\epsilon + (1 - \\epsilon) r(y)`; a clicked document satisfies the user
    with probability :math:`s(y)` (:math:`s(y) = r(y)` by default); a satisfied user stops, an
    unsatisfied one examines the next position with probability :math:`\\gamma`:

    .. math:: P(E_{k+1} = 1 \\mid E_k = 1, C_k = 1) = \\gamma (1 - s_k), \\quad
              P(E_{k+1} = 1 \\mid E_k = 1, C_k = 0) = \\gamma.

    ``gamma=1, satisfaction=1`` is the cascade model.

    Parameters
    ----------
    gamma : float in [0, 1], default=0.9
        Perseverance: the probability of going on when not satisfied.
    satisfaction : None or float in [0, 1], default=None
        :math:`s(y)`: None for :math:`r(y)`, the same map as the attractiveness without noise
        (a perfect document always satisfies); a number for the same satisfaction everywhere.
    epsilon : float in [0, 1], default=0.1
        Click noise: the attractiveness of an irrelevant document.

    See Also
    --------
    CascadeModel, DependentClickModel

    References
    ----------
    O. Chapelle and Y. Zhang, "A Dynamic Bayesian Network Click Model for Web Search Ranking",
    WWW 2009.
    A. Chuklin, I. Markov and M. de Rijke, "Click Models for Web Search", 2015, section 3.8.

    Examples
    --------
    >>> from sklearn_ltr.clicks import DynamicBayesianNetwork
    >>> model = DynamicBayesianNetwork(gamma=0.5, satisfaction=0.0, epsilon=0.0)
    >>> model.marginal_click_probability([2, 2, 2], [1, 2, 3], y_max=2)  # a = 1: P(E_k) = 0.5 ** (k - 1)
    array([1.  , 0.5 , 0.25])
    """

    def __init__(self, gamma=0.9, satisfaction=None, epsilon=0.1):
        self.gamma = gamma
        self.satisfaction = satisfaction
        self.epsilon = epsilon

    def _check_params(self):
        check_unit(self.gamma, "gamma")
        check_unit(self.epsilon, "epsilon")
        if self.satisfaction is not None:
            check_unit(self.satisfaction, "satisfaction")

    def _continuation(self, r, layout):
        s = r if self.satisfaction is None else np.full(r.shape, float(self.satisfaction))
        q_click = layout.pad(self.gamma * (1 - s))
        return q_click, np.full(q_click.shape, float(self.gamma))


class UserBrowsingModel(ClickModel):
    """User browsing model (UBM): examination depends on the position and on the distance to the last click.

    A document at rank :math:`k` is examined with probability :math:`\\gamma_{k, d}`, where
    :math:`d = k - k'` and :math:`k'` is the rank of the last click above :math:`k` (0 when there
    is none), and clicked when examined with probability :math:`a(y) = \\epsilon + (1 - \\epsilon) r(y)`:

    .. math:: P(C_k = 1 \\mid C_{<k}) = \\gamma_{k, k - k'} \\, a_k.

    The marginal :math:`P(C_k = 1)` sums over the rank of the last click, an exact recursion
    in :math:`O(K^2)` per page (pass ``top_k`` to simulators for long lists). By default
    :math:`\\gamma_{k, d} = (1 / d)^{\\eta}`: before any click this is the position-based
    model's :math:`(1/k)^{\\eta}`, and attention is renewed after a click.

    Parameters
    ----------
    eta : float >= 0, default=1.0
        Severity of the default :math:`\\gamma_{k, d} = (1 / d)^{\\eta}`; unused when ``gamma`` is given.
    gamma : None or array-like of shape (n_positions, n_positions), default=None
        :math:`\\gamma_{k, d}` at ``gamma[k - 1, d - 1]`` (entries with :math:`d \\le k` are used).
    epsilon : float in [0, 1], default=0.1
        Click noise: the attractiveness of an irrelevant document.

    See Also
    --------
    PositionBasedModel : examination by position alone.

    References
    ----------
    G. Dupret and B. Piwowarski, "A User Browsing Model to Predict Search Engine Click Data
    from Past Observations", SIGIR 2008.
    A. Chuklin, I. Markov and M. de Rijke, "Click Models for Web Search", 2015, section 3.6.

    Examples
    --------
    >>> from sklearn_ltr.clicks import UserBrowsingModel
    >>> model = UserBrowsingModel(eta=1.0, epsilon=0.0)
    >>> # a click at rank 1 makes rank 2 (d = 1) certain to be examined; without it d = 2
    >>> model.conditional_click_probability([2, 2], [1, 2], [1, 0], y_max=2)
    array([1., 1.])
    >>> model.conditional_click_probability([0, 2], [1, 2], [0, 0], y_max=2)
    array([0. , 0.5])
    """

    _sequential = True

    def __init__(self, eta=1.0, gamma=None, epsilon=0.1):
        self.eta = eta
        self.gamma = gamma
        self.epsilon = epsilon

    def _check_params(self):
        check_unit(self.epsilon, "epsilon")
        eta = self.eta
        if isinstance(eta, bool) or not isinstance(eta, numbers.Real) or not np.isfinite(eta) or eta < 0:
            raise ValueError(f"eta must be a finite number >= 0; got {eta!r}.")
        if self.gamma is not None:
            gamma = np.asarray(self.gamma, dtype=np.float64)
            if gamma.ndim != 2 or gamma.shape[0] != gamma.shape[1] or gamma.size == 0:
                raise ValueError("gamma must be None or a square 2-D array gamma[k - 1, d - 1] of examination "
                                 f"probabilities by rank k and distance d to the last click; got shape {gamma.shape}.")
            if not np.isfinite(gamma).all() or gamma.min() < 0 or gamma.max() > 1:
                raise ValueError("gamma must hold examination probabilities in [0, 1].")

    def _gamma_table(self, n_positions):
        """``table[k - 1, d - 1] = gamma_{k, d}`` for ranks and distances ``1 .. n_positions``."""
        if self.gamma is None:
            d = np.arange(1, n_positions + 1, dtype=np.float64)
            return np.broadcast_to(np.power(d, -float(self.eta)), (n_positions, n_positions))
        gamma = np.asarray(self.gamma, dtype=np.float64)
        if gamma.shape[0] < n_positions:
            raise ValueError(f"gamma covers ranks 1..{gamma.shape[0]} but a page shows {n_positions} positions; "
                             "give a larger table or pass top_k.")
        return gamma[:n_positions, :n_positions]

    def _attraction(self, r):
        return self.epsilon + (1 - self.epsilon) * r

    def _marginal(self, r, positions, layout):
        a = layout.pad(self._attraction(r))
        table = self._gamma_table(layout.n_positions)
        last = np.zeros((layout.n_pages, layout.n_positions + 1))  # P(last click above k at rank l), l = 0..k-1
        last[:, 0] = 1.0
        out = np.empty_like(a)
        for k in range(1, layout.n_positions + 1):
            g = table[k - 1, k - np.arange(k) - 1]  # gamma_{k, k - l} for l = 0 .. k-1
            clicked = last[:, :k] * g * a[:, [k - 1]]  # P(last = l and C_k = 1)
            out[:, k - 1] = clicked.sum(axis=1)
            last[:, :k] -= clicked
            last[:, k] = out[:, k - 1]
        return layout.unpad(out)

    def _conditional(self, r, positions, layout, clicks):
        a = layout.pad(self._attraction(r))
        c = layout.pad(clicks, 0)
        table = self._gamma_table(layout.n_positions)
        last = np.zeros(layout.n_pages, dtype=np.int64)
        out = np.empty_like(a)
        for k in range(1, layout.n_positions + 1):
            out[:, k - 1] = table[k - 1, k - last - 1] * a[:, k - 1]
            last = np.where(c[:, k - 1] == 1, k, last)
        return layout.unpad(out)

    def _sample(self, r, positions, layout, rng):
        a = layout.pad(self._attraction(r))
        table = self._gamma_table(layout.n_positions)
        last = np.zeros(layout.n_pages, dtype=np.int64)
        clicks = np.zeros(a.shape, dtype=np.int64)
        for k in range(1, layout.n_positions + 1):
            examined = rng.random(layout.n_pages) < table[k - 1, k - last - 1]
            clicked = examined & (rng.random(layout.n_pages) < a[:, k - 1])
            clicks[:, k - 1] = clicked
            last = np.where(clicked, k, last)
        return layout.unpad(clicks)

"""Click models as objects: the common interface and the position-based model.

Every click model maps the relevance grade ``y`` of a document to the probability
``r(y) = (2**y - 1) / (2**y_max - 1)`` that it is relevant (attractive), and describes how a
user examines a result page. The models share one interface over a log of impressions, one
row per shown document, in any row order:

- ``sample_clicks(y, positions, sessions=None, *, y_max=None, random_state=None)``
- ``marginal_click_probability(y, positions, sessions=None, *, y_max=None)``: exact ``P(C_k = 1)``
- ``conditional_click_probability(y, positions, clicks, sessions=None, *, y_max=None)``:
  ``P(C_k = 1 | clicks above k on the same page)``, the input of click log-likelihood and perplexity.

``positions`` are 1-based display ranks and ``sessions`` the result page of each row (one page
when ``None``). The cascade family lives in :mod:`sklearn_ltr.clicks._cascade_models`.

Reference: A. Chuklin, I. Markov and M. de Rijke, "Click Models for Web Search", Morgan &
Claypool, 2015.
"""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state

from sklearn_ltr._groups import QueryGroups
from sklearn_ltr.clicks._checks import check_clicks, check_positions

__all__ = ["PositionBasedModel"]

_TRUST_BIAS_CURVES = ("vardasbi2020",)


def check_unit(value, name):
    """``value`` as a float in [0, 1], else a ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 <= value <= 1:
        raise ValueError(f"{name} must be a number in [0, 1]; got {value!r}.")
    return float(value)


def check_y_max(y, y_max):
    """The highest grade: ``y.max()`` when ``y_max`` is None, else ``y_max`` checked against ``y``."""
    top = float(y.max()) if y.size else 0.0
    if y_max is None:
        return top
    if isinstance(y_max, bool) or not isinstance(y_max, numbers.Real) or not np.isfinite(y_max) or y_max < 0:
        raise ValueError(f"y_max must be a finite number >= 0; got {y_max!r}.")
    if top > y_max:
        raise ValueError(f"y holds a label {top:g} above y_max={y_max:g}; labels must be <= y_max.")
    return float(y_max)


def check_grades(y, name="y"):
    """Whole-number, non-negative relevance grades as float64."""
    from sklearn_ltr._validation import check_relevance

    return check_relevance(y, name=name, integer=True)


def relevance_probability(y, y_max):
    """``r(y) = (2**y - 1) / (2**y_max - 1)``, computed scaled by ``2**-y_max`` (exact, finite for any grade).

    ``y_max = 0`` gives 0 everywhere.
    """
    y = np.asarray(y, dtype=np.float64)
    if y_max <= 0:
        return np.zeros_like(y)
    return (np.exp2(y - y_max) - np.exp2(-y_max)) / -np.expm1(-y_max * np.log(2.0))


def generator(random_state):
    """A NumPy Generator: an int seeds ``np.random.default_rng`` directly, a Generator is used as is."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        return np.random.default_rng(int(random_state))
    if random_state is None:
        return np.random.default_rng()
    seed = check_random_state(random_state).randint(np.iinfo(np.int32).max)
    return np.random.default_rng(seed)


class PageLayout:
    """Rows of a click log laid out as result pages: ``page[i]`` and column ``positions[i] - 1``.

    Parameters
    ----------
    positions : ndarray of int64 of shape (n_samples,)
    sessions : array-like of shape (n_samples,) or None
        Page of each row; None puts all rows on one page.
    contiguous : bool
        Require every page to show positions ``1 .. n_page`` without gaps (the sequential
        models need every document above a position).
    """

    def __init__(self, positions, sessions, *, contiguous):
        n = positions.shape[0]
        self.page = (np.zeros(n, dtype=np.int64) if sessions is None
                     else QueryGroups(sessions, n, against="y").codes.astype(np.int64))
        self.n_pages = int(self.page.max()) + 1
        self.column = positions - 1
        self.n_positions = int(positions.max())
        cell = np.sort(self.page * self.n_positions + self.column)
        if (cell[1:] == cell[:-1]).any():
            raise ValueError("two rows of one session share a display position; each position of a result page "
                             "holds one document (pass sessions to tell the pages apart).")
        if contiguous:
            shown = np.bincount(self.page, minlength=self.n_pages)
            deepest = np.zeros(self.n_pages, dtype=np.int64)
            np.maximum.at(deepest, self.page, positions)
            if (shown != deepest).any():
                raise ValueError("a session lacks a position above one of its rows: this model needs every "
                                 "document from position 1 down (the log before non-clicked rows were dropped).")

    def pad(self, values, fill=0.0):
        """``values`` per row as a matrix ``[n_pages, n_positions]``."""
        values = np.asarray(values)
        out = np.full((self.n_pages, self.n_positions), fill, dtype=values.dtype)
        out[self.page, self.column] = values
        return out

    def unpad(self, matrix):
        """The cell of every row, in row order."""
        return matrix[self.page, self.column]


class ClickModel(BaseEstimator):
    """Base class of the click models: the common interface over a log of impressions.

    A log is one row per impression: the grade ``y`` of the shown document, its 1-based
    display ``positions`` and its ``sessions`` (result page), rows in any order. The attractiveness
    of a document is ``r(y) = (2**y - 1) / (2**y_max - 1)`` mixed with each model's click noise.
    Subclasses implement ``_check_params``, ``_marginal``, ``_conditional`` and ``_sample``.

    Parameters are checked when the model is used (scikit-learn's convention): ``__init__``
    only stores them, so ``get_params``, ``set_params`` and ``clone`` work as for estimators.

    See Also
    --------
    PositionBasedModel, CascadeModel, DependentClickModel, DynamicBayesianNetwork, UserBrowsingModel

    References
    ----------
    A. Chuklin, I. Markov and M. de Rijke, "Click Models for Web Search", Morgan & Claypool, 2015.

    Examples
    --------
    >>> from sklearn_ltr.clicks import ClickModel, PositionBasedModel
    >>> model = PositionBasedModel()
    >>> isinstance(model, ClickModel)
    True
    >>> model.sample_clicks([4, 0, 2], [1, 2, 3], y_max=4, random_state=0).shape
    (3,)
    """

    #: Whether the model needs every position from 1 down on a page (the cascade family).
    _sequential = False

    def _inputs(self, y, positions, sessions, y_max, clicks=None):
        self._check_params()
        y = check_grades(y)
        positions = check_positions(positions, y.shape[0], against="y")
        y_max = check_y_max(y, y_max)
        layout = None  # the position-based model needs the pages only to check them
        if self._sequential or sessions is not None:
            layout = PageLayout(positions, sessions, contiguous=self._sequential)
        out = [relevance_probability(y, y_max), positions, layout]
        if clicks is not None:
            out.append(check_clicks(clicks, y.shape[0], against="y").astype(np.int64))
        return out

    def marginal_click_probability(self, y, positions, sessions=None, *, y_max=None):
        """Exact probability that each row is clicked, ``P(C_k = 1)``, before any click is seen.

        Parameters
        ----------
        y : array-like of shape (n_samples,)
            Whole-number relevance grade of each shown document.
        positions : array-like of shape (n_samples,)
            1-based display rank of each row.
        sessions : array-like of shape (n_samples,), default=None
            Result page (session) of each row; None means one page (the position-based model,
            whose clicks do not depend on the rest of the page, then checks nothing).
        y_max : float, default=None
            Highest possible grade, the normaliser of ``r(y)``; defaults to ``y.max()``.

        Returns
        -------
        probability : ndarray of float64 of shape (n_samples,)
        """
        r, positions, layout = self._inputs(y, positions, sessions, y_max)
        return self._marginal(r, positions, layout)

    def conditional_click_probability(self, y, positions, clicks, sessions=None, *, y_max=None):
        """Probability of a click on each row given the clicks above it on its page.

        ``P(C_k = 1 | C_1, ..., C_{k-1})``: the prediction that click log-likelihood and
        perplexity evaluate (Chuklin et al., 2015, chapter 5).

        Parameters
        ----------
        y : array-like of shape (n_samples,)
            Whole-number relevance grade of each shown document.
        positions : array-like of shape (n_samples,)
            1-based display rank of each row.
        clicks : array-like of shape (n_samples,)
            Observed 0/1 clicks.
        sessions : array-like of shape (n_samples,), default=None
            Result page (session) of each row; None means one page.
        y_max : float, default=None
            Highest possible grade; defaults to ``y.max()``.

        Returns
        -------
        probability : ndarray of float64 of shape (n_samples,)
        """
        r, positions, layout, clicks = self._inputs(y, positions, sessions, y_max, clicks)
        return self._conditional(r, positions, layout, clicks)

    def sample_clicks(self, y, positions, sessions=None, *, y_max=None, random_state=None):
        """Draw the clicks of the shown documents, all pages at once.

        Parameters
        ----------
        y : array-like of shape (n_samples,)
            Whole-number relevance grade of each shown document.
        positions : array-like of shape (n_samples,)
            1-based display rank of each row.
        sessions : array-like of shape (n_samples,), default=None
            Result page (session) of each row; None means one page.
        y_max : float, default=None
            Highest possible grade; defaults to ``y.max()``.
        random_state : int, RandomState or Generator, default=None
            Seed (an int seeds ``numpy.random.default_rng``).

        Returns
        -------
        clicks : ndarray of int64 of shape (n_samples,)
        """
        r, positions, layout = self._inputs(y, positions, sessions, y_max)
        return self._sample(r, positions, layout, generator(random_state))


def _trust_bias_curve(name, positions):
    """``(eps_plus, eps_minus)`` of a named trust-bias simulation at 1-based ``positions``."""
    k = positions.astype(np.float64)
    # Vardasbi et al. (CIKM 2020, arXiv:2008.10242), after the estimates of Agarwal et al. (WWW 2019).
    return 1.0 - (np.minimum(k, 20) + 1) / 100, 0.65 / np.minimum(k, 10)


class PositionBasedModel(ClickModel):
    """Position-based click model (PBM), optionally with trust bias.

    A document at 1-based position :math:`k` is examined with probability
    :math:`\\theta_k = (1 / k)^{\\eta}` and, once examined, clicked with probability

    .. math:: P(C = 1 \\mid E = 1, y, k) = \\epsilon^+_k \\, r(y) + \\epsilon^-_k \\, (1 - r(y)),
              \\qquad r(y) = \\frac{2^y - 1}{2^{y_{max}} - 1},

    independently of the other documents of the page. Without trust bias
    :math:`\\epsilon^+_k = 1` and :math:`\\epsilon^-_k = \\epsilon`: the click probability is
    :math:`\\epsilon + (1 - \\epsilon) r(y)` (:func:`sklearn_ltr.datasets.click_probability`),
    and with ``eta=1`` this is :func:`sklearn_ltr.datasets.simulate_clicks`'s model. The click
    probability is affine in :math:`r(y)`:

    .. math:: P(C_k = 1 \\mid y) = \\alpha_k r(y) + \\beta_k, \\qquad
              \\alpha_k = \\theta_k (\\epsilon^+_k - \\epsilon^-_k), \\quad \\beta_k = \\theta_k \\epsilon^-_k,

    which is what the affine correction of Vardasbi et al. (2020) inverts.

    Parameters
    ----------
    eta : float >= 0, default=1.0
        Severity of the position bias; 0 examines every position.
    epsilon : float in [0, 1], default=0.1
        Click noise: the click probability of an examined irrelevant document (without trust bias).
    trust_bias : None, "vardasbi2020" or (eps_plus, eps_minus), default=None
        None: no trust bias (``eps_plus = 1``, ``eps_minus = epsilon``). ``"vardasbi2020"``: the
        simulation of Vardasbi et al. (2020), after the estimates of Agarwal et al. (2019),
        :math:`\\epsilon^+_k = 1 - (\\min(k, 20) + 1) / 100` and
        :math:`\\epsilon^-_k = 0.65 / \\min(k, 10)` (``epsilon`` is then unused). A pair of
        arrays gives ``eps_plus`` and ``eps_minus`` per position ``1 .. len``.

    See Also
    --------
    CascadeModel, DependentClickModel, DynamicBayesianNetwork, UserBrowsingModel
    sklearn_ltr.clicks.simulate_click_log : a click log drawn under a click model.

    References
    ----------
    N. Craswell, O. Zoeter, M. Taylor and B. Ramsey, "An Experimental Comparison of Click
    Position-Bias Models", WSDM 2008.
    A. Chuklin, I. Markov and M. de Rijke, "Click Models for Web Search", 2015, section 3.4.
    T. Joachims, A. Swaminathan and T. Schnabel, "Unbiased Learning-to-Rank with Biased
    Feedback", WSDM 2017 (the curve :math:`(1/k)^\\eta`).
    A. Agarwal, X. Wang, C. Li, M. Bendersky and M. Najork, "Addressing Trust Bias for
    Unbiased Learning-to-Rank", WWW 2019.
    A. Vardasbi, H. Oosterhuis and M. de Rijke, "When Inverse Propensity Scoring does not
    Work: Affine Corrections for Unbiased Learning to Rank", CIKM 2020 (the same curves as
    equations 10-11 of Vardasbi et al., "Mixture-Based Correction for Position and Trust
    Bias in Counterfactual Learning to Rank", CIKM 2021).

    Examples
    --------
    >>> from sklearn_ltr.clicks import PositionBasedModel
    >>> model = PositionBasedModel(eta=2.0)
    >>> model.examination([1, 2, 4])
    array([1.    , 0.25  , 0.0625])
    >>> alpha, beta = model.affine_parameters([1, 2])
    >>> alpha, beta  # theta * (1 - 0.1) and theta * 0.1
    (array([0.9  , 0.225]), array([0.1  , 0.025]))
    >>> model.marginal_click_probability([0, 4], [1, 2], y_max=4)
    array([0.1 , 0.25])
    >>> eps_plus, eps_minus = PositionBasedModel(trust_bias="vardasbi2020").trust_bias_curves([1, 2, 30])
    >>> eps_plus, eps_minus
    (array([0.98, 0.97, 0.79]), array([0.65 , 0.325, 0.065]))
    """

    def __init__(self, eta=1.0, epsilon=0.1, trust_bias=None):
        self.eta = eta
        self.epsilon = epsilon
        self.trust_bias = trust_bias

    def _check_params(self):
        eta = self.eta
        if isinstance(eta, bool) or not isinstance(eta, numbers.Real) or not np.isfinite(eta) or eta < 0:
            raise ValueError(f"eta must be a finite number >= 0 (1 for examination 1/position); got {eta!r}.")
        check_unit(self.epsilon, "epsilon")
        bias = self.trust_bias
        if bias is None or (isinstance(bias, str) and bias in _TRUST_BIAS_CURVES):
            return
        if isinstance(bias, str):
            raise ValueError(f"trust_bias must be None, one of {_TRUST_BIAS_CURVES} or a pair of arrays "
                             f"(eps_plus, eps_minus) per position; got {bias!r}.")
        try:
            plus, minus = (np.asarray(part, dtype=np.float64) for part in bias)
        except (TypeError, ValueError):
            raise ValueError("trust_bias must be None, 'vardasbi2020' or a pair of arrays (eps_plus, eps_minus) "
                             f"of click probabilities per position; got {bias!r}.") from None
        if plus.ndim != 1 or plus.shape != minus.shape or plus.size == 0:
            raise ValueError("trust_bias (eps_plus, eps_minus) must be two 1-D arrays of the same length, one "
                             f"value per position 1, 2, ...; got shapes {plus.shape} and {minus.shape}.")
        if not (np.isfinite(plus).all() and np.isfinite(minus).all() and 0 <= min(plus.min(), minus.min())
                and max(plus.max(), minus.max()) <= 1):
            raise ValueError("trust_bias (eps_plus, eps_minus) must hold click probabilities in [0, 1].")

    def examination(self, positions):
        """Examination probability :math:`\\theta_k = (1 / k)^{\\eta}` of each 1-based position.

        Parameters
        ----------
        positions : array-like of int
            1-based display ranks.

        Returns
        -------
        theta : ndarray of float64, same shape as ``positions``
        """
        self._check_params()
        positions = check_positions(np.ravel(positions)).reshape(np.shape(positions)).astype(np.float64)
        if self.eta == 1:  # exactly observation_propensity's 1 / position
            return 1.0 / positions
        return np.power(positions, -float(self.eta))

    def trust_bias_curves(self, positions):
        """``(eps_plus, eps_minus)``: the click probability of an examined relevant / irrelevant document.

        Parameters
        ----------
        positions : array-like of int
            1-based display ranks.

        Returns
        -------
        eps_plus, eps_minus : ndarrays of float64, same shape as ``positions``
        """
        self._check_params()
        shape = np.shape(positions)
        positions = check_positions(np.ravel(positions))
        if self.trust_bias is None:
            plus, minus = np.ones(positions.shape), np.full(positions.shape, float(self.epsilon))
        elif isinstance(self.trust_bias, str):
            plus, minus = _trust_bias_curve(self.trust_bias, positions)
        else:
            table_plus, table_minus = (np.asarray(part, dtype=np.float64) for part in self.trust_bias)
            if positions.max() > table_plus.shape[0]:
                raise ValueError(f"trust_bias gives eps_plus and eps_minus for positions 1..{table_plus.shape[0]}, "
                                 f"but a row is at position {positions.max()}; give longer arrays or pass top_k.")
            plus, minus = table_plus[positions - 1], table_minus[positions - 1]
        return plus.reshape(shape), minus.reshape(shape)

    def affine_parameters(self, positions):
        """``(alpha, beta)`` with ``P(C = 1 | y, k) = alpha_k r(y) + beta_k``.

        :math:`\\alpha_k = \\theta_k (\\epsilon^+_k - \\epsilon^-_k)` and
        :math:`\\beta_k = \\theta_k \\epsilon^-_k`.

        Parameters
        ----------
        positions : array-like of int
            1-based display ranks.

        Returns
        -------
        alpha, beta : ndarrays of float64, same shape as ``positions``
        """
        theta = self.examination(positions)
        plus, minus = self.trust_bias_curves(positions)
        return theta * (plus - minus), theta * minus

    def _examined_click(self, r, positions):
        if self.trust_bias is None:  # exactly click_probability's epsilon + (1 - epsilon) r
            return self.epsilon + (1 - self.epsilon) * r
        plus, minus = self.trust_bias_curves(positions)
        return plus * r + minus * (1 - r)

    def _marginal(self, r, positions, layout):
        return self.examination(positions) * self._examined_click(r, positions)

    def _conditional(self, r, positions, layout, clicks):
        return self._marginal(r, positions, layout)  # clicks are independent given the documents

    def _sample(self, r, positions, layout, rng):
        # The draws of simulate_clicks: examination of every row, then attraction, in row order.
        n = positions.shape[0]
        examined = rng.random(n) < self.examination(positions)
        clicked = rng.random(n) < self._examined_click(r, positions)
        return (examined & clicked).astype(np.int64)

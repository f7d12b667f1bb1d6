"""Data and helpers of the ranker checks: small interleaved queries, extra inputs, fitting quietly."""

from __future__ import annotations

import contextlib
import warnings

import numpy as np
from sklearn.base import clone

from sklearn_ltr.utils._tags import RankerTags, get_ranker_tags

# Scores computed in float32 by different batch shapes agree to about this much.
_RTOL, _ATOL = 1e-5, 1e-6

def _tags(estimator):
    return get_ranker_tags(estimator) or RankerTags()


def _ranks_within_queries(groups, rng):
    """A random 1-based rank of each row within its query."""
    order = np.lexsort((rng.random(len(groups)), groups))
    sorted_groups = groups[order]
    starts = np.searchsorted(sorted_groups, sorted_groups)
    ranks = np.empty(len(groups), dtype=np.int64)
    ranks[order] = np.arange(len(groups)) - starts + 1
    return ranks


def _ranking_data(estimator, *, n_queries=16, min_length=3, max_length=12, random_state=0, noise=0.5):
    """``X, y, groups, fit_extras, predict_extras`` for ``estimator``: small, uneven queries, interleaved."""
    rng = np.random.default_rng(random_state)
    sizes = rng.integers(min_length, max_length + 1, size=n_queries)
    groups = np.repeat(np.arange(n_queries) * 7 + 3, sizes)  # ids neither 0-based nor contiguous
    X = rng.normal(size=(len(groups), 5))
    latent = X[:, 0] + 0.5 * X[:, 1] + noise * rng.normal(size=len(groups))
    y = np.digitize(latent, np.quantile(latent, [0.5, 0.8, 0.95])).astype(np.float64)
    tags = _tags(estimator)
    if tags.target_kind == "clicks":
        y = (y > 0).astype(np.float64)
    order = rng.permutation(len(groups))  # interleave the queries
    X, y, groups = X[order], y[order], groups[order]
    extras = {name: _ranks_within_queries(groups, rng) for name in (*tags.extra_fit_inputs,
                                                                   *tags.extra_predict_inputs)}
    fit_extras = {name: extras[name] for name in tags.extra_fit_inputs}
    predict_extras = {name: extras[name] for name in tags.extra_predict_inputs}
    return X, y, groups, fit_extras, predict_extras


def _take(extras, rows):
    return {name: values[rows] for name, values in extras.items()}


@contextlib.contextmanager
def _quiet():
    from sklearn_ltr.base import MissingGroupsWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MissingGroupsWarning)
        warnings.filterwarnings("ignore", message="positions=None")
        yield


def _fit(estimator, X, y, groups, fit_extras, **params):
    with _quiet():
        return estimator.fit(X, y, groups=groups, **fit_extras, **params)


def _predict(estimator, X, groups, predict_extras):
    with _quiet():
        return np.asarray(estimator.predict(X, groups=groups, **predict_extras), dtype=np.float64)


def _fitted(estimator_orig, **data_options):
    """A fitted clone, its data ``(X, y, groups, fit_extras, predict_extras)`` and its scores of ``X``."""
    data = _ranking_data(estimator_orig, **data_options)
    X, y, groups, fit_extras, predict_extras = data
    estimator = _fit(clone(estimator_orig), X, y, groups, fit_extras)
    return estimator, data, _predict(estimator, X, groups, predict_extras)


def _has_param(estimator, name):
    return name in estimator.get_params(deep=False)


def _deterministic(estimator):
    """A copy with a fixed seed where the estimator has one (None if it cannot be made deterministic)."""
    estimator = clone(estimator)
    if _has_param(estimator, "random_state"):
        estimator.set_params(random_state=0)
    from sklearn.utils import get_tags

    return None if get_tags(estimator).non_deterministic else estimator


def _assert_close(actual, expected, message, rtol=_RTOL, atol=_ATOL):
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, err_msg=message)


_POINTWISE = "LambdaMARTRanker(n_estimators=2, n_jobs=1)"
_NEURAL = "RankNetRanker(hidden_sizes=(4,), max_epochs=2, device='cpu')"

_DOC_TAIL = """

    Parameters
    ----------
    name : str
        The estimator's name, for messages.
    estimator_orig : estimator instance
        The (unfitted) ranker; it is cloned, never modified.

    Raises
    ------
    AssertionError
        When the ranker breaks the contract.

    Examples
    --------
    >>> from sklearn_ltr import {cls}
    >>> from sklearn_ltr.utils.estimator_checks import {check}
    >>> {check}("{cls}", {estimator})
    """


def _documented(estimator=_POINTWISE):
    """Add the shared Parameters/Raises sections and an example running the check on ``estimator``."""

    def decorate(check):
        cls = estimator.split("(")[0]
        check.__doc__ = check.__doc__.rstrip() + _DOC_TAIL.format(cls=cls, check=check.__name__, estimator=estimator)
        return check

    return decorate

"""The ranker contract: scikit-learn's estimator checks plus the checks every ranker must pass.

Run it on your own ranker with pytest, as scikit-learn's ``parametrize_with_checks``::

    from sklearn_ltr.utils.estimator_checks import parametrize_with_checks

    @parametrize_with_checks([MyRanker(n_epochs=2, random_state=0)])
    def test_ranker_contract(estimator, check):
        check(estimator)

or without pytest, ``check_estimator(MyRanker())``. The checks are driven by the
ranker's tags (:class:`sklearn_ltr.utils.RankerTags`): a ranker whose target kind is
``"clicks"`` gets 0/1 targets in scikit-learn's checks; a list-context ranker is checked
for scoring a query alone as among other queries; extra routed inputs (``positions``,
``initial_rank``) are generated as 1-based ranks within each query and passed wherever
``groups`` is. Checks that need a parameter (``batch_size``, ``loss``, ``early_stopping``,
``max_list_length``, ``sample_weight`` in ``fit``) are yielded only for rankers that have it.

The ranker checks (each ``check_*(name, estimator)``, raising ``AssertionError``):

- :func:`check_ranker_tags`: the tags are :class:`~sklearn_ltr.utils.Tags` with valid ranker tags.
- :func:`check_fit_invariant_to_query_interleaving`,
  :func:`check_fit_invariant_to_row_order_within_queries`, :func:`check_predict_invariant_to_row_order`:
  row order does not matter (within a query, the model is the same bit for bit).
- :func:`check_query_column`: query ids read from a column of ``X`` act exactly as ``groups``.
- :func:`check_query_relabelling`: integer ids and string ids (of another sort order) give the
  same scores.
- :func:`check_batch_size_invariance`: predictions do not depend on ``batch_size`` at predict time.
- :func:`check_query_alone_vs_among_others`: a query scored alone gets the scores it gets among others.
- :func:`check_score_equals_ndcg_scorer`: ``score`` is ``sklearn_ltr.ndcg_scorer``.
- :func:`check_routing_reaches_fit_and_predict`: under metadata routing, ``groups`` and every
  extra input reach ``fit`` and ``predict`` through a ``Pipeline`` and ``cross_validate``.
- :func:`check_pickle_round_trip`, :func:`check_clone_reproduces`: pickling keeps the predictions;
  a fixed ``random_state`` reproduces them.
- :func:`check_early_stopping_restores_best`: the weights kept are the best epoch's, not the last.
- :func:`check_max_list_length_training_only`: training lists are cut, predicted lists never.
- :func:`check_non_finite_loss_raises`, :func:`check_loss_params_reach_loss`: the loss is honoured.
- :func:`check_sample_weight`: per-query weights are used, and refused when they vary within a query.
- ``check_param_validation`` (scikit-learn's): every parameter given a wrong type or value
  raises ``InvalidParameterError`` naming it.

Two of scikit-learn's checks call ``score(X, y)`` without query ids, which a ranker refuses;
they are expected to fail, with the reason in :data:`SCORE_NEEDS_QUERY_IDS`:

>>> from sklearn_ltr.utils.estimator_checks import SCORE_NEEDS_QUERY_IDS
>>> sorted(SCORE_NEEDS_QUERY_IDS)
['check_fit_score_takes_y', 'check_pipeline_consistency']
"""

from __future__ import annotations

import contextlib
import functools
import unittest

import numpy as np
from sklearn.utils import estimator_checks as _sklearn_checks

from sklearn_ltr.utils._check_data import _tags
from sklearn_ltr.utils._ranker_checks import (
    check_batch_size_invariance,
    check_clone_reproduces,
    check_early_stopping_restores_best,
    check_fit_invariant_to_query_interleaving,
    check_fit_invariant_to_row_order_within_queries,
    check_loss_params_reach_loss,
    check_max_list_length_training_only,
    check_non_finite_loss_raises,
    check_pickle_round_trip,
    check_predict_invariant_to_row_order,
    check_query_alone_vs_among_others,
    check_query_column,
    check_query_relabelling,
    check_ranker_tags,
    check_routing_reaches_fit_and_predict,
    check_sample_weight,
    check_score_equals_ndcg_scorer,
)
from sklearn_ltr.utils._sklearn_compat import transformed_check_targets
from sklearn_ltr.utils._tags import get_ranker_tags

__all__ = [
    "SCORE_NEEDS_QUERY_IDS",
    "check_batch_size_invariance",
    "check_clone_reproduces",
    "check_early_stopping_restores_best",
    "check_estimator",
    "check_fit_invariant_to_query_interleaving",
    "check_fit_invariant_to_row_order_within_queries",
    "check_loss_params_reach_loss",
    "check_max_list_length_training_only",
    "check_non_finite_loss_raises",
    "check_pickle_round_trip",
    "check_predict_invariant_to_row_order",
    "check_query_alone_vs_among_others",
    "check_query_column",
    "check_query_relabelling",
    "check_ranker_tags",
    "check_routing_reaches_fit_and_predict",
    "check_sample_weight",
    "check_score_equals_ndcg_scorer",
    "parametrize_with_checks",
    "ranker_checks_generator",
]

check_param_validation = _sklearn_checks.check_param_validation

# ------------------------------------------------------------------------------------- generation
_ALWAYS = (
    check_ranker_tags,
    check_fit_invariant_to_query_interleaving,
    check_fit_invariant_to_row_order_within_queries,
    check_predict_invariant_to_row_order,
    check_query_relabelling,
    check_query_alone_vs_among_others,
    check_score_equals_ndcg_scorer,
    check_routing_reaches_fit_and_predict,
    check_pickle_round_trip,
    check_clone_reproduces,
)

# check -> constructor parameters it needs
_NEEDS_PARAMS = {
    check_batch_size_invariance: ("batch_size",),
    check_early_stopping_restores_best: ("early_stopping", "validation_fraction", "max_epochs",
                                         "n_iter_no_change", "lr", "random_state"),
    check_max_list_length_training_only: ("max_list_length",),
    check_non_finite_loss_raises: ("loss",),
    check_loss_params_reach_loss: ("loss", "loss_params"),
    check_query_column: ("query_column",),
}

#: scikit-learn's checks that call ``score(X, y)`` without query ids: a ranker's ``score``
#: refuses them (a fold scored as one query is a wrong number), so these are expected to fail
#: for every estimator whose ``score`` is :meth:`sklearn_ltr.base.RankerMixin.score`.
SCORE_NEEDS_QUERY_IDS = dict.fromkeys(
    ["check_fit_score_takes_y", "check_pipeline_consistency"],
    "score(X, y) without groups raises: a ranker never scores all rows as one query; pass groups or set "
    "query_column",
)


def _check_name(check):
    while hasattr(check, "__wrapped__"):
        check = check.__wrapped__
    return check.func.__name__ if isinstance(check, functools.partial) else check.__name__


@contextlib.contextmanager
def _click_targets(estimator):
    """Feed 0/1 targets to scikit-learn's checks for a ranker that learns from clicks."""
    if _tags(estimator).target_kind != "clicks":
        yield
        return

    def clicks(y):
        y = np.asarray(y)
        return (y > np.min(y)).astype(y.dtype) if y.size else y

    with transformed_check_targets(clicks):
        yield


def _with_targets(check, estimator):
    @functools.wraps(check)
    def wrapped(*args, **kwargs):
        with _click_targets(estimator):
            return check(*args, **kwargs)

    return wrapped


def _score_checks(estimator):
    """:data:`SCORE_NEEDS_QUERY_IDS` for an estimator scored by the library's ``RankerMixin.score``."""
    from sklearn_ltr.base import RankerMixin

    return dict(SCORE_NEEDS_QUERY_IDS) if getattr(type(estimator), "score", None) is RankerMixin.score else {}


def ranker_checks_generator(estimator, *, sklearn_checks=True):
    """Yield ``(estimator, check)`` pairs: scikit-learn's checks, then the ranker checks.

    Parameters
    ----------
    estimator : estimator instance
        The ranker to check (small and fast settings: few epochs or trees).
    sklearn_checks : bool, default=True
        Also yield scikit-learn's own checks (``legacy=True``) and its
        ``check_param_validation``.

    Yields
    ------
    estimator : estimator instance
        The estimator the check runs on.
    check : callable
        ``check(estimator)`` raises on failure.

    Examples
    --------
    >>> from sklearn_ltr import LambdaMARTRanker
    >>> from sklearn_ltr.utils.estimator_checks import ranker_checks_generator
    >>> checks = [check for _, check in ranker_checks_generator(LambdaMARTRanker(n_estimators=2))]
    >>> "check_query_alone_vs_among_others" in {c.func.__name__ for c in checks if hasattr(c, "func")}
    True
    """
    name = type(estimator).__name__
    if sklearn_checks:
        for instance, check in _sklearn_checks.estimator_checks_generator(estimator, legacy=True):
            yield instance, _with_targets(check, estimator)
        if hasattr(estimator, "_parameter_constraints"):
            yield estimator, _with_targets(functools.partial(check_param_validation, name), estimator)
    if get_ranker_tags(estimator) is None:  # not a ranker: scikit-learn's checks only
        return
    params = estimator.get_params(deep=False)
    for check in _ALWAYS:
        yield estimator, functools.partial(check, name)
    for check, needed in _NEEDS_PARAMS.items():
        if all(param in params for param in needed):
            yield estimator, functools.partial(check, name)
    import inspect

    if "sample_weight" in inspect.signature(estimator.fit).parameters:
        yield estimator, functools.partial(check_sample_weight, name)


def parametrize_with_checks(estimators, *, expected_failed_checks=None, sklearn_checks=True):
    """Pytest decorator running every contract check on each estimator, as scikit-learn's.

    Parameters
    ----------
    estimators : list of estimator instances
        Rankers (and other estimators) to check.
    expected_failed_checks : callable, default=None
        ``expected_failed_checks(estimator) -> {check name: reason}``; those checks are
        marked ``xfail`` with the reason. :data:`SCORE_NEEDS_QUERY_IDS` is added for
        every estimator whose ``score`` is the library's (``RankerMixin.score``).
    sklearn_checks : bool, default=True
        Also run scikit-learn's checks.

    Returns
    -------
    decorator : pytest.mark.parametrize
        Parametrizes ``(estimator, check)``; the test calls ``check(estimator)``.

    Examples
    --------
    >>> from sklearn_ltr import LambdaMARTRanker
    >>> from sklearn_ltr.utils.estimator_checks import parametrize_with_checks
    >>> @parametrize_with_checks([LambdaMARTRanker(n_estimators=2, n_jobs=1)])
    ... def test_contract(estimator, check):
    ...     check(estimator)
    """
    import pytest

    params = []
    for estimator in estimators:
        expected = {**_score_checks(estimator),
                    **(expected_failed_checks(estimator) if expected_failed_checks else {})}
        for instance, check in ranker_checks_generator(estimator, sklearn_checks=sklearn_checks):
            reason = expected.get(_check_name(check))
            marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
            params.append(pytest.param(instance, check, marks=marks,
                                       id=f"{type(estimator).__name__}-{_check_name(check)}"))
    return pytest.mark.parametrize(("estimator", "check"), params)


def check_estimator(estimator, *, expected_failed_checks=None, sklearn_checks=True):
    """Run every contract check on ``estimator``, without pytest; raise on the first unexpected result.

    Parameters
    ----------
    estimator : estimator instance
        The ranker to check.
    expected_failed_checks : dict, default=None
        ``{check name: reason}`` of checks expected to fail: they must fail.
        :data:`SCORE_NEEDS_QUERY_IDS` is added for every estimator whose ``score``
        is the library's (``RankerMixin.score``).
    sklearn_checks : bool, default=True
        Also run scikit-learn's checks.

    Returns
    -------
    names : list of str
        The checks that ran.

    Examples
    --------
    >>> from sklearn_ltr import LambdaMARTRanker
    >>> from sklearn_ltr.utils.estimator_checks import check_estimator
    >>> names = check_estimator(LambdaMARTRanker(n_estimators=2, n_jobs=1), sklearn_checks=False)
    >>> "check_routing_reaches_fit_and_predict" in names
    True
    """
    expected = {**_score_checks(estimator), **(expected_failed_checks or {})}
    names = []
    for instance, check in ranker_checks_generator(estimator, sklearn_checks=sklearn_checks):
        name = _check_name(check)
        names.append(name)
        try:
            check(instance)
        except unittest.SkipTest:  # a check that does not apply here (e.g. array API without its flag)
            continue
        except Exception as error:
            if name not in expected:
                raise AssertionError(f"{type(estimator).__name__} fails {name}: {error}") from error
        else:
            if name in expected:
                raise AssertionError(f"{type(estimator).__name__} passes {name}, expected to fail: "
                                     f"{expected[name]}")
    return names

"""The ranker contract suite (scikit-learn's checks plus the ranker checks) on every public estimator.

Estimators are discovered from ``sklearn_ltr.__all__``: a new public estimator fails
``test_every_public_estimator_is_checked`` until it gets fast settings in ``FAST`` (plus
any ``fast_variants`` of its registry entry, each checked as one more estimator), and
each check that cannot apply to it needs an entry ``check name -> reason`` in its registry
entry's ``expected_failed_checks`` (marked xfail, strict: a check that starts passing fails).

The checks call ``fit(X, y)`` without ``groups``: a ranker then treats all rows as one
query and emits ``MissingGroupsWarning``, which is expected here and silenced.
"""

import inspect

import pytest
from sklearn.base import BaseEstimator

import sklearn_ltr
from sklearn_ltr.base import MissingGroupsWarning
from sklearn_ltr.rankers._registry import RANKERS
from sklearn_ltr.utils.estimator_checks import parametrize_with_checks

#: Small, fast settings of every public estimator, by class name: the registry of rankers' ``fast_params``.
FAST = {"Log1pTransformer": {}, "QueryNormalizer": {}}
FAST.update({name: entry.fast_params() if callable(entry.fast_params) else entry.fast_params
             for name, entry in RANKERS.items()})


def _public_estimator_classes():
    classes = (getattr(sklearn_ltr, name) for name in sklearn_ltr.__all__)
    return sorted((c for c in classes if inspect.isclass(c) and issubclass(c, BaseEstimator)),
                  key=lambda c: c.__name__)


ESTIMATORS = [cls(**FAST[cls.__name__]) for cls in _public_estimator_classes() if cls.__name__ in FAST]
#: Further configurations of a ranker (e.g. LambdaMART's rank_xendcg objective): its registry entry's ``fast_variants``.
ESTIMATORS += [type(estimator)(**{**FAST[type(estimator).__name__], **variant})
               for estimator in list(ESTIMATORS) if type(estimator).__name__ in RANKERS
               for variant in RANKERS[type(estimator).__name__].fast_variants]

#: scikit-learn's checks that call ``transform`` or ``fit_transform`` without query ids: QueryNormalizer
#: refuses them (tests/preprocessing/test_query_normalizer.py runs the same properties with groups).
_NEEDS_GROUPS = dict.fromkeys(
    ["check_dict_unchanged", "check_dtype_object", "check_estimators_dtypes", "check_estimators_pickle",
     "check_f_contiguous_array_estimator", "check_fit_idempotent", "check_fit_score_takes_y",
     "check_methods_sample_order_invariance", "check_methods_subset_invariance", "check_pipeline_consistency",
     "check_transformer_data_not_an_array", "check_transformer_general", "check_transformer_preserve_dtypes",
     "check_transformers_unfitted_stateless"],
    "transform without groups raises: QueryNormalizer never normalises all rows as one query",
)


def _expected_failed_checks(estimator):
    """``{check: reason}`` that cannot pass, declared in the ranker's registry entry."""
    if type(estimator).__name__ == "QueryNormalizer":
        return _NEEDS_GROUPS
    entry = RANKERS.get(type(estimator).__name__)
    return {} if entry is None else entry.expected_failed_checks


def test_every_public_estimator_is_checked():
    names = {cls.__name__ for cls in _public_estimator_classes()}
    missing = sorted(names - set(FAST))
    assert not missing, f"public estimators without FAST settings (so not checked): {missing}"
    assert {type(e).__name__ for e in ESTIMATORS} == names


@pytest.mark.filterwarnings(f"ignore::{MissingGroupsWarning.__module__}.{MissingGroupsWarning.__name__}")
@pytest.mark.filterwarnings("ignore::sklearn_ltr.rankers._two_tower.MissingPositionsWarning")
@parametrize_with_checks(ESTIMATORS, expected_failed_checks=_expected_failed_checks)
def test_ranker_contract(estimator, check):
    check(estimator)

"""scikit-learn's common estimator checks on every public estimator.

Each new estimator adds an instance (small and fast: few trees or epochs, one
thread) to ``ESTIMATORS`` and, for each check that cannot apply to it, an entry
``check name -> reason`` to ``EXPECTED_FAILED_CHECKS``.

Rankers carry the ``estimator_type="ranker"`` tag (see ``sklearn_ltr.base``), so the
checks run are the generic and supervised ones, not the regressor checks. The checks
call ``fit(X, y)`` without ``groups``: a ranker then treats all rows as one query and
emits ``MissingGroupsWarning``, which is expected here and silenced.
"""

import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from sklearn_ltr.base import MissingGroupsWarning
from sklearn_ltr.preprocessing import Log1pTransformer
from sklearn_ltr.rankers import (
    DASALCRanker,
    LambdaMARTRanker,
    RankingEnsemble,
    RankNetRanker,
    SetRankRanker,
    TwoTowerDebiasedRanker,
)

ESTIMATORS = [
    LambdaMARTRanker(n_estimators=5, num_leaves=7, n_jobs=1, random_state=0),
    Log1pTransformer(),
    RankNetRanker(hidden_sizes=(8,), max_epochs=2, device="cpu", random_state=0),
    DASALCRanker(hidden_size=8, n_layers=1, n_attention_layers=1, n_heads=1, head_size=4, max_epochs=2, device="cpu",
                 random_state=0),
    SetRankRanker(d_model=8, n_blocks=1, n_heads=2, max_epochs=2, device="cpu", random_state=0),
    RankingEnsemble(LambdaMARTRanker(n_estimators=5, num_leaves=7, n_jobs=1), n_estimators=2, random_state=0),
    TwoTowerDebiasedRanker(hidden_sizes=(8,), max_epochs=2, device="cpu", random_state=0),
]

_CLICKS = (
    "TwoTowerDebiasedRanker learns from clicks and rejects targets other than 0/1, while this check fits "
    "on targets with values 0, 1 and 2"
)

_LIST_CONTEXT = (
    "list context: a document's score depends on the other documents of its query, and the check "
    "scores subsets of one query (groups=None) and compares them with the whole"
)

# Class name -> {check name: reason it cannot pass}. Today every check passes:
# - LambdaMARTRanker: the checks' targets are small non-negative integers (valid
#   relevance grades), it accepts sparse X and NaN (tags say so), and with
#   groups=None the single query is within LightGBM's 10,000-row limit.
# - Log1pTransformer: stateless, one-to-one, dtype-preserving.
# - RankNetRanker: pointwise scorer; seeded, so refits are identical; predicts each row on its own.
# - DASALCRanker, SetRankRanker: list-context models (see _LIST_CONTEXT); rows of a query are put in a
#   canonical order before batching, so predictions do not depend on input row order.
# - RankingEnsemble over LambdaMART: pointwise members, so every check applies.
EXPECTED_FAILED_CHECKS = {
    "LambdaMARTRanker": {},
    "Log1pTransformer": {},
    "RankNetRanker": {},
    "DASALCRanker": {"check_methods_subset_invariance": _LIST_CONTEXT},
    "SetRankRanker": {"check_methods_subset_invariance": _LIST_CONTEXT},
    "RankingEnsemble": {},
    "TwoTowerDebiasedRanker": dict.fromkeys(
        [
            "check_fit_score_takes_y", "check_estimators_overwrite_params", "check_dont_overwrite_parameters",
            "check_estimators_fit_returns_self", "check_readonly_memmap_input", "check_n_features_in_after_fitting",
            "check_positive_only_tag_during_fit", "check_estimators_dtypes", "check_dtype_object",
            "check_f_contiguous_array_estimator", "check_methods_sample_order_invariance",
            "check_methods_subset_invariance", "check_fit2d_1feature", "check_dict_unchanged",
            "check_fit2d_predict1d",
        ],
        _CLICKS,
    ),
}


def _expected_failed_checks(estimator):
    return EXPECTED_FAILED_CHECKS.get(type(estimator).__name__, {})


@pytest.mark.filterwarnings(f"ignore::{MissingGroupsWarning.__module__}.{MissingGroupsWarning.__name__}")
@pytest.mark.filterwarnings("ignore::sklearn_ltr.rankers._two_tower.MissingPositionsWarning")
@parametrize_with_checks(ESTIMATORS, expected_failed_checks=_expected_failed_checks)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)

"""RankingEnsemble (DASALC-ens and seed ensembles of any ranker) and per-query normalisation."""

import pickle

import numpy as np
import pytest
import sklearn
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, GroupKFold
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_ltr import ndcg_scorer
from sklearn_ltr._groups import QueryGroups
from sklearn_ltr.base import BaseRanker
from sklearn_ltr.datasets import make_ranking
from sklearn_ltr.metrics import ndcg_score
from sklearn_ltr.rankers import LambdaMARTRanker
from sklearn_ltr.rankers._dasalc import DASALCRanker
from sklearn_ltr.rankers._ensemble import RankingEnsemble, normalize_scores
from sklearn_ltr.rankers._setrank import SetRankRanker
from sklearn_ltr.utils.estimator_checks import parametrize_with_checks

TINY_DASALC = {"hidden_size": 8, "n_layers": 1, "n_attention_layers": 1, "n_heads": 1, "head_size": 4,
               "max_epochs": 2, "device": "auto"}


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def data():
    return make_ranking(n_queries=30, n_features=6, random_state=0)


def _bagged_lambdamart():
    return LambdaMARTRanker(n_estimators=10, num_leaves=7, subsample=0.7, subsample_freq=1, n_jobs=1)


def test_members_have_different_seeds_and_predictions_are_their_mean(data):
    X, y, qid = data
    ensemble = RankingEnsemble(_bagged_lambdamart(), n_estimators=3, random_state=0).fit(X, y, qid)
    assert len(set(ensemble.seeds_.tolist())) == 3
    assert [m.random_state for m in ensemble.estimators_] == ensemble.seeds_.tolist()
    members = [m.predict(X, groups=qid) for m in ensemble.estimators_]
    assert not np.allclose(members[0], members[1])
    np.testing.assert_allclose(ensemble.predict(X, groups=qid), np.mean(members, axis=0))
    assert ensemble.n_features_in_ == X.shape[1]
    same = RankingEnsemble(_bagged_lambdamart(), n_estimators=3, random_state=0).fit(X, y, qid)
    np.testing.assert_array_equal(same.predict(X, qid), ensemble.predict(X, qid))
    other = RankingEnsemble(_bagged_lambdamart(), n_estimators=3, random_state=1).fit(X, y, qid)
    assert not np.allclose(other.predict(X, qid), ensemble.predict(X, qid))


@pytest.mark.parametrize("normalize", ["zscore", "rank"])
def test_normalised_average(data, normalize):
    X, y, qid = data
    ensemble = RankingEnsemble(_bagged_lambdamart(), n_estimators=2, normalize=normalize, random_state=0)
    ensemble.fit(X, y, qid)
    query_groups = QueryGroups(qid)
    members = [normalize_scores(m.predict(X, qid), query_groups, normalize) for m in ensemble.estimators_]
    np.testing.assert_allclose(ensemble.predict(X, qid), np.mean(members, axis=0))


def test_normalize_scores_against_a_loop():
    rng = np.random.default_rng(0)
    qid = rng.integers(0, 12, size=200)
    scores = np.round(rng.normal(size=200), 1)  # plenty of ties
    qid[qid == 11] = 11
    scores[qid == 5] = 2.0  # a constant query
    query_groups = QueryGroups(qid)
    z = normalize_scores(scores, query_groups, "zscore")
    r = normalize_scores(scores, query_groups, "rank")
    from scipy.stats import rankdata

    for q in np.unique(qid):
        rows = qid == q
        s = scores[rows]
        expected_z = (s - s.mean()) / s.std() if s.std() > 0 else np.zeros_like(s)
        np.testing.assert_allclose(z[rows], expected_z, atol=1e-12)
        n = rows.sum()
        expected_r = 1 - (rankdata(-s, method="average") - 1) / (n - 1) if n > 1 else np.full(n, 0.5)
        np.testing.assert_allclose(r[rows], expected_r, atol=1e-12)
    single = normalize_scores(np.array([3.0]), QueryGroups([7]), "rank")
    assert single.tolist() == [0.5]
    np.testing.assert_array_equal(normalize_scores(scores, query_groups, None), scores)


def test_dasalc_ens_default_and_training(data):
    X, y, qid = data
    assert isinstance(RankingEnsemble()._base(), DASALCRanker)
    ensemble = RankingEnsemble(DASALCRanker(**TINY_DASALC), n_estimators=2, random_state=0).fit(X, y, qid)
    scores = ensemble.predict(X, groups=qid)
    members = [m.predict(X, groups=qid) for m in ensemble.estimators_]
    np.testing.assert_allclose(scores, np.mean(members, axis=0))
    assert ensemble.score(X, y, qid) == pytest.approx(ndcg_score(y, scores, qid, k=10))


def test_seeds_reach_pipelines(data):
    X, y, qid = data
    pipeline = Pipeline([("scale", StandardScaler()), ("rank", _bagged_lambdamart())])
    with sklearn.config_context(enable_metadata_routing=True):
        ensemble = RankingEnsemble(pipeline, n_estimators=2, random_state=0).fit(X, y, groups=qid)
        assert np.isfinite(ensemble.predict(X, groups=qid)).all()
    assert [m.named_steps["rank"].random_state for m in ensemble.estimators_] == ensemble.seeds_.tolist()


class SpyDASALC(DASALCRanker):
    """Records the ``groups`` every ``predict`` receives (class-level log, n_jobs=1)."""

    predicted_groups = []  # noqa: RUF012

    def predict(self, X, groups=None):
        type(self).predicted_groups.append(None if groups is None else np.asarray(groups).copy())
        return super().predict(X, groups)


def test_routed_grid_search_groups_reach_members(data):
    X, y, qid = data
    SpyDASALC.predicted_groups.clear()
    cv = GroupKFold(2)
    with sklearn.config_context(enable_metadata_routing=True):
        search = GridSearchCV(
            Pipeline([("scale", StandardScaler()),
                      ("rank", RankingEnsemble(SpyDASALC(**TINY_DASALC), n_estimators=2, normalize="zscore"))]),
            {"rank__n_estimators": [1, 2]}, cv=cv, scoring=ndcg_scorer,
        ).fit(X, y, groups=qid)
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()
    seen = SpyDASALC.predicted_groups
    assert len(seen) == (1 + 2) * 2  # members x folds
    assert {tuple(g) for g in seen} == {tuple(qid[test]) for _, test in cv.split(X, y, qid)}


def test_initial_rank_reaches_setrank_members(data):
    X, y, qid = data
    ranks = np.concatenate([np.arange(1, n + 1) for n in np.bincount(qid)])
    base = SetRankRanker(d_model=8, n_heads=2, n_blocks=1, max_epochs=1, device="auto")
    ensemble = RankingEnsemble(base, n_estimators=2, random_state=0).fit(X, y, groups=qid, initial_rank=ranks)
    assert all(m.uses_initial_rank_ for m in ensemble.estimators_)
    plain = ensemble.predict(X, groups=qid, initial_rank=ranks)
    with sklearn.config_context(enable_metadata_routing=True):
        routed = clone(ensemble).fit(X, y, groups=qid, initial_rank=ranks)
        np.testing.assert_array_equal(routed.predict(X, groups=qid, initial_rank=ranks), plain)
        assert routed.score(X, y, groups=qid, initial_rank=ranks) == pytest.approx(ndcg_score(y, plain, qid, k=10))


def test_pickle_and_clone(data):
    X, y, qid = data
    ensemble = RankingEnsemble(_bagged_lambdamart(), n_estimators=2, random_state=0).fit(X, y, qid)
    restored = pickle.loads(pickle.dumps(ensemble))
    np.testing.assert_array_equal(restored.predict(X, qid), ensemble.predict(X, qid))
    fresh = clone(ensemble)
    assert not hasattr(fresh, "estimators_") and fresh.get_params()["n_estimators"] == 2


class NoSeedRanker(BaseRanker):
    def fit(self, X, y, groups=None):
        return self

    def predict(self, X, groups=None):
        return np.zeros(len(X))


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"n_estimators": 0}, "'n_estimators' parameter"),
        ({"normalize": "minmax"}, "'normalize' parameter"),
        ({"estimator": NoSeedRanker()}, "no random_state parameter"),
        ({"estimator": "dasalc"}, "'estimator' parameter of RankingEnsemble"),
    ],
)
def test_bad_parameters(data, params, match):
    X, y, qid = data
    with pytest.raises(ValueError, match=match):
        RankingEnsemble(**{"estimator": _bagged_lambdamart(), **params}).fit(X, y, qid)


# tests/test_common.py runs the contract suite on RankingEnsemble over LambdaMART (pointwise members).
# Over a list-context ranker (DASALC-ens) the ensemble must carry the members' ranker tags; the
# ranker checks are driven by them, and only scikit-learn's check_methods_subset_invariance fails,
# for the same reason as DASALCRanker's.
@pytest.mark.filterwarnings("ignore::sklearn_ltr.base.MissingGroupsWarning")
@parametrize_with_checks(
    [RankingEnsemble(DASALCRanker(**TINY_DASALC), n_estimators=2, random_state=0)],
    expected_failed_checks=lambda est: {
        "check_methods_subset_invariance": "list context (DASALC members)",
        "check_sample_weights_not_overwritten": "per-query sample_weight (see tests/test_common.py)",
        "check_sample_weight_equivalence_on_dense_data": "per-query sample_weight (see tests/test_common.py)",
    },
)
def test_dasalc_ens_contract(estimator, check):
    check(estimator)


def test_ensemble_carries_the_members_ranker_tags():
    from sklearn_ltr.utils import get_ranker_tags

    assert get_ranker_tags(RankingEnsemble(DASALCRanker())).list_context
    assert not get_ranker_tags(RankingEnsemble(LambdaMARTRanker())).list_context
    setrank = get_ranker_tags(RankingEnsemble(SetRankRanker()))
    assert setrank.extra_predict_inputs == ("initial_rank",)

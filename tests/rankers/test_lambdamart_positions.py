"""LambdaMARTRanker from clicks with display positions: LightGBM's unbiased lambdarank."""

import pickle

import lightgbm
import numpy as np
import pytest
import sklearn
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, GroupKFold
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_ltr import ndcg_scorer
from sklearn_ltr.datasets import make_ranking, simulate_clicks
from sklearn_ltr.metrics import ndcg_score
from sklearn_ltr.rankers import LambdaMARTRanker
from sklearn_ltr.utils._sklearn_compat import InvalidParameterError

SMALL = {"n_estimators": 15, "num_leaves": 7, "min_child_samples": 5, "n_jobs": 1, "random_state": 0}


@pytest.fixture(scope="module")
def click_log():
    """One result page per query (rows interleaved across queries): X, clicks, qid, positions."""
    X, y, qid = make_ranking(n_queries=80, n_features=8, shuffle=True, random_state=0)
    positions, clicks = simulate_clicks(y, qid, w=0.5, y_max=4, random_state=0)
    return X, clicks, qid, positions


def _sessions(X, y, qid, *, w, n_sessions, seed):
    """``n_sessions`` result pages of every query, each its own list: rows, clicks, positions, session ids."""
    rng = np.random.default_rng(seed)
    pages = [simulate_clicks(y, qid, w=w, y_max=4, random_state=rng) for _ in range(n_sessions)]
    positions = np.concatenate([p for p, _ in pages])
    clicks = np.concatenate([c for _, c in pages])
    sessions = np.concatenate([qid * n_sessions + s for s in range(n_sessions)])
    return np.tile(X, (n_sessions, 1)), clicks, positions, sessions


def test_positions_train_lightgbms_unbiased_lambdarank_exactly(click_log):
    X, clicks, qid, positions = click_log
    params = {**SMALL, "lambdarank_position_bias_regularization": 0.5}
    ranker = LambdaMARTRanker(**params).fit(X, clicks, groups=qid, positions=positions)
    # What a LightGBM user writes: rows sorted by query (each query's rows in canonical order: by the
    # features, then the label, then the position, as numbers), positions on the Dataset.
    order = np.array(sorted(range(len(qid)), key=lambda i: (qid[i], *X[i].tolist(), clicks[i], positions[i])))
    sizes = np.unique(qid[order], return_counts=True)[1]
    train = lightgbm.Dataset(X[order], clicks[order], group=sizes, position=positions[order])
    booster = lightgbm.train({"objective": "lambdarank", "num_leaves": 7, "min_data_in_leaf": 5, "num_threads": 1,
                              "seed": 0, "verbose": -1, "lambdarank_position_bias_regularization": 0.5},
                             train, num_boost_round=15)
    np.testing.assert_array_equal(ranker.predict(X), booster.predict(X))
    # ... which is another model than plain lambdarank on the clicks ...
    plain = LambdaMARTRanker(**params).fit(X, clicks, groups=qid)
    assert np.abs(ranker.predict(X) - plain.predict(X)).max() > 0.1
    # ... and the penalty on the biases is used.
    looser = LambdaMARTRanker(**SMALL).fit(X, clicks, groups=qid, positions=positions)
    assert np.abs(ranker.predict(X) - looser.predict(X)).max() > 0.01
    # Positions are categories (one bias per distinct value): other numbers for the same
    # display ranks train the same model.
    shifted = LambdaMARTRanker(**params).fit(X, clicks, groups=qid, positions=positions + 100)
    np.testing.assert_array_equal(shifted.predict(X), ranker.predict(X))


def test_positions_help_on_clicks_from_a_random_logging_ranker():
    """Displayed in random order (w = 0), ten pages per query, examination 1/position.

    Measured over five seeds of the click log: NDCG@10 0.570-0.582 without positions,
    0.577-0.611 with them (gain +0.019 to +0.037).
    """
    X, y, qid = make_ranking(n_queries=600, n_features=20, random_state=0)
    train = qid < 400
    X_log, clicks, positions, sessions = _sessions(X[train], y[train], qid[train], w=0.0, n_sessions=10, seed=0)
    params = {"n_estimators": 100, "learning_rate": 0.05, "n_jobs": 1, "random_state": 0}
    plain = LambdaMARTRanker(**params).fit(X_log, clicks, groups=sessions)
    unbiased = LambdaMARTRanker(**params).fit(X_log, clicks, groups=sessions, positions=positions)
    test = ~train
    plain_ndcg = ndcg_score(y[test], plain.predict(X[test]), qid[test], k=10)
    unbiased_ndcg = ndcg_score(y[test], unbiased.predict(X[test]), qid[test], k=10)
    assert unbiased_ndcg > plain_ndcg + 0.01, (unbiased_ndcg, plain_ndcg)


class PositionsSpy(LambdaMARTRanker):
    """Records the query ids and positions each fit receives."""

    seen = []  # noqa: RUF012

    def fit(self, X, y, groups=None, *, positions=None, **kwargs):
        PositionsSpy.seen.append((np.asarray(groups), None if positions is None else np.asarray(positions)))
        return super().fit(X, y, groups, positions=positions, **kwargs)


def test_positions_are_routed_through_pipeline_and_grid_search(click_log):
    X, clicks, qid, positions = click_log
    PositionsSpy.seen.clear()
    with sklearn.config_context(enable_metadata_routing=True):
        # Requested by default, like groups ...
        Pipeline([("scale", StandardScaler()), ("rank", PositionsSpy(**SMALL))]).fit(
            X, clicks, groups=qid, positions=positions)
        # ... and set_fit_request(positions=True) says it explicitly.
        ranker = PositionsSpy(**SMALL).set_fit_request(positions=True)
        pipe = Pipeline([("scale", StandardScaler()), ("rank", ranker)])
        search = GridSearchCV(pipe, {"rank__num_leaves": [3, 7]}, cv=GroupKFold(2), scoring=ndcg_scorer)
        search.fit(X, clicks, groups=qid, positions=positions)
        # Not requested: the positions are refused rather than silently dropped.
        unrequested = Pipeline([("rank", PositionsSpy(**SMALL).set_fit_request(positions=False))])
        with pytest.raises(TypeError, match="positions"):
            unrequested.fit(X, clicks, groups=qid, positions=positions)
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()
    assert len(PositionsSpy.seen) == 1 + 4 + 1  # the pipeline, 2 candidates x 2 folds, the refit
    for groups, seen_positions in PositionsSpy.seen:
        np.testing.assert_array_equal(seen_positions, positions[np.isin(qid, groups)])
    assert len(PositionsSpy.seen[1][1]) < len(positions)  # a fold's fit saw its own rows only


def test_clone_pickle_and_eval_set(click_log):
    X, clicks, qid, positions = click_log
    ranker = LambdaMARTRanker(**SMALL, lambdarank_position_bias_regularization=2.0)
    assert clone(ranker).get_params()["lambdarank_position_bias_regularization"] == 2.0
    train, valid = qid < 60, qid >= 60
    # Validation queries need no positions: LightGBM's NDCG on them scores the trees alone.
    fitted = ranker.set_params(n_estimators=200, early_stopping_rounds=3).fit(
        X[train], clicks[train], groups=qid[train], positions=positions[train],
        eval_set=[(X[valid], clicks[valid], qid[valid])])
    assert fitted.best_iteration_ is not None and fitted.n_estimators_ == fitted.best_iteration_ < 200
    restored = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(restored.predict(X), fitted.predict(X))
    refit = clone(fitted).fit(X[train], clicks[train], groups=qid[train], positions=positions[train],
                              eval_set=[(X[valid], clicks[valid], qid[valid])])
    np.testing.assert_array_equal(refit.predict(X), fitted.predict(X))


def test_only_relative_query_weights_matter(click_log):
    """LightGBM's Newton step on the biases is not scale-invariant; the estimator rescales the weights to mean 1."""
    X, clicks, qid, positions = click_log
    plain = LambdaMARTRanker(**SMALL).fit(X, clicks, groups=qid, positions=positions)
    uniform = LambdaMARTRanker(**SMALL).fit(X, clicks, groups=qid, positions=positions,
                                            sample_weight=np.full(len(qid), 3.0))
    np.testing.assert_array_equal(uniform.predict(X), plain.predict(X))
    uneven = np.where(qid % 2 == 1, 5.0, 0.2)
    weighted = LambdaMARTRanker(**SMALL).fit(X, clicks, groups=qid, positions=positions, sample_weight=uneven)
    rescaled = LambdaMARTRanker(**SMALL).fit(X, clicks, groups=qid, positions=positions, sample_weight=uneven * 7)
    np.testing.assert_array_equal(rescaled.predict(X), weighted.predict(X))
    assert not np.allclose(weighted.predict(X), plain.predict(X))


@pytest.mark.parametrize(("change", "match"), [
    ({"value": 0}, r"1-based display ranks; got a value of 0 \(< 1\)\. Add 1 to 0-based"),
    ({"value": -3}, "1-based display ranks"),
    ({"value": np.nan}, "missing positions"),
    ({"value": 2.5}, "whole-number display ranks 1, 2, 3, ...; got 2.5"),
    ({"value": 2.0**40}, "below 2\\*\\*31"),
    ({"length": 7}, "positions has 7 entries but X has"),
    ({"strings": True}, "positions must be a 1-D array of whole numbers"),
    ({"two_d": True}, "bias features .2-D. need TwoTowerDebiasedRanker"),
])
def test_bad_positions(click_log, change, match):
    X, clicks, qid, positions = click_log
    positions = positions.astype(float)
    if "value" in change:
        positions[3] = change["value"]
    if "length" in change:
        positions = positions[: change["length"]]
    if "strings" in change:
        positions = np.array(["top"] * len(X))
    if "two_d" in change:
        positions = np.column_stack([positions, positions])
    with pytest.raises(ValueError, match=match):
        LambdaMARTRanker(**SMALL).fit(X, clicks, groups=qid, positions=positions)


def test_bad_regularization_and_clash_with_lgbm_params(click_log):
    X, clicks, qid, positions = click_log
    with pytest.raises(InvalidParameterError, match="'lambdarank_position_bias_regularization' parameter"):
        LambdaMARTRanker(lambdarank_position_bias_regularization=-1.0).fit(X, clicks, qid, positions=positions)
    clash = LambdaMARTRanker(lgbm_params={"lambdarank_position_bias_regularization": 1.0})
    with pytest.raises(ValueError, match=r"lgbm_params sets \['lambdarank_position_bias_regularization'\]"):
        clash.fit(X, clicks, qid, positions=positions)


def test_positions_on_dask_input_are_refused(click_log):
    da = pytest.importorskip("dask.array")
    X, clicks, qid, positions = click_log
    with pytest.raises(ValueError, match=r"positions \(unbiased lambdarank\) is not supported on Dask input"):
        LambdaMARTRanker(**SMALL).fit(da.from_array(X), da.from_array(clicks), groups=da.from_array(qid),
                                      positions=positions)

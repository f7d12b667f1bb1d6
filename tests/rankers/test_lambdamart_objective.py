"""LambdaMARTRanker's ``objective`` (lambdarank, rank_xendcg) and ``init_score``: equality with LightGBM's own
fits, routing of the first-stage scores, refused combinations and bad input, export of an XE-NDCG model."""

import lightgbm
import numpy as np
import pytest
import sklearn
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, GroupKFold
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer

from sklearn_ltr import ndcg_scorer
from sklearn_ltr.datasets import make_ranking
from sklearn_ltr.rankers import LambdaMARTRanker

SMALL = {"n_estimators": 15, "num_leaves": 7, "min_child_samples": 5, "n_jobs": 1, "random_state": 0}


@pytest.fixture(scope="module")
def data():
    """Queries with interleaved rows, a first-stage score per row (a noisy function of the label)."""
    X, y, groups = make_ranking(n_queries=40, n_features=8, shuffle=True, random_state=0)
    rng = np.random.default_rng(1)
    first_stage = y + rng.normal(scale=1.5, size=y.shape[0])
    return X, y, groups, first_stage


def _by_query(X, y, groups, *per_row):
    """Rows sorted by query id, then by features, label and the per-row values (the canonical order), by hand."""
    keys = [(groups[i], *X[i], y[i], *(values[i] for values in per_row)) for i in range(len(y))]
    order = np.array(sorted(range(len(keys)), key=keys.__getitem__))
    _, sizes = np.unique(groups[order], return_counts=True)
    return order, sizes


def _lgbm(objective, **extra):
    return lightgbm.LGBMRanker(objective=objective, verbose=-1, **SMALL, **extra)


@pytest.mark.parametrize("objective", ["lambdarank", "rank_xendcg"])
def test_objective_equals_lgbm_ranker(data, objective):
    X, y, groups, _ = data
    ranker = LambdaMARTRanker(objective=objective, **SMALL).fit(X, y, groups)
    order, sizes = _by_query(X, y, groups)
    expected = _lgbm(objective).fit(X[order], y[order], group=sizes)
    np.testing.assert_array_equal(ranker.predict(X), expected.predict(X))
    assert ranker.booster_.params["objective"] == objective


def test_xendcg_is_not_lambdarank_and_follows_random_state(data):
    X, y, groups, _ = data
    xendcg = LambdaMARTRanker(objective="rank_xendcg", **SMALL).fit(X, y, groups).predict(X)
    assert not np.allclose(xendcg, LambdaMARTRanker(**SMALL).fit(X, y, groups).predict(X))
    # No bagging nor feature sampling: only the objective's gamma draws depend on the seed.
    reseeded = LambdaMARTRanker(objective="rank_xendcg", **{**SMALL, "random_state": 1}).fit(X, y, groups)
    assert not np.allclose(reseeded.predict(X), xendcg)
    again = LambdaMARTRanker(objective="rank_xendcg", **SMALL).fit(X, y, groups).predict(X)
    np.testing.assert_array_equal(again, xendcg)


@pytest.mark.parametrize("objective", ["lambdarank", "rank_xendcg"])
def test_init_score_equals_lightgbm_train(data, objective):
    """``fit(..., init_score=s)`` trains what ``lightgbm.train`` trains on a Dataset with ``init_score=s``."""
    X, y, groups, first_stage = data
    ranker = LambdaMARTRanker(objective=objective, **SMALL).fit(X, y, groups, init_score=first_stage)
    order, sizes = _by_query(X, y, groups, first_stage)
    params = {"objective": objective, "num_leaves": 7, "min_data_in_leaf": 5, "num_threads": 1, "seed": 0,
              "verbose": -1}
    train_set = lightgbm.Dataset(X[order], y[order], group=sizes, init_score=first_stage[order])
    booster = lightgbm.train(params, train_set, num_boost_round=15)
    np.testing.assert_array_equal(ranker.predict(X), booster.predict(X))  # the trees alone, as LightGBM
    without = LambdaMARTRanker(objective=objective, **SMALL).fit(X, y, groups).predict(X)
    assert not np.allclose(ranker.predict(X), without)


def test_init_score_follows_its_rows(data):
    """The first-stage scores are sorted with their rows: shuffling rows and scores together changes nothing."""
    X, y, groups, first_stage = data
    expected = LambdaMARTRanker(objective="rank_xendcg", **SMALL).fit(X, y, groups, init_score=first_stage)
    perm = np.random.default_rng(3).permutation(len(y))
    shuffled = LambdaMARTRanker(objective="rank_xendcg", **SMALL).fit(
        X[perm], y[perm], groups[perm], init_score=first_stage[perm])
    np.testing.assert_array_equal(shuffled.predict(X), expected.predict(X))


@pytest.mark.parametrize("objective", ["lambdarank", "rank_xendcg"])
def test_init_score_val_and_early_stopping_equal_lightgbm(data, objective):
    X, y, groups, first_stage = data
    train, val = groups < 28, groups >= 28
    params = {**SMALL, "n_estimators": 60, "early_stopping_rounds": 3, "eval_at": (5,)}
    ranker = LambdaMARTRanker(objective=objective, **params).fit(
        X[train], y[train], groups[train], init_score=first_stage[train],
        X_val=X[val], y_val=y[val], groups_val=groups[val], init_score_val=first_stage[val])
    order, sizes = _by_query(X[train], y[train], groups[train], first_stage[train])
    v_order, v_sizes = _by_query(X[val], y[val], groups[val], first_stage[val])
    expected = lightgbm.LGBMRanker(objective=objective, verbose=-1, **{**SMALL, "n_estimators": 60},
                                   early_stopping_round=3)
    expected.fit(X[train][order], y[train][order], group=sizes, init_score=first_stage[train][order],
                 eval_X=(X[val][v_order],), eval_y=(y[val][v_order],), eval_group=[v_sizes],
                 eval_init_score=[first_stage[val][v_order]], eval_names=["valid"], eval_at=[5])
    assert ranker.evals_result_["valid"]["ndcg@5"] == expected.evals_result_["valid"]["ndcg@5"]
    assert ranker.best_iteration_ == expected.best_iteration_
    np.testing.assert_array_equal(ranker.predict(X), expected.predict(X))


def test_init_score_routed_through_pipeline(data):
    X, y, groups, first_stage = data
    direct = LambdaMARTRanker(**SMALL).fit(X, y, groups, init_score=first_stage).predict(X)
    with sklearn.config_context(enable_metadata_routing=True):
        pipeline = Pipeline([("identity", FunctionTransformer()), ("rank", LambdaMARTRanker(**SMALL))])
        pipeline.fit(X, y, groups=groups, init_score=first_stage)
        np.testing.assert_array_equal(pipeline.predict(X, groups=groups), direct)


def test_init_score_split_with_the_rows_in_a_grid_search(data):
    """GridSearchCV with GroupKFold hands each fold's fit the first-stage scores of its own training rows."""
    X, y, groups, first_stage = data
    cv = GroupKFold(n_splits=3)
    grid = {"num_leaves": [3, 7]}
    with sklearn.config_context(enable_metadata_routing=True):
        search = GridSearchCV(LambdaMARTRanker(objective="rank_xendcg", **SMALL), grid, cv=cv, scoring=ndcg_scorer,
                              refit=False)
        search.fit(X, y, groups=groups, init_score=first_stage)
        for i, (train, test) in enumerate(cv.split(X, y, groups)):
            for j, leaves in enumerate(grid["num_leaves"]):
                fold = LambdaMARTRanker(objective="rank_xendcg", **{**SMALL, "num_leaves": leaves}).fit(
                    X[train], y[train], groups[train], init_score=first_stage[train])
                expected = ndcg_scorer(fold, X[test], y[test], groups=groups[test])
                assert search.cv_results_[f"split{i}_test_score"][j] == pytest.approx(expected, abs=0, rel=0)
    assert LambdaMARTRanker().get_metadata_routing().fit.requests["init_score"] is True


@pytest.mark.parametrize("params", [
    {"lambdarank_truncation_level": 10},
    {"position_bias": "unbiased_lambdamart"},
    {"lambdarank_position_bias_regularization": 1.0},
])
def test_lambdarank_only_parameters_refused_with_xendcg(data, params):
    X, y, groups, _ = data
    name = next(iter(params))
    with pytest.raises(ValueError, match=rf"{name}=.* applies only to objective='lambdarank'"):
        LambdaMARTRanker(objective="rank_xendcg", **SMALL, **params).fit(X, y, groups)
    LambdaMARTRanker(objective="lambdarank", **{**SMALL, "n_estimators": 2}, **params).fit(
        X, (y > 1).astype(int), groups, positions=np.ones(len(y)))


@pytest.mark.parametrize("name", ["positions", "propensity"])
def test_click_inputs_refused_with_xendcg(data, name):
    X, y, groups, _ = data
    values = np.ones(len(y)) if name == "positions" else np.full(len(y), 0.5)
    with pytest.raises(ValueError, match=rf"fit got {name}, which only objective='lambdarank' can use"):
        LambdaMARTRanker(objective="rank_xendcg", **SMALL).fit(X, (y > 1).astype(int), groups, **{name: values})


def test_objective_in_lgbm_params(data):
    X, y, groups, _ = data
    same = LambdaMARTRanker(objective="rank_xendcg", lgbm_params={"objective": "xendcg"}, **SMALL).fit(X, y, groups)
    plain = LambdaMARTRanker(objective="rank_xendcg", **SMALL).fit(X, y, groups)
    np.testing.assert_array_equal(same.predict(X), plain.predict(X))
    LambdaMARTRanker(lgbm_params={"objective": "lambdarank"}, **SMALL).fit(X, y, groups)
    for objective, lgbm_params in [("rank_xendcg", {"objective": "lambdarank"}),
                                   ("lambdarank", {"objective": "rank_xendcg"}),
                                   ("lambdarank", {"application": "regression"})]:
        key = next(iter(lgbm_params))
        with pytest.raises(ValueError, match=rf"lgbm_params sets {key}=.*conflicts with objective='{objective}'"):
            LambdaMARTRanker(objective=objective, lgbm_params=lgbm_params, **SMALL).fit(X, y, groups)


def test_bad_objective(data):
    X, y, groups, _ = data
    ranker = LambdaMARTRanker(objective="xendcg")
    assert ranker.objective == "xendcg"  # stored verbatim, checked in fit
    with pytest.raises(ValueError, match="'objective' parameter of LambdaMARTRanker must be a str among"):
        ranker.fit(X, y, groups)


@pytest.mark.parametrize(("change", "match"), [
    (lambda s, n: s[:-1], r"init_score has \d+ entries but X has \d+ rows"),
    (lambda s, n: np.where(np.arange(n) == 3, np.nan, s), "init_score contains NaN or infinite values"),
    (lambda s, n: np.stack([s, s], axis=1), "init_score must be 1-D"),
    (lambda s, n: np.array(["high"] * n), "init_score must be a 1-D array of numbers"),
])
def test_bad_init_score(data, change, match):
    X, y, groups, first_stage = data
    with pytest.raises(ValueError, match=match):
        LambdaMARTRanker(**SMALL).fit(X, y, groups, init_score=change(first_stage, len(y)))


def test_init_score_validation_combinations(data):
    X, y, groups, first_stage = data
    train, val = groups < 28, groups >= 28
    fit_args = (X[train], y[train], groups[train])
    val_set = {"X_val": X[val], "y_val": y[val], "groups_val": groups[val]}
    ranker = LambdaMARTRanker(**SMALL)
    with pytest.raises(ValueError, match="init_score but not init_score_val"):
        ranker.fit(*fit_args, init_score=first_stage[train], **val_set)
    with pytest.raises(ValueError, match="init_score_val without init_score"):
        ranker.fit(*fit_args, init_score_val=first_stage[val], **val_set)
    with pytest.raises(ValueError, match="init_score_val without X_val"):
        ranker.fit(*fit_args, init_score=first_stage[train], init_score_val=first_stage[val])
    with pytest.raises(ValueError, match=r"init_score_val has \d+ entries but X_val has"):
        ranker.fit(*fit_args, init_score=first_stage[train], init_score_val=first_stage[val][:-2], **val_set)
    with pytest.raises(ValueError, match="eval_set entries have no first-stage scores"):
        ranker.fit(*fit_args, init_score=first_stage[train], eval_set=[(X[val], y[val], groups[val])])
    # The training data as an eval_set entry is LightGBM's training set, with its init_score.
    ranker.fit(*fit_args, init_score=first_stage[train], eval_set=[fit_args])


def test_clone_keeps_objective():
    ranker = LambdaMARTRanker(objective="rank_xendcg", n_estimators=3)
    assert clone(ranker).get_params()["objective"] == "rank_xendcg"


def test_xendcg_model_exports(data, tmp_path):
    """The trees of a rank_xendcg model (trained from init_score) are ordinary: XGBoost and ONNX score them."""
    from engine_evaluators import xgboost_scores

    from sklearn_ltr.export import OnnxScorer, to_onnx, to_xgboost_json

    pytest.importorskip("xgboost")
    pytest.importorskip("onnxruntime")
    X, y, groups, first_stage = data
    ranker = LambdaMARTRanker(objective="rank_xendcg", **SMALL).fit(X, y, groups, init_score=first_stage)
    X32 = X.astype(np.float32)
    expected = ranker.predict(X32)
    np.testing.assert_allclose(xgboost_scores(to_xgboost_json(ranker), X32, tmp_path), expected, atol=1e-5)
    onnx_scores = OnnxScorer(to_onnx(ranker), n_threads=1).predict(X32, groups=groups)
    np.testing.assert_allclose(onnx_scores, expected, atol=1e-5)


def test_init_score_reaches_the_pairwise_click_objective(data):
    """With ``propensity`` (this library's objective), boosting starts from ``init_score`` too."""
    X, y, groups, first_stage = data
    clicks = (y > 1).astype(int)
    ranker = LambdaMARTRanker(**SMALL)
    # The objective's gradients are those of the pairs at init_score + trees: a zero init_score changes nothing,
    # another one changes the trees.
    started = ranker.fit(X, clicks, groups, propensity=np.full(len(y), 0.5), init_score=first_stage)
    from_zero = clone(ranker).fit(X, clicks, groups, propensity=np.full(len(y), 0.5), init_score=np.zeros(len(y)))
    plain = clone(ranker).fit(X, clicks, groups, propensity=np.full(len(y), 0.5))
    np.testing.assert_array_equal(from_zero.predict(X), plain.predict(X))
    assert not np.array_equal(started.predict(X), plain.predict(X))


def test_init_score_refused_on_dask_input(data):
    da = pytest.importorskip("dask.array")
    X, y, groups, first_stage = data
    with pytest.raises(ValueError, match="init_score is not supported on Dask input"):
        LambdaMARTRanker(**SMALL).fit(da.from_array(X), da.from_array(y), groups=da.from_array(groups),
                                      init_score=first_stage)


def test_xendcg_draws_follow_the_sorted_query_ids(data):
    """One gamma stream per query, in the order of the sorted ids: ids in the same order give the same model,
    ids that sort in another order give other draws (as documented); lambdarank has no draws."""
    X, y, groups, _ = data
    same_order = np.array([f"q{g:04d}" for g in groups])
    other_order = np.array([f"{(g * 7919) % 1000:03d}-{g}" for g in groups])
    for objective, other_equal in (("lambdarank", True), ("rank_xendcg", False)):
        base = LambdaMARTRanker(objective=objective, **SMALL).fit(X, y, groups).predict(X)
        renamed = LambdaMARTRanker(objective=objective, **SMALL).fit(X, y, same_order).predict(X)
        np.testing.assert_array_equal(renamed, base)
        reordered = LambdaMARTRanker(objective=objective, **SMALL).fit(X, y, other_order).predict(X)
        assert np.array_equal(reordered, base) is other_equal

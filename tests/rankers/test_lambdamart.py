"""LambdaMARTRanker: equality with a hand-sorted LGBMRanker, real data, bad input."""

import doctest
import pickle

import lightgbm
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.pipeline import Pipeline

import sklearn_ltr.rankers._lambdamart
from sklearn_ltr.base import MissingGroupsWarning
from sklearn_ltr.datasets import load_lightgbm_ranking, load_svmlight_ranking, make_ranking
from sklearn_ltr.metrics import ndcg_score
from sklearn_ltr.preprocessing import Log1pTransformer
from sklearn_ltr.rankers import LambdaMARTRanker
from sklearn_ltr.utils._sklearn_compat import InvalidParameterError

SMALL = {"n_estimators": 15, "num_leaves": 7, "min_child_samples": 5, "n_jobs": 1, "random_state": 0}


def _lgbm_kwargs(**params):
    """LGBMRanker arguments equal to LambdaMARTRanker(**params)'s, written out by hand."""
    kwargs = {"objective": "lambdarank", "verbose": -1, "lambdarank_truncation_level": 30}
    kwargs.update({k: v for k, v in params.items() if k not in ("early_stopping_rounds", "lgbm_params")})
    if params.get("early_stopping_rounds"):
        kwargs["early_stopping_round"] = params["early_stopping_rounds"]
    kwargs.update(params.get("lgbm_params") or {})
    kwargs.pop("eval_at", None)
    return kwargs


def _hand_sort(X, y, groups):
    """What a LightGBM user does by hand: sort by query id, run lengths; each query's rows in canonical order.

    The canonical order, written out independently of the library's: each row's features as
    numbers, first feature first (NaN after every number), then its label.
    """
    dense = X.toarray() if sp.issparse(X) else np.asarray(X)

    def number(value):
        return (1, 0.0) if np.isnan(value) else (0, float(value))

    keys = [(str(q) if groups.dtype.kind in "US" else q, *map(number, dense[i]), float(y[i]))
            for i, q in enumerate(groups)]
    order = np.array(sorted(range(len(keys)), key=keys.__getitem__))
    _, sizes = np.unique(groups[order], return_counts=True)
    return X[order], np.asarray(y)[order], sizes


def _hand_sorted_lgbm(X, y, groups, *, eval_set=(), eval_at=(1, 3, 5, 10), **params):
    X_s, y_s, sizes = _hand_sort(X, y, groups)
    sorted_sets = [_hand_sort(*entry) for entry in eval_set]
    eval_kwargs = {}
    if sorted_sets:
        eval_kwargs = {
            "eval_X": tuple(s[0] for s in sorted_sets),
            "eval_y": tuple(s[1] for s in sorted_sets),
            "eval_group": [s[2] for s in sorted_sets],
        }
    model = lightgbm.LGBMRanker(**_lgbm_kwargs(**params))
    return model.fit(X_s, y_s, group=sizes, eval_at=list(eval_at), **eval_kwargs)


@pytest.fixture(scope="module")
def interleaved():
    """Synthetic queries in shuffled row order with string ids that sort unlike the integers."""
    X, y, groups = make_ranking(n_queries=40, n_features=8, shuffle=True, random_state=0)
    names = np.array([f"query-{(7 * g) % 40:02d}" for g in range(40)])
    return X, y, names[groups]


def test_predictions_equal_hand_sorted_lgbm(interleaved):
    X, y, groups = interleaved
    assert not np.all(groups[1:] >= groups[:-1])  # rows really are interleaved
    ranker = LambdaMARTRanker(**SMALL).fit(X, y, groups)
    reference = _hand_sorted_lgbm(X, y, groups, **SMALL)
    np.testing.assert_array_equal(ranker.predict(X), reference.predict(X))
    np.testing.assert_array_equal(ranker.feature_importances_, reference.feature_importances_)
    assert ranker.booster_.model_to_string() == reference.booster_.model_to_string()
    assert ranker.n_features_in_ == 8 and ranker.n_estimators_ == 15 and ranker.best_iteration_ is None
    assert isinstance(ranker.model_, lightgbm.LGBMRanker)


def test_eval_set_and_early_stopping_equal_hand_sorted(interleaved):
    X, y, groups = interleaved
    train, valid = np.isin(groups, np.unique(groups)[:30]), np.isin(groups, np.unique(groups)[30:])
    params = {**SMALL, "n_estimators": 200, "learning_rate": 0.3, "early_stopping_rounds": 3}
    ranker = LambdaMARTRanker(**params, eval_at=(2, 5))
    ranker.fit(X[train], y[train], groups[train], eval_set=[(X[valid], y[valid], groups[valid])])
    reference = _hand_sorted_lgbm(
        X[train], y[train], groups[train], eval_set=[(X[valid], y[valid], groups[valid])], eval_at=(2, 5), **params
    )
    assert ranker.best_iteration_ == reference.best_iteration_ < 200
    assert ranker.evals_result_ == reference.evals_result_
    assert list(ranker.evals_result_["valid_0"]) == ["ndcg@2", "ndcg@5"]
    np.testing.assert_array_equal(ranker.predict(X[valid]), reference.predict(X[valid]))


def test_training_data_in_eval_set_is_reused(interleaved):
    X, y, groups = interleaved
    ranker = LambdaMARTRanker(**SMALL).fit(X, y, groups, eval_set=[(X, y, groups)], eval_names=["train"])
    history = ranker.evals_result_["train"]["ndcg@10"]
    assert len(history) == 15 and history[-1] > history[0]
    # LightGBM's own NDCG on the training set equals ours with stable tie-breaking, in the order it trains on.
    X_s, y_s, sizes = _hand_sort(X, y, groups)
    ours = ndcg_score(y_s, ranker.predict(X_s), np.repeat(np.arange(len(sizes)), sizes), k=10, ties="stable")
    assert history[-1] == pytest.approx(ours, abs=1e-12)
    # A bare (X_val, y_val, groups_val) triple is accepted too.
    single = LambdaMARTRanker(**SMALL).fit(X, y, groups, eval_set=(X[:50], y[:50], groups[:50]))
    assert list(single.evals_result_) == ["valid_0"]


def test_sparse_and_nan_features(interleaved):
    X, y, groups = interleaved
    X = np.where(X > np.quantile(X, 0.7), X, 0).astype(np.float64)
    for matrix in (sp.csr_matrix(X), sp.csc_matrix(X)):
        sparse = LambdaMARTRanker(**SMALL).fit(matrix, y, groups)
        reference = _hand_sorted_lgbm(matrix, y, groups, **SMALL)
        np.testing.assert_array_equal(sparse.predict(matrix), reference.predict(matrix))
        np.testing.assert_array_equal(sparse.predict(X), sparse.predict(matrix))
    X_nan = X.copy()
    X_nan[::7, 0] = np.nan
    ranker = LambdaMARTRanker(**SMALL).fit(X_nan, y, groups)
    np.testing.assert_array_equal(ranker.predict(X_nan), _hand_sorted_lgbm(X_nan, y, groups, **SMALL).predict(X_nan))
    assert np.isfinite(ranker.predict(X_nan)).all()
    with pytest.raises(ValueError, match="infinity"):
        LambdaMARTRanker(**SMALL).fit(np.where(np.isnan(X_nan), np.inf, X_nan), y, groups)


def test_predict_ignores_groups(interleaved):
    X, y, groups = interleaved
    ranker = LambdaMARTRanker(**SMALL).fit(X, y, groups)
    np.testing.assert_array_equal(ranker.predict(X, groups=groups), ranker.predict(X))
    np.testing.assert_array_equal(ranker.predict(X[::-1])[::-1], ranker.predict(X))
    with pytest.raises(ValueError, match="groups has 5 entries"):
        ranker.predict(X, groups=groups[:5])


def test_groups_none_warns_and_trains_one_query(interleaved):
    X, y, _ = interleaved
    with pytest.warns(MissingGroupsWarning, match="enable_metadata_routing"):
        ranker = LambdaMARTRanker(**SMALL).fit(X, y)
    one_query = _hand_sorted_lgbm(X, y, np.zeros(len(y), dtype=int), **SMALL)
    np.testing.assert_array_equal(ranker.predict(X), one_query.predict(X))


def test_random_state_reproducible(interleaved):
    X, y, groups = interleaved
    params = {**SMALL, "subsample": 0.7, "subsample_freq": 1, "colsample_bytree": 0.6}
    first = LambdaMARTRanker(**params).fit(X, y, groups).predict(X)
    np.testing.assert_array_equal(LambdaMARTRanker(**params).fit(X, y, groups).predict(X), first)
    other = LambdaMARTRanker(**{**params, "random_state": 1}).fit(X, y, groups).predict(X)
    assert not np.array_equal(other, first)


def test_clone_params_pickle(interleaved):
    X, y, groups = interleaved
    ranker = LambdaMARTRanker(**SMALL, lgbm_params={"max_bin": 63})
    assert ranker.get_params()["lgbm_params"] == {"max_bin": 63}
    ranker.set_params(num_leaves=5, lgbm_params={"max_bin": 31})
    copy = clone(ranker)
    assert copy.get_params() == ranker.get_params() and copy.lgbm_params is not ranker.lgbm_params
    ranker.fit(X, y, groups)
    assert not hasattr(copy, "model_")
    restored = pickle.loads(pickle.dumps(ranker))
    np.testing.assert_array_equal(restored.predict(X), ranker.predict(X))
    assert restored.score(X, y, groups) == ranker.score(X, y, groups)
    assert ranker.booster_.params["max_bin"] == 31


def test_dataframe_through_pipeline(interleaved):
    X, y, groups = interleaved
    columns = [f"f {i}" if i else "bm25" for i in range(X.shape[1])]
    frame = pd.DataFrame(np.abs(X) * 10, columns=columns)
    pipe = Pipeline([("log1p", Log1pTransformer()), ("rank", LambdaMARTRanker(**SMALL))])
    pipe.set_output(transform="pandas")
    pipe.fit(frame, y, rank__groups=groups)
    ranker = pipe.named_steps["rank"]
    assert list(ranker.feature_names_in_) == columns
    scores = pipe.predict(frame)
    reference = LambdaMARTRanker(**SMALL).fit(np.log1p(np.abs(X) * 10), y, groups)
    np.testing.assert_allclose(scores, reference.predict(np.log1p(np.abs(X) * 10)), rtol=1e-6)
    with pytest.raises(ValueError, match="feature names"):
        pipe.predict(frame.rename(columns={"bm25": "tfidf"}))


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (lambda X, y, g: (X, y - 1, g, {}), "negative labels"),
        (lambda X, y, g: (X, y + 0.5, g, {}), "whole-number relevance grades"),
        (lambda X, y, g: (X, np.where(y == 4, 31, y), g, {}), r"label 31.*covers only labels 0\.\.30"),
        (lambda X, y, g: (X, y, g[:-1], {}), "groups has 1425 entries but X has 1426 rows"),
        (lambda X, y, g: (X, y, g, {"eval_set": [(X, y)]}), r"eval_set\[0\] must be a \(X_val, y_val, groups_val\)"),
        (lambda X, y, g: (X, y, g, {"eval_set": [(X, y, None)]}), r"eval_set\[0\] has groups_val=None"),
        (lambda X, y, g: (X, y, g, {"eval_set": [(X[:, :3], y, g)]}), "expecting 8 features"),
        (lambda X, y, g: (X, y, g, {"eval_set": [(X, y, g)], "eval_names": ["a", "b"]}), "eval_names has 2"),
    ],
)
def test_bad_input_raises_before_lightgbm(interleaved, change, match):
    X, y, groups, fit_kwargs = change(*interleaved)
    with pytest.raises(ValueError, match=match):
        LambdaMARTRanker(**SMALL).fit(X, y, groups, **fit_kwargs)


def test_bad_label_gain_and_query_size():
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(40, 2)), np.arange(40) % 4
    with pytest.raises(ValueError, match=r"contains label 3, but label_gain covers only labels 0\.\.2"):
        LambdaMARTRanker(label_gain=[0, 1, 3]).fit(X, y, np.arange(40) % 5)
    LambdaMARTRanker(label_gain=[0, 1, 3, 7], n_estimators=2, min_child_samples=2).fit(X, y, np.arange(40) % 5)
    # LightGBM's lambdarank refuses queries above 10,000 rows (DCGCalculator::kMaxPosition).
    X_big, y_big = np.zeros((10_001, 2)), np.zeros(10_001)
    with pytest.raises(ValueError, match="query 'q' of y has 10001 rows; LightGBM's lambdarank accepts at most 10000"):
        LambdaMARTRanker().fit(X_big, y_big, np.array(["q"] * 10_001))
    with pytest.warns(MissingGroupsWarning), pytest.raises(ValueError, match="groups=None makes all rows one query"):
        LambdaMARTRanker().fit(X_big, y_big)
    groups_val = np.array(["v"] * 10_001)
    with pytest.raises(ValueError, match=r"query .v. of eval_set\[0\] y_val has 10001 rows"):
        LambdaMARTRanker().fit(X, y, np.arange(40) % 5, eval_set=[(X_big, y_big, groups_val)])


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"lgbm_params": {"min_data_in_leaf": 3}}, r"lgbm_params sets \['min_data_in_leaf'\]"),
        ({"lgbm_params": {"objective": "rank_xendcg"}}, "conflicts with objective='lambdarank'"),
        ({"lgbm_params": [("max_bin", 3)]}, "'lgbm_params' parameter"),
        ({"eval_at": (0, 5)}, "'eval_at' parameter"),
        ({"early_stopping_rounds": 0}, "'early_stopping_rounds' parameter"),
        ({"early_stopping_rounds": 5}, "early_stopping_rounds needs validation queries"),
        ({"label_gain": [[0, 1]]}, "'label_gain' parameter"),
    ],
)
def test_bad_parameters_raise_in_fit(interleaved, params, match):
    ranker = LambdaMARTRanker(**params)  # the constructor only stores them
    assert ranker.get_params()[next(iter(params))] is params[next(iter(params))]
    with pytest.raises(ValueError, match=match):
        ranker.fit(*interleaved)


def test_lightgbm_lambdarank_example(data_dir):
    """LightGBM's examples/lambdarank data with the LTR overview's parameters.

    Published validation NDCG@1/3/5 at the best iteration: 0.549 / 0.596 / 0.639. With
    LightGBM's default seeds (random_state=None) we observe 0.54933 / 0.59623 / 0.63942 at
    best iteration 6 (LightGBM 4.7), equal to the published figures to all three printed
    decimals, so the tolerance is their rounding, 5e-4. The figures depend on the bagging
    seed (random_state=0..3 give 0.64-0.68 NDCG@1, since early stopping after 5 rounds
    stops within the first 10 trees), so the test pins LightGBM's default seeds.

    The figures also depend on the order of the rows within each query, which LightGBM's
    lambdarank reads (like a seed): LightGBM itself, given the file's order, reproduces them;
    ``LambdaMARTRanker`` trains on each query's rows in canonical order, whatever the file's,
    and equals LightGBM given that order exactly, with figures within the spread of seeds and
    orders (0.609 / 0.650 / 0.665 at best iteration 2: early stopping after 5 rounds of a
    0.01 learning rate stops in the first trees, whose figures any seed or order moves).
    """
    root = data_dir / "lightgbm-lambdarank"
    X, y, groups = load_lightgbm_ranking(root / "rank.train", dense=False)
    X_val, y_val, groups_val = load_lightgbm_ranking(root / "rank.test", n_features=X.shape[1], dense=False)
    params = {"n_estimators": 1000, "num_leaves": 31, "min_child_samples": 50, "subsample": 0.9,
              "subsample_freq": 1, "min_child_weight": 5.0, "learning_rate": 0.01, "early_stopping_rounds": 5,
              "n_jobs": 1}

    def figures(history, best):
        return [history[f"ndcg@{k}"][best - 1] for k in (1, 3, 5)]

    sizes, val_sizes = np.unique(groups, return_counts=True)[1], np.unique(groups_val, return_counts=True)[1]
    in_file_order = lightgbm.LGBMRanker(**_lgbm_kwargs(**params)).fit(
        X, y, group=sizes, eval_X=(X_val,), eval_y=(y_val,), eval_group=[val_sizes], eval_at=[1, 3, 5])
    published = [0.549, 0.596, 0.639]
    np.testing.assert_allclose(figures(in_file_order.evals_result_["valid_0"], in_file_order.best_iteration_),
                               published, atol=5e-4)
    ranker = LambdaMARTRanker(**params, eval_at=(1, 3, 5))
    ranker.fit(X, y, groups, eval_set=[(X_val, y_val, groups_val)])
    best = ranker.best_iteration_
    reference = _hand_sorted_lgbm(X, y, groups, eval_set=[(X_val, y_val, groups_val)], eval_at=(1, 3, 5), **params)
    assert best == reference.best_iteration_ and ranker.evals_result_ == reference.evals_result_
    assert all(0.5 < value < 0.7 for value in figures(ranker.evals_result_["valid_0"], best))
    assert ranker.n_estimators_ == best  # trees after the best iteration are dropped


def test_mq2008_fold1_equals_hand_sorted(data_dir):
    fold = data_dir / "mq2008" / "Fold1"
    X, y, groups = load_svmlight_ranking(fold / "train.txt")
    X_val, y_val, groups_val = load_svmlight_ranking(fold / "vali.txt", n_features=X.shape[1])
    X_test, y_test, groups_test = load_svmlight_ranking(fold / "test.txt", n_features=X.shape[1])
    shuffle = np.random.default_rng(0).permutation(len(y))  # feed the wrapper rows in random order
    X, y, groups = X[shuffle], y[shuffle], groups[shuffle]
    params = {"n_estimators": 300, "learning_rate": 0.05, "early_stopping_rounds": 20, "n_jobs": 1}
    ranker = LambdaMARTRanker(**params, random_state=0)
    ranker.fit(X, y, groups, eval_set=[(X_val, y_val, groups_val)])
    reference = _hand_sorted_lgbm(X, y, groups, eval_set=[(X_val, y_val, groups_val)], random_state=0, **params)
    assert ranker.best_iteration_ == reference.best_iteration_ < 300
    ours, theirs = ranker.predict(X_test), reference.predict(X_test)
    np.testing.assert_array_equal(ours, theirs)
    ndcg = ndcg_score(y_test, ours, groups_test, k=10)
    assert ndcg == ndcg_score(y_test, theirs, groups_test, k=10)
    assert ranker.score(X_test, y_test, groups_test) == ndcg
    # 51 of the 156 test queries have no relevant document and score 1 (LightGBM's convention);
    # we observe 0.819 here (0.493 when such queries score 0).
    assert 0.75 < ndcg < 0.9


def test_doctests():
    results = doctest.testmod(sklearn_ltr.rankers._lambdamart, optionflags=doctest.ELLIPSIS)
    assert results.attempted > 0 and results.failed == 0


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("num_leaves", 1), ("learning_rate", 0.0), ("learning_rate", -0.1), ("subsample", 2.0),
        ("colsample_bytree", 0.0), ("reg_alpha", -1.0), ("reg_lambda", -1.0), ("n_estimators", 0),
        ("lambdarank_truncation_level", 0), ("importance_type", "x"), ("min_child_samples", -1),
        ("random_state", -1), ("random_state", "a"), ("lgbm_params", "x"), ("eval_at", (0, 5)),
        ("label_gain", [[0, 1]]), ("early_stopping_rounds", 0),
    ],
)
def test_bad_parameters_never_reach_lightgbm(interleaved, name, value, monkeypatch):
    # Refused with the parameter's name before LightGBM trains (LightGBM would name its own alias and
    # config_auto.cpp, or, for importance_type, train fully and then raise KeyError).
    import lightgbm

    def never(*args, **kwargs):
        raise AssertionError("LightGBM was called")

    monkeypatch.setattr(lightgbm.LGBMRanker, "fit", never)
    with pytest.raises(InvalidParameterError, match=rf"The '{name}' parameter of LambdaMARTRanker must be"):
        LambdaMARTRanker(**{name: value}).fit(*interleaved)


def test_unknown_lgbm_params_key_is_an_error_with_a_suggestion(interleaved):
    with pytest.raises(InvalidParameterError, match=r"'min_data_in_leef' \(did you mean 'min_data_in_leaf'\?\)"):
        LambdaMARTRanker(lgbm_params={"min_data_in_leef": 5}).fit(*interleaved)
    # Known names and aliases pass through to LightGBM.
    LambdaMARTRanker(n_estimators=2, lgbm_params={"max_bin": 63, "bagging_seed": 3}).fit(*interleaved)


def test_sample_weight_weighs_queries(interleaved):
    X, y, groups = interleaved
    plain = LambdaMARTRanker(n_estimators=5, random_state=0).fit(X, y, groups).predict(X)
    uniform = LambdaMARTRanker(n_estimators=5, random_state=0).fit(X, y, groups, sample_weight=np.ones(len(y)))
    np.testing.assert_array_equal(uniform.predict(X), plain)
    first_half = np.isin(groups, np.unique(groups)[:20])
    weights = np.where(first_half, 0.0, 1.0)
    zeroed = LambdaMARTRanker(n_estimators=5, random_state=0, min_child_weight=0.0).fit(X, y, groups,
                                                                                       sample_weight=weights)
    assert not np.allclose(zeroed.predict(X), plain)
    with pytest.raises(ValueError, match="sample_weight must be the same for every row of a query"):
        LambdaMARTRanker(n_estimators=2).fit(X, y, groups, sample_weight=np.arange(len(y), dtype=float))

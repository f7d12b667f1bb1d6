"""Query ids inside X (``query_column``): every ranker, every tool that passes only X."""

import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
import sklearn
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.experimental import enable_halving_search_cv  # noqa: F401
from sklearn.inspection import permutation_importance as sklearn_permutation_importance
from sklearn.model_selection import (
    GridSearchCV,
    GroupKFold,
    HalvingGridSearchCV,
    cross_val_predict,
    cross_val_score,
)
from sklearn.pipeline import Pipeline

from sklearn_ltr import DASALCRanker, LambdaMARTRanker, RankingEnsemble, ndcg_scorer
from sklearn_ltr._query_column import resolve_query_column, split_query_column
from sklearn_ltr.datasets import make_ranking
from sklearn_ltr.inspection import permutation_importance
from sklearn_ltr.metrics import ndcg_score
from sklearn_ltr.preprocessing import Log1pTransformer

FEATURES = [f"f{i}" for i in range(5)]
CV = GroupKFold(n_splits=3)


@pytest.fixture(scope="module")
def data():
    X, y, qid = make_ranking(n_queries=30, n_features=5, shuffle=True, random_state=0)
    frame = pd.DataFrame(X, columns=FEATURES)
    frame.insert(2, "qid", qid)  # in the middle: dropping it must keep the other columns in order
    return X, y, qid, frame


def _lambdamart(**params):
    return LambdaMARTRanker(**{"n_estimators": 10, "num_leaves": 7, "n_jobs": 1, "random_state": 0, **params})


def _dasalc(**params):
    return DASALCRanker(hidden_size=8, n_layers=1, n_attention_layers=1, n_heads=2, head_size=4, max_epochs=2,
                        device="auto", random_state=0, **params)


# ------------------------------------------------------------------------------ splitting the column
def test_split_by_name_index_and_negative_index(data):
    X, _, qid, frame = data
    by_name, ids = split_query_column(frame, "qid")
    assert list(by_name.columns) == FEATURES and np.array_equal(ids, qid)
    as_array = frame.to_numpy()
    for column in (2, -4):
        features, ids = split_query_column(as_array, column)
        np.testing.assert_array_equal(features, X)
        np.testing.assert_array_equal(ids, qid)
    sparse, ids = split_query_column(sp.csr_matrix(as_array), 2)
    assert sp.issparse(sparse) and np.array_equal(sparse.toarray(), X) and np.array_equal(ids, qid)


@pytest.mark.parametrize(("X", "column", "match"), [
    (np.zeros((3, 2)), "qid", r"query_column='qid' of the ranker names a column, but X is a ndarray"),
    (pd.DataFrame({"a": [1, 2]}), "qid", r"query_column='qid' .* is not a column of X \(columns: \['a'\]\)"),
    (np.zeros((3, 2)), 2, r"query_column=2 .* out of range for X with 2 columns: pass an index in \[-2, 1\]"),
    (np.zeros(3), 0, r"needs a 2-D X"),
    (np.array([[np.nan, 1.0], [1.0, 2.0]]), 0, r"query ids in column 0 of X .*NaN"),
    (np.array([[0.5, 1.0], [1.0, 2.0]]), 0, r"query ids in column 0 of X .*non-integral"),
])
def test_bad_column_errors_name_the_argument(X, column, match):
    with pytest.raises(ValueError, match=match):
        split_query_column(X, column)


def test_groups_must_agree_with_the_column(data):
    _, _, qid, frame = data
    relabelled = np.array([f"q{g}" for g in qid])  # other names, same grouping: accepted
    _, ids = resolve_query_column(frame, relabelled, "qid")
    assert np.array_equal(ids, qid)
    with pytest.raises(ValueError, match=r"group the rows differently.*query_column=None to use groups"):
        resolve_query_column(frame, np.arange(len(qid)), "qid")


def test_query_column_is_validated():
    with pytest.raises(ValueError, match="query_column"):
        _lambdamart(query_column=1.5).fit(np.zeros((4, 2)), [0, 1, 0, 1], [0, 0, 1, 1])
    with pytest.raises(ValueError, match="query_column"):
        _dasalc(query_column=True).fit(np.zeros((4, 2)), [0, 1, 0, 1], [0, 0, 1, 1])


# --------------------------------------------------------------------------------- the rankers
@pytest.mark.parametrize("make", [_lambdamart, _dasalc], ids=["LambdaMART", "DASALC"])
def test_column_equals_groups(data, make):
    X, y, qid, frame = data
    reference = make().fit(X, y, groups=qid)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no MissingGroupsWarning: the ids are there
        ranker = make(query_column="qid").fit(frame, y)
        scores = ranker.predict(frame)
    np.testing.assert_allclose(scores, reference.predict(X, groups=qid), rtol=1e-6, atol=1e-7)
    assert ranker.n_features_in_ == 5 and list(ranker.feature_names_in_) == FEATURES
    assert ranker.score(frame, y) == pytest.approx(reference.score(X, y, groups=qid), abs=1e-12)
    assert ndcg_scorer(ranker, frame, y) == ranker.score(frame, y)


def test_score_without_query_ids_raises(data):
    X, y, qid, _ = data
    ranker = _lambdamart().fit(X, y, groups=qid)
    with pytest.raises(ValueError, match=r"LambdaMARTRanker.score needs the query id.*query_column=<that column>"):
        ranker.score(X, y)
    with pytest.raises(ValueError, match=r"X has 4 features, but LambdaMARTRanker is expecting 5"):
        ranker.score(X[:, :4], y)  # a wrong X is named first


def test_lambdamart_eval_set_reads_the_column(data):
    _, y, qid, frame = data
    train, valid = qid < 20, qid >= 20
    ranker = _lambdamart(query_column="qid", n_estimators=50, early_stopping_rounds=3)
    ranker.fit(frame[train], y[train], eval_set=[(frame[valid], y[valid], None)])
    reference = _lambdamart(n_estimators=50, early_stopping_rounds=3).fit(
        frame[train].drop(columns="qid"), y[train], groups=qid[train],
        eval_set=[(frame[valid].drop(columns="qid"), y[valid], qid[valid])])
    assert ranker.best_iteration_ == reference.best_iteration_
    assert ranker.evals_result_ == reference.evals_result_


def test_ensemble_reads_its_members_column(data):
    X, y, qid, frame = data
    ensemble = RankingEnsemble(_lambdamart(query_column="qid"), n_estimators=2, normalize="rank", random_state=0)
    reference = RankingEnsemble(_lambdamart(), n_estimators=2, normalize="rank", random_state=0)
    reference.fit(X, y, groups=qid)
    scores = ensemble.fit(frame, y).predict(frame)
    np.testing.assert_allclose(scores, reference.predict(X, groups=qid))
    assert ensemble.score(frame, y) == pytest.approx(reference.score(X, y, groups=qid))


# ---------------------------------------------------------------------- tools that pass only X
def test_search_without_routing_scores_per_query(data):
    """scoring=None and routing off: with the ids in X each fold is scored per query, as with routing."""
    X, y, qid, frame = data
    grid = {"num_leaves": [3, 7]}
    plain = GridSearchCV(_lambdamart(query_column="qid"), grid, cv=CV).fit(frame, y, groups=qid)
    with sklearn.config_context(enable_metadata_routing=True):
        routed = GridSearchCV(_lambdamart(), grid, cv=CV, scoring=ndcg_scorer).fit(X, y, groups=qid)
    np.testing.assert_allclose(plain.cv_results_["mean_test_score"], routed.cv_results_["mean_test_score"])
    assert np.all(plain.cv_results_["mean_test_score"] > 0.5)  # a one-query score would be about 0.3


def test_cross_val_predict_of_a_list_context_ranker_matches_fold_by_fold(data):
    _, y, qid, frame = data
    ranker = _dasalc(query_column="qid")
    predicted = cross_val_predict(ranker, frame, y, groups=qid, cv=CV)
    by_hand = np.empty(len(y))
    for train, test in CV.split(frame, y, groups=qid):
        fold = clone(ranker).fit(frame.iloc[train], y[train])
        by_hand[test] = fold.predict(frame.iloc[test])
    np.testing.assert_array_equal(predicted, by_hand)
    # Without the column, each fold would be scored as ONE list: other scores.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        one_list = cross_val_predict(_dasalc(), frame.drop(columns="qid"), y, groups=qid, cv=CV)
    assert not np.allclose(one_list, predicted)


def test_permutation_importance_leaves_the_column_out(data):
    X, y, qid, frame = data
    ranker = _lambdamart(query_column="qid").fit(frame, y)
    ours = permutation_importance(ranker, frame, y, n_repeats=3, random_state=0)
    assert ours.feature_indices.tolist() == [0, 1, 3, 4, 5]
    # scikit-learn's own function, its scorer reading the ids from the (intact) column.
    reference = sklearn_permutation_importance(ranker, frame, y, scoring=ndcg_scorer, n_repeats=3, random_state=0)
    np.testing.assert_array_equal(ours.importances, reference.importances[[0, 1, 3, 4, 5]])
    # groups= instead of a column gives the same numbers.
    plain = _lambdamart().fit(X, y, groups=qid)
    by_groups = permutation_importance(plain, X, y, groups=qid, n_repeats=3, random_state=0)
    np.testing.assert_array_equal(by_groups.importances, ours.importances)
    with pytest.raises(ValueError, match="permutation_importance needs the query id"):
        permutation_importance(plain, X, y)


def test_pipeline_with_column_transformer_and_named_column(data):
    _, y, qid, frame = data
    pre = ColumnTransformer([("log1p", Log1pTransformer(), FEATURES)], remainder="passthrough",
                            verbose_feature_names_out=False).set_output(transform="pandas")
    pipe = Pipeline([("pre", pre), ("rank", _dasalc(query_column="qid"))]).fit(frame, y)
    shuffled = np.random.default_rng(0).permutation(len(y))
    scores = pipe.predict(frame.iloc[shuffled])
    np.testing.assert_allclose(scores, pipe.predict(frame)[shuffled], rtol=1e-6, atol=1e-7)
    assert ndcg_scorer(pipe, frame, y) == pytest.approx(ndcg_score(y, pipe.predict(frame), qid, k=10))
    assert pipe.score(frame, y) == ndcg_scorer(pipe, frame, y)
    folds = cross_val_score(pipe, frame, y, groups=qid, cv=CV, scoring=ndcg_scorer)
    assert np.all(np.isfinite(folds))


def test_nested_pipeline_reads_the_column_of_its_innermost_ranker(data):
    _, y, qid, frame = data
    pre = ColumnTransformer([("log1p", Log1pTransformer(), FEATURES)], remainder="passthrough",
                            verbose_feature_names_out=False).set_output(transform="pandas")
    pipe = Pipeline([("pre", pre), ("inner", Pipeline([("rank", _lambdamart(query_column="qid"))]))]).fit(frame, y)
    assert ndcg_scorer(pipe, frame, y) == pytest.approx(ndcg_score(y, pipe.predict(frame), qid, k=10))
    importance = permutation_importance(pipe, frame, y, n_repeats=2, random_state=0)
    assert importance.feature_indices.tolist() == [0, 1, 3, 4, 5]


def test_halving_search_over_n_estimators(data):
    """resource="n_samples" would drop documents inside queries; a model's own budget is the resource."""
    _, y, qid, frame = data
    search = HalvingGridSearchCV(
        _lambdamart(query_column="qid"), {"num_leaves": [3, 7, 15, 31]}, resource="n_estimators",
        min_resources=5, max_resources=20, factor=2, cv=CV, scoring=ndcg_scorer, random_state=0,
    ).fit(frame, y, groups=qid)
    assert search.n_resources_ == [5, 10, 20]
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()


def test_optuna_search_cv(data):
    optuna = pytest.importorskip("optuna", reason="Optuna is optional: pip install sklearn-ltr[tuning]")
    optuna_integration = pytest.importorskip(
        "optuna_integration", reason="OptunaSearchCV is in optuna-integration: pip install sklearn-ltr[tuning]")
    _, y, qid, frame = data
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    pre = ColumnTransformer([("log1p", Log1pTransformer(), FEATURES)], remainder="passthrough",
                            verbose_feature_names_out=False).set_output(transform="pandas")
    pipe = Pipeline([("pre", pre), ("rank", _dasalc(query_column="qid"))])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        warnings.simplefilter("ignore", FutureWarning)
        search = optuna_integration.OptunaSearchCV(
            pipe, {"rank__lr": optuna.distributions.FloatDistribution(1e-3, 1e-1, log=True)},
            cv=CV, n_trials=3, scoring=ndcg_scorer, random_state=0,
        ).fit(frame, y, groups=qid)
    values = search.trials_dataframe()["value"].to_numpy()
    assert len(values) == 3 and np.isfinite(values).all()
    # Each trial's value is the mean per-query NDCG@10 of its folds, as cross_val_score computes it.
    best = clone(pipe).set_params(**search.best_params_)
    expected = cross_val_score(best, frame, y, groups=qid, cv=CV, scoring=ndcg_scorer).mean()
    assert search.best_score_ == pytest.approx(expected, abs=1e-12)


def test_dask_input_refuses_a_query_column(data):
    da = pytest.importorskip("dask.array", reason="Dask is optional: pip install sklearn-ltr[dask]")
    X, y, qid, _ = data
    with pytest.raises(ValueError, match="query_column is not supported on Dask input"):
        _lambdamart(query_column=0).fit(da.from_array(X), da.from_array(y), da.from_array(qid))


# ------------------------------------------------------------ import-time helpers, called directly


def test_query_column_constraints_name_the_valid_values():
    from sklearn_ltr._query_column import _query_column_constraints
    from sklearn_ltr.utils._sklearn_compat import check_parameters

    constraints = _query_column_constraints()
    assert len(constraints) == 2 and constraints[1] is None
    for value in ("qid", 0, np.int64(3), None):
        check_parameters("Demo", {"query_column": constraints}, {"query_column": value})
    for value in (1.5, True, ["qid"]):
        with pytest.raises(ValueError, match=r"The 'query_column' parameter of Demo must be a column name \(str\) "
                                             r"or an integer column index or None"):
            check_parameters("Demo", {"query_column": constraints}, {"query_column": value})


def test_document_query_column_fills_the_docstring_marker():
    import textwrap

    from sklearn_ltr._query_column import QUERY_COLUMN_DOC, document_query_column

    class Documented:
        """Toy.

        Parameters
        ----------
        %(query_column)s
        """

    class Plain:
        """No marker."""

    class Bare:
        pass

    assert document_query_column(Documented) is Documented
    assert Documented.__doc__ == ("Toy.\n\n        Parameters\n        ----------\n    "
                                  + textwrap.indent(QUERY_COLUMN_DOC.rstrip("\n"), "    ") + "\n        ")
    assert "%(query_column)s" not in Documented.__doc__ and "\n    \n" not in Documented.__doc__
    assert document_query_column(Plain).__doc__ == "No marker."
    assert document_query_column(Bare).__doc__ is None


def test_the_most_negative_column_index_is_the_first_column():
    X = np.arange(12.0).reshape(4, 3)
    features, ids = split_query_column(X, -3, owner="R")
    np.testing.assert_array_equal(ids, X[:, 0])
    np.testing.assert_array_equal(features, X[:, 1:])
    with pytest.raises(ValueError, match=r"out of range for X with 3 columns: pass an index in \[-3, 2\]"):
        split_query_column(X, -4, owner="R")
    with pytest.raises(ValueError, match="out of range"):
        split_query_column(X, 3, owner="R")


def test_query_column_of_reads_the_estimator_or_its_members():
    from sklearn_ltr._query_column import query_column_of

    assert query_column_of(LambdaMARTRanker(query_column=2)) == 2
    assert query_column_of(LambdaMARTRanker()) is None
    # The ensemble has no query_column parameter: it reads its members' column.
    assert query_column_of(RankingEnsemble(LambdaMARTRanker(query_column="qid"))) == "qid"
    assert query_column_of(object()) is None


def test_query_ids_come_from_X_as_the_pipeline_transforms_it():
    from sklearn.preprocessing import FunctionTransformer

    from sklearn_ltr._query_column import query_ids_from_X

    X = np.column_stack([np.arange(6.0), np.repeat([7.0, 8.0], 3)])
    reverse = FunctionTransformer(lambda Z: Z[:, ::-1])
    pipe = Pipeline([("reverse", reverse), ("rank", LambdaMARTRanker(query_column=0))])
    np.testing.assert_array_equal(query_ids_from_X(pipe, X), [7, 7, 7, 8, 8, 8])
    np.testing.assert_array_equal(query_ids_from_X(Pipeline([("rank", LambdaMARTRanker(query_column=1))]), X),
                                  [7, 7, 7, 8, 8, 8])
    assert query_ids_from_X(Pipeline([("reverse", reverse), ("rank", LambdaMARTRanker())]), X) is None


def test_query_ids_from_X_through_two_transformers_and_its_error_names_the_ranker():
    from sklearn.preprocessing import FunctionTransformer

    from sklearn_ltr._query_column import query_ids_from_X

    X = np.column_stack([np.arange(6.0), np.repeat([7.0, 8.0], 3), np.zeros(6)])
    reverse = FunctionTransformer(lambda Z: Z[:, ::-1])
    drop_first = FunctionTransformer(lambda Z: Z[:, 1:])
    pipe = Pipeline([("reverse", reverse), ("drop", drop_first), ("rank", LambdaMARTRanker(query_column=0))])
    np.testing.assert_array_equal(query_ids_from_X(pipe, X), [7, 7, 7, 8, 8, 8])
    with pytest.raises(ValueError, match=r"query_column=5 of LambdaMARTRanker is out of range for X with 3 columns"):
        query_ids_from_X(LambdaMARTRanker(query_column=5), X)


@pytest.mark.parametrize("n_columns", [10, 11])
def test_the_missing_column_message_lists_ten_columns_at_most(n_columns):
    frame = pd.DataFrame(np.zeros((2, n_columns)), columns=[f"c{i}" for i in range(n_columns)])
    with pytest.raises(ValueError) as error:
        split_query_column(frame, "qid", owner="R")
    shown = [f"c{i}" for i in range(10)]
    assert str(error.value) == (
        f"query_column='qid' of R is not a column of X (columns: {shown}{' ...' if n_columns == 11 else ''}). "
        f"Pass X with a 'qid' column of query ids, or set query_column to the name of the column that holds them.")


@pytest.mark.parametrize("make", [np.zeros, lambda shape: pd.DataFrame(np.zeros(shape))], ids=["array", "frame"])
def test_an_index_out_of_range_names_the_ranker_for_arrays_and_frames(make):
    with pytest.raises(ValueError) as error:
        split_query_column(make((2, 3)), 5, owner="R")
    assert str(error.value) == ("query_column=5 of R is out of range for X with 3 columns: pass an index in [-3, 2] "
                                "of the column that holds the query ids.")


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo", "lil"])
def test_a_sparse_X_of_any_format_splits_into_csr_features_and_its_query_ids(fmt):
    dense = np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0], [4.0, 3.0, 0.0], [0.0, 0.0, 5.0]])
    X = sp.csr_matrix(dense).asformat(fmt)
    features, ids = split_query_column(X, 1, owner="R")
    assert features.format == "csr"  # what the rankers' sparse paths read row by row
    np.testing.assert_array_equal(features.toarray(), dense[:, [0, 2]])
    np.testing.assert_array_equal(ids, [0, 3, 3, 0])  # implicit zeros are query id 0
    assert X.format == fmt  # the caller's matrix is not converted in place


def test_only_an_object_with_columns_and_iloc_is_read_as_a_dataframe():
    from sklearn_ltr._query_column import _is_dataframe

    class WithColumns(np.ndarray):
        columns = ("a", "b")

    class WithIloc(np.ndarray):
        iloc = None

    assert _is_dataframe(pd.DataFrame({"a": [1]}))
    for cls in (WithColumns, WithIloc):
        X = np.array([[7.0, 1.0], [7.0, 2.0]]).view(cls)
        assert not _is_dataframe(X)
        features, ids = split_query_column(X, 0)  # read as an array, by position
        np.testing.assert_array_equal(ids, [7, 7])
        np.testing.assert_array_equal(np.asarray(features).ravel(), [1.0, 2.0])


def test_query_column_of_an_object_with_the_attribute_and_no_getter():
    from sklearn_ltr._query_column import query_column_of

    class Plain:
        query_column = "qid"

    class Getter:
        query_column = "ignored"

        def _query_column(self):
            return 3

    class NotCallable:
        _query_column = "not a method"
        query_column = 1

    assert query_column_of(Plain()) == "qid"
    assert query_column_of(Getter()) == 3
    assert query_column_of(NotCallable()) == 1


def test_document_query_column_leaves_blank_lines_of_the_entry_blank(monkeypatch):
    from sklearn_ltr import _query_column

    monkeypatch.setattr(_query_column, "QUERY_COLUMN_DOC", "query_column : int\n\n    Second paragraph.")

    class Documented:
        """Toy.

        %(query_column)s
        """

    _query_column.document_query_column(Documented)
    assert Documented.__doc__ == "Toy.\n\n        query_column : int\n\n        Second paragraph.\n        "

"""QueryIdFeatureWarning: a feature column that holds the query ids warns in fit, naming the column and the fix."""

import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from sklearn_ltr import LambdaMARTRanker, RankingEnsemble, RankNetRanker
from sklearn_ltr._feature_profile import MIN_QUERIES_RELABELLED, query_id_columns
from sklearn_ltr._groups import QueryGroups
from sklearn_ltr.datasets import make_ranking
from sklearn_ltr.exceptions import QueryIdFeatureWarning

FAST = {"n_estimators": 3, "num_leaves": 4, "min_child_samples": 2, "n_jobs": 1, "random_state": 0}


def _frame(n_queries=30, seed=0):
    """A DataFrame of features with a ``qid`` column, as read from a CSV file, its labels and ids."""
    X, y, qid = make_ranking(n_queries=n_queries, n_features=4, shuffle=True, random_state=seed)
    frame = pd.DataFrame(X, columns=["bm25", "pagerank", "length", "title"])
    frame.insert(2, "qid", qid + 100)
    return frame, y


def _id_warnings(fit):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit()
    return [w for w in caught if issubclass(w.category, QueryIdFeatureWarning)]


def test_a_qid_column_passed_as_a_feature_warns_naming_it_and_the_fix():
    frame, y = _frame()
    caught = _id_warnings(lambda: LambdaMARTRanker(**FAST).fit(frame, y, groups=frame.qid))
    assert len(caught) == 1
    message = str(caught[0].message)
    assert "column 'qid' (index 2)" in message and "it equals groups" in message
    assert "query_column='qid'" in message and "Drop the column" in message
    assert caught[0].filename == __file__  # attributed to the caller's line, not to the library
    assert issubclass(QueryIdFeatureWarning, UserWarning)


def test_the_fix_silences_it():
    frame, y = _frame()
    assert not _id_warnings(lambda: LambdaMARTRanker(**FAST, query_column="qid").fit(frame, y))
    assert not _id_warnings(lambda: LambdaMARTRanker(**FAST).fit(frame.drop(columns="qid"), y, groups=frame.qid))


def test_every_ranker_checks_in_its_shared_validation():
    frame, y = _frame(n_queries=24)
    X = frame.to_numpy()  # no names: the column is named by its index
    neural = _id_warnings(lambda: RankNetRanker(hidden_sizes=(4,), max_epochs=1, device="cpu", random_state=0)
                          .fit(X, y, groups=frame.qid))
    assert len(neural) == 1 and "X column 2 holds the query ids" in str(neural[0].message)
    assert "query_column=2" in str(neural[0].message)
    ensemble = RankingEnsemble(LambdaMARTRanker(**FAST), n_estimators=2, random_state=0)
    caught = _id_warnings(lambda: ensemble.fit(frame, y, groups=frame.qid))
    # Each member warns, at the caller's line.
    assert len(caught) == 2 and all("column 'qid'" in str(w.message) and w.filename == __file__ for w in caught)


def test_a_relabelling_of_the_ids_warns_from_enough_queries():
    """String ids with the numbers in a column: one whole number per query, different for every query."""
    n = MIN_QUERIES_RELABELLED
    frame, y = _frame(n_queries=n)
    names = np.array([f"query-{q}" for q in frame.qid])
    caught = _id_warnings(lambda: LambdaMARTRanker(**FAST).fit(frame, y, groups=names))
    assert len(caught) == 1 and "a relabelling of groups" in str(caught[0].message)
    small, y_small = _frame(n_queries=n - 1)
    small_names = np.array([f"query-{q}" for q in small.qid])
    assert not _id_warnings(lambda: LambdaMARTRanker(**FAST).fit(small, y_small, groups=small_names))
    # ... but a column equal to the numeric ids warns from two queries on.
    two = small[small.qid.isin(small.qid.unique()[:2])]
    caught = _id_warnings(lambda: LambdaMARTRanker(**FAST).fit(two, y_small[two.index], groups=two.qid))
    assert len(caught) == 1 and "it equals groups" in str(caught[0].message)


def test_query_level_features_are_no_false_alarm():
    rng = np.random.default_rng(0)
    X, y, qid = make_ranking(n_queries=200, n_features=3, shuffle=True, random_state=1)
    query_groups = QueryGroups(qid)
    sizes = query_groups.sizes[query_groups.codes]  # the query's length: whole, constant, shared by queries
    terms = rng.integers(1, 8, query_groups.n_queries)[query_groups.codes]  # words in the query
    idf = rng.random(query_groups.n_queries)[query_groups.codes]  # distinct per query, but not whole numbers
    doc_ids = np.arange(len(qid))  # whole and distinct, but not constant within a query
    features = np.column_stack([X, sizes, terms, idf, doc_ids])
    assert query_id_columns(features, query_groups, qid) == []
    assert not _id_warnings(lambda: LambdaMARTRanker(**FAST).fit(features, y, groups=qid))
    # groups=None (one query): nothing to compare.
    assert not _id_warnings(lambda: LambdaMARTRanker(**FAST).fit(np.column_stack([X, qid]), y))


def test_sparse_and_float32_columns():
    X, y, qid = make_ranking(n_queries=25, n_features=3, shuffle=True, random_state=2)
    dense = np.column_stack([np.where(X > 0.5, X, 0.0), qid + 1]).astype(np.float32)  # ids from 1: all stored
    assert query_id_columns(sp.csr_matrix(dense), QueryGroups(qid + 1), qid + 1) == [(3, "equals")]
    assert query_id_columns(dense, QueryGroups(qid + 1), qid + 1) == [(3, "equals")]
    # 0-based ids leave one query's value unstored in a sparse matrix: still found.
    zero_based = np.column_stack([np.where(X > 0.5, X, 0.0), qid])
    assert query_id_columns(sp.csc_matrix(zero_based), QueryGroups(qid), qid) == [(3, "equals")]
    caught = _id_warnings(lambda: LambdaMARTRanker(**FAST).fit(sp.csr_matrix(dense), y, groups=qid + 1))
    assert len(caught) == 1


@pytest.mark.parametrize("planted", ["column", "relabel"])
def test_the_column_must_be_constant_within_each_query(planted):
    X, _, qid = make_ranking(n_queries=30, n_features=2, shuffle=True, random_state=3)
    column = (qid if planted == "column" else 1000 - 3 * qid).astype(np.float64)
    groups = qid if planted == "column" else np.array([f"q{q}" for q in qid])
    query_groups = QueryGroups(groups)
    assert len(query_id_columns(np.column_stack([X, column]), query_groups, groups)) == 1
    broken = column.copy()
    longest = query_groups.ids[np.argmax(query_groups.sizes)]
    broken[np.flatnonzero(groups == longest)[-1]] = -7.0  # one row of one query disagrees
    assert query_id_columns(np.column_stack([X, broken]), query_groups, groups) == []


def test_lambdamart_on_dask_checks_all_partitions():
    distributed = pytest.importorskip("dask.distributed")
    dd = pytest.importorskip("dask.dataframe")
    frame, y = _frame(n_queries=30)
    frame["y"] = y
    with (
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0") as cluster,
        distributed.Client(cluster),
    ):
        data = dd.from_pandas(frame, npartitions=3)
        features = data.drop(columns="y")
        caught = _id_warnings(lambda: LambdaMARTRanker(**FAST).fit(features, data.y, groups=data.qid))
        assert len(caught) == 1 and "column 'qid' (index 2)" in str(caught[0].message)
        assert "groups='qid'" in str(caught[0].message)
        assert not _id_warnings(lambda: LambdaMARTRanker(**FAST).fit(features, data.y, groups="qid"))
        names = frame.qid.map(lambda q: f"query-{q}")
        data["name"] = dd.from_pandas(names, npartitions=3)
        caught = _id_warnings(lambda: LambdaMARTRanker(**FAST).fit(features, data.y, groups=data.name))
        assert len(caught) == 1 and "a relabelling of groups" in str(caught[0].message)
        ranker = LambdaMARTRanker(**FAST).fit(features.drop(columns="qid"), data.y, groups=data.qid)
        local = LambdaMARTRanker(**FAST).fit(frame.drop(columns=["qid", "y"]), y, groups=frame.qid)
        for name in ("missing", "minimum", "maximum"):
            np.testing.assert_array_equal(getattr(ranker.feature_profile_, name),
                                          getattr(local.feature_profile_, name))

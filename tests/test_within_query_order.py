"""Every ranker's model is independent of the order of the rows within a query: the canonical training order."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from sklearn_ltr import (
    DASALCRanker,
    LambdaMARTRanker,
    RankingEnsemble,
    RankNetRanker,
    SetRankRanker,
    TwoTowerDebiasedRanker,
    _blocks,
)
from sklearn_ltr._blocks import canonical_query_order, sparse_row_keys
from sklearn_ltr._groups import QueryGroups
from sklearn_ltr.datasets import load_svmlight_ranking, make_ranking, simulate_clicks
from sklearn_ltr.metrics import ndcg_score
from sklearn_ltr.training._batches import QueryBatches
from sklearn_ltr.training._net import build_dataset

LAMBDAMART = {"n_estimators": 20, "num_leaves": 7, "min_child_samples": 3, "n_jobs": 1, "random_state": 0}
NEURAL = {"max_epochs": 3, "batch_size": 4, "device": "cpu", "random_state": 0}


def within_queries(groups, seed=0):
    """A permutation that shuffles each query's rows among the positions the query holds."""
    slots = np.argsort(groups, kind="stable")
    permutation = np.empty(len(groups), dtype=np.intp)
    permutation[slots] = np.lexsort((np.random.default_rng(seed).random(len(groups)), groups))
    assert np.array_equal(groups[permutation], groups)
    return permutation


@pytest.fixture(scope="module")
def data():
    X, y, qid = make_ranking(n_queries=30, n_features=6, shuffle=True, random_state=0)
    return X, y, qid


def _same_model(make, X, y, qid, fit_extras=None, predict_extras=None, seed=0):
    fit_extras, predict_extras = fit_extras or {}, predict_extras or {}
    permutation = within_queries(qid, seed)
    first = make().fit(X, y, groups=qid, **fit_extras)
    second = make().fit(X[permutation], y[permutation], groups=qid,
                        **{name: values[permutation] for name, values in fit_extras.items()})
    np.testing.assert_array_equal(second.predict(X, groups=qid, **predict_extras),
                                  first.predict(X, groups=qid, **predict_extras))
    return first, second


def test_canonical_query_order_is_a_function_of_each_querys_rows(data):
    X, y, qid = data
    order = canonical_query_order(QueryGroups(qid), X, y)
    assert np.array_equal(np.sort(order), np.arange(len(qid)))
    assert np.all(np.diff(QueryGroups(qid).codes[order]) >= 0)  # by query
    for seed in range(3):
        permutation = within_queries(qid, seed)
        shuffled = permutation[canonical_query_order(QueryGroups(qid[permutation]), X[permutation], y[permutation])]
        np.testing.assert_array_equal(X[shuffled], X[order])
    # Interleaving the queries otherwise gives the same rows in the same order too.
    by_query = np.argsort(qid, kind="stable")
    again = by_query[canonical_query_order(QueryGroups(qid[by_query]), X[by_query], y[by_query])]
    np.testing.assert_array_equal(X[again], X[order])


def test_ties_are_broken_by_the_tie_breakers_and_nan_is_a_value():
    X = np.array([[1.0, np.nan], [1.0, np.nan], [0.5, 2.0], [1.0, np.nan]])
    qid = np.array([3, 3, 3, 3])
    y = np.array([2.0, 0.0, 1.0, 1.0])
    order = canonical_query_order(QueryGroups(qid), X, y)
    assert y[order[X[order, 0] == 1.0]].tolist() == [0.0, 1.0, 2.0]  # identical rows ordered by label
    assert X[order[-1], 0] == 1.0 and np.isnan(X[order[-1], 1])  # NaN after every number (0.5 < 1.0 first)
    for seed in range(4):
        permutation = np.random.default_rng(seed).permutation(4)
        again = permutation[canonical_query_order(QueryGroups(qid), X[permutation], y[permutation])]
        np.testing.assert_array_equal(y[again], y[order])


def test_sparse_rows_take_the_order_of_their_dense_form(data, monkeypatch):
    X, y, qid = data
    X = np.where(X > np.quantile(X, 0.6), X, 0.0)
    dense = canonical_query_order(QueryGroups(qid), X, y)
    for matrix in (sp.csr_matrix(X), sp.csc_matrix(X)):
        np.testing.assert_array_equal(canonical_query_order(QueryGroups(qid), matrix, y), dense)
    # Too wide to make dense: a hash of the entries orders them, still a function of each query's rows.
    monkeypatch.setattr(_blocks, "_SPARSE_QUERY_BYTES", 0)
    hashed = canonical_query_order(QueryGroups(qid), sp.csr_matrix(X), y)
    permutation = within_queries(qid, 1)
    again = permutation[canonical_query_order(QueryGroups(qid), sp.csr_matrix(X[permutation]), y[permutation])]
    np.testing.assert_array_equal(X[again], X[hashed])


def test_sparse_row_keys_ignore_the_storage_order_and_stored_zeros():
    X = sp.csr_matrix(np.array([[0.0, 1.5, 2.0], [0.0, 1.5, 2.0], [2.0, 1.5, 0.0], [0.0, 0.0, 0.0]]))
    keys = sparse_row_keys(X)
    assert keys[0] == keys[1] and keys[0] != keys[2] and keys[3] == 0
    unsorted = sp.csr_matrix((X.data[::-1].copy(), X.indices[::-1].copy(), X.indptr), shape=X.shape)
    explicit = sp.csr_matrix((np.array([0.0, 1.5, 2.0]), np.array([0, 1, 2]), np.array([0, 3, 3, 3, 3])),
                             shape=X.shape)
    assert sparse_row_keys(explicit)[0] == keys[0]
    assert sparse_row_keys(unsorted)[1] in keys  # entries in another order: the same key as some equal row


def test_lambdamart_train_and_eval_set_and_positions(data):
    X, y, qid = data
    train, valid = qid < 20, qid >= 20
    perm_train, perm_valid = within_queries(qid[train], 1), within_queries(qid[valid], 2)
    Xt, yt, qt, Xv, yv, qv = X[train], y[train], qid[train], X[valid], y[valid], qid[valid]
    params = {**LAMBDAMART, "n_estimators": 60, "early_stopping_rounds": 5, "learning_rate": 0.3}
    first = LambdaMARTRanker(**params).fit(Xt, yt, qt, eval_set=[(Xv, yv, qv)])
    second = LambdaMARTRanker(**params).fit(Xt[perm_train], yt[perm_train], qt,
                                            eval_set=[(Xv[perm_valid], yv[perm_valid], qv)])
    assert second.evals_result_ == first.evals_result_ and second.best_iteration_ == first.best_iteration_
    assert second.booster_.model_to_string() == first.booster_.model_to_string()
    positions, clicks = simulate_clicks(y, qid, w=0.5, random_state=0)
    _same_model(lambda: LambdaMARTRanker(**LAMBDAMART), X, clicks, qid, {"positions": positions})
    _same_model(lambda: LambdaMARTRanker(**LAMBDAMART), X, y, qid, {"sample_weight": (qid % 3 + 1.0)})


def test_lambdamart_sparse_nan_and_tied_rows(data):
    X, y, qid = data
    X = np.where(X > np.quantile(X, 0.6), X, 0.0)
    X[::5, 1] = np.nan
    X[qid == qid[0]] = X[qid == qid[0]][0]  # a query of identical rows, told apart only by their labels
    _same_model(lambda: LambdaMARTRanker(**LAMBDAMART), X, y, qid)
    X[np.isnan(X)] = 0.0
    _same_model(lambda: LambdaMARTRanker(**LAMBDAMART), sp.csr_matrix(X), y, qid)
    dense = LambdaMARTRanker(**LAMBDAMART).fit(X, y, qid)  # sparse and dense input: the same model
    sparse = LambdaMARTRanker(**LAMBDAMART).fit(sp.csr_matrix(X), y, qid)
    np.testing.assert_array_equal(sparse.predict(X), dense.predict(X))


@pytest.mark.parametrize("make", [
    lambda: RankNetRanker(hidden_sizes=(8,), **NEURAL),
    lambda: DASALCRanker(hidden_size=8, n_layers=1, n_attention_layers=1, n_heads=2, head_size=4, **NEURAL),
    lambda: SetRankRanker(d_model=8, n_blocks=1, n_heads=2, **NEURAL),
    lambda: RankNetRanker(hidden_sizes=(8,), max_list_length=4, **NEURAL),  # lists subsampled
    lambda: DASALCRanker(hidden_size=8, n_layers=1, n_attention_layers=1, n_heads=2, head_size=4,
                         early_stopping=True, max_list_length=5, **NEURAL),  # held-out queries, noise, dropout
], ids=["ranknet", "dasalc", "setrank", "ranknet-max-list-length", "dasalc-early-stopping"])
@pytest.mark.parametrize("layout", ["float64-interleaved", "float32-grouped"])
def test_neural_rankers(data, make, layout):
    X, y, qid = data
    if layout == "float32-grouped":  # rows used where they lie (as a memory map is), through a permutation
        by_query = np.argsort(qid, kind="stable")
        X, y, qid = np.ascontiguousarray(X[by_query], dtype=np.float32), y[by_query], qid[by_query]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # float32 sums split across threads may round differently from run to run
    try:
        _same_model(make, X, y, qid)
    finally:
        torch.set_num_threads(threads)


def test_neural_rankers_per_row_inputs_move_with_their_rows(data):
    X, y, qid = data
    positions, clicks = simulate_clicks(y, qid, w=0.5, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _same_model(lambda: TwoTowerDebiasedRanker(hidden_sizes=(8,), **NEURAL), X, clicks, qid,
                    {"positions": positions})
        _same_model(lambda: SetRankRanker(d_model=8, n_blocks=1, n_heads=2, **NEURAL), X, y, qid,
                    {"initial_rank": positions}, {"initial_rank": positions})
        _same_model(lambda: RankNetRanker(hidden_sizes=(8,), loss="sigmoid_ce", **NEURAL), X, clicks, qid,
                    {"propensity": 1.0 / positions})
    # Identical features and labels, other positions: the positions order them.
    twins = X.copy()
    twins[qid == qid[0]] = twins[qid == qid[0]][0]
    _same_model(lambda: TwoTowerDebiasedRanker(hidden_sizes=(8,), **NEURAL), twins, clicks, qid,
                {"positions": positions})


def test_ensemble(data):
    X, y, qid = data
    _same_model(lambda: RankingEnsemble(LambdaMARTRanker(**LAMBDAMART), n_estimators=2, random_state=0), X, y, qid)


def test_in_place_dataset_gives_the_batches_of_the_copy(data):
    X, y, qid = data
    by_query = np.argsort(qid, kind="stable")
    X32, y, qid = np.ascontiguousarray(X[by_query], dtype=np.float32), y[by_query], qid[by_query]
    in_place = build_dataset(QueryGroups(qid), X32, y)
    copied = build_dataset(QueryGroups(qid), np.asfortranarray(X32), y)  # not C-contiguous: copied
    assert in_place.index is not None and in_place.rows["X"].data_ptr() == torch.from_numpy(X32).data_ptr()
    assert copied.index is None
    for batch, other in zip(QueryBatches(in_place, 4), QueryBatches(copied, 4), strict=True):
        torch.testing.assert_close(batch[0]["X"], other[0]["X"], rtol=0, atol=0)
        torch.testing.assert_close(batch[1], other[1], rtol=0, atol=0)
    assert in_place[3][0]["X"].tolist() == copied[3][0]["X"].tolist()


def test_mq2008_fold1_shuffled_within_queries_scores_the_same(data_dir):
    """The issue's figure: LambdaMART on MQ2008 Fold 1 in file order and shuffled within queries."""
    fold = data_dir / "mq2008" / "Fold1"
    X, y, qid = load_svmlight_ranking(fold / "train.txt")
    X_test, y_test, qid_test = load_svmlight_ranking(fold / "test.txt", n_features=X.shape[1])
    params = {"n_estimators": 100, "learning_rate": 0.05, "n_jobs": 1, "random_state": 0}
    permutation = within_queries(qid, 0)
    in_file_order = LambdaMARTRanker(**params).fit(X, y, qid)
    shuffled = LambdaMARTRanker(**params).fit(X[permutation], y[permutation], qid)
    ours, again = in_file_order.predict(X_test), shuffled.predict(X_test)
    np.testing.assert_array_equal(again, ours)
    ndcg = ndcg_score(y_test, ours, qid_test, k=10)
    assert ndcg == ndcg_score(y_test, again, qid_test, k=10)
    # Observed 0.806736 in every order (before the canonical order: 0.8029 in file order, 0.7964 and 0.8078
    # with each query's rows in two random orders).
    assert 0.75 < ndcg < 0.9


def test_a_separate_validation_set_in_any_order_within_its_queries(data):
    """Early stopping on X_val (a list-context model, whose scores' last bits follow the list's order)."""
    X, y, qid = data
    train, valid = qid < 20, qid >= 20
    X_val, y_val, qid_val = X[valid], y[valid], qid[valid]
    permutation = within_queries(qid_val, 4)

    def fit(rows):
        ranker = SetRankRanker(d_model=8, n_blocks=1, n_heads=2, early_stopping=True, n_iter_no_change=2,
                               **{**NEURAL, "max_epochs": 6})
        return ranker.fit(X[train], y[train], qid[train], X_val=X_val[rows], y_val=y_val[rows], groups_val=qid_val)

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        first, second = fit(np.arange(len(qid_val))), fit(permutation)
    finally:
        torch.set_num_threads(threads)
    assert first.history_[:, "valid_ndcg@10"] == second.history_[:, "valid_ndcg@10"]
    np.testing.assert_array_equal(second.predict(X, groups=qid), first.predict(X, groups=qid))


def test_the_validation_callback_scores_rows_in_canonical_order(data):
    """ValidationNDCG scores each row of a separate set exactly the same whatever the order of a query's rows."""
    from sklearn_ltr.training import ValidationNDCG

    X, y, qid = data
    train, valid = qid < 20, qid >= 20
    ranker = SetRankRanker(d_model=8, n_blocks=1, n_heads=2, **NEURAL).fit(X[train], y[train], qid[train])
    X_val, y_val, qid_val = X[valid], y[valid], qid[valid]
    scored = []
    for rows in (np.arange(len(qid_val)), within_queries(qid_val, 5)):
        callback = ValidationNDCG(k=10, X=X_val[rows], y=y_val[rows], groups=qid_val).initialize()
        scores = np.empty(len(rows))
        scores[callback.order_] = ranker.net_.score_rows(callback.dataset_)
        np.testing.assert_allclose(scores, ranker.predict(X_val[rows], groups=qid_val), rtol=1e-5, atol=1e-6)
        scored.append((rows, scores))
    (_, first_scores), (shuffled, shuffled_scores) = scored
    np.testing.assert_array_equal(shuffled_scores, first_scores[shuffled])


_SCORERS = {
    "RankNetRanker": lambda: RankNetRanker(hidden_sizes=(8,), **NEURAL),
    "DASALCRanker": lambda: DASALCRanker(hidden_size=8, n_layers=1, n_attention_layers=1, n_heads=1, head_size=4,
                                         **NEURAL),
    "SetRankRanker": lambda: SetRankRanker(d_model=8, n_blocks=1, n_heads=2, **NEURAL),
}


@pytest.mark.parametrize("name", list(_SCORERS))
def test_validation_scores_a_separate_set_as_predict_does(data, name):
    """One scoring path: each validation row gets predict's score, whatever the order of its query's rows.

    The set's rows are shuffled within their queries; both paths score each list in its canonical order, in the
    same blocks and batches. float32 features, so that predict compares the rows' bytes as the validation set's
    float32 copy holds them.
    """
    from sklearn_ltr.training import ValidationNDCG

    X, y, qid = data
    X = X.astype(np.float32)
    train, valid = qid < 20, qid >= 20
    rows = within_queries(qid[valid], 3)
    X_val, y_val, qid_val = X[valid][rows], y[valid][rows], qid[valid][rows]
    callback = ValidationNDCG(k=10, X=X_val, y=y_val, groups=qid_val, name="vali@10")
    ranker = _SCORERS[name]().set_params(callbacks=[callback]).fit(X[train], y[train], qid[train])
    predicted = ranker.predict(X_val, groups=qid_val)
    assert ranker.history_[-1, "vali@10"] == ndcg_score(y_val, predicted, qid_val, k=10)
    scoring = ValidationNDCG(k=10, X=X_val, y=y_val, groups=qid_val).initialize()
    scores = np.full(len(qid_val), np.nan)
    scores[scoring.order_] = ranker.net_.score_rows(scoring.dataset_)
    if name == "RankNetRanker":
        # A pointwise scorer's predict scores the rows in their input order as one list, whose matrix
        # product gives a row last bits that depend on where it lies in the matrix (terms of ~1e3 with
        # these heavy-tailed features: ~1e-6 absolute). A list-context model's lists are scored in the
        # same order, batches and places on both paths: bit for bit.
        np.testing.assert_allclose(scores, predicted, rtol=1e-5, atol=1e-5)
    else:
        np.testing.assert_array_equal(scores, predicted)


def test_score_rows_scores_a_dataset_of_rows_used_where_they_lie(data):
    """A training dataset over X itself (queries contiguous, read in canonical order): each row gets predict's score.

    A subset of its queries (a held-out split) scores only its own queries' rows; the other rows stay NaN.
    """
    X, y, qid = data
    order = np.argsort(qid, kind="stable")
    X, y, qid = X[order].astype(np.float32), y[order], qid[order]
    X = X[within_queries(qid, 4)]  # rows of a query in another order than the canonical one
    ranker = SetRankRanker(d_model=8, n_blocks=1, n_heads=2, **NEURAL).fit(X, y, qid)
    query_groups = QueryGroups(qid)
    dataset = build_dataset(query_groups, X, y)
    assert dataset.views and dataset.index is not None
    expected = ranker.predict(X, groups=qid)
    np.testing.assert_array_equal(ranker.net_.score_rows(dataset), expected)
    # Other batches pad the lists to other lengths: attention sums in another order (~1e-7).
    np.testing.assert_allclose(ranker.net_.score_rows(dataset, documents=7), expected, rtol=1e-5, atol=1e-6)
    held = torch.tensor([1, 4, 5])
    scores = ranker.net_.score_rows(dataset.subset(held))
    rows = np.isin(query_groups.codes, held.numpy())
    np.testing.assert_allclose(scores[rows], expected[rows], rtol=1e-5, atol=1e-6)
    assert np.isnan(scores[~rows]).all()

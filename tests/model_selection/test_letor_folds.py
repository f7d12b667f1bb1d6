"""sklearn_ltr.model_selection: the LETOR fold rotation, loading folds and evaluating on all five."""

import subprocess
import sys

import numpy as np
import pytest
from sklearn.base import BaseEstimator

from sklearn_ltr import LambdaMARTRanker
from sklearn_ltr.datasets import dump_svmlight_ranking, load_svmlight_ranking
from sklearn_ltr.metrics import ndcg_score, paired_significance
from sklearn_ltr.model_selection import evaluate_letor_folds, letor_fold_parts, load_letor_fold

# The rotation as LETOR and ../shared/data/README.md state it: (train, vali, test) of folds 1..5.
ROTATION = {
    1: (("S1", "S2", "S3"), "S4", "S5"),
    2: (("S2", "S3", "S4"), "S5", "S1"),
    3: (("S3", "S4", "S5"), "S1", "S2"),
    4: (("S4", "S5", "S1"), "S2", "S3"),
    5: (("S5", "S1", "S2"), "S3", "S4"),
}
N_QUERIES = 40  # synthetic: query q lies in partition S(q % 5 + 1)


class ColumnRanker(BaseEstimator):
    """Scores ``sign * X[:, column]``; records the data it was fitted on."""

    def __init__(self, column=0, sign=1.0):
        self.column = column
        self.sign = sign

    def fit(self, X, y, groups=None, **fit_params):
        self.fit_queries_ = set(np.asarray(groups).tolist())
        self.fit_params_ = fit_params
        return self

    def predict(self, X, groups=None):
        return self.sign * np.asarray(X)[:, self.column]


def _queries(split):
    return set(np.asarray(split[2]).tolist())


def _partition_of(q):
    return f"S{q % 5 + 1}"


@pytest.fixture(scope="module")
def synthetic():
    """Five partitions of 8 queries; the label follows feature 0 plus noise."""
    rng = np.random.default_rng(0)
    sizes = rng.integers(3, 12, size=N_QUERIES)
    qid = np.repeat(np.arange(N_QUERIES), sizes)
    X = rng.normal(size=(qid.size, 4))
    y = np.digitize(X[:, 0] + 0.7 * rng.normal(size=qid.size), [0.0, 1.0]).astype(float)
    return X, y, qid


def _write(folder, X, y, qid, **options):
    folder.mkdir(parents=True, exist_ok=True)
    for s in range(5):
        rows = qid % 5 == s
        dump_svmlight_ranking(X[rows], y[rows], qid[rows], folder / f"S{s + 1}.txt", **options)
    return folder


@pytest.fixture(scope="module")
def partitions(synthetic, tmp_path_factory):
    return _write(tmp_path_factory.mktemp("letor") / "partitions", *synthetic)


# ---------------------------------------------------------------- the rotation


@pytest.mark.parametrize("fold", range(1, 6))
def test_fold_parts_follow_the_letor_rotation(fold):
    train, vali, test = ROTATION[fold]
    assert letor_fold_parts(fold) == {"train": train, "vali": vali, "test": test}


def test_every_partition_is_test_and_vali_once():
    parts = [letor_fold_parts(k) for k in range(1, 6)]
    assert sorted(p["test"] for p in parts) == ["S1", "S2", "S3", "S4", "S5"]
    assert sorted(p["vali"] for p in parts) == ["S1", "S2", "S3", "S4", "S5"]
    for p in parts:  # five distinct partitions in each fold
        assert len({*p["train"], p["vali"], p["test"]}) == 5


@pytest.mark.parametrize("fold", range(1, 6))
def test_load_letor_fold_reads_the_rotated_partitions(partitions, synthetic, fold):
    train, vali, test = load_letor_fold(partitions, fold)
    parts = letor_fold_parts(fold)
    assert {_partition_of(q) for q in _queries(train)} == set(parts["train"])
    assert {_partition_of(q) for q in _queries(vali)} == {parts["vali"]}
    assert {_partition_of(q) for q in _queries(test)} == {parts["test"]}
    # train is S(k), S(k+1), S(k+2) concatenated in that order, rows as in the files
    expected = [load_svmlight_ranking(partitions / f"{name}.txt") for name in parts["train"]]
    for got, want in zip(train, (np.concatenate(arrays) for arrays in zip(*expected, strict=True)), strict=True):
        np.testing.assert_array_equal(got, want)
    X, y, qid = synthetic
    rows = np.isin(qid, sorted(_queries(test)))
    np.testing.assert_allclose(test[0], X[rows], rtol=1e-6)  # the writer keeps ~9 significant digits
    np.testing.assert_array_equal(test[1], y[rows])


def test_zero_based_files_and_empty_last_columns_load_alike(partitions, synthetic, tmp_path):
    X, y, qid = synthetic
    X = X.copy()
    X[qid % 5 == 2, 3] = 0.0  # S3 never mentions the last feature
    zero = _write(tmp_path / "zero", X, y, qid, zero_based=True)
    one = _write(tmp_path / "one", X, y, qid)
    for a, b in zip(load_letor_fold(zero, 3), load_letor_fold(one, 3), strict=True):
        assert a[0].shape[1] == 4
        np.testing.assert_array_equal(a[0], b[0])
    sparse = load_letor_fold(one, 3, dense=False)[0][0]
    assert sparse.format == "csr"
    np.testing.assert_array_equal(sparse.toarray(), load_letor_fold(one, 3)[0][0])


# ---------------------------------------------------------------- real data: each query tested once


@pytest.mark.parametrize(("name", "n_queries"), [("mq2008", 784), ("ohsumed", 106)])
def test_real_data_every_query_is_a_test_query_exactly_once(data_dir, name, n_queries):
    folder = data_dir / name / "partitions"
    tested = []
    for fold in range(1, 6):
        train, vali, test = load_letor_fold(folder, fold)
        assert not (_queries(train) & _queries(vali) or _queries(train) & _queries(test)
                    or _queries(vali) & _queries(test))
        assert len(_queries(train) | _queries(vali) | _queries(test)) == n_queries
        tested += sorted(_queries(test))
    assert len(tested) == len(set(tested)) == n_queries
    # ... and evaluating a (fit-free) ranker on all folds returns each query once
    result = evaluate_letor_folds(ColumnRanker(), folder)
    assert len(result.per_query["query_id"]) == n_queries
    assert sorted(result.per_query["query_id"].tolist()) == sorted(tested)


@pytest.mark.parametrize("name", ["mq2008", "ohsumed"])
def test_real_fold_1_equals_the_fold1_files(data_dir, name):
    for got, split in zip(load_letor_fold(data_dir / name / "partitions", 1), ("train", "vali", "test"), strict=True):
        for a, b in zip(got, load_svmlight_ranking(data_dir / name / "Fold1" / f"{split}.txt"), strict=True):
            np.testing.assert_array_equal(a, b)


# ---------------------------------------------------------------- evaluate_letor_folds


def test_per_query_values_equal_a_hand_computation(partitions):
    ranker = LambdaMARTRanker(n_estimators=15, num_leaves=3, min_child_samples=5, n_jobs=1, random_state=0)
    result = evaluate_letor_folds(ranker, partitions, folds=[4], k=(1, 5, 10))
    train, _, (X, y, qid) = load_letor_fold(partitions, 4)
    scores = LambdaMARTRanker(**ranker.get_params()).fit(*train).predict(X, groups=qid)
    ids = result.per_query["query_id"]
    np.testing.assert_array_equal(ids, sorted(set(qid.tolist())))
    assert (result.per_query["fold"] == 4).all()
    for k in (1, 5, 10):
        hand = [ndcg_score(y[qid == q], scores[qid == q], qid[qid == q], k=k) for q in ids]
        np.testing.assert_allclose(result.per_query[f"ndcg@{k}"], hand, rtol=0, atol=1e-12)
        assert result.per_query[f"ndcg@{k}"].mean() == pytest.approx(ndcg_score(y, scores, qid, k=k))


def test_all_folds_each_query_once_sorted_by_fold_then_id(partitions):
    result = evaluate_letor_folds(ColumnRanker(), partitions, k=[3, None], metric_params={"gain": "linear"})
    fold, ids = result.per_query["fold"], result.per_query["query_id"]
    assert sorted(result.per_query) == ["fold", "ndcg", "ndcg@3", "query_id"]
    assert len(ids) == len(set(ids.tolist())) == N_QUERIES
    assert list(zip(fold.tolist(), ids.tolist(), strict=True)) == sorted(zip(fold.tolist(), ids.tolist(), strict=True))
    for k in range(1, 6):  # fold k tests on S(k + 4): the queries q with q % 5 == (k + 3) % 5
        assert {q % 5 for q in ids[fold == k].tolist()} == {(k + 3) % 5}
    assert [f["fold"] for f in result.folds] == [1, 2, 3, 4, 5]


def test_selection_on_vali_and_the_factory_and_fit_params_see_vali(partitions):
    seen = []

    def make(vali):
        seen.append(_queries(vali))
        return ColumnRanker()

    def fit_params(vali):
        return {"vali_queries": _queries(vali)}

    result = evaluate_letor_folds(make, partitions, param_grid={"sign": [-1.0, 1.0], "column": [0, 1]},
                                  folds=(2, 5), fit_params=fit_params, return_estimators=True)
    for entry in result.folds:
        fold = entry["fold"]
        vali_queries = {q for q in range(N_QUERIES) if _partition_of(q) == ROTATION[fold][1]}
        train_queries = {q for q in range(N_QUERIES) if _partition_of(q) in ROTATION[fold][0]}
        assert entry["best_params"] == {"column": 0, "sign": 1.0}  # the label follows feature 0
        assert entry["best_index"] == int(np.argmax(entry["vali_scores"]))
        assert len(entry["params"]) == len(entry["vali_scores"]) == len(entry["fit_times"]) == 4
        best = entry["estimator"]
        assert best.fit_queries_ == train_queries
        assert best.fit_params_ == {"vali_queries": vali_queries}
        assert best.get_params() == {"column": 0, "sign": 1.0}
    assert len(seen) == 8 and {frozenset(s) for s in seen} == {
        frozenset(q for q in range(N_QUERIES) if _partition_of(q) == ROTATION[f][1]) for f in (2, 5)}


def test_vali_scores_are_the_metric_on_vali(partitions):
    result = evaluate_letor_folds(ColumnRanker(), partitions, folds=1, select_k=3, metric="map")
    _, (X, y, qid), _ = load_letor_fold(partitions, 1)
    from sklearn_ltr.metrics import average_precision_score

    assert result.folds[0]["vali_scores"][0] == pytest.approx(average_precision_score(y, X[:, 0], qid, k=3))
    assert sorted(result.per_query) == ["fold", "map@10", "query_id"]


def test_results_on_the_same_partitions_align_for_paired_tests(partitions):
    good = evaluate_letor_folds(ColumnRanker(sign=1.0), partitions)
    bad = evaluate_letor_folds(ColumnRanker(sign=-1.0), partitions)
    np.testing.assert_array_equal(good.per_query["query_id"], bad.per_query["query_id"])
    table = paired_significance(bad.per_query["ndcg@10"], {"good": good.per_query["ndcg@10"]}, random_state=0)
    assert table["good"].mean_difference > 0 and table["good"].t_pvalue < 0.01


def test_import_loads_no_torch():
    script = "import sys, sklearn_ltr.model_selection\nprint('torch' in sys.modules, 'skorch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


# ---------------------------------------------------------------- errors


def test_missing_directory_names_the_argument(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"partitions_dir=.*nowhere' is not a directory; pass the folder "
                                                r"holding .* S1\.txt \.\. S5\.txt"):
        load_letor_fold(tmp_path / "nowhere", 1)


def test_missing_partition_names_the_file(partitions, tmp_path):
    folder = tmp_path / "partial"
    folder.mkdir()
    for name in ("S1", "S2", "S4"):
        (folder / f"{name}.txt").write_bytes((partitions / f"{name}.txt").read_bytes())
    with pytest.raises(FileNotFoundError, match=r"partial' lacks S3\.txt, S5\.txt; pass the folder"):
        evaluate_letor_folds(ColumnRanker(), folder)


def test_data_set_folder_suggests_its_partitions(partitions):
    with pytest.raises(FileNotFoundError, match=r"Did you mean partitions_dir=.*partitions'"):
        load_letor_fold(partitions.parent, 1)


def test_fold_folder_says_it_holds_one_fold(tmp_path):
    for split in ("train", "vali", "test"):
        (tmp_path / f"{split}.txt").write_text("0 qid:1 1:0.5\n")
    with pytest.raises(FileNotFoundError, match=r"holds one fold \(train\.txt, vali\.txt, test\.txt\)"):
        load_letor_fold(tmp_path, 1)


def test_shared_query_between_partitions_is_an_error(partitions, tmp_path):
    for s in range(1, 6):
        (tmp_path / f"S{s}.txt").write_bytes((partitions / f"S{s}.txt").read_bytes())
    (tmp_path / "S5.txt").write_bytes((partitions / "S2.txt").read_bytes())
    with pytest.raises(ValueError, match=r"query id 1 is in both .*S2\.txt and .*S5\.txt \(8 shared queries\)"):
        load_letor_fold(tmp_path, 1)


@pytest.mark.parametrize("fold", [0, 6, -1, 1.0, True, "1", None])
def test_bad_fold(partitions, fold):
    with pytest.raises(ValueError, match=r"fold must be an integer from 1 to 5"):
        load_letor_fold(partitions, fold)
    with pytest.raises(ValueError, match=r"fold must be an integer from 1 to 5"):
        letor_fold_parts(fold)


@pytest.mark.parametrize(("folds", "match"), [
    ([1, 1], "folds must hold distinct folds"),
    ([], "folds must hold distinct folds"),
    ([1, 7], "each entry of folds must be an integer from 1 to 5"),
])
def test_bad_folds(partitions, folds, match):
    with pytest.raises(ValueError, match=match):
        evaluate_letor_folds(ColumnRanker(), partitions, folds=folds)


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"estimator": 3}, TypeError, "estimator must be a ranker .* or a callable make\\(vali\\)"),
    ({"estimator": lambda vali: "not a ranker"}, TypeError, "estimator\\(vali\\) returned 'str', not an estimator"),
    ({"fit_params": [1]}, TypeError, "fit_params must be a dict of fit arguments or a callable"),
    ({"fit_params": lambda vali: None}, TypeError, "fit_params must be a dict"),
    ({"metric": "auc"}, ValueError, "metric must be one of"),
    ({"metric_params": {"max_grade": 2}}, TypeError, "metric_params has 'max_grade', not an option of the 'ndcg'"),
    ({"metric_params": {"k": 5}}, TypeError, "cut-offs go in k and select_k"),
    ({"metric_params": {"gain": "cubic"}}, ValueError, "'gain' parameter of evaluate_letor_folds"),
    ({"k": 0}, ValueError, "'k' parameter of evaluate_letor_folds must be an int in the range"),
    ({"k": ()}, ValueError, "k is empty"),
    ({"k": (5, 5)}, ValueError, "k has repeated cut-offs"),
    ({"select_k": 0}, ValueError, "'select_k' parameter of evaluate_letor_folds"),
    ({"metric": "precision", "k": None}, ValueError, "'k' parameter of evaluate_letor_folds"),
])
def test_bad_arguments(partitions, kwargs, error, match):
    kwargs = {"estimator": ColumnRanker(), **kwargs}
    with pytest.raises(error, match=match):
        evaluate_letor_folds(partitions_dir=partitions, folds=1, **kwargs)


def test_defaults_select_on_ndcg_at_10_keep_no_estimator_and_print_nothing(partitions, capsys):
    reverse = ColumnRanker(sign=-1.0)  # the most relevant documents last: the cut-off matters
    result = evaluate_letor_folds(reverse, partitions, folds=2)
    _, (X, y, qid), _ = load_letor_fold(partitions, 2)  # vali S5
    at_10 = ndcg_score(y, -X[:, 0], qid, k=10)
    assert at_10 != pytest.approx(ndcg_score(y, -X[:, 0], qid, k=11))  # lists of 11 documents on vali
    assert result.folds[0]["vali_scores"][0] == pytest.approx(at_10)
    assert "estimator" not in result.folds[0]
    assert capsys.readouterr() == ("", "")


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"k": ()}, "k is empty; pass a cut-off such as k=10, or several, k=(1, 5, 10)."),
    ({"estimator": 3}, "estimator must be a ranker (an object with fit and predict) or a callable make(vali) that "
                       "returns one; got 'int'."),
    ({"fit_params": [1]}, "fit_params must be a dict of fit arguments or a callable fit_params(vali) returning one; "
                          "got 'list'."),
])
def test_argument_errors_whole(partitions, kwargs, message):
    kwargs = {"estimator": ColumnRanker(), **kwargs}
    with pytest.raises((TypeError, ValueError)) as error:
        evaluate_letor_folds(partitions_dir=partitions, folds=1, **kwargs)
    assert str(error.value) == message


class GroupsRecorder(ColumnRanker):
    """ColumnRanker that records the query ids each predict call gets (None if none)."""

    def predict(self, X, groups=None):
        self.__dict__.setdefault("predict_groups_", []).append(None if groups is None else set(np.asarray(groups)))
        return super().predict(X, groups)


def _partition_queries(partition):
    return {q for q in range(N_QUERIES) if _partition_of(q) == partition}


def test_vali_and_test_predictions_get_their_query_ids(partitions):
    result = evaluate_letor_folds(GroupsRecorder(), partitions, folds=3, return_estimators=True)
    _, vali, test = ROTATION[3]
    assert result.folds[0]["estimator"].predict_groups_ == [_partition_queries(vali), _partition_queries(test)]


def test_metric_params_reach_selection_and_the_per_query_values(partitions):
    result = evaluate_letor_folds(ColumnRanker(), partitions, folds=1, metric_params={"gain": "linear"})
    _, (X, y, qid), (X_test, y_test, qid_test) = load_letor_fold(partitions, 1)
    linear = ndcg_score(y, X[:, 0], qid, k=10, gain="linear")
    assert linear != pytest.approx(ndcg_score(y, X[:, 0], qid, k=10))  # labels 0 to 2: the gains differ
    assert result.folds[0]["vali_scores"][0] == pytest.approx(linear)
    ids = result.per_query["query_id"]
    hand = [ndcg_score(y_test[qid_test == q], X_test[qid_test == q, 0], np.zeros((qid_test == q).sum()), k=10,
                       gain="linear") for q in ids]
    np.testing.assert_allclose(result.per_query["ndcg@10"], hand, rtol=0, atol=1e-12)


def test_the_best_candidate_is_the_first_of_the_best_on_vali(partitions):
    # Candidates: noise, the label reversed, the label, the label again (a tie with the one before).
    grid = [{"column": [1]}, {"column": [0], "sign": [-1.0]}, {"column": [0]}, {"column": [0], "sign": [1.0]}]
    result = evaluate_letor_folds(ColumnRanker(), partitions, folds=1, param_grid=grid)
    scores = result.folds[0]["vali_scores"]
    assert scores[1] < scores[0] < scores[2] == scores[3]
    assert result.folds[0]["best_index"] == 2 and result.folds[0]["best_params"] == {"column": 0}


def _rank_loss(y_true, y_score, groups):
    """1 - NDCG@10 per query: lower is better, and no cut-off of its own."""
    from sklearn_ltr.metrics import METRICS

    return 1.0 - METRICS["ndcg"].per_query(y_true, y_score, groups, k=10)


@pytest.fixture
def rank_loss():
    from sklearn_ltr.metrics import Metric, register_metric, unregister_metric

    metric = register_metric(Metric("letor_rank_loss", None, _rank_loss, higher_is_better=False))
    try:
        yield metric
    finally:
        unregister_metric("letor_rank_loss")


def test_a_metric_without_cut_off_and_lower_is_better(partitions, rank_loss):
    with pytest.raises(ValueError) as error:
        evaluate_letor_folds(ColumnRanker(), partitions, folds=1, metric="letor_rank_loss")
    assert str(error.value) == "the 'letor_rank_loss' metric takes no cut-off; pass k=None and select_k=None."
    with pytest.raises(ValueError, match="takes no cut-off"):
        evaluate_letor_folds(ColumnRanker(), partitions, folds=1, metric="letor_rank_loss", k=None)
    result = evaluate_letor_folds(ColumnRanker(), partitions, folds=1, metric="letor_rank_loss", k=None,
                                  select_k=None, param_grid={"sign": [-1.0, 1.0]})
    assert result.folds[0]["best_params"] == {"sign": 1.0}  # the smaller loss
    assert sorted(result.per_query) == ["fold", "letor_rank_loss", "query_id"]


def test_verbose_prints_one_line_per_candidate_and_fit_times_are_durations(partitions, capsys):
    import time

    start = time.perf_counter()
    result = evaluate_letor_folds(ColumnRanker(), partitions, folds=[1, 2], param_grid={"sign": [1.0, -1.0]},
                                  verbose=1)
    elapsed = time.perf_counter() - start
    lines = capsys.readouterr().out.splitlines()
    expected = []
    for entry in result.folds:
        for index, (params, score, seconds) in enumerate(zip(entry["params"], entry["vali_scores"],
                                                             entry["fit_times"], strict=True)):
            assert 0.0 <= seconds <= elapsed
            expected.append(f"fold {entry['fold']}, candidate {index + 1}/2 {params}: vali ndcg@10 {score:.4f} "
                            f"({seconds:.1f} s)")
    assert lines == expected


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"metric": "auc"}, "The 'metric' parameter of evaluate_letor_folds must be a registered metric; got unknown "
                        "metric 'auc'."),
    ({"metric_params": {"k": 5}}, "metric_params has 'k', not an option of the 'ndcg' metric; its options are "
                                  "['empty_value', 'gain', 'ties'] (cut-offs go in k and select_k)."),
])
def test_metric_errors_name_the_function_and_the_options(partitions, kwargs, message):
    with pytest.raises((TypeError, ValueError)) as error:
        evaluate_letor_folds(ColumnRanker(), partitions, folds=1, **kwargs)
    assert str(error.value).startswith(message)


def test_a_metric_without_per_query_values_is_refused_by_name(partitions):
    with pytest.raises(ValueError) as error:
        evaluate_letor_folds(ColumnRanker(), partitions, folds=1, metric="swapped_pairs", k=None, select_k=None)
    assert str(error.value).startswith(
        "The 'metric' parameter of evaluate_letor_folds must be a metric with per-query values; the "
        "'swapped_pairs' metric has none.")

"""``OnnxScorer``'s own contract, beyond the score equality of test_onnx.py: its error messages, sparse and
DataFrame input, the query column, initial_rank checks and the batch sizes its parameters promise."""

import importlib
import sys
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from onnx_helpers import TOLERANCE, max_diff, ranks_by_first_feature  # tests/onnx_helpers.py

from sklearn_ltr import DASALCRanker, RankNetRanker, SetRankRanker
from sklearn_ltr.datasets import make_ranking

onnx = pytest.importorskip("onnx", reason="ONNX export needs the serving extra: pip install -e '.[serving]'")
pytest.importorskip("onnxruntime", reason="ONNX export tests need onnxruntime: pip install -e '.[serving]'")

from sklearn_ltr.export import OnnxScorer, to_onnx  # noqa: E402
from sklearn_ltr.utils._sklearn_compat import InvalidParameterError  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

QUICK = {"max_epochs": 2, "random_state": 0}


@pytest.fixture(scope="module")
def data():
    """20 queries of 4 to 117 documents, 4 moderate-scale float64 features, rows shuffled so queries interleave."""
    X, y, qid = make_ranking(n_queries=20, n_features=4, random_state=0)
    order = np.random.default_rng(0).permutation(len(y))
    return np.log1p(X[order].astype(np.float64)), y[order], qid[order]


@pytest.fixture(scope="module")
def ranknet(data):
    X, y, qid = data
    ranker = RankNetRanker(hidden_sizes=(8,), **QUICK).fit(X, y, groups=qid)
    return ranker, OnnxScorer(to_onnx(ranker), n_threads=1)


@pytest.fixture(scope="module")
def dasalc(data):
    X, y, qid = data
    ranker = DASALCRanker(hidden_size=8, n_attention_layers=1, head_size=4, **QUICK).fit(X, y, groups=qid)
    return ranker, OnnxScorer(to_onnx(ranker), n_threads=1)


@pytest.fixture(scope="module")
def setrank_init(data):
    """SetRank fitted with initial ranks (by feature 0 within each query), and those ranks."""
    X, y, qid = data
    ranks = ranks_by_first_feature(X, qid)
    ranker = SetRankRanker(d_model=8, n_blocks=1, n_heads=2, max_rank=20, **QUICK).fit(
        X, y, groups=qid, initial_rank=ranks)
    return ranker, OnnxScorer(to_onnx(ranker), n_threads=1), ranks


@pytest.fixture(scope="module")
def query_column(data):
    """RankNet reading the query ids from column 0 of X."""
    X, y, qid = data
    X_ids = np.column_stack([qid, X])
    ranker = RankNetRanker(hidden_sizes=(8,), query_column=0, **QUICK).fit(X_ids, y)
    return ranker, OnnxScorer(to_onnx(ranker), n_threads=1), X_ids


def _record_batches(scorer, monkeypatch):
    """Shapes of the padded ``X`` of every batch ``predict`` runs: the memory each run takes."""
    shapes, score_padded = [], scorer.score_padded

    def recording(X, mask, initial_rank=None):
        shapes.append(X.shape)
        return score_padded(X, mask, initial_rank)

    monkeypatch.setattr(scorer, "score_padded", recording)
    return shapes


def test_missing_onnxruntime_names_the_scorer_and_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(ImportError) as cause:
        importlib.import_module("onnxruntime")
    with pytest.raises(ImportError) as error:
        OnnxScorer(b"")
    assert str(error.value) == (
        f"OnnxScorer needs the 'onnxruntime' package ({cause.value}); install it with "
        f"`pip install 'sklearn-ltr[serving]'`.")


def test_model_of_another_type_is_refused_by_name():
    with pytest.raises(TypeError) as error:
        OnnxScorer(12)
    assert str(error.value) == "model must be an onnx.ModelProto, bytes or a path to a .onnx file; got int."


def _with_metadata(model, keys):
    """``model`` with only these of its ``sklearn_ltr.`` metadata keys, as an older or hand-made file has."""
    kept = {p.key: p.value for p in model.metadata_props if p.key in {f"sklearn_ltr.{key}" for key in keys}}
    del model.metadata_props[:]
    onnx.helper.set_model_props(model, kept)
    return model


def test_model_without_n_features_metadata_is_refused(ranknet):
    with pytest.raises(ValueError) as error:
        OnnxScorer(_with_metadata(to_onnx(ranknet[0]), []))
    assert str(error.value) == (
        "this ONNX model was not written by sklearn_ltr.export.to_onnx (inputs ['X', 'mask'], no "
        "sklearn_ltr.n_features metadata).")


def test_model_with_n_features_metadata_only_takes_the_safe_defaults(data, ranknet):
    # No list_context: groups are required; no feature names: any columns; no query column; NaN refused.
    pd = pytest.importorskip("pandas")
    X, _, qid = data
    ranker, _ = ranknet
    scorer = OnnxScorer(_with_metadata(to_onnx(ranker), ["n_features"]), n_threads=1)
    with pytest.raises(ValueError, match="pass groups, the query id of each row"):
        scorer.predict(X)
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    assert max_diff(scorer.predict(frame, groups=qid), ranker.predict(X)) <= TOLERANCE
    with pytest.raises(ValueError, match=r"^X contains NaN .*: OnnxScorer cannot take missing values"):
        scorer.predict(np.where(X > 2, np.nan, X), groups=qid)


def test_n_threads_and_default_provider_reach_the_session(ranknet):
    model = to_onnx(ranknet[0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an unknown provider name makes onnxruntime warn and fall back
        scorer = OnnxScorer(model, n_threads=2)
    assert scorer.session_.get_providers() == ["CPUExecutionProvider"]
    assert scorer.session_.get_session_options().intra_op_num_threads == 2


def test_sparse_x_scores_as_dense(data, ranknet, dasalc, query_column):
    X, _, qid = data
    for ranker, scorer in (ranknet, dasalc):
        expected = ranker.predict(X, groups=qid)
        for sparse in (sp.csr_matrix(X), sp.coo_matrix(X), sp.csc_matrix(X)):
            assert max_diff(scorer.predict(sparse, groups=qid), expected) <= TOLERANCE
    ranker, scorer, X_ids = query_column
    assert max_diff(scorer.predict(sp.csr_matrix(X_ids)), ranker.predict(X_ids)) <= TOLERANCE


def test_list_context_model_runs_max_batch_queries_lists_at_once(data, dasalc, monkeypatch):
    X, _, qid = data
    ranker, scorer = dasalc
    shapes = _record_batches(scorer, monkeypatch)
    assert max_diff(scorer.predict(X, groups=qid), ranker.predict(X, groups=qid)) <= TOLERANCE
    assert [shape[0] for shape in shapes] == [8, 8, 4]  # 20 queries, the documented default of 8 per batch

    few = OnnxScorer(to_onnx(ranker), n_threads=1, max_batch_queries=3)
    shapes = _record_batches(few, monkeypatch)
    assert max_diff(few.predict(X, groups=qid), ranker.predict(X, groups=qid)) <= TOLERANCE
    assert [shape[0] for shape in shapes] == [3] * 6 + [2]


def test_list_context_model_pads_at_most_max_batch_documents_slots(data, dasalc, monkeypatch):
    X, _, qid = data
    ranker, _ = dasalc
    scorer = OnnxScorer(to_onnx(ranker), n_threads=1, max_batch_documents=60)
    shapes = _record_batches(scorer, monkeypatch)
    assert max_diff(scorer.predict(X, groups=qid), ranker.predict(X, groups=qid)) <= TOLERANCE
    # Lists longer than 60 documents run alone; the others share batches of at most 60 slots.
    assert all(n * length <= 60 or n == 1 for n, length, _ in shapes)
    assert sum(n for n, _, _ in shapes) == len(np.unique(qid))
    assert sorted(length for n, length, _ in shapes if n == 1 and length > 60) == [70, 94, 117]


def test_pointwise_model_scores_max_batch_documents_rows_per_run(data, ranknet, monkeypatch):
    X, _, qid = data
    ranker, _ = ranknet
    scorer = OnnxScorer(to_onnx(ranker), n_threads=1, max_batch_documents=100)
    shapes = _record_batches(scorer, monkeypatch)
    assert max_diff(scorer.predict(X, groups=qid), ranker.predict(X)) <= TOLERANCE
    assert sorted(shapes) == [(1, 68, 4)] + [(1, 100, 4)] * 6  # 668 rows as lists of 100, groups or not


def test_pointwise_default_max_batch_documents_is_65536(ranknet, monkeypatch):
    # The scorer is built here, not taken from the fixture: mutmut runs, for a mutant of __init__,
    # only the tests that call it, and a module fixture's construction belongs to its first user.
    ranker, _ = ranknet
    scorer = OnnxScorer(to_onnx(ranker), n_threads=1)
    X = np.random.default_rng(0).uniform(0, 3, size=(65537, 4))
    shapes = _record_batches(scorer, monkeypatch)
    assert max_diff(scorer.predict(X), ranker.predict(X)) <= TOLERANCE
    assert sorted(shapes) == [(1, 1, 4), (1, 65536, 4)]


def test_groups_of_the_wrong_length_are_refused(data, dasalc):
    X, _, qid = data
    with pytest.raises(ValueError) as error:
        dasalc[1].predict(X, groups=qid[:-1])
    assert str(error.value) == (
        f"groups has {len(qid) - 1} entries but X has {len(qid)} rows; pass exactly one query id per row of X.")


def test_list_context_model_without_groups_says_what_to_pass(data, dasalc):
    with pytest.raises(ValueError) as error:
        dasalc[1].predict(data[0])
    assert str(error.value) == (
        "this model scores each document within its list (a list-context ranker): pass groups, the query id of "
        "each row.")


def test_wrong_number_of_features_message(data, ranknet, query_column):
    X, _, _ = data
    with pytest.raises(ValueError) as error:
        ranknet[1].predict(X[:, :3])
    assert str(error.value) == "X has 3 features, but the model takes 4 (the features the ranker was fitted on)."
    _, scorer, X_ids = query_column
    with pytest.raises(ValueError) as error:
        scorer.predict(X_ids[:, :-1])  # the query column is dropped: 3 features are left
    assert str(error.value) == (
        "X has 3 features, but the model takes 4 (the features the ranker was fitted on, without its query column).")


def test_groups_that_disagree_with_the_query_column_are_refused(data, query_column):
    _, _, qid = data
    _, scorer, X_ids = query_column
    with pytest.raises(ValueError) as error:
        scorer.predict(X_ids, groups=np.arange(len(qid)))
    assert str(error.value) == (
        "OnnxScorer.predict got groups= and query ids in column 0 of X (query_column=0), and they group the rows "
        "differently. Pass only one of them (query_column=None to use groups), or make them the same query ids.")


def test_feature_names_checked_only_when_both_sides_have_them(data, ranknet):
    pd = pytest.importorskip("pandas")
    X, y, qid = data
    names = ["f0", "f1", "f2", "f3"]
    frame = pd.DataFrame(X, columns=names)
    ranker = RankNetRanker(hidden_sizes=(8,), **QUICK).fit(frame, y, groups=qid)
    scorer = OnnxScorer(to_onnx(ranker), n_threads=1)
    expected = ranker.predict(frame)
    # A plain array has no names to check: it scores as the DataFrame does.
    assert max_diff(scorer.predict(X), expected) <= TOLERANCE
    with pytest.raises(ValueError) as error:
        scorer.predict(frame[["f1", "f0", "f2", "f3"]])
    assert str(error.value) == (
        "X's columns ['f1', 'f0', 'f2', 'f3'] are not the features the model was fitted on "
        "['f0', 'f1', 'f2', 'f3'] (same names, same order).")
    # A model fitted without names takes a DataFrame with any column names.
    np.testing.assert_array_equal(ranknet[1].predict(frame), ranknet[1].predict(X))


def _first_and_count(mask):
    row, column = np.argwhere(mask)[0]
    return int(mask.sum()), row, column


def test_missing_and_infinite_features_are_refused_before_scoring(data, ranknet):
    X, _, _ = data
    scorer = ranknet[1]
    count, row, column = _first_and_count(X > 2)
    with pytest.raises(ValueError) as error:
        scorer.predict(np.where(X > 2, np.nan, X))
    assert str(error.value) == (
        f"X contains NaN ({count} values; the first in row {row}, column {column}): OnnxScorer cannot take missing "
        f"values. Impute them (e.g. sklearn.impute.SimpleImputer in a Pipeline before the ranker), or use "
        f"LambdaMARTRanker, which treats NaN as a missing value.")
    with pytest.raises(ValueError) as error:
        scorer.predict(np.where(X > 2, np.inf, X))
    assert str(error.value) == (
        f"X contains infinity ({count} values; the first in row {row}, column {column}): OnnxScorer needs finite "
        f"features. Replace them with finite values (e.g. np.clip or np.nan_to_num).")
    # An object array (as from a DataFrame with None in it) converts to float first: None is missing too.
    with pytest.raises(ValueError, match=rf"^X contains NaN \({count} values; the first in row {row},"):
        scorer.predict(np.where(X > 2, None, X).astype(object))


def test_features_beyond_float32_are_refused_without_a_numpy_warning(data, ranknet):
    X = data[0].copy()
    X[5, 1] = 1e39  # finite in float64, infinite in the model's float32
    X[7, 0] = -2e39
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # NumPy's "overflow encountered in cast" would come first
        with pytest.raises(ValueError) as error:
            ranknet[1].predict(X)
    assert str(error.value) == (
        "X holds values beyond float32's range (2 values of magnitude above 3.4e+38; the first in row 5, column 1: "
        "1e+39): OnnxScorer computes in float32, where they would be infinite. Scale the features (e.g. "
        "Log1pTransformer or StandardScaler in a Pipeline, for both fit and predict).")
    # The same values in float32 are infinite already: the infinity error, and no cast.
    with pytest.raises(ValueError, match=r"^X contains infinity \(2 values; the first in row 5, column 1\)"):
        with np.errstate(over="ignore"):
            ranknet[1].predict(X.astype(np.float32))


@pytest.mark.parametrize("value", [0, -1, 2.5, True, "8", None])
@pytest.mark.parametrize("name", ["max_batch_documents", "max_batch_queries"])
def test_batch_sizes_must_be_positive_ints(ranknet, name, value):
    model = to_onnx(ranknet[0])
    with pytest.raises(InvalidParameterError) as error:
        OnnxScorer(model, **{name: value})
    assert str(error.value) == (
        f"The '{name}' parameter of OnnxScorer must be an int in the range [1, inf). Got {value!r} instead.")


@pytest.mark.parametrize("name", ["max_batch_documents", "max_batch_queries"])
def test_a_batch_size_of_one_is_accepted_as_any_integer_type(data, ranknet, name):
    X, _, qid = data
    scorer = OnnxScorer(to_onnx(ranknet[0]), n_threads=1, **{name: np.int64(1)})
    assert max_diff(scorer.predict(X[:50], groups=qid[:50]), ranknet[0].predict(X[:50])) <= TOLERANCE


def test_initial_rank_must_hold_one_finite_rank_per_row(data, setrank_init):
    X, _, qid = data
    _, scorer, ranks = setrank_init
    message = f"initial_rank must hold one finite rank per row of X ({len(qid)})."
    for bad in (ranks[:-1], np.append(ranks, 1), np.where(ranks == 3, np.nan, ranks)):
        with pytest.raises(ValueError) as error:
            scorer.predict(X, groups=qid, initial_rank=bad)
        assert str(error.value) == message


def test_initial_rank_of_python_objects_scores_as_numbers(data, setrank_init):
    # e.g. a pandas column of dtype object: the ranks are read as numbers, not refused.
    X, _, qid = data
    ranker, scorer, ranks = setrank_init
    expected = ranker.predict(X, groups=qid, initial_rank=ranks)
    assert max_diff(scorer.predict(X, groups=qid, initial_rank=ranks.astype(object)), expected) <= TOLERANCE


def _padded(X, qid, queries, extra=None):
    """The rows of ``queries`` as a padded batch ``(X [b, list, f] float64, mask int, extra [b, list])``."""
    length = max(int((qid == q).sum()) for q in queries)
    padded, mask = np.zeros((len(queries), length, X.shape[1])), np.zeros((len(queries), length), dtype=np.int64)
    ranks = np.zeros((len(queries), length), dtype=np.int64)
    for i, query in enumerate(queries):
        members = np.flatnonzero(qid == query)
        padded[i, : len(members)], mask[i, : len(members)] = X[members], 1
        if extra is not None:
            ranks[i, : len(members)] = extra[members]
    return padded, mask, ranks


def test_score_padded_takes_any_array_like(data, dasalc):
    # A service may send float64 features and a 0/1 mask, or nested lists: score_padded casts them.
    X, _, qid = data
    scorer = dasalc[1]
    padded, mask, _ = _padded(X, qid, np.unique(qid)[:3])
    expected = scorer.score_padded(padded.astype(np.float32), mask.astype(bool))
    assert expected.dtype == np.float32 and np.all(expected[mask == 0] == 0)
    np.testing.assert_array_equal(scorer.score_padded(padded, mask), expected)
    np.testing.assert_array_equal(scorer.score_padded(padded.tolist(), mask.tolist()), expected)


def test_score_padded_initial_rank_cast_and_checked(data, setrank_init, dasalc):
    X, _, qid = data
    _, scorer, ranks = setrank_init
    padded, mask, padded_ranks = _padded(X, qid, np.unique(qid)[:3], ranks)
    expected = scorer.score_padded(padded, mask, padded_ranks.astype(np.float32))
    np.testing.assert_array_equal(scorer.score_padded(padded, mask, padded_ranks), expected)  # int ranks
    with pytest.raises(ValueError) as error:
        scorer.predict(X, groups=qid)
    assert str(error.value) == "this model was fitted with initial_rank: pass initial_rank too."
    with pytest.raises(ValueError) as error:
        dasalc[1].predict(X, groups=qid, initial_rank=ranks)
    assert str(error.value) == "this model takes no initial_rank (its ranker was fitted without one)."

"""ONNX export (``sklearn_ltr.export``): onnxruntime's scores equal ``predict``'s for every ranker, on MQ2008 and on
shuffled synthetic rows; dynamic batch and list sizes; padding never changes a real document's score."""

import sys

import numpy as np
import pytest
import torch
from export_helpers import adjacent_float32_model, integer_model, split_thresholds  # tests/export_helpers.py
from onnx_helpers import TOLERANCE, max_diff, ranks_by_first_feature  # tests/onnx_helpers.py
from sklearn.exceptions import NotFittedError
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

import sklearn_ltr
from sklearn_ltr import (
    DASALCRanker,
    LambdaMARTRanker,
    Log1pTransformer,
    RankingEnsemble,
    RankNetRanker,
    SetRankRanker,
    TwoTowerDebiasedRanker,
)
from sklearn_ltr.datasets import load_svmlight_ranking, make_ranking, simulate_clicks

onnx = pytest.importorskip("onnx", reason="ONNX export needs the serving extra: pip install -e '.[serving]'")
pytest.importorskip("onnxruntime", reason="ONNX export tests need onnxruntime: pip install -e '.[serving]'")

from sklearn_ltr.export import OnnxScorer, to_onnx  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

NAMES = ["ranknet", "dasalc", "setrank", "setrank_imsab", "two_tower", "lambdamart"]
QUICK = {"max_epochs": 2, "random_state": 0, "device": "auto"}


def _fit(name, X, y, qid):
    """A quickly trained ranker of each kind (the two-tower model on simulated clicks)."""
    if name == "ranknet":
        return RankNetRanker(hidden_sizes=(32, 16), batch_norm=True, **QUICK).fit(X, y, groups=qid)
    if name == "dasalc":
        return DASALCRanker(hidden_size=32, n_attention_layers=2, n_heads=2, head_size=8, **QUICK).fit(
            X, y, groups=qid)
    if name == "setrank":
        return SetRankRanker(d_model=16, n_blocks=2, n_heads=2, **QUICK).fit(X, y, groups=qid)
    if name == "setrank_imsab":
        return SetRankRanker(d_model=16, n_blocks=1, n_heads=2, block="imsab", n_inducing_points=4, **QUICK).fit(
            X, y, groups=qid)
    if name == "two_tower":
        positions, clicks = simulate_clicks(y, qid, random_state=0)
        return TwoTowerDebiasedRanker(hidden_sizes=(16,), **QUICK).fit(X, clicks, groups=qid, positions=positions)
    return LambdaMARTRanker(n_estimators=60, num_leaves=15, random_state=0, n_jobs=1).fit(X, y, groups=qid)


@pytest.fixture(scope="module")
def mq2008(data_dir):
    fold = data_dir / "mq2008" / "Fold1"
    return load_svmlight_ranking(fold / "train.txt"), load_svmlight_ranking(fold / "test.txt")


@pytest.fixture(scope="module")
def synthetic():
    """Uneven lists (1 to 117 documents), moderate-scale features, rows shuffled so queries interleave."""
    X, y, qid = make_ranking(n_queries=30, n_features=6, random_state=0)
    X = np.sign(X) * np.log1p(np.abs(X))
    X, y, qid = np.vstack([X, X[:1] + 0.5]), np.append(y, 1), np.append(qid, qid.max() + 1)  # a one-document query
    order = np.random.default_rng(0).permutation(len(y))
    return X[order], y[order], qid[order]


@pytest.fixture(scope="module")
def synthetic_models(synthetic):
    return {name: _fit(name, *synthetic) for name in NAMES}


@pytest.fixture(scope="module")
def scorers(synthetic_models):
    return {name: OnnxScorer(to_onnx(ranker), n_threads=1) for name, ranker in synthetic_models.items()}


def _pad(X, qid, queries, length):
    """``queries`` padded to ``length`` slots: ``(X [b, length, f], mask, rows)``, ``rows`` in slot order."""
    padded = np.zeros((len(queries), length, X.shape[1]), dtype=np.float32)
    mask = np.zeros((len(queries), length), dtype=bool)
    rows = []
    for i, query in enumerate(queries):
        members = np.flatnonzero(qid == query)
        padded[i, : len(members)] = X[members]
        mask[i, : len(members)] = True
        rows.append(members)
    return padded, mask, np.concatenate(rows)


@pytest.mark.parametrize("name", NAMES)
def test_scores_equal_predict_on_mq2008(name, mq2008):
    (X, y, qid), (X_test, _, qid_test) = mq2008
    ranker = _fit(name, X, y, qid)
    scores = OnnxScorer(to_onnx(ranker), n_threads=1).predict(X_test, groups=qid_test)
    assert scores.shape == qid_test.shape and scores.dtype == np.float64
    assert max_diff(scores, ranker.predict(X_test, groups=qid_test)) <= TOLERANCE


@pytest.mark.parametrize("name", NAMES)
def test_scores_equal_predict_on_shuffled_uneven_lists(name, synthetic, synthetic_models, scorers):
    X, _, qid = synthetic
    expected = synthetic_models[name].predict(X, groups=qid)
    assert max_diff(scorers[name].predict(X, groups=qid), expected) <= TOLERANCE
    # Small batches: queries spread over many runs of the session, in batches of similar lengths.
    small = OnnxScorer(to_onnx(synthetic_models[name]), n_threads=1, max_batch_documents=64)
    assert max_diff(small.predict(X, groups=qid), expected) <= TOLERANCE


@pytest.mark.parametrize("name", NAMES)
def test_dynamic_batch_and_list_sizes(name, synthetic, synthetic_models, scorers):
    X, _, qid = synthetic
    expected = synthetic_models[name].predict(X, groups=qid)
    queries = np.unique(qid)
    sizes = {query: int((qid == query).sum()) for query in queries}
    one = max(queries, key=sizes.get)
    cases = [
        (queries[:2], max(sizes[q] for q in queries[:2])),  # 2 lists, padded to the longer
        (queries[2:9], max(sizes[q] for q in queries[2:9]) + 5),  # 7 lists, extra padding
        ([one], sizes[one]),  # one list, no padding at all
    ]
    shapes = set()
    for batch, length in cases:
        padded, mask, rows = _pad(X, qid, batch, length)
        scores = scorers[name].score_padded(padded, mask)
        shapes.add(scores.shape)
        assert scores.shape == mask.shape and scores.dtype == np.float32
        assert max_diff(scores[mask], expected[rows]) <= TOLERANCE
        assert np.all(scores[~mask] == 0)
    assert len(shapes) == len(cases)


@pytest.mark.parametrize("name", NAMES)
def test_padding_never_changes_a_real_documents_score(name, synthetic, scorers):
    X, _, qid = synthetic
    queries = np.unique(qid)[3:7]
    padded, mask, _ = _pad(X, qid, queries, max(int((qid == q).sum()) for q in queries))
    base = scorers[name].score_padded(padded, mask)
    assert np.all(base[mask] != 0)  # real documents have real scores
    wider, wider_mask, _ = _pad(X, qid, queries, mask.shape[1] + 17)
    # Padding slots hold anything finite, not only zeros.
    wider[~wider_mask] = np.random.default_rng(1).normal(scale=3.0, size=wider[~wider_mask].shape)
    scores = scorers[name].score_padded(wider, wider_mask)
    assert np.max(np.abs(scores[:, : mask.shape[1]][mask] - base[mask])) <= 1e-6
    assert np.all(scores[~wider_mask] == 0)
    # A list alone scores as it does next to others.
    alone = scorers[name].score_padded(padded[1:2, : mask[1].sum()], mask[1:2, : mask[1].sum()])
    assert np.max(np.abs(alone[0] - base[1][mask[1]])) <= 1e-6


@pytest.mark.parametrize("name", NAMES)
def test_model_inputs_outputs_and_metadata(name, synthetic_models):
    ranker = synthetic_models[name]
    model = to_onnx(ranker)
    onnx.checker.check_model(model, full_check=True)
    inputs = {value.name: value.type.tensor_type for value in model.graph.input}
    assert list(inputs) == ["X", "mask"]
    dims = lambda tensor: [d.dim_param or d.dim_value for d in tensor.shape.dim]  # noqa: E731
    assert inputs["X"].elem_type == onnx.TensorProto.FLOAT and dims(inputs["X"])[2] == ranker.n_features_in_
    assert inputs["mask"].elem_type == onnx.TensorProto.BOOL
    assert all(isinstance(d, str) for d in dims(inputs["X"])[:2] + dims(inputs["mask"]))  # dynamic sizes
    (output,) = model.graph.output
    assert output.name == "scores" and output.type.tensor_type.elem_type == onnx.TensorProto.FLOAT
    if name != "lambdamart":  # the neural graphs name their dynamic sizes as the doc string does
        assert dims(inputs["X"]) == ["batch", "list", ranker.n_features_in_]
        assert dims(inputs["mask"]) == dims(output.type.tensor_type) == ["batch", "list"]
    meta = {prop.key: prop.value for prop in model.metadata_props}
    assert meta["sklearn_ltr.ranker"] == type(ranker).__name__
    assert meta["sklearn_ltr.n_features"] == str(ranker.n_features_in_)
    assert meta["sklearn_ltr.list_context"] == ("true" if name in ("dasalc", "setrank", "setrank_imsab") else "false")
    assert meta["sklearn_ltr.version"] == sklearn_ltr.__version__
    assert meta["sklearn_ltr.inputs"] == '["X", "mask"]'
    assert model.doc_string == (
        f"{type(ranker).__name__} exported by sklearn_ltr. Inputs: X [batch, list, {ranker.n_features_in_}] float32, "
        f"the features of each list's documents, padded with zeros; mask [batch, list] bool, True on real documents. "
        f"Output: scores [batch, list] float32, higher ranks first, 0 on padding.")


def test_a_numpy_integer_query_column_is_written_as_a_json_int(synthetic):
    X, y, qid = synthetic
    ranker = RankNetRanker(hidden_sizes=(8,), query_column=np.int64(0), **QUICK).fit(np.column_stack([qid, X]), y)
    meta = {prop.key: prop.value for prop in to_onnx(ranker).metadata_props}
    assert meta["sklearn_ltr.query_column"] == "0"


def test_batches_of_similar_lengths_within_limits():
    from sklearn_ltr._blocks import padded_batches  # the cut OnnxScorer shares with predict

    sizes = np.random.default_rng(0).integers(1, 300, 500)
    sizes[7] = 5000  # longer than a batch may be: a batch of its own
    batches = padded_batches(sizes, 4096, 8)
    assert np.array_equal(np.sort(np.concatenate(batches)), np.arange(len(sizes)))  # each query once
    for batch in batches:
        assert len(batch) <= 8
        assert len(batch) == 1 or len(batch) * sizes[batch].max() <= 4096
    longest = [sizes[batch].max() for batch in batches]
    assert longest == sorted(longest)  # queries by length: a batch pads to similar lengths


def test_save_to_path_and_load(synthetic, synthetic_models, tmp_path):
    X, _, qid = synthetic
    ranker = synthetic_models["dasalc"]
    path = tmp_path / "dasalc.onnx"
    model = to_onnx(ranker, path)
    assert onnx.load(path) == model
    for source in (path, str(path), model.SerializeToString()):
        assert max_diff(OnnxScorer(source).predict(X, groups=qid), ranker.predict(X, groups=qid)) <= TOLERANCE


def test_export_leaves_the_ranker_and_torch_as_they_were(synthetic, synthetic_models):
    X, _, qid = synthetic
    ranker = synthetic_models["dasalc"]
    before = ranker.predict(X, groups=qid)
    module = ranker.net_.module_
    state = torch.random.get_rng_state()
    to_onnx(ranker)
    assert torch.equal(torch.random.get_rng_state(), state)
    assert ranker.net_.module_ is module and not module.training
    np.testing.assert_array_equal(ranker.predict(X, groups=qid), before)


def test_setrank_with_initial_rank(synthetic):
    X, y, qid = synthetic
    ranks = ranks_by_first_feature(X, qid)
    ranker = SetRankRanker(d_model=16, n_heads=2, max_rank=20, **QUICK).fit(X, y, groups=qid, initial_rank=ranks)
    model = to_onnx(ranker)
    assert [value.name for value in model.graph.input] == ["X", "mask", "initial_rank"]
    meta = {prop.key: prop.value for prop in model.metadata_props}
    assert meta["sklearn_ltr.inputs"] == '["X", "mask", "initial_rank"]'
    assert model.doc_string == (
        f"SetRankRanker exported by sklearn_ltr. Inputs: X [batch, list, {X.shape[1]}] float32, the features of each "
        f"list's documents, padded with zeros; mask [batch, list] bool, True on real documents. initial_rank: "
        f"[batch, list] float32, 1-based ranks of the initial ranking. Output: scores [batch, list] float32, higher "
        f"ranks first, 0 on padding.")
    scorer = OnnxScorer(model)
    expected = ranker.predict(X, groups=qid, initial_rank=ranks)
    assert max_diff(scorer.predict(X, groups=qid, initial_rank=ranks), expected) <= TOLERANCE
    with pytest.raises(ValueError, match="initial_rank"):
        scorer.predict(X, groups=qid)


def test_query_column_model_takes_features_only(synthetic):
    X, y, qid = synthetic
    X_ids = np.column_stack([qid, X])
    ranker = SetRankRanker(d_model=16, n_heads=2, query_column=0, **QUICK).fit(X_ids, y)
    model = to_onnx(ranker)
    X_input = model.graph.input[0].type.tensor_type
    assert X_input.shape.dim[2].dim_value == X.shape[1]  # the query ids are not a feature
    scorer = OnnxScorer(model)
    assert scorer.query_column_ == 0
    # Like the ranker, the scorer reads the ids from the column; groups given as well must agree.
    expected = ranker.predict(X_ids)
    assert max_diff(scorer.predict(X_ids), expected) <= TOLERANCE
    assert max_diff(scorer.predict(X_ids, groups=qid), expected) <= TOLERANCE


def test_dataframe_with_query_column_name(synthetic):
    pd = pytest.importorskip("pandas")
    X, y, qid = synthetic
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
    frame.insert(2, "qid", qid)
    ranker = DASALCRanker(hidden_size=8, n_attention_layers=1, head_size=4, query_column="qid", **QUICK).fit(frame, y)
    scorer = OnnxScorer(to_onnx(ranker))
    assert list(scorer.feature_names_in_) == list(ranker.feature_names_in_) == [f"f{i}" for i in range(X.shape[1])]
    assert max_diff(scorer.predict(frame), ranker.predict(frame)) <= TOLERANCE
    with pytest.raises(ValueError, match="not the features the model was fitted on"):
        scorer.predict(frame[["f1", "f0", "qid", "f2", "f3", "f4", "f5"]])


def test_lambdamart_splits_decide_as_lightgbm_at_thresholds():
    # Feature 0 takes 200 adjacent float32 values: LightGBM's thresholds fall halfway between two of
    # them, where float32 thresholds (rounded to nearest) would send half of the values the other way.
    X, ranker = adjacent_float32_model()
    assert max_diff(OnnxScorer(to_onnx(ranker)).predict(X), ranker.predict(X)) <= 1e-6


def test_lambdamart_rows_exactly_on_every_threshold_go_as_in_lightgbm():
    # Integer features with zeros: LightGBM's thresholds fall one float64 ulp above a midpoint
    # (k + 0.5) or at its zero threshold (1e-35 as a float32, a value a float32 row can take).
    # Rows go on each threshold's nearest float32 and on the float32 values either side: on
    # the zero threshold exactly, a `<` for LightGBM's `<=` sends the row the other way.
    X, ranker = integer_model()
    rng = np.random.default_rng(0)
    splits = sorted(set(split_thresholds(ranker.booster_)))
    assert len(splits) >= 5
    rows = []
    for feature, threshold in splits:
        on = np.float32(threshold)
        for value in (on, np.nextafter(on, np.float32(-np.inf)), np.nextafter(on, np.float32(np.inf))):
            row = X[rng.integers(len(X))].copy()
            row[feature] = value
            rows.append(row)
    rows = np.array(rows, dtype=np.float32)
    on_threshold = np.array([np.float32(t) == t for _, t in splits])
    assert on_threshold.any()  # rows exactly on a threshold, not only near one
    np.testing.assert_allclose(OnnxScorer(to_onnx(ranker)).predict(rows), ranker.predict(rows), rtol=0, atol=1e-6)


def test_lambdamart_missing_values_as_lightgbm():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 3))
    X[rng.random(2000) < 0.2, 0] = np.nan  # feature 0 has missing values in training, 1 and 2 none
    y = (np.nan_to_num(X[:, 0], nan=1.0) + X[:, 1] > 0).astype(int) + (X[:, 2] > 1)
    qid = np.repeat(np.arange(100), 20)
    ranker = LambdaMARTRanker(n_estimators=30, random_state=0, n_jobs=1).fit(X, y, groups=qid)
    X_test = rng.normal(size=(300, 3)).astype(np.float32)
    X_test[::3, 0] = X_test[1::3, 1] = X_test[2::5, 2] = np.nan  # LightGBM reads NaN as 0 in features 1 and 2
    assert max_diff(OnnxScorer(to_onnx(ranker)).predict(X_test), ranker.predict(X_test)) <= 1e-6


def test_lambdamart_missing_values_on_a_threshold_of_exactly_zero_as_lightgbm():
    # With missing_type "None" LightGBM reads a NaN as 0, and 0 <= 0.0 goes left. LightGBM itself
    # writes its zero threshold as 1e-35, so the model is a trained one with every threshold set to
    # 0 in its text (the tree sizes dropped, since they no longer match) and reloaded.
    import re

    import lightgbm
    import onnxruntime

    from sklearn_ltr.export._trees import lightgbm_graph

    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 2))
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0.5)
    ranker = LambdaMARTRanker(n_estimators=3, num_leaves=4, random_state=0, n_jobs=1)
    text = ranker.fit(X, y, groups=np.repeat(np.arange(30), 20)).booster_.model_to_string()
    text = re.sub(r"^threshold=(.*)$", lambda m: "threshold=" + " ".join("0" for _ in m.group(1).split()), text,
                  flags=re.M)
    booster = lightgbm.Booster(model_str=re.sub(r"^tree_sizes=.*\n", "", text, flags=re.M))
    splits = split_thresholds(booster)
    assert len(splits) == 9 and {t for _, t in splits} == {0.0}
    values = (-1.0, 0.0, 1.0, np.nan)
    rows = np.array([[a, b] for a in values for b in values], dtype=np.float32)
    graph, opsets = lightgbm_graph(booster, 2)
    opsets = [onnx.helper.make_opsetid("", 17), *opsets]
    model = onnx.helper.make_model(graph, opset_imports=opsets, ir_version=onnx.helper.find_min_ir_version_for(opsets))
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    scores = session.run(None, {"X": rows[None], "mask": np.ones((1, len(rows)), dtype=bool)})[0][0]
    expected = booster.predict(rows)
    np.testing.assert_allclose(scores, expected, rtol=0, atol=1e-6)


def test_lambdamart_early_stopping_exports_the_best_iteration(synthetic):
    X, y, qid = synthetic
    train, valid = qid % 2 == 0, qid % 2 == 1
    ranker = LambdaMARTRanker(n_estimators=200, learning_rate=0.5, early_stopping_rounds=3, random_state=0, n_jobs=1)
    ranker.fit(X[train], y[train], groups=qid[train], eval_set=[(X[valid], y[valid], qid[valid])])
    assert ranker.best_iteration_ is not None
    assert max_diff(OnnxScorer(to_onnx(ranker)).predict(X), ranker.predict(X)) <= TOLERANCE


def test_lambdamart_splits_that_cannot_be_exported_are_refused():
    from sklearn_ltr.export._trees import lightgbm_graph

    class Booster:  # the part of lightgbm.Booster that the export reads
        def __init__(self, **split):
            leaf = {"leaf_index": 0, "leaf_value": 0.5}
            self.tree = {"split_index": 0, "split_feature": 0, "threshold": 1.0, "decision_type": "<=",
                         "default_left": True, "missing_type": "None", "left_child": leaf, "right_child": leaf, **split}

        def dump_model(self, num_iteration=None):
            return {"num_tree_per_iteration": 1, "tree_info": [{"tree_index": 0, "tree_structure": self.tree}]}

    lightgbm_graph(Booster(), 2)
    # LightGBM's dumps of single-output models may leave num_tree_per_iteration out: read as 1.
    dump_model = Booster.dump_model
    Booster.dump_model = lambda self, num_iteration=None: {
        "tree_info": [{"tree_index": 0, "tree_structure": self.tree}]}
    lightgbm_graph(Booster(), 2)
    Booster.dump_model = lambda self, num_iteration=None: {"num_tree_per_iteration": 3, "tree_info": []}
    with pytest.raises(ValueError) as error:
        lightgbm_graph(Booster(), 2)
    assert str(error.value) == "to_onnx exports single-output LightGBM models only (one tree per iteration)."
    Booster.dump_model = dump_model
    # The whole message: what is refused and how to train a model that exports.
    with pytest.raises(ValueError) as error:
        lightgbm_graph(Booster(decision_type="=="), 2)
    assert str(error.value) == (
        "to_onnx exports numerical splits only; this LightGBM model has a categorical split (decision_type '=='). "
        "Encode categories as numbers (one-hot or ordinal) without LightGBM's categorical_feature to export the "
        "model.")
    with pytest.raises(ValueError) as error:
        lightgbm_graph(Booster(left_child={"leaf_index": 0, "leaf_value": 0.5, "leaf_coeff": [1.0]}), 2)
    assert str(error.value) == "to_onnx cannot export linear trees (LightGBM's linear_tree=True)."
    with pytest.raises(ValueError) as error:
        lightgbm_graph(Booster(missing_type="Zero"), 2)
    assert str(error.value) == (
        "to_onnx cannot export splits that treat zero as missing (LightGBM's zero_as_missing=True); train with "
        "zero_as_missing=False (the default) to export the model.")


def test_scorer_validates_its_input(synthetic, synthetic_models, scorers):
    X, _, _ = synthetic
    with pytest.raises(ValueError, match="X has 5 features, but the model takes 6"):
        scorers["ranknet"].predict(X[:, :5])
    with pytest.raises(ValueError, match="pass groups"):
        scorers["dasalc"].predict(X)
    with pytest.raises(ValueError, match=r"finite|NaN"):
        scorers["ranknet"].predict(np.where(X > 1, np.nan, X))
    # Pointwise models score rows without their queries, as predict does.
    np.testing.assert_allclose(scorers["ranknet"].predict(X), synthetic_models["ranknet"].predict(X), atol=TOLERANCE)
    helper = onnx.helper
    identity = helper.make_graph(
        [helper.make_node("Identity", ["X"], ["Y"])], "identity",
        [helper.make_tensor_value_info("X", onnx.TensorProto.FLOAT, [None])],
        [helper.make_tensor_value_info("Y", onnx.TensorProto.FLOAT, [None])],
    )
    with pytest.raises(ValueError, match="not written by sklearn_ltr"):
        OnnxScorer(helper.make_model(identity, opset_imports=[helper.make_opsetid("", 17)], ir_version=8))


def test_what_cannot_be_exported(synthetic, synthetic_models):
    X, y, qid = synthetic
    with pytest.raises(NotFittedError):
        to_onnx(RankNetRanker())
    with pytest.raises(NotFittedError):
        to_onnx(LambdaMARTRanker())
    pipeline = make_pipeline(FunctionTransformer(np.tanh), LambdaMARTRanker(n_estimators=2, n_jobs=1))
    pipeline.fit(X, y, lambdamartranker__groups=qid)
    with pytest.raises(TypeError, match="cannot export the Pipeline step 'functiontransformer'"):
        to_onnx(pipeline)
    with pytest.raises(TypeError, match="got RankingEnsemble"):
        to_onnx(RankingEnsemble([("a", synthetic_models["ranknet"])]))
    with pytest.raises(ValueError, match="opset must be an int >= 15"):
        to_onnx(synthetic_models["ranknet"], opset=13)
    with pytest.raises(ValueError, match="opsets up to 20"):
        to_onnx(synthetic_models["ranknet"], opset=21)


def test_opset_checks_name_the_limits(synthetic, synthetic_models):
    X, _, qid = synthetic
    with pytest.raises(ValueError) as error:
        to_onnx(synthetic_models["ranknet"], opset="17")
    assert str(error.value) == "opset must be an int >= 15; got '17'."
    # The trees need no torch exporter: any opset this onnx package knows, up to its newest.
    newest = onnx.defs.onnx_opset_version()
    ranker = synthetic_models["lambdamart"]
    scores = OnnxScorer(to_onnx(ranker, opset=newest), n_threads=1).predict(X, groups=qid)
    assert max_diff(scores, ranker.predict(X, groups=qid)) <= TOLERANCE
    with pytest.raises(ValueError) as error:
        to_onnx(ranker, opset=newest + 1)
    assert str(error.value) == f"opset={newest + 1} is newer than this onnx package supports ({newest})."


def test_a_pipeline_exports_its_steps_with_its_ranker(synthetic):
    # Every step and combination: tests/export/test_onnx_steps.py.
    X, y, qid = synthetic
    pipeline = make_pipeline(Log1pTransformer(), LambdaMARTRanker(n_estimators=20, n_jobs=1, random_state=0))
    pipeline.fit(X, y, lambdamartranker__groups=qid)
    model = to_onnx(pipeline)
    meta = {prop.key: prop.value for prop in model.metadata_props}
    assert meta["sklearn_ltr.steps"] == '["Log1pTransformer", "LambdaMARTRanker"]'
    assert meta["sklearn_ltr.list_context"] == "false"  # Log1p and LambdaMART score each document alone
    assert max_diff(OnnxScorer(model, n_threads=1).predict(X), pipeline.predict(X)) <= TOLERANCE


@pytest.mark.parametrize("opset", [15, 20])
def test_dasalc_exports_at_the_lowest_and_highest_opset(synthetic, synthetic_models, opset):
    # DASALC's symmetric log1p needs the copysign symbolic, registered from opset 15 (CastLike) on.
    X, _, qid = synthetic
    ranker = synthetic_models["dasalc"]
    model = to_onnx(ranker, opset=opset)
    assert [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")] == [opset]
    scores = OnnxScorer(model.SerializeToString(), n_threads=1).predict(X, groups=qid)
    assert max_diff(scores, ranker.predict(X, groups=qid)) <= TOLERANCE


def test_export_casts_a_copy_to_float32_and_leaves_the_module_as_it_is(synthetic, synthetic_models):
    # The exported graph is float32 whatever the module's dtype, and the export changes neither the
    # module's dtype nor its train/eval mode (a shallow copy would share both with the original).
    import copy

    from sklearn_ltr.export._neural import export_module

    X, _, qid = synthetic
    module = copy.deepcopy(synthetic_models["ranknet"].net_.module_).double().train()
    data = export_module(module, X.shape[1], opset=17)
    assert next(module.parameters()).dtype == torch.float64 and module.training
    assert all(m.training for m in module.modules())
    graph = onnx.load_from_string(data).graph
    weights = [t.data_type for t in graph.initializer if t.data_type != onnx.TensorProto.INT64]
    assert weights and set(weights) == {onnx.TensorProto.FLOAT}
    import onnxruntime

    session = onnxruntime.InferenceSession(data, providers=["CPUExecutionProvider"])
    # RankNet scores each document alone: all rows as one list.
    scores = session.run(None, {"X": X[None].astype(np.float32), "mask": np.ones((1, len(X)), dtype=bool)})[0][0]
    assert max_diff(scores, synthetic_models["ranknet"].predict(X, groups=qid)) <= TOLERANCE


def test_missing_onnx_names_the_serving_extra(synthetic_models, monkeypatch):
    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(ImportError) as error:
        to_onnx(synthetic_models["ranknet"])
    assert str(error.value).startswith("to_onnx needs the 'onnx' package (")
    assert str(error.value).endswith("); install it with `pip install 'sklearn-ltr[serving]'`.")
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(ImportError, match=r"sklearn-ltr\[serving\]"):
        OnnxScorer(b"")


def test_lambdamart_export_declares_the_lowest_ir_version_of_its_opsets(synthetic_models):
    # The lowest IR version lets older runtimes load the file (onnx's default is the newest it knows).
    model = to_onnx(synthetic_models["lambdamart"])
    assert model.ir_version == onnx.helper.find_min_ir_version_for(list(model.opset_import))
    assert model.ir_version < onnx.IR_VERSION


def test_early_stopped_lambdamart_exports_the_trees_predict_uses(synthetic):
    X, y, qid = synthetic
    train = qid < 20
    ranker = LambdaMARTRanker(n_estimators=300, early_stopping_rounds=3, n_jobs=1, random_state=0)
    ranker.fit(X[train], y[train], groups=qid[train], eval_set=[(X[~train], y[~train], qid[~train])])
    rounds_run = len(ranker.evals_result_["valid_0"]["ndcg@10"])
    assert ranker.best_iteration_ < rounds_run
    # The ranker keeps the best round's trees only, so the export's num_iteration=best_iteration reads them all.
    assert ranker.booster_.num_trees() == ranker.best_iteration_
    assert max_diff(OnnxScorer(to_onnx(ranker)).predict(X), ranker.predict(X)) <= TOLERANCE


def test_random_forest_lambdamart_exports_the_average_of_its_trees(synthetic):
    X, y, qid = synthetic
    ranker = LambdaMARTRanker(n_estimators=10, num_leaves=7, subsample=0.7, subsample_freq=1, random_state=0, n_jobs=1,
                              lgbm_params={"boosting": "rf"}).fit(X, y, groups=qid)
    assert ranker.booster_.dump_model()["average_output"]
    assert max_diff(OnnxScorer(to_onnx(ranker)).predict(X), ranker.predict(X)) <= TOLERANCE


def test_lambdamart_graph_reads_the_trees_up_to_num_iteration(synthetic, synthetic_models):
    import onnxruntime

    from sklearn_ltr.export._trees import lightgbm_graph

    X, _, _ = synthetic
    booster = synthetic_models["lambdamart"].booster_
    assert booster.num_trees() > 5
    graph, opsets = lightgbm_graph(booster, X.shape[1], num_iteration=5)
    opsets = [onnx.helper.make_opsetid("", 17), *opsets]
    # The lowest IR version, as the export declares: onnx's newest can be past what onnxruntime reads
    # (onnx 1.23 writes IR 14, onnxruntime 1.30 reads up to 13).
    model = onnx.helper.make_model(graph, opset_imports=opsets, ir_version=onnx.helper.find_min_ir_version_for(opsets))
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    scores = session.run(None, {"X": X[None].astype(np.float32), "mask": np.ones((1, len(X)), dtype=bool)})[0][0]
    assert max_diff(scores, booster.predict(X.astype(np.float32), num_iteration=5)) <= TOLERANCE
    assert max_diff(scores, booster.predict(X.astype(np.float32))) > 1e-3  # 5 trees are not all of them


def test_lambdamart_graph_scores_a_batch_of_padded_lists(synthetic, synthetic_models):
    import onnxruntime

    X, _, _ = synthetic
    ranker = synthetic_models["lambdamart"]
    session = onnxruntime.InferenceSession(to_onnx(ranker).SerializeToString(), providers=["CPUExecutionProvider"])
    lists = X[:12].reshape(3, 4, X.shape[1]).astype(np.float32)
    mask = np.array([[1, 1, 1, 1], [1, 1, 0, 0], [1, 0, 0, 0]], dtype=bool)
    scores = session.run(None, {"X": lists, "mask": mask})[0]
    assert scores.shape == (3, 4)
    expected = ranker.predict(X[:12]).reshape(3, 4)
    assert max_diff(scores[mask], expected[mask]) <= TOLERANCE
    assert (scores[~mask] == 0).all()  # padding slots score exactly 0

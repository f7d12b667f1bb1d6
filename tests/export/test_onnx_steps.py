"""ONNX export of a ``Pipeline`` (``sklearn_ltr/export/_onnx_steps.py``): each preprocessing step's graph equals its
``transform`` on padded lists, and an exported pipeline scores as ``Pipeline.predict(X, groups)`` does."""

import json

import numpy as np
import pytest
import sklearn
from onnx_helpers import TOLERANCE, max_diff  # tests/onnx_helpers.py
from sklearn.impute import SimpleImputer
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import FunctionTransformer, MinMaxScaler, StandardScaler

from sklearn_ltr import DASALCRanker, LambdaMARTRanker, Log1pTransformer, QueryNormalizer, RankNetRanker
from sklearn_ltr._groups import QueryGroups
from sklearn_ltr.datasets import make_ranking

onnx = pytest.importorskip("onnx", reason="ONNX export needs the serving extra: pip install -e '.[serving]'")
ort = pytest.importorskip("onnxruntime", reason="ONNX export tests need onnxruntime: pip install -e '.[serving]'")

from sklearn_ltr.export import OnnxScorer, to_onnx  # noqa: E402
from sklearn_ltr.export._onnx_steps import SUPPORTED_STEPS, preprocessing_nodes  # noqa: E402

# Feature 4 has no value in the training rows: the imputers drop it, the scalers' statistics of it are NaN.
pytestmark = [pytest.mark.usefixtures("one_torch_thread"),
              pytest.mark.filterwarnings("ignore:Skipping features without any observed values"),
              pytest.mark.filterwarnings("ignore:All-NaN slice encountered:RuntimeWarning"),
              pytest.mark.filterwarnings("ignore:invalid value encountered in divide:RuntimeWarning"),
              pytest.mark.filterwarnings("ignore:X .* breaks what")]

QUICK = {"max_epochs": 2, "random_state": 0}
N_TRAIN_QUERIES = 20


@pytest.fixture(scope="module")
def data():
    """30 queries of 1 to 117 documents, rows shuffled; float64 values that float32 holds exactly (the model's input).

    Feature 0 has no NaN, 1 has NaN everywhere, 2 only in the test queries (``qid >= 20``), 3 in every row of
    some queries, 4 in every training row (an imputer fitted on training drops it) and 5 has ties.
    """
    X, y, qid = make_ranking(n_queries=30, n_features=6, random_state=0)
    X = np.sign(X) * np.log1p(np.abs(X.astype(np.float64)))
    rng = np.random.default_rng(0)
    X[:, 5] = np.round(X[:, 5])
    X[rng.random(len(X)) < 0.15, 1] = np.nan
    X[(qid >= N_TRAIN_QUERIES) & (rng.random(len(X)) < 0.3), 2] = np.nan
    X[qid % 7 == 3, 3] = np.nan
    X[qid < N_TRAIN_QUERIES, 4] = np.nan
    X, y, qid = np.vstack([X, X[:1] + 0.5]), np.append(y, 1), np.append(qid, qid.max() + 1)  # a one-document query
    order = rng.permutation(len(y))
    return X[order].astype(np.float32).astype(np.float64), y[order], qid[order]


def _train(data):
    X, y, qid = data
    train = qid < N_TRAIN_QUERIES
    return X[train], y[train], qid[train]


def _steps_session(steps, n_features, opset=17, steps_dtype="float64"):
    """onnxruntime session of the steps' graph alone: ``(X, mask) -> features`` in float64."""
    nodes, initializers = preprocessing_nodes(steps, opset=opset, output="features", steps_dtype=steps_dtype,
                                              output_float32=False)
    graph = onnx.helper.make_graph(
        nodes, "steps",
        [onnx.helper.make_tensor_value_info("X", onnx.TensorProto.FLOAT, ["batch", "list", n_features]),
         onnx.helper.make_tensor_value_info("mask", onnx.TensorProto.BOOL, ["batch", "list"])],
        [onnx.helper.make_tensor_value_info("features", onnx.TensorProto.DOUBLE, ["batch", "list", None])],
        initializers)
    opsets = [onnx.helper.make_opsetid("", opset)]
    model = onnx.helper.make_model(graph, opset_imports=opsets, ir_version=onnx.helper.find_min_ir_version_for(opsets))
    onnx.checker.check_model(model, full_check=True)
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def _run_padded(session, X, qid, extra=0, fill=0.0):
    """The steps' graph on every query as one padded batch (``extra`` slots more, holding ``fill``); rows back."""
    groups = QueryGroups(qid)
    padded, mask = groups.pad(X.astype(np.float32))
    if extra:
        wider = np.full((padded.shape[0], padded.shape[1] + extra, padded.shape[2]), fill, dtype=np.float32)
        wider[:, : padded.shape[1]][mask] = padded[mask]
        padded, mask = wider, np.pad(mask, ((0, 0), (0, extra)))
    out = session.run(None, {"X": padded, "mask": mask})[0]
    assert out.dtype == np.float64 and (out[~mask] == 0).all()  # padding is 0 after the steps
    return groups.unpad(out[:, : groups.max_size])


STEP_CASES = {
    "log1p": [Log1pTransformer()],
    "standard": [StandardScaler()],
    "standard_no_mean": [StandardScaler(with_mean=False)],
    "standard_no_std": [StandardScaler(with_std=False)],
    "minmax_scaler": [MinMaxScaler()],
    "minmax_scaler_clip": [MinMaxScaler(feature_range=(-1, 2), clip=True)],
    "impute_mean": [SimpleImputer()],
    "impute_median_indicator": [SimpleImputer(strategy="median", add_indicator=True)],
    "impute_most_frequent_indicator": [SimpleImputer(strategy="most_frequent", add_indicator=True)],
    "impute_constant_indicator": [SimpleImputer(strategy="constant", fill_value=-3.0, add_indicator=True)],
    "impute_keep_empty": [SimpleImputer(keep_empty_features=True, add_indicator=True)],
    **{f"query_{method}": [QueryNormalizer(method=method)] for method in ("minmax", "zscore", "sum", "rank")},
    "chain": [Log1pTransformer(), QueryNormalizer(method="zscore"), SimpleImputer(add_indicator=True),
              StandardScaler(), MinMaxScaler(clip=True)],
    "impute_then_rank": [SimpleImputer(strategy="median", add_indicator=True), QueryNormalizer(method="rank")],
}


def _groups(steps, qid):
    """``{"groups": qid}`` where a step takes query ids (routing refuses metadata that no step requests)."""
    return {"groups": qid} if any(isinstance(step, QueryNormalizer) for step in steps) else {}


def _fitted_steps(steps, data):
    """The steps fitted on the training queries, as a Pipeline (routing on: QueryNormalizer gets the query ids)."""
    import copy

    X, _, qid = _train(data)
    with sklearn.config_context(enable_metadata_routing=True):
        return make_pipeline(*copy.deepcopy(steps)).fit(X, **_groups(steps, qid))


def _transform(pipeline, X, qid):
    with sklearn.config_context(enable_metadata_routing=True):
        return pipeline.transform(X, **_groups([step for _, step in pipeline.steps], qid))


@pytest.mark.parametrize("case", list(STEP_CASES))
def test_steps_graph_equals_transform_on_padded_lists(case, data):
    X, _, qid = data
    pipeline = _fitted_steps(STEP_CASES[case], data)
    expected = _transform(pipeline, X, qid)
    session = _steps_session(pipeline.steps, X.shape[1])
    got = _run_padded(session, X, qid)
    assert got.shape == expected.shape
    assert np.array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12, equal_nan=True)
    # The float32 graph rounds where scikit-learn's transformers do on float32 input: the values are theirs
    # (Log1pTransformer's float32 log1p may differ by one float32 ulp, which later steps carry on).
    expected32 = _transform(pipeline, X.astype(np.float32), qid)
    got32 = _run_padded(_steps_session(pipeline.steps, X.shape[1], steps_dtype="float32"), X, qid)
    assert expected32.dtype == np.float32 and np.array_equal(got32.astype(np.float32), got32, equal_nan=True)
    tolerance = np.finfo(np.float32).eps if len(pipeline.steps) == 1 else 1e-6
    np.testing.assert_allclose(got32, expected32, rtol=tolerance, atol=1e-30 if len(pipeline.steps) == 1 else 1e-6,
                               equal_nan=True)
    if not any(isinstance(step, Log1pTransformer) for _, step in pipeline.steps):
        differ = (got32 != expected32) & ~np.isnan(got32)
        assert differ.sum() <= 0.001 * got32.size  # rounding where scikit-learn rounds: nearly always its values
    # Padding slots holding anything (NaN, huge values) change no real document's features (onnxruntime's
    # vectorised Log may round the last bit differently for another tensor length).
    for fill in (np.nan, 1e30, -7.0):
        np.testing.assert_allclose(_run_padded(session, X, qid, extra=5, fill=fill), got, rtol=1e-15, atol=0)


def test_imputer_indicator_columns_are_those_of_the_features_missing_in_fit(data):
    X, _, qid = data
    imputer = _fitted_steps([SimpleImputer(add_indicator=True)], data)[0]
    # Feature 0 never missing; 2 missing only in the test queries; 4 missing in every training row (dropped).
    assert imputer.indicator_.features_.tolist() == [1, 3, 4]
    session = _steps_session([("impute", imputer)], X.shape[1])
    assert _run_padded(session, X, qid).shape == (len(X), 5 + 3)


def test_reciprocal_of_rank_features(data):
    rng = np.random.default_rng(3)
    _, _, qid = data
    ranks = rng.integers(1, 60, size=(len(qid), 3)).astype(np.float64)
    ranks[rng.random(ranks.shape) < 0.3] = np.nan  # not retrieved by that input ranker
    steps = [("reciprocal", QueryNormalizer(method="reciprocal").fit(ranks)),
             ("impute", SimpleImputer(strategy="constant", fill_value=0, add_indicator=True).fit(1 / ranks))]
    expected = steps[1][1].transform(steps[0][1].transform(ranks, groups=qid))
    got = _run_padded(_steps_session(steps, 3), ranks, qid)
    np.testing.assert_allclose(got, expected, rtol=1e-15, atol=0)


def test_imputer_with_a_numeric_missing_value(data):
    X, _, qid = data
    X = np.where(np.isnan(X), -1.0, X)
    imputer = SimpleImputer(missing_values=-1.0, strategy="median", add_indicator=True).fit(X)
    got = _run_padded(_steps_session([("impute", imputer)], X.shape[1]), X, qid)
    np.testing.assert_allclose(got, imputer.transform(X), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("opset", [15, 18, 21])
def test_steps_graph_at_the_opsets_either_side_of_reduce_axes_as_input(opset, data):
    # ReduceMin and ReduceMax take their axes as an attribute before opset 18 and as an input from 18 on.
    X, _, qid = data
    pipeline = _fitted_steps(STEP_CASES["chain"] + [QueryNormalizer(method="rank")], data)
    expected = _transform(pipeline, X, qid)
    got = _run_padded(_steps_session(pipeline.steps, X.shape[1], opset=opset), X, qid)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12, equal_nan=True)


# ------------------------------------------------------------------------------------ whole pipelines
def _ranker(name):
    if name == "lambdamart":
        return LambdaMARTRanker(n_estimators=40, num_leaves=15, min_child_samples=5, random_state=0, n_jobs=1)
    if name == "ranknet":
        return RankNetRanker(hidden_sizes=(16,), **QUICK)
    return DASALCRanker(hidden_size=16, n_attention_layers=1, n_heads=2, head_size=4, **QUICK)


PIPELINES = {
    "lambdamart-rank-with-nan": ("lambdamart", [QueryNormalizer(method="rank")]),
    "lambdamart-chain": ("lambdamart", [Log1pTransformer(), SimpleImputer(strategy="median", add_indicator=True),
                                        StandardScaler(), QueryNormalizer(method="zscore")]),
    "ranknet-impute-minmax": ("ranknet", [SimpleImputer(add_indicator=True), QueryNormalizer(method="minmax"),
                                          StandardScaler()]),
    "dasalc-zscore-impute": ("dasalc", [QueryNormalizer(method="zscore"),
                                        SimpleImputer(strategy="constant", fill_value=0.0, add_indicator=True),
                                        MinMaxScaler(clip=True)]),
}


@pytest.fixture(scope="module")
def pipelines(data):
    X, y, qid = _train(data)
    fitted = {}
    with sklearn.config_context(enable_metadata_routing=True):
        for name, (ranker, steps) in PIPELINES.items():
            import copy

            fitted[name] = make_pipeline(*copy.deepcopy(steps), _ranker(ranker)).fit(X, y, groups=qid)
    return fitted


@pytest.mark.parametrize("steps_dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(PIPELINES))
def test_exported_pipeline_scores_as_predict(name, steps_dtype, data, pipelines):
    X, _, qid = data  # training and new queries, NaN in real documents; values float32 holds
    pipeline = pipelines[name]
    with sklearn.config_context(enable_metadata_routing=True):
        expected = pipeline.predict(X.astype(steps_dtype), groups=qid)
    model = to_onnx(pipeline, steps_dtype=steps_dtype)
    onnx.checker.check_model(model, full_check=True)
    scorer = OnnxScorer(model, n_threads=1)
    assert max_diff(scorer.predict(X, groups=qid), expected) <= TOLERANCE
    small = OnnxScorer(model, n_threads=1, max_batch_documents=64)  # many batches of few lists
    assert max_diff(small.predict(X, groups=qid), expected) <= TOLERANCE


def test_exported_pipeline_inputs_and_metadata(data, pipelines):
    pipeline = pipelines["lambdamart-chain"]
    model = to_onnx(pipeline)
    assert [value.name for value in model.graph.input] == ["X", "mask"]
    dims = [d.dim_param or d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    # The raw width; inside, the imputer drops feature 4 (no value in fit) and appends 3 indicators.
    assert dims[2] == 6 and pipeline[-1].n_features_in_ == 5 + 3
    meta = {prop.key: prop.value for prop in model.metadata_props}
    assert meta["sklearn_ltr.ranker"] == "LambdaMARTRanker"
    assert meta["sklearn_ltr.n_features"] == "6"
    assert json.loads(meta["sklearn_ltr.steps"]) == [
        "Log1pTransformer", "SimpleImputer", "StandardScaler", "QueryNormalizer", "LambdaMARTRanker"]
    assert meta["sklearn_ltr.list_context"] == "true"  # the query statistics: scores depend on the list
    assert meta["sklearn_ltr.allow_nan"] == "true"
    assert model.doc_string.startswith(
        "Pipeline(Log1pTransformer, SimpleImputer, StandardScaler, QueryNormalizer, LambdaMARTRanker) exported by "
        "sklearn_ltr. Inputs: X [batch, list, 6] float32")
    scorer = OnnxScorer(model)
    assert scorer.n_features_in_ == 6 and scorer.list_context_
    with pytest.raises(ValueError, match="pass groups"):
        scorer.predict(data[0])


def test_nan_is_taken_only_when_a_step_imputes_it(data):
    X, y, qid = _train(data)
    X = np.nan_to_num(X)
    with sklearn.config_context(enable_metadata_routing=True):
        plain = make_pipeline(QueryNormalizer(method="reciprocal"), StandardScaler(), _ranker("ranknet"))
        plain.fit(np.abs(X) + 1, y, groups=qid)
    meta = {prop.key: prop.value for prop in to_onnx(plain).metadata_props}
    assert meta["sklearn_ltr.allow_nan"] == "false"  # RankNet refuses NaN and nothing imputes it
    assert meta["sklearn_ltr.list_context"] == "false"  # reciprocal ranks need no list statistic
    with pytest.raises(ValueError, match="NaN"):
        OnnxScorer(to_onnx(plain)).predict(np.where(X > 1, np.nan, np.abs(X) + 1))


def test_passthrough_steps_and_dataframe_feature_names(data):
    pd = pytest.importorskip("pandas")
    X, y, qid = _train(data)
    columns = [f"f{i}" for i in range(X.shape[1])]
    frame = pd.DataFrame(X, columns=columns)
    with sklearn.config_context(enable_metadata_routing=True):
        pipeline = Pipeline([("skip", "passthrough"), ("impute", SimpleImputer()), ("norm", QueryNormalizer()),
                             ("rank", _ranker("lambdamart"))]).fit(frame, y, groups=qid)
        expected = pipeline.predict(frame, groups=qid)
    scorer = OnnxScorer(to_onnx(pipeline), n_threads=1)
    assert list(scorer.feature_names_in_) == columns
    assert max_diff(scorer.predict(frame, groups=qid), expected) <= TOLERANCE


def test_unsupported_steps_and_query_columns_are_refused(data):
    X, y, qid = _train(data)
    X = np.nan_to_num(X)
    with sklearn.config_context(enable_metadata_routing=True):
        pipeline = Pipeline([("square", FunctionTransformer(np.square)), ("rank", _ranker("lambdamart"))])
        pipeline.fit(X, y, groups=qid)
    with pytest.raises(TypeError) as error:
        to_onnx(pipeline)
    assert str(error.value) == (
        f"to_onnx cannot export the Pipeline step 'square' (FunctionTransformer): the steps before the ranker may "
        f"be {', '.join(SUPPORTED_STEPS)}.")
    class Scaler(StandardScaler):  # a subclass may transform otherwise: only the classes themselves export
        pass

    scaled = Pipeline([("mine", Scaler().fit(X)), ("rank", pipeline[-1])])
    with pytest.raises(TypeError, match=r"the Pipeline step 'mine' \(Scaler\)"):
        to_onnx(scaled)
    with pytest.raises(ValueError, match="steps_dtype must be 'float32' or 'float64'; got 'float16'"):
        to_onnx(make_pipeline(StandardScaler().fit(X), pipeline[-1]), steps_dtype="float16")
    # The steps before the ranker would scale the query ids as a feature (fitting such a pipeline fails for that).
    pipeline = Pipeline([("scale", StandardScaler().fit(np.column_stack([qid, X]))),
                         ("rank", LambdaMARTRanker(query_column=0))])
    with pytest.raises(ValueError, match="ranker has a query_column"):
        to_onnx(pipeline)

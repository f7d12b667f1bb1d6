"""XGBoost's JSON model and the LTR plugins' ``model/xgboost+json`` definition, from LambdaMART.

XGBoost itself loads the exported model and predicts: its scores equal ``ranker.predict`` on the same float32
features to float32 rounding, and rank every test query of MQ2008 and MQ2007-agg (NaN) the same way, on rows
exactly on every threshold and on rows with NaN. The plugins' definition is scored by an evaluator written from
the plugin's documentation (docs/training-models.rst of o19s/elasticsearch-learning-to-rank: XGBoost's dump
format, ``split`` a feature name, ``yes`` / ``no`` children) and its tree evaluation (a node sends a feature
vector to ``yes`` when ``split_condition > x``, all in float32; the trees' outputs summed in float32).
"""

import json

import numpy as np
import pytest
from engine_evaluators import plugin_scores, xgboost_scores
from export_helpers import (
    adjacent_float32_model,
    fit_lambdamart,
    integer_model,
    max_diff,
    mq2007_agg,
    mq2008,
    nan_model,
    rows_around,
    rows_on_thresholds,
    same_order_fraction,
)
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, MinMaxScaler, StandardScaler

from sklearn_ltr import LambdaMARTRanker, Log1pTransformer, RankNetRanker
from sklearn_ltr.datasets import make_ranking
from sklearn_ltr.export import EXPORT_FORMATS, export, to_ltr_plugin_xgboost, to_xgboost_json

xgboost = pytest.importorskip("xgboost", reason="the XGBoost export is checked with xgboost: pip install xgboost-cpu")

#: XGBoost sums float32 leaves in float32; LightGBM sums float64 leaves in float64.
TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def mq2008_data(data_dir):
    return mq2008(data_dir)


@pytest.mark.parametrize("data", ["mq2008", "mq2007-agg"])
def test_xgboost_predicts_as_the_ranker_on_every_test_query(data, data_dir, tmp_path):
    (X, y, qid), (X_test, _, qid_test) = mq2008(data_dir) if data == "mq2008" else mq2007_agg(data_dir)
    ranker = fit_lambdamart(X, y, qid, n_estimators=100, num_leaves=31)
    X32 = X_test.astype(np.float32)
    expected = ranker.predict(X32)
    scores = xgboost_scores(to_xgboost_json(ranker), X32, tmp_path)
    assert max_diff(scores, expected) <= TOLERANCE
    assert same_order_fraction(scores, expected, qid_test) == 1.0
    if data == "mq2007-agg":
        assert np.isnan(X32).mean() > 0.2  # the rows with NaN are scored too


@pytest.mark.parametrize("make", [integer_model, adjacent_float32_model])
def test_rows_exactly_on_every_threshold_go_as_in_lightgbm(make, tmp_path):
    X, ranker = make()
    rows = rows_on_thresholds(X, ranker.booster_, np.random.default_rng(0))
    scores = xgboost_scores(to_xgboost_json(ranker), rows, tmp_path)
    np.testing.assert_allclose(scores, ranker.predict(rows), rtol=0, atol=1e-6)
    assert len(rows) >= 15


@pytest.mark.filterwarnings("ignore::sklearn_ltr.exceptions.FeatureDriftWarning")  # NaN where training had none
def test_missing_values_go_to_lightgbms_side(tmp_path):
    ranker, X_test = nan_model()
    document = to_xgboost_json(ranker)
    assert any(any(tree["default_left"]) for tree in document["learner"]["gradient_booster"]["model"]["trees"])
    assert max_diff(xgboost_scores(document, X_test, tmp_path), ranker.predict(X_test)) <= 1e-6


@pytest.mark.parametrize("step", [StandardScaler(), MinMaxScaler(), Log1pTransformer(),
                                  "both"], ids=["standard", "minmax", "log1p", "log1p+standard"])
def test_a_pipeline_of_scalers_folds_into_the_thresholds(step, tmp_path):
    from sklearn_ltr.export._tree_model import lambdamart_tree_model

    X, y, qid = make_ranking(n_queries=40, n_features=5, random_state=0)
    X[::7, 2] = np.nan
    steps = [Log1pTransformer(), StandardScaler()] if step == "both" else [step]
    pipeline = make_pipeline(*steps, LambdaMARTRanker(n_estimators=40, num_leaves=15, random_state=0, n_jobs=1))
    pipeline.fit(X, y, lambdamartranker__groups=qid)
    document = to_xgboost_json(pipeline)
    X32 = X.astype(np.float32)
    assert max_diff(xgboost_scores(document, X32, tmp_path), pipeline.predict(X32)) <= TOLERANCE
    # Rows on each split's boundary in the raw features, and one float32 either side.
    tree_model = lambdamart_tree_model(pipeline, exporter="test")
    boundaries = sorted({(node.feature, tree_model.boundaries[i][node.node_id])
                         for i, tree in enumerate(tree_model.trees) for node in tree if hasattr(node, "feature")})
    rows = rows_around(X32, boundaries, np.random.default_rng(0))
    np.testing.assert_allclose(xgboost_scores(document, rows, tmp_path), pipeline.predict(rows), rtol=0, atol=1e-6)


def test_feature_names_go_into_the_model(tmp_path):
    _, ranker = integer_model()
    document = to_xgboost_json(ranker, feature_names=["title", "body", "recency"])
    assert document["learner"]["feature_names"] == ["title", "body", "recency"]
    path = tmp_path / "named.json"
    to_xgboost_json(ranker, path, feature_names=["title", "body", "recency"])
    booster = xgboost.Booster(model_file=str(path))
    assert booster.feature_names == ["title", "body", "recency"]
    with pytest.raises(ValueError, match="feature_names has 2 names; the model takes 3 features"):
        to_xgboost_json(ranker, feature_names=["a", "b"])


def test_what_xgboost_cannot_express_is_refused():
    X, y, qid = make_ranking(n_queries=20, n_features=4, random_state=0)
    pipeline = make_pipeline(FunctionTransformer(np.tanh), LambdaMARTRanker(n_estimators=2, n_jobs=1))
    pipeline.fit(X, y, lambdamartranker__groups=qid)
    with pytest.raises(TypeError, match="cannot export the Pipeline step 'functiontransformer' "
                                        r"\(FunctionTransformer\): the steps before a LambdaMARTRanker may be "
                                        "Log1pTransformer, MinMaxScaler, StandardScaler"):
        to_xgboost_json(pipeline)
    with pytest.raises(TypeError, match="exports a fitted LambdaMARTRanker"):
        to_xgboost_json(RankNetRanker())
    X[X < 0] = 0
    zero = fit_lambdamart(X, y, qid, n_estimators=3, lgbm_params={"zero_as_missing": True})
    with pytest.raises(ValueError, match="to_xgboost_json cannot export splits that treat zero as missing"):
        to_xgboost_json(zero)


def test_the_plugin_definition_scores_as_the_ranker(mq2008_data):
    (X, y, qid), (X_test, _, qid_test) = mq2008_data
    ranker = fit_lambdamart(X, y, qid, n_estimators=100, num_leaves=31)
    names = [f"feature_{i + 1}" for i in range(X.shape[1])]
    upload = to_ltr_plugin_xgboost(ranker, feature_names=names, model_name="lm", featureset="letor")
    assert upload["featureset"]["path"] == "_ltr/_featureset/letor"
    assert upload["model"]["path"] == "_ltr/_featureset/letor/_createmodel"
    assert upload["model"]["body"]["model"]["name"] == "lm"
    X32 = X_test.astype(np.float32)
    expected = ranker.predict(X32)
    scores = plugin_scores(upload, X32)
    assert max_diff(scores, expected) <= TOLERANCE
    assert same_order_fraction(scores, expected, qid_test) == 1.0


@pytest.mark.parametrize("make", [integer_model, adjacent_float32_model])
def test_the_plugin_definition_on_every_threshold(make):
    X, ranker = make()
    rows = rows_on_thresholds(X, ranker.booster_, np.random.default_rng(1))
    np.testing.assert_allclose(plugin_scores(to_ltr_plugin_xgboost(ranker), rows), ranker.predict(rows),
                               rtol=0, atol=1e-6)


def test_the_plugin_refuses_a_learned_missing_side_it_cannot_take():
    ranker, _ = nan_model()
    with pytest.raises(ValueError, match="the LTR plugins send NaN to the 'no' branch"):
        to_ltr_plugin_xgboost(ranker)


def test_the_plugin_feature_set_takes_the_templates():
    _, ranker = integer_model()
    upload = to_ltr_plugin_xgboost(ranker, feature_names=["a", "b", "c"],
                                   feature_templates={"a": {"match": {"title": "{{keywords}}"}}})
    features = upload["featureset"]["body"]["featureset"]["features"]
    assert [f["name"] for f in features] == ["a", "b", "c"]
    assert features[0]["template"] == {"match": {"title": "{{keywords}}"}}
    assert features[1]["template"] == {"match": {"b": "{{keywords}}"}}
    with pytest.raises(ValueError, match=r"feature_templates names features the model does not take: \['z'\]"):
        to_ltr_plugin_xgboost(ranker, feature_names=["a", "b", "c"], feature_templates={"z": {}})


def test_the_registry_lists_each_format_once(tmp_path):
    assert {"onnx", "xgboost-json", "ltr-plugin-xgboost"} <= set(EXPORT_FORMATS)
    assert all(name == entry.name for name, entry in EXPORT_FORMATS.items())
    _, ranker = integer_model()
    path = tmp_path / "m.json"
    assert export(ranker, "xgboost-json", path) == to_xgboost_json(ranker) == json.loads(path.read_text())
    with pytest.raises(ValueError, match="unknown export format 'pmml'; the formats are: onnx, xgboost-json"):
        export(ranker, "pmml")

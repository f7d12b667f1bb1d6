"""Elasticsearch's native learning-to-rank model (``PUT _ml/trained_models``) from LambdaMART.

The definition is scored by an evaluator written from Elasticsearch's documentation of the trained model
definition (create trained models API, ``definition.trained_model``): an ``ensemble`` of ``tree`` models, each a
``tree_structure`` of nodes addressed by ``node_index``; a split node sends a document to ``left_child`` when
``decision_type`` holds between the feature (``split_feature``, an index into ``feature_names``) and
``threshold`` (``lte``: ``<=``, ``lt``: ``<``, ``gt``, ``gte``), and a missing feature to the left exactly when
``default_left``; a leaf outputs ``leaf_value``; ``aggregate_output.weighted_sum`` sums the trees' outputs times
their ``weights``. Features and thresholds are doubles.
"""

import json

import numpy as np
import pytest
from engine_evaluators import elasticsearch_scores
from export_helpers import (
    adjacent_float32_model,
    fit_lambdamart,
    integer_model,
    max_diff,
    mq2007_agg,
    mq2008,
    nan_model,
    rows_on_thresholds,
    same_order_fraction,
)
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MinMaxScaler

from sklearn_ltr import LambdaMARTRanker
from sklearn_ltr.export import export, to_elasticsearch_ltr


@pytest.mark.parametrize("data", ["mq2008", "mq2007-agg"])
def test_elasticsearch_scores_as_the_ranker_on_every_test_query(data, data_dir):
    (X, y, qid), (X_test, _, qid_test) = mq2008(data_dir) if data == "mq2008" else mq2007_agg(data_dir)
    ranker = fit_lambdamart(X, y, qid, n_estimators=100, num_leaves=31)
    expected = ranker.predict(X_test)
    scores = elasticsearch_scores(to_elasticsearch_ltr(ranker), X_test)  # doubles, as Elasticsearch compares
    assert max_diff(scores, expected) <= 1e-9
    assert same_order_fraction(scores, expected, qid_test) == 1.0


@pytest.mark.parametrize("make", [integer_model, adjacent_float32_model])
def test_rows_exactly_on_every_threshold_go_as_in_lightgbm(make):
    X, ranker = make()
    rows = rows_on_thresholds(X, ranker.booster_, np.random.default_rng(0))
    np.testing.assert_allclose(elasticsearch_scores(to_elasticsearch_ltr(ranker), rows), ranker.predict(rows),
                               rtol=0, atol=1e-9)


@pytest.mark.filterwarnings("ignore::sklearn_ltr.exceptions.FeatureDriftWarning")  # NaN where training had none
def test_missing_values_go_to_lightgbms_side():
    ranker, X_test = nan_model()
    request = to_elasticsearch_ltr(ranker)
    trees = request["body"]["definition"]["trained_model"]["ensemble"]["trained_models"]
    assert any(node.get("default_left") for tree in trees for node in tree["tree"]["tree_structure"])
    assert max_diff(elasticsearch_scores(request, X_test), ranker.predict(X_test)) <= 1e-9


def test_a_pipeline_of_scalers_folds_into_float32_thresholds():
    X, ranker = integer_model()
    pipeline = make_pipeline(MinMaxScaler(), LambdaMARTRanker(n_estimators=30, num_leaves=15, random_state=0,
                                                              n_jobs=1, min_child_samples=5))
    y = (X[:, 0] > 5).astype(int) + (X[:, 1] % 3 == 0)
    pipeline.fit(X, y, lambdamartranker__groups=np.repeat(np.arange(150), 20))
    rows = rows_on_thresholds(X, ranker.booster_, np.random.default_rng(0))  # float32 rows around k + 0.5
    np.testing.assert_allclose(elasticsearch_scores(to_elasticsearch_ltr(pipeline), rows), pipeline.predict(rows),
                               rtol=0, atol=1e-9)


def test_the_request_names_the_model_features_and_queries(tmp_path):
    _, ranker = integer_model()
    path = tmp_path / "es.json"
    request = to_elasticsearch_ltr(ranker, path, feature_names=["title", "body", "age"], model_id="m",
                                   feature_queries={"title": {"match": {"title": "{{query}}"}}}, with_input=True)
    assert json.loads(path.read_text()) == request == export(
        ranker, "elasticsearch-ltr", feature_names=["title", "body", "age"], model_id="m",
        feature_queries={"title": {"match": {"title": "{{query}}"}}}, with_input=True)
    assert (request["method"], request["path"]) == ("PUT", "_ml/trained_models/m")
    body = request["body"]
    assert body["input"] == {"field_names": ["title", "body", "age"]}
    extractors = body["inference_config"]["learning_to_rank"]["feature_extractors"]
    assert extractors[0] == {"query_extractor": {"feature_name": "title", "query": {"match": {"title": "{{query}}"}}}}
    assert extractors[2]["query_extractor"]["query"] == {"match": {"age": "{{query}}"}}
    assert "input" not in to_elasticsearch_ltr(ranker)["body"]
    with pytest.raises(ValueError, match=r"feature_queries names features the model does not take: \['x'\]"):
        to_elasticsearch_ltr(ranker, feature_queries={"x": {}})

"""Solr's LTR models (MultipleAdditiveTreesModel, LinearModel, NeuralNetworkModel) and the plugins' ``model/linear``.

Each upload is scored by an evaluator written from the format's documentation. Solr Reference Guide, "Learning To
Rank" (and the javadoc of ``org.apache.solr.ltr.model``): a ``MultipleAdditiveTreesModel``'s score is the sum over
``params.trees`` of ``weight`` times the tree's output, a node sending a document to ``left`` when the value of its
``feature`` is ``<=`` its ``threshold`` and a leaf outputting ``value``; a ``LinearModel`` scores
``sum(weights[name] * value)``; a ``NeuralNetworkModel`` applies each of ``params.layers`` in turn,
``activation(matrix . input + bias)`` with ``matrix`` one row per output node (activations ``relu``, ``sigmoid``,
``tanh``, ``leakyrelu`` (slope 0.01), ``identity``); a ``ValueFeature`` is its ``value`` for every document; all in
float32. The LTR plugin's docs (docs/training-models.rst, "Simple linear models"): a ``model/linear`` definition maps
feature names to weights, the score is the weighted sum.
"""

import json

import numpy as np
import pytest
from engine_evaluators import plugin_linear_scores, solr_scores
from export_helpers import (
    fit_lambdamart,
    integer_model,
    max_diff,
    mq2008,
    nan_model,
    pairs_swapped_beyond,
    rows_on_thresholds,
)
from export_helpers import same_order_fraction as same_order
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MinMaxScaler, StandardScaler

from sklearn_ltr import DASALCRanker, LambdaMARTRanker, RankNetRanker
from sklearn_ltr.export import export, to_ltr_plugin_linear, to_solr_linear, to_solr_neural, to_solr_trees

pytestmark = pytest.mark.usefixtures("one_torch_thread")

@pytest.fixture(scope="module")
def data(data_dir):
    return mq2008(data_dir)


def _close(scores, expected):
    return max_diff(scores, expected) <= 1e-5 * max(1.0, float(np.max(np.abs(expected))))


def test_solr_trees_score_as_the_ranker_on_every_mq2008_test_query(data):
    (X, y, qid), (X_test, _, qid_test) = data
    ranker = fit_lambdamart(X, y, qid, n_estimators=100, num_leaves=31)
    X32 = X_test.astype(np.float32)
    expected, scores = ranker.predict(X32), solr_scores(to_solr_trees(ranker), X32)
    assert _close(scores, expected) and same_order(scores, expected, qid_test) == 1.0


def test_solr_trees_on_every_threshold_and_their_refusal():
    X, ranker = integer_model()
    rows = rows_on_thresholds(X, ranker.booster_, np.random.default_rng(0))
    np.testing.assert_allclose(solr_scores(to_solr_trees(ranker), rows), ranker.predict(rows), rtol=0, atol=1e-6)
    with pytest.raises(ValueError, match="to_solr_trees cannot express this model's missing values: it learned to "
                                         "send a missing feature \\('f0', NaN in training\\) left, and Solr"):
        to_solr_trees(nan_model()[0])


@pytest.mark.parametrize("scaler", [None, StandardScaler(), MinMaxScaler()], ids=["alone", "standard", "minmax"])
@pytest.mark.parametrize("hidden", [(), (16, 8)], ids=["linear", "mlp"])
def test_ranknet_in_solr_and_the_plugin_scores_as_predict(hidden, scaler, data):
    (X, y, qid), (X_test, _, qid_test) = data
    ranker = RankNetRanker(hidden_sizes=hidden, batch_norm=bool(hidden), activation="tanh" if hidden else "relu",
                           max_epochs=3, random_state=0, device="cpu")
    model = ranker if scaler is None else make_pipeline(scaler, ranker)
    model.fit(X, y, **({"groups": qid} if scaler is None else {"ranknetranker__groups": qid}))
    X32 = X_test.astype(np.float32)
    expected = model.predict(X32)
    uploads = [("neural", solr_scores(to_solr_neural(model), X32))]
    if not hidden:
        uploads += [("linear", solr_scores(to_solr_linear(model), X32)),
                    ("plugin", plugin_linear_scores(to_ltr_plugin_linear(model), X32))]
    for name, scores in uploads:
        assert _close(scores, expected), (name, max_diff(scores, expected))
        # float32 rounding may swap two documents whose scores differ by less than it, never two further apart.
        assert pairs_swapped_beyond(scores, expected, qid_test, 1e-5) == 0, name
        assert same_order(scores, expected, qid_test) >= 0.95, name


def test_ranknet_exports_refuse_what_they_cannot_express(data):
    (X, y, qid), _ = data
    X, y, qid = X[:500], y[:500], qid[:500]
    mlp = RankNetRanker(hidden_sizes=(4,), max_epochs=1, random_state=0, device="cpu").fit(X, y, groups=qid)
    with pytest.raises(ValueError, match=r"to_solr_linear exports a linear RankNetRanker \(hidden_sizes=\(\)\); "
                                         "this one has 1 hidden layers"):
        to_solr_linear(mlp)
    gelu = RankNetRanker(hidden_sizes=(4,), activation="gelu", max_epochs=1, random_state=0, device="cpu")
    with pytest.raises(ValueError, match="to_solr_neural cannot export the activation 'gelu'"):
        to_solr_neural(gelu.fit(X, y, groups=qid))
    with pytest.raises(TypeError, match="exports a fitted RankNetRanker"):
        to_solr_neural(DASALCRanker())
    with pytest.raises(TypeError, match="exports a fitted RankNetRanker"):
        to_ltr_plugin_linear(LambdaMARTRanker())
    pipeline = make_pipeline(StandardScaler(), MinMaxScaler(), RankNetRanker(hidden_sizes=(), max_epochs=1,
                                                                             device="cpu"))
    pipeline.fit(X, y, ranknetranker__groups=qid)
    with pytest.raises(TypeError, match="cannot export the Pipeline step 'minmaxscaler' \\(MinMaxScaler\\): before a "
                                        "RankNetRanker it takes one StandardScaler or MinMaxScaler"):
        to_solr_linear(pipeline)


def test_the_uploads_name_the_stores_and_features(tmp_path):
    _, ranker = integer_model()
    upload = to_solr_trees(ranker, tmp_path / "solr.json", feature_names=["a", "b", "c"], store="s", model_name="m",
                           feature_params={"a": {"class": "org.apache.solr.ltr.feature.SolrFeature",
                                                 "params": {"q": "{!func}recip(ms(NOW,last_modified),3.16e-11,1,1)"}}})
    assert json.loads((tmp_path / "solr.json").read_text()) == upload == export(
        ranker, "solr-trees", feature_names=["a", "b", "c"], store="s", model_name="m",
        feature_params={"a": {"class": "org.apache.solr.ltr.feature.SolrFeature",
                              "params": {"q": "{!func}recip(ms(NOW,last_modified),3.16e-11,1,1)"}}})
    assert (upload["features"]["method"], upload["features"]["path"]) == ("PUT", "schema/feature-store")
    assert (upload["model"]["method"], upload["model"]["path"]) == ("PUT", "schema/model-store")
    features = upload["features"]["body"]
    assert [f["store"] for f in features] == ["s"] * 3 and features[0]["class"].endswith("SolrFeature")
    assert features[1] == {"name": "b", "store": "s", "class": "org.apache.solr.ltr.feature.FieldValueFeature",
                           "params": {"field": "b"}}
    assert upload["model"]["body"]["name"] == "m" and upload["model"]["body"]["store"] == "s"
    with pytest.raises(ValueError, match=r"feature_params names features the model does not take: \['z'\]"):
        to_solr_trees(ranker, feature_params={"z": {}})

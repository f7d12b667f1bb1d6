"""RankLib's LambdaMART text and the LTR plugins' ``model/ranklib`` upload, from LambdaMART.

The text is scored by an evaluator written from RankLib's format as its documentation shows it (the LTR
plugin's docs/training-models.rst, "Ranklib Example": ``## LambdaMART`` header lines, ``<ensemble>``,
``<tree id= weight=>``, nested ``<split>`` with ``<feature>`` (1-based ordinals), ``<threshold>``,
``<split pos="left">`` / ``<split pos="right">`` and ``<output>``) and RankLib's documented semantics: a model
file's ``##`` lines are comments and its other lines are read trimmed, a split sends a document left when its
feature value ``<=`` the threshold, both float32 (``Float.parseFloat``), an unknown (NaN) feature value reads as 0,
and the ensemble's score is the float32 sum of each tree's output times its weight.
"""

import numpy as np
import pytest
from engine_evaluators import ranklib_scores
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
from sklearn.preprocessing import StandardScaler

from sklearn_ltr import LambdaMARTRanker, Log1pTransformer
from sklearn_ltr.export import EXPORT_FORMATS, export, to_ltr_plugin_ranklib, to_ranklib

TOLERANCE = 1e-5


def test_ranklib_scores_as_the_ranker_on_every_mq2008_test_query(data_dir):
    (X, y, qid), (X_test, _, qid_test) = mq2008(data_dir)
    ranker = fit_lambdamart(X, y, qid, n_estimators=100, num_leaves=31)
    X32 = X_test.astype(np.float32)
    expected = ranker.predict(X32)
    scores = ranklib_scores(to_ranklib(ranker), X32)
    assert max_diff(scores, expected) <= TOLERANCE
    assert same_order_fraction(scores, expected, qid_test) == 1.0


def test_a_model_that_learned_where_nan_goes_is_refused_on_mq2007_agg(data_dir):
    (X, y, qid), _ = mq2007_agg(data_dir)
    ranker = fit_lambdamart(X, y, qid, n_estimators=100, num_leaves=31)
    with pytest.raises(ValueError, match="RankLib reads a missing feature as 0, which this split sends"):
        to_ranklib(ranker)


@pytest.mark.parametrize("make", [integer_model, adjacent_float32_model])
def test_rows_exactly_on_every_threshold_go_as_in_lightgbm(make):
    X, ranker = make()
    rows = rows_on_thresholds(X, ranker.booster_, np.random.default_rng(0))
    np.testing.assert_allclose(ranklib_scores(to_ranklib(ranker), rows), ranker.predict(rows), rtol=0, atol=1e-6)


@pytest.mark.filterwarnings("ignore::sklearn_ltr.exceptions.FeatureDriftWarning")  # NaN where training had none
def test_nan_in_a_model_trained_without_nan_reads_as_zero_as_in_lightgbm():
    X, ranker = integer_model()
    rows = rows_on_thresholds(X, ranker.booster_, np.random.default_rng(0))
    rows[::2, 0] = rows[1::3, 1] = rows[::5, 2] = np.nan
    np.testing.assert_allclose(ranklib_scores(to_ranklib(ranker), rows), ranker.predict(rows), rtol=0, atol=1e-6)


def test_a_learned_nan_side_ranklib_cannot_take_is_refused():
    ranker, _ = nan_model()
    with pytest.raises(ValueError, match="to_ranklib cannot express this model's missing values: it learned to "
                                         "send a missing feature \\('f0', NaN in training\\)"):
        to_ranklib(ranker)


@pytest.mark.parametrize("steps", [[StandardScaler()], [Log1pTransformer(), StandardScaler()]],
                         ids=["standard", "log1p+standard"])
def test_a_pipeline_folds_into_the_thresholds(steps, data_dir):
    (X, y, qid), (X_test, _, qid_test) = mq2008(data_dir)
    pipeline = make_pipeline(*steps, LambdaMARTRanker(n_estimators=60, num_leaves=15, random_state=0, n_jobs=1))
    pipeline.fit(X, y, lambdamartranker__groups=qid)
    X32 = X_test.astype(np.float32)
    expected = pipeline.predict(X32)
    scores = ranklib_scores(to_ranklib(pipeline), X32)
    assert max_diff(scores, expected) <= TOLERANCE
    assert same_order_fraction(scores, expected, qid_test) == 1.0


def test_the_text_has_ranklibs_header_and_one_based_features(tmp_path):
    _, ranker = integer_model()
    path = tmp_path / "model.txt"
    text = to_ranklib(ranker, path)
    assert path.read_text() == text == export(ranker, "ranklib")
    lines = text.splitlines()
    assert lines[0] == "## LambdaMART" and lines[1] == f"## No. of trees = {ranker.booster_.num_trees()}"
    features = {int(line.split()[1]) for line in lines if line.strip().startswith("<feature>")}
    assert features <= {1, 2, 3} and 1 in features


def test_the_plugin_upload_carries_the_text():
    _, ranker = integer_model()
    upload = to_ltr_plugin_ranklib(ranker, feature_names=["a", "b", "c"], featureset="set", model_name="m")
    body = upload["model"]["body"]["model"]
    assert body == {"name": "m", "model": {"type": "model/ranklib", "definition": to_ranklib(ranker)}}
    assert upload["model"]["path"] == "_ltr/_featureset/set/_createmodel"
    assert [f["name"] for f in upload["featureset"]["body"]["featureset"]["features"]] == ["a", "b", "c"]
    assert {"ranklib", "ltr-plugin-ranklib"} <= set(EXPORT_FORMATS)

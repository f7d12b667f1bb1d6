"""The command line scores models that read query ids from a column of X (``query_column``)."""

import joblib
import numpy as np
import pytest

from sklearn_ltr import DASALCRanker, LambdaMARTRanker
from sklearn_ltr.cli import main
from sklearn_ltr.datasets import dump_svmlight_ranking, make_ranking

pd = pytest.importorskip("pandas")


@pytest.fixture(scope="module")
def data():
    X, y, qid = make_ranking(n_queries=30, n_features=4, random_state=0)
    return X.astype(np.float64), y, qid


@pytest.fixture
def test_file(data, tmp_path):
    X, y, qid = data
    path = tmp_path / "test.txt"
    dump_svmlight_ranking(X, y, qid, path)
    return path


def _frame(X, qid, position=2):
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
    frame.insert(position, "qid", qid)
    return frame


def _models(data):
    X, y, qid = data
    named = DASALCRanker(hidden_size=8, n_layers=1, n_attention_layers=1, n_heads=1, head_size=4, max_epochs=2,
                         random_state=0, query_column="qid").fit(_frame(X, qid), y)
    numbered = LambdaMARTRanker(n_estimators=5, n_jobs=1, random_state=0, query_column=0).fit(
        np.column_stack([qid, X]), y)
    return {"named": (named, named.predict(_frame(X, qid))),
            "numbered": (numbered, numbered.predict(np.column_stack([qid, X])))}


@pytest.mark.parametrize("kind", ["named", "numbered"])
def test_predict_writes_the_files_ids_into_the_query_column(data, test_file, tmp_path, kind):
    model, expected = _models(data)[kind]
    joblib.dump(model, tmp_path / "m.joblib")
    out = tmp_path / "scores.txt"
    assert main(["predict", "--model", str(tmp_path / "m.joblib"), "--data", str(test_file), "--out", str(out)]) == 0
    np.testing.assert_allclose(np.loadtxt(out), expected, rtol=1e-6, atol=1e-9)


def test_evaluate_a_model_with_a_query_column(data, test_file, tmp_path, capsys):
    from sklearn_ltr.metrics import ndcg_score

    _, y, qid = data
    model, expected = _models(data)["named"]
    joblib.dump(model, tmp_path / "m.joblib")
    assert main(["evaluate", "--model", str(tmp_path / "m.joblib"), "--data", str(test_file), "--metrics", "ndcg@10",
                 "--json"]) == 0
    import json

    value = json.loads(capsys.readouterr().out)["metrics"]["ndcg@10"]
    assert value == pytest.approx(ndcg_score(y, expected, qid, k=10), abs=1e-6)


def test_a_pipeline_whose_input_names_the_query_column(data, test_file, tmp_path):
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y, qid = data
    features = [f"f{i}" for i in range(X.shape[1])]
    scale = ColumnTransformer([("scale", StandardScaler(), features)], remainder="passthrough",
                              verbose_feature_names_out=False).set_output(transform="pandas")
    pipeline = make_pipeline(scale, LambdaMARTRanker(n_estimators=5, n_jobs=1, random_state=0, query_column="qid"))
    pipeline.fit(_frame(X, qid, position=1), y)
    joblib.dump(pipeline, tmp_path / "p.joblib")
    out = tmp_path / "scores.txt"
    assert main(["predict", "--model", str(tmp_path / "p.joblib"), "--data", str(test_file), "--out", str(out)]) == 0
    np.testing.assert_allclose(np.loadtxt(out), pipeline.predict(_frame(X, qid, position=1)), rtol=1e-6)


def test_a_file_without_query_ids_is_a_clear_error(data, tmp_path, capsys):
    from sklearn_ltr.datasets import dump_lightgbm_ranking

    X, y, qid = data
    model, _ = _models(data)["numbered"]
    joblib.dump(model, tmp_path / "m.joblib")
    path = tmp_path / "rows.lgb"
    dump_lightgbm_ranking(X, y, qid, path)
    (tmp_path / "rows.lgb.query").unlink()
    code = main(["predict", "--model", str(tmp_path / "m.joblib"), "--data", str(path), "--out",
                 str(tmp_path / "s.txt")])
    assert code == 2
    assert "query" in capsys.readouterr().err

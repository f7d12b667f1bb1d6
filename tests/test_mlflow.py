"""MLflow's scikit-learn flavour: every model logs and loads in MLflow's default (skops) format, and a pyfunc
model serving a DataFrame that carries the query ids scores each document within its query."""

import inspect
import warnings

import numpy as np
import pytest
from sklearn.pipeline import make_pipeline

from sklearn_ltr import (
    DASALCRanker,
    LambdaMARTRanker,
    Log1pTransformer,
    RankingEnsemble,
    RankNetRanker,
    SetRankRanker,
    TwoTowerDebiasedRanker,
)
from sklearn_ltr.datasets import make_ranking, simulate_clicks
from sklearn_ltr.utils import TRUSTED_TYPES

mlflow = pytest.importorskip("mlflow", reason="MLflow tests need the serving extra: pip install -e '.[serving]'")
pytest.importorskip("skops.io", reason="MLflow's skops format needs skops (the serving extra)")
pd = pytest.importorskip("pandas")
pytest.importorskip("mlflow.sklearn")
pytest.importorskip("mlflow.pyfunc")

if "skops_trusted_types" not in inspect.signature(mlflow.sklearn.log_model).parameters:
    pytest.skip(f"MLflow {mlflow.__version__} does not save scikit-learn models with skops", allow_module_level=True)

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def experiment(tmp_path_factory):
    """A local SQLite tracking store and artifact folder; the previous tracking URI is restored after."""
    folder = tmp_path_factory.mktemp("mlflow")
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(f"sqlite:///{folder}/mlflow.db")
    try:
        yield mlflow.create_experiment("sklearn_ltr", artifact_location=(folder / "artifacts").as_uri())
    finally:
        mlflow.set_tracking_uri(previous)


@pytest.fixture(scope="module")
def data():
    X, y, qid = make_ranking(n_queries=16, n_features=5, random_state=0)
    return X, y, qid


def _model(name, data):
    X, y, qid = data
    tiny = {"max_epochs": 2, "random_state": 0}
    if name == "two-tower":
        positions, clicks = simulate_clicks(y, qid, random_state=0)
        return TwoTowerDebiasedRanker(hidden_sizes=(4,), **tiny).fit(X, clicks, groups=qid, positions=positions)
    if name == "pipeline":
        return make_pipeline(Log1pTransformer(), RankNetRanker(hidden_sizes=(4,), **tiny)).fit(
            X, y, ranknetranker__groups=qid)
    model = {
        "ranknet": RankNetRanker(hidden_sizes=(4,), **tiny),
        "dasalc": DASALCRanker(hidden_size=8, n_attention_layers=1, head_size=4, **tiny),
        "setrank": SetRankRanker(d_model=8, n_blocks=1, n_heads=2, **tiny),
        "lambdamart": LambdaMARTRanker(n_estimators=5, min_child_samples=3, n_jobs=1, random_state=0),
        "ensemble": RankingEnsemble(RankNetRanker(hidden_sizes=(4,), max_epochs=2), n_estimators=2, random_state=0),
    }[name]
    return model.fit(X, y, groups=qid)


@pytest.mark.parametrize("name", ["ranknet", "dasalc", "setrank", "two-tower", "lambdamart", "ensemble", "pipeline"])
def test_log_and_load_every_model_in_the_default_format(experiment, data, name):
    X, _, qid = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = _model(name, data)
    with mlflow.start_run(experiment_id=experiment):
        # The documented recipe; pip_requirements only skips MLflow's inference of them (a subprocess that
        # loads the model: test_pyfunc_scores_documents_within_their_queries runs it) to keep the test quick.
        info = mlflow.sklearn.log_model(model, name="model", skops_trusted_types=TRUSTED_TYPES,
                                        pip_requirements=["sklearn-ltr"])
    flavor = mlflow.models.get_model_info(info.model_uri).flavors["sklearn"]
    assert flavor["serialization_format"] == "skops"  # MLflow's safe default, not a pickle
    loaded = mlflow.sklearn.load_model(info.model_uri)
    assert type(loaded) is type(model)
    np.testing.assert_array_equal(loaded.predict(X, groups=qid), model.predict(X, groups=qid))


def test_pyfunc_scores_documents_within_their_queries(experiment, data, monkeypatch):
    # Serving passes a DataFrame and nothing else: the query ids travel in its "qid" column.
    X, y, qid = data
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
    frame.insert(0, "qid", qid)
    ranker = DASALCRanker(hidden_size=8, n_attention_layers=1, head_size=4, max_epochs=2, random_state=0,
                          query_column="qid").fit(frame, y)
    # MLflow infers the requirements by loading the model in a fresh process: make a failure there an error.
    monkeypatch.setenv("MLFLOW_REQUIREMENTS_INFERENCE_RAISE_ERRORS", "true")
    with mlflow.start_run(experiment_id=experiment):
        info = mlflow.sklearn.log_model(ranker, name="ranker", skops_trusted_types=TRUSTED_TYPES,
                                        input_example=frame.head(5))
    served = mlflow.pyfunc.load_model(info.model_uri)
    shuffled = frame.sample(frac=1.0, random_state=1)  # rows of several queries, interleaved
    scores = np.asarray(served.predict(shuffled))
    np.testing.assert_array_equal(scores, ranker.predict(shuffled))
    # The scores are list-context scores of each row's own query, whatever the row order.
    in_order = pd.Series(ranker.predict(frame), index=frame.index)
    np.testing.assert_allclose(scores, in_order[shuffled.index].to_numpy(), rtol=0, atol=1e-6)
    alone = ranker.predict(frame[frame.qid == qid[0]])
    np.testing.assert_allclose(in_order[frame.qid == qid[0]].to_numpy(), alone, rtol=0, atol=1e-6)
    assert not np.allclose(np.asarray(served.predict(frame.assign(qid=0))), in_order)  # one list: other scores

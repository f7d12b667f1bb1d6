"""Every number ``train`` prints or saves about a fit (epochs, best epoch, rounds, best iteration).

The line ``trained ... (epochs 7, best epoch 5)`` and the model file's metadata come from the
CLI's own bookkeeping; these tests read the same numbers back from the fitted estimator (its
history, LightGBM's evaluation record and booster) and from the model's scores.
"""

import re

import joblib
import numpy as np
import pytest
from cli_helpers import run  # tests/cli_helpers.py

from sklearn_ltr.datasets import dump_svmlight_ranking, make_ranking

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("reported")
    paths = {}
    for name, seed in (("train", 0), ("valid", 1)):
        X, y, qid = make_ranking(n_queries=20, n_features=5, random_state=seed)
        paths[name] = str(tmp / f"{name}.txt")
        dump_svmlight_ranking(X, y, qid, paths[name])
    return paths


def _train(capsys, files, model, *options):
    status, out, err = run(capsys, "train", "--train", files["train"], "--valid", files["valid"], "--out", model,
                           *options)
    assert status == 0, err
    (trained,) = [line for line in out.splitlines() if line.startswith("trained ")]
    (ndcg,) = [line for line in out.splitlines() if line.startswith("NDCG@10: ")]
    saved = joblib.load(model)
    estimator = saved.steps[-1][1] if hasattr(saved, "steps") else saved
    steps = [name for name, _ in saved.steps] if hasattr(saved, "steps") else []
    metadata = {**saved.cli_metadata_, "steps": steps}
    return trained, float(re.search(r"valid (\d\.\d{4})", ndcg).group(1)), metadata, estimator


def test_neural_epochs_and_best_epoch(capsys, files, tmp_path):
    trained, valid_ndcg, metadata, ranker = _train(
        capsys, files, tmp_path / "m.joblib", "--model", "ranknet", "--param", "max_epochs=12", "--param",
        "n_iter_no_change=2", "--param", "hidden_sizes=(8,)", "--param", "lr=0.05")
    history = [row["vali_ndcg@10"] for row in ranker.history_]
    epochs, best = ranker.n_iter_, int(np.argmax(history)) + 1
    assert epochs == len(history) < 12, "early stopping never triggered: weak test"
    assert 1 < best < epochs, "the best epoch is the first or the last: weak test"
    # RankNet's registry entry declares log1p-standardize as the command line's default preprocessing.
    assert f"(epochs {epochs}, best epoch {best}; preprocessing log1p-standardize)" in trained
    assert (metadata["preprocessing"], metadata["steps"]) == ("log1p-standardize", ["log1p", "scale", "ranker"])
    assert (metadata["epochs"], metadata["best_epoch"]) == (epochs, best)
    # The saved model is the best epoch's (EarlyStopping(load_best=True)): its validation NDCG is the best.
    assert valid_ndcg == round(max(history), 4)


def test_lambdamart_rounds_and_best_iteration(capsys, files, tmp_path):
    trained, _, metadata, ranker = _train(capsys, files, tmp_path / "m.joblib", "--model", "lambdamart",
                                          "--threads", "1", "--param", "n_estimators=30")
    history = ranker.evals_result_["vali"]["ndcg@10"]
    rounds, best = len(history), int(np.argmax(history)) + 1
    assert rounds == 30 and best < rounds, "the best round is the last: weak test"
    assert best == ranker.best_iteration_ == ranker.booster_.current_iteration()
    assert f"(rounds {rounds}, best iteration {best})" in trained
    assert (metadata["rounds"], metadata["best_iteration"]) == (rounds, best)
    assert (metadata["preprocessing"], metadata["steps"]) == ("none", [])

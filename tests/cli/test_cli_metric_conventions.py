"""The command line's metric conventions where a registered metric, or a file, puts them to the test.

A registered metric can score an empty query 1 with no option to change it (``compare --empty-queries
zero`` must refuse it) or return non-finite values (a NaN, +inf or -inf mean is refused); and
``train``'s footnote names only the files that have empty queries.
"""

import numpy as np
import pytest
from cli_helpers import run  # tests/cli_helpers.py

from sklearn_ltr.datasets import dump_svmlight_ranking, make_ranking
from sklearn_ltr.metrics import Metric, register_metric, unregister_metric


@pytest.fixture
def files(tmp_path):
    data, scores = tmp_path / "test.txt", tmp_path / "scores.txt"
    dump_svmlight_ranking(np.ones((6, 2)), np.array([1, 0, 0, 0, 0, 1]), np.array([1, 1, 2, 2, 3, 3]), data)
    np.savetxt(scores, [0.5, 0.1, 0.3, 0.2, 0.4, 0.6])
    return str(data), str(scores)


@pytest.fixture
def registered():
    names = []

    def register(name, per_query, **kwargs):
        register_metric(Metric(name, None, per_query, **kwargs))
        names.append(name)

    yield register
    for name in names:
        unregister_metric(name)


def test_zero_refuses_a_metric_that_scores_empty_queries_1_without_an_option(capsys, files, registered):
    """compare passes --empty-queries zero to the metric as empty_value=0.0: one without that option is refused."""
    registered("ones", lambda y_true, y_score, groups: np.ones(len(np.unique(groups))), empty_value=1.0)
    data, scores = files
    command = ["compare", "--data", data, "--scores", scores, "--scores", scores, "--metrics", "ones", "--resamples",
               "10"]
    status, _, err = run(capsys, *command, "--empty-queries", "zero")
    assert status == 2
    assert ("ONES scores a query without a relevant document 1 and has no empty_value option: --empty-queries zero "
            "cannot apply to it; use default or drop") in err
    status, _, err = run(capsys, *command, "--empty-queries", "drop")
    assert status == 0, err


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf], ids=["nan", "+inf", "-inf"])
def test_a_non_finite_mean_is_refused(capsys, files, registered, value):
    """--empty-queries zero averages the metric's per-query values itself: a NaN or infinite mean is an error."""
    registered("broken", lambda y_true, y_score, groups: np.full(len(np.unique(groups)), value))
    data, scores = files
    status, _, err = run(capsys, "evaluate", "--data", data, "--scores", scores, "--metrics", "broken",
                         "--empty-queries", "zero")
    assert status == 2
    assert f"BROKEN on --data {data!r} is {float(value)} (labels up to 1: too large for the gain" in err


def test_the_train_footnote_names_only_the_files_with_empty_queries(capsys, tmp_path):
    paths = {}
    for name, seed in (("train", 0), ("valid", 1)):
        X, y, qid = make_ranking(n_queries=6, n_features=3, random_state=seed)
        y = np.maximum(y, np.arange(len(y)) % 3 == 0)  # every query has a relevant document ...
        if name == "train":
            y = np.where(qid == qid[0], 0, y)  # ... but one of the training file's
        paths[name] = str(tmp_path / f"{name}.txt")
        dump_svmlight_ranking(X, y, qid, paths[name])
    status, out, err = run(capsys, "train", "--model", "lambdamart", "--train", paths["train"], "--valid",
                           paths["valid"], "--out", str(tmp_path / "m.joblib"), "--threads", "1", "--param",
                           "n_estimators=3")
    assert status == 0, err
    (note,) = [line for line in out.splitlines() if line.startswith("* ")]
    assert note.startswith("* 1 of 6 train queries have no relevant document (label > 0): "), note

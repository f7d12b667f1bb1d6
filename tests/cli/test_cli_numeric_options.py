"""The ends of every numeric option of the command line: accepted at a closed end, refused beyond it.

``RANGES`` is the specification, written by hand: for each ``(command, option)`` whose argparse
type is ``int`` or ``float``, its allowed range. A test enumerates the parser's numeric options and
fails on one without a row. At an open end, and one step beyond a closed end (the next integer, or
the next float), the command fails with a one-line ``sklearn-ltr: error:`` naming the option and
status 2; at a closed end it runs (tiny files, one tree or one epoch; the demo is stopped right
after its data split, which receives the option's value).
"""

import argparse
import json
import math
import os

import numpy as np
import pytest
from cli_helpers import assert_user_error, run  # tests/cli_helpers.py

from sklearn_ltr.cli import _commands, _demo
from sklearn_ltr.cli._errors import CLIError
from sklearn_ltr.cli._main import build_parser
from sklearn_ltr.datasets import dump_svmlight_ranking, load_ranking_layout, observation_propensity, simulate_clicks
from sklearn_ltr.metrics import ips_dcg_score

pytestmark = pytest.mark.usefixtures("one_torch_thread")

N = None  # an end that is not there (infinity)
#: Most threads --threads takes: more would make OpenMP abort the process (cli/_main.py).
MOST_THREADS = max(64, 4 * (os.cpu_count() or 1))
SEED_MAX = 2**32 - 1
#: --n-features' left end is the data file's own highest feature index (3 in the files below).
FILE_FEATURES = 3

#: (command, option) -> (type, left, right, closed): the specification.
RANGES = {
    ("demo", "--queries"): (int, 8, N, "left"),  # a quarter of the queries is held out for testing
    ("demo", "--seed"): (int, 0, SEED_MAX, "both"),
    ("demo", "--threads"): (int, 1, MOST_THREADS, "both"),
    ("train", "--seed"): (int, 0, SEED_MAX, "both"),
    ("train", "--threads"): (int, 1, MOST_THREADS, "both"),
    ("train", "--simulate-clicks"): (int, 1, N, "left"),
    ("train", "--logging-quality"): (float, 0, 1, "both"),
    ("train", "--eta"): (float, 0, N, "left"),  # finite: infinity is refused too
    ("evaluate", "--clip"): (float, 0, 1, "right"),
    ("convert", "--n-features"): (int, FILE_FEATURES, N, "left"),
    ("compare", "--alpha"): (float, 0, 1, "neither"),
    ("compare", "--confidence"): (float, 0, 1, "neither"),
    ("compare", "--resamples"): (int, 1, N, "left"),
    ("compare", "--seed"): (int, 0, SEED_MAX, "both"),
    ("compare", "--clip"): (float, 0, 1, "right"),
}

#: What the refusal says besides the option's name, when the option's name is not in it.
REFUSAL_NAMES = {("convert", "--n-features"): "n_features"}


def _numeric_options():
    parser = build_parser()
    commands = next(action for action in parser._actions if isinstance(action, argparse._SubParsersAction))
    found = {}
    for command, subparser in commands.choices.items():
        for action in subparser._actions:
            if action.type in (int, float):
                found[(command, action.option_strings[-1])] = action.type
    return found


def test_every_numeric_option_has_a_row():
    found = _numeric_options()
    missing = sorted(set(found) - set(RANGES))
    assert not missing, f"numeric options without a row of RANGES: {missing}"
    stale = sorted(set(RANGES) - set(found))
    assert not stale, f"rows of RANGES that are no numeric option: {stale}"
    assert {key: kind for key, (kind, *_) in RANGES.items()} == found


# --------------------------------------------------------------------------- files


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A graded file, a click log with its propensities, two score files and a model path."""
    folder = tmp_path_factory.mktemp("numeric_options")
    rng = np.random.default_rng(3)
    groups = np.repeat(np.arange(12) + 1, 5)
    y = rng.integers(0, 3, size=groups.size)
    X = rng.normal(size=(groups.size, FILE_FEATURES))
    paths = {name: str(folder / f"{name}.txt") for name in ("graded", "clicks", "propensities", "a", "b")}
    dump_svmlight_ranking(X, y, groups, paths["graded"])
    positions, clicks = simulate_clicks(y, groups, w=0.5, y_max=2, random_state=0)
    dump_svmlight_ranking(X, clicks, groups, paths["clicks"])
    np.savetxt(paths["propensities"], observation_propensity(positions), fmt="%.17g")
    scores = {"a": y + rng.normal(size=y.size), "b": rng.normal(size=y.size)}
    for name, values in scores.items():
        np.savetxt(paths[name], values, fmt="%.17g")
    paths["folder"] = folder
    return paths, clicks, groups, scores, observation_propensity(positions)


def _base(files, command, option):
    """A command line that runs as it is: the option under test is appended to it."""
    paths = files[0]
    folder = paths["folder"]
    if command == "demo":
        return ["demo", "--quick", "--no-progress"]
    if command == "train" and option in ("--simulate-clicks", "--logging-quality", "--eta"):
        clicks = [] if option == "--simulate-clicks" else ["--simulate-clicks", "1"]
        return ["train", "--model", "two-tower", "--train", paths["graded"], "--out", folder / "tower.joblib",
                "--param", "max_epochs=1", "--param", "hidden_sizes=(4,)", *clicks]
    if command == "train":
        return ["train", "--model", "lambdamart", "--train", paths["graded"], "--out", folder / "trees.joblib",
                "--param", "n_estimators=1", "--param", "min_child_samples=1"]
    if command == "evaluate":
        return ["evaluate", "--data", paths["clicks"], "--scores", paths["a"], "--propensities",
                paths["propensities"], "--json"]
    if command == "convert":
        return ["convert", paths["graded"], folder / f"layout{len(os.listdir(folder))}.ltr"]
    data = ["--data", paths["clicks"], "--propensities", paths["propensities"]] if option == "--clip" \
        else ["--data", paths["graded"]]
    return ["compare", *data, "--scores", paths["a"], "--scores", paths["b"], "--resamples", "10", "--json"]


@pytest.fixture
def stop_demo(monkeypatch):
    """The demo's synthetic split, recording its arguments and then ending the command (no training)."""
    seen = []
    split = _demo._split_synthetic

    def stop(n_queries, seed):
        seen.append((n_queries, seed, split(n_queries, seed)[0].X.shape[0] > 0))
        raise CLIError("stopped after the data split")

    monkeypatch.setattr(_demo, "_split_synthetic", stop)
    return seen


# --------------------------------------------------------------------------- refusals


def _text(value):
    return repr(value) if isinstance(value, float) else str(value)


def _refusal_cases():
    cases = []
    for (command, option), (kind, left, right, closed) in RANGES.items():
        for end, direction, is_closed in ((left, -1, closed in ("left", "both")),
                                          (right, 1, closed in ("right", "both"))):
            if end is None:
                if kind is float:  # the open end at infinity
                    cases.append(pytest.param(command, option, "inf", id=f"{command}{option}=inf"))
                continue
            values = [] if is_closed else [end]
            values.append(end + direction if kind is int else float(np.nextafter(float(end), direction * math.inf)))
            cases += [pytest.param(command, option, _text(value), id=f"{command}{option}={_text(value)}")
                      for value in values]
        if kind is float:  # not a number is inside no range
            cases.append(pytest.param(command, option, "nan", id=f"{command}{option}=nan"))
    return cases


@pytest.mark.parametrize(("command", "option", "value"), _refusal_cases())
def test_refused_at_an_open_end_and_beyond_a_closed_end(files, capsys, stop_demo, command, option, value):
    # OPTION=VALUE: argparse would read "-5e-324" after a space as an option of its own.
    line = assert_user_error(capsys, [*_base(files, command, option), f"{option}={value}"],
                             REFUSAL_NAMES.get((command, option), option))
    assert "stopped after the data split" not in line
    assert not stop_demo


# --------------------------------------------------------------------------- closed ends accepted


@pytest.mark.parametrize(("option", "value"), [("--queries", 8), ("--seed", 0), ("--seed", SEED_MAX),
                                               ("--threads", 1), ("--threads", MOST_THREADS)])
def test_demo_accepts_the_closed_ends(files, capsys, stop_demo, option, value):
    status, _, err = run(capsys, *_base(files, "demo", option), option, value)
    assert status == 2 and "stopped after the data split" in err, err  # every check passed
    n_queries, seed, split = stop_demo[0]
    assert (n_queries, seed) == ((8, 0) if option == "--queries" else (150, value if option == "--seed" else 0))
    assert split


def test_demo_queries_zero_is_refused_not_the_default_size(files, capsys, stop_demo):
    """``--queries 0`` once ran the default 600 queries (``0 or 600``)."""
    assert_user_error(capsys, ["demo", "--queries", "0"], "--queries must be at least 8", "got 0")
    assert not stop_demo


@pytest.mark.parametrize(("seed", "threads"), [(0, 1), (SEED_MAX, MOST_THREADS)])
def test_train_accepts_the_seed_and_thread_ends(files, capsys, seed, threads):
    folder = files[0]["folder"]
    status, out, err = run(capsys, *_base(files, "train", "--seed"), "--seed", seed, "--threads", threads)
    assert status == 0, err
    assert f"random_state={seed}" in out and f"n_jobs={threads}" in out
    assert os.path.getsize(folder / "trees.joblib") > 0


def test_train_accepts_the_click_ends(files, capsys):
    """One session per query, a shuffled logging ranking (w=0) and no position bias (eta=0) train a model."""
    status, out, err = run(capsys, *_base(files, "train", "--eta"), "--logging-quality", "0", "--eta", "0")
    assert status == 0, err
    assert "1 simulated sessions per query (logging quality w=0, click model PositionBasedModel(eta=0.0))" in out


def test_train_accepts_the_logging_quality_top(files, capsys, monkeypatch):
    seen = []

    def stop(spec, params, rows, *args, **kwargs):
        seen.append(rows)
        raise CLIError("stopped before training")

    monkeypatch.setattr(_commands, "fit_model", stop)
    status, out, err = run(capsys, *_base(files, "train", "--logging-quality"), "--logging-quality", "1",
                           "--click-model", "ubm", "--eta", "0")
    assert status == 2 and "stopped before training" in err, err
    assert "logging quality w=1, click model UserBrowsingModel(eta=0.0)" in out and len(seen[0].y) == 60


def test_evaluate_accepts_clip_one(files, capsys):
    """clip=1 weights every click by 1 / max(p, 1) = 1: the plain DCG of the clicks."""
    _, clicks, groups, scores, propensity = files
    status, out, err = run(capsys, *_base(files, "evaluate", "--clip"), "--clip", "1", "--metrics", "ips_dcg@10")
    assert status == 0, err
    result = json.loads(out)
    assert result["click_log"]["clip"] == 1.0
    expected = ips_dcg_score(clicks, scores["a"], groups, np.ones_like(propensity), k=10)
    assert result["metrics"]["ips_dcg@10"] == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("extra", [["--resamples", "1", "--seed", "0"], ["--seed", str(SEED_MAX)], ["--clip", "1"]],
                         ids=["resamples=1-seed=0", "seed=max", "clip=1"])
def test_compare_accepts_the_closed_ends(files, capsys, extra):
    option = "--clip" if "--clip" in extra else "--seed"
    status, out, err = run(capsys, *_base(files, "compare", option), *extra)
    assert status == 0, err
    result = json.loads(out)
    for name, value in zip(extra[::2], extra[1::2], strict=True):
        key = {"--resamples": "resamples", "--seed": "seed"}.get(name)
        if key:
            assert result[key] == int(value)
        else:
            assert result["click_log"]["clip"] == 1.0


@pytest.mark.parametrize("n_features", [FILE_FEATURES, FILE_FEATURES + 2])
def test_convert_accepts_the_file_features_and_more(files, capsys, n_features):
    command = _base(files, "convert", "--n-features")
    status, _, err = run(capsys, *command, "--n-features", n_features)
    assert status == 0, err
    X, _, _ = load_ranking_layout(command[-1])
    assert X.shape == (60, n_features) and not np.asarray(X[:, FILE_FEATURES:]).any()

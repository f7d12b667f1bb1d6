"""``sklearn-ltr demo``: train every ranker on one data set and print a table of test metrics.

The data is embedded synthetic web-search-like data (:func:`sklearn_ltr.datasets.make_ranking`,
40 features, graded labels 0-4), split by query into 60% training, 15% validation and 25%
test queries; or, with ``--data DIR``, a LETOR fold (``train.txt``, ``vali.txt``,
``test.txt``; ``vali.txt`` optional; SVMlight/LETOR or LightGBM format).

Every model trains on the training queries, is early-stopped on the validation queries
where it supports it (the same rules as ``train --valid``), and is scored on the test
queries: NDCG@1/5/10 and MAP@10. The rows:

- random scores and pointwise Ridge regression on the labels (``Log1pTransformer``,
  ``StandardScaler``, ``Ridge``; on data with missing values, a ``SimpleImputer`` with
  indicator columns first): the floor any ranker must beat;
- the five rankers, trained as ``sklearn-ltr train`` trains them (same default preprocessing),
  with settings chosen to finish quickly on a laptop CPU (on data with missing values, such as
  LETOR 4.0's MQ2007-agg, the neural rankers impute them as ``train --preprocessing auto`` does);
- ``TwoTowerDebiasedRanker`` trains on **clicks**, not labels: every training query is shown
  several times by a logging ranker and clicked under a position-based model
  (:func:`sklearn_ltr.datasets.simulate_clicks`, examination ``1 / position``); it is scored
  on the true test labels like the others, beside ``RankNetRanker`` trained on the same clicks
  without positions (a single tower, not debiased).

The table goes to standard output; progress bars (or, without them, one line per model) to
standard error.
"""

from __future__ import annotations

import os
import sys
import textwrap
import time

import numpy as np

from sklearn_ltr.cli import _progress
from sklearn_ltr.cli._clicks import simulate_sessions
from sklearn_ltr.cli._data_files import MISSING_VALUES_OPTION, RankingFile, align_features, read_ranking
from sklearn_ltr.cli._errors import CLIError
from sklearn_ltr.cli._metrics import empty_queries as empty_mask
from sklearn_ltr.cli._metrics import empty_query_note, metric_values, parse_metrics
from sklearn_ltr.cli._models import CLI_DEFAULTS, MODELS, estimator_errors, fit_model

__all__ = ["demo_models", "run_demo"]

#: Default number of synthetic queries (full run and ``--quick``).
N_QUERIES, N_QUERIES_QUICK = 600, 150
#: Simulated sessions (result pages) per training query for the click-trained models.
SESSIONS, SESSIONS_QUICK = 8, 4
_COLUMNS = ("NDCG@1", "NDCG@5", "NDCG@10", "MAP@10")


def demo_models(quick=False):
    """``[(row label, --model name, ranker parameters, trains on clicks)]`` of the demo."""
    epochs = 8 if quick else 30
    neural = {"max_epochs": epochs, "n_iter_no_change": 5, "device": "cpu"}
    tower = {"hidden_sizes": (64, 32), "lr": 2e-3, **neural}
    # LambdaMART as train trains it (its CLI_DEFAULTS); --quick: fewer, larger steps.
    return [
        ("LambdaMARTRanker", "lambdamart", {"n_estimators": 100, "learning_rate": 0.05} if quick else {}, False),
        ("RankNetRanker", "ranknet", tower, False),
        ("DASALCRanker", "dasalc", {"hidden_size": 128, "n_attention_layers": 1, "n_heads": 2, "head_size": 32,
                                    "dropout": 0.2, "noise_std": 0.5, "attention_dropout": 0.0, **neural}, False),
        ("SetRankRanker", "setrank", {"d_model": 64, "n_heads": 2, "n_blocks": 2, "dropout": 0.1,
                                      "attention_dropout": 0.0, **neural}, False),
        ("RankNetRanker on clicks (not debiased)", "ranknet", {**tower, "loss": "sigmoid_ce"}, True),
        ("TwoTowerDebiasedRanker on clicks", "two-tower",
         {**tower, "combination": "multiplicative", "observation_lr": 2e-2}, True),
    ]


def _split_synthetic(n_queries, seed):
    from sklearn_ltr.datasets import make_ranking

    X, y, groups = make_ranking(n_queries=n_queries, n_features=40, random_state=seed)
    queries = np.random.default_rng(seed).permutation(np.unique(groups))
    n_test, n_valid = max(1, round(0.25 * n_queries)), max(1, round(0.15 * n_queries))
    parts = {"test": queries[:n_test], "vali": queries[n_test:n_test + n_valid], "train": queries[n_test + n_valid:]}
    files = {name: RankingFile(f"synthetic {name}", "synthetic", *(a[np.isin(groups, q)] for a in (X, y, groups)))
             for name, q in parts.items()}
    description = (f"{n_queries} synthetic queries (make_ranking, seed {seed}), {len(y):,} documents, "
                   f"{X.shape[1]} features, labels 0-4; queries split {len(parts['train'])} train / "
                   f"{len(parts['vali'])} validation / {len(parts['test'])} test")
    return files["train"], files["vali"], files["test"], description


def _read_fold(data_dir, missing_values=MISSING_VALUES_OPTION):
    if not os.path.isdir(data_dir):
        raise CLIError(f"--data {data_dir!r} is not a directory; give a LETOR fold directory holding "
                       f"train.txt, test.txt and optionally vali.txt.")
    missing = [name for name in ("train.txt", "test.txt") if not os.path.isfile(os.path.join(data_dir, name))]
    if missing:
        raise CLIError(f"--data {data_dir!r} lacks {' and '.join(missing)}; a LETOR fold directory holds "
                       f"train.txt, test.txt and optionally vali.txt.")
    train, test = (read_ranking(os.path.join(data_dir, f"{name}.txt"), missing=missing_values)
                   for name in ("train", "test"))
    vali_path = os.path.join(data_dir, "vali.txt")
    vali = read_ranking(vali_path, missing=missing_values) if os.path.isfile(vali_path) else None
    for name, part in (("train.txt", train), ("vali.txt", vali), ("test.txt", test)):
        y = None if part is None else part.y
        if y is not None and not (np.isfinite(y).all() and y.min() >= 0 and np.array_equal(y, np.round(y))):
            raise CLIError(f"--data {data_dir!r}: {name} has labels that are not relevance grades 0, 1, 2, ...; "
                           f"the demo needs graded labels (it also simulates clicks from them).")
    # A sparse file may end before the others' last features: pad every part to the widest.
    n_features = max(part.X.shape[1] for part in (train, vali, test) if part is not None)
    widest = max((p for p in (train, vali, test) if p is not None), key=lambda p: p.X.shape[1])
    against = f"{os.path.basename(widest.path)} of --data {data_dir!r}"
    train, test = (align_features(p, n_features, against=against) for p in (train, test))
    if vali is not None:
        vali = align_features(vali, n_features, against=against)
    present = [(name, p) for name, p in (("train", train), ("validation", vali), ("test", test)) if p is not None]
    # Each file's own features (its highest index), not the width they are padded to.
    same = len({p.n_file_features for _, p in present}) == 1
    parts = ", ".join(f"{name} {p.n_queries} queries / {len(p.y):,} rows"
                      + ("" if same else f" / {p.n_file_features} features") for name, p in present)
    labels = "-".join(f"{v:g}" for v in (train.y.min(), train.y.max()))
    features = f"{n_features} features, " if same else ""
    missing_share = sum(p.n_missing for _, p in present) / sum(p.X.size for _, p in present)
    if missing_share:
        features += f"{100 * missing_share:.1f}% of feature values missing, "
    return train, vali, test, f"LETOR fold {data_dir}: {features}labels {labels}; {parts}"


#: The table's metrics.
_METRICS = "ndcg@1,ndcg@5,ndcg@10,map@10"


def _metrics(test, scores, label, empty):
    y, groups = test.y, test.groups
    if not np.isfinite(scores).all():
        raise CLIError(f"{label} scores test rows of the demo as NaN or infinite; do the features hold NaN or huge "
                       f"values?")
    metrics = parse_metrics(_METRICS, command="demo")
    return tuple(metric_values(metrics, y, scores, groups, empty=empty, where=f"the test queries ({label})").values())


def _ridge(train, test):
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from sklearn_ltr import Log1pTransformer

    start = time.perf_counter()
    # Ridge takes no NaN: with missing values in the data, they are imputed first (as the neural models do).
    impute = [SimpleImputer(add_indicator=True)] if train.n_missing or test.n_missing else []
    with estimator_errors("Ridge regression"):
        model = make_pipeline(*impute, Log1pTransformer(), StandardScaler(), Ridge()).fit(train.X, train.y)
        scores = model.predict(test.X)
    return scores, time.perf_counter() - start


def _print_table(rows, out):
    width = max(len("model"), *(len(row[0]) for row in rows))
    header = f"{'model':<{width}}  " + "  ".join(f"{c:>7}" for c in _COLUMNS) + f"  {'fit (s)':>7}"
    print(header, file=out)
    print("-" * len(header), file=out)
    for name, values, seconds in rows:
        print(f"{name:<{width}}  " + "  ".join(f"{v:>7.4f}" for v in values) + f"  {seconds:>7.1f}", file=out)


def run_demo(*, data_dir=None, n_queries=None, quick=False, seed=0, progress=None, threads=None, out=None,
             empty_queries="default", missing_values=MISSING_VALUES_OPTION):
    """Train the demo's models and print the table; returns ``[(row label, metrics, fit seconds)]``.

    Parameters
    ----------
    data_dir : str, default=None
        LETOR fold directory; None uses synthetic data.
    n_queries : int, default=None
        Synthetic queries (600, or 150 with ``quick``).
    quick : bool, default=False
        Fewer queries, epochs, trees and click sessions: a smoke run.
    seed : int, default=0
        Seed of the data, its split, the click simulation and the models.
    progress : bool or None, default=None
        Progress bars on standard error; None shows them when it is a terminal.
    threads : int, default=None
        LightGBM's ``n_jobs`` (torch's threads are set by the caller).
    out : file, default=None
        Where the table goes; None is standard output.
    empty_queries : {"default", "zero", "drop"}, default="default"
        How test queries without a relevant document count (``--empty-queries``).
    missing_values : str, default="NULL"
        ``--missing-values``: comma-separated value tokens of the fold's files read as NaN.
    """
    out = sys.stdout if out is None else out
    if data_dir is not None:
        if n_queries is not None:
            raise CLIError("--queries sets the size of the synthetic data; it does not apply with --data.")
        train, vali, test, description = _read_fold(data_dir, missing_values)
    else:
        # "is None", not "or": --queries 0 must be refused below, not read as "the default size".
        if n_queries is None:
            n_queries = N_QUERIES_QUICK if quick else N_QUERIES
        if n_queries < 8:
            raise CLIError(f"--queries must be at least 8 (a quarter is held out for testing); got {n_queries}.")
        train, vali, test, description = _split_synthetic(n_queries, seed)
    sessions = SESSIONS_QUICK if quick else SESSIONS
    print(f"sklearn_ltr demo: {description}.", file=out, flush=True)
    show = _progress.progress_wanted(progress)
    models = demo_models(quick)
    random_scores = np.random.default_rng(seed).normal(size=len(test.y))
    rows = [("random scores", _metrics(test, random_scores, "random", empty_queries), 0.0)]
    overall = _progress.bar(total=len(models) + 1, desc="demo", enabled=show, unit="model")
    scores, seconds = _ridge(train, test)
    rows.append(("Ridge regression on labels (pointwise)", _metrics(test, scores, "Ridge regression", empty_queries),
                 seconds))
    overall.update()
    clicks, settings = None, []
    for label, name, params, on_clicks in models:
        if on_clicks and clicks is None:
            clicks = simulate_sessions(train.X, train.y.astype(np.int64), train.groups, sessions=sessions,
                                       random_state=seed)
        overall.set_postfix_str(label, refresh=True)
        estimator, report = fit_model(MODELS[name], params, clicks if on_clicks else train, vali, seed=seed,
                                      threads=threads, progress=show, desc=label)
        with estimator_errors(f"scoring the test queries with {label}"):
            scores = estimator.predict(test.X, groups=test.groups)
        values = _metrics(test, scores, label, empty_queries)
        rows.append((label, values, report["fit_seconds"]))
        imputed = f" (missing values imputed: --preprocessing {report['preprocessing']})" if report.get(
            "impute_strategy") else ""
        settings.append(f"  {label}: {report['settings']}{imputed}")
        if not show:
            print(f"  {label}: {report['fit_seconds']:.1f} s, test NDCG@10 {values[2]:.4f}", file=sys.stderr,
                  flush=True)
        overall.update()
    overall.close()
    print(file=out)
    _print_table(rows, out)
    notes = (f"Metrics of the test queries (higher is better); fit time in seconds"
             f"{', with early stopping on the validation queries' if vali is not None else ''}. The two models "
             f"'on clicks' never see a label: they train on {clicks.description}, simulated from the training "
             f"labels, and are scored on the true test labels like the others.")
    note = empty_query_note(parse_metrics(_METRICS, command="demo"), int(empty_mask(test.y, test.groups).sum()),
                            test.n_queries, empty_queries)
    if note:
        notes += f" * Test queries: {note}"
    print("\n" + textwrap.fill(notes, width=100), file=out)
    own = "; ".join(f"{name} " + ", ".join(f"{k}={v!r}" for k, v in params.items())
                    for name, params in CLI_DEFAULTS.items())
    print("\n" + textwrap.fill(f"Settings of each model: the parameters that differ from its class's defaults. "
                               f"'sklearn-ltr train' uses the class defaults, except its own for {own}.",
                               width=100), file=out)
    print("\n".join(settings), file=out)
    return rows

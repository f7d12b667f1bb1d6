"""Learning to rank from position-biased clicks: the comparison of Zhang et al. (KDD 2023), reproduced.

A published reproduction of Zhang et al., "Towards Disentangling Relevance and Bias in
Unbiased Learning to Rank" (KDD 2023), on MSLR-WEB30K found every two-tower variant
above the single tower at every logging-policy quality ``w`` (at ``w = 1``: single tower
0.322, PAL 0.347, observation dropout 0.353, gradient reversal 0.360 NDCG@5). This script
runs the same protocol on MQ2008 Fold 1 (features and labels, ``y_max = 2``) and on
MSLR-shaped ``make_ranking`` data (``y_max = 4``):

1. Clicks: ``sklearn_ltr.clicks.simulate_click_log`` (the default position-based model, as
   ``sklearn_ltr.datasets.simulate_clicks``) on the *training* queries, for ``w`` in
   {1, 0.8, 0.6, 0.2, 0}, ``epsilon = 0.1``, examination ``1 / position``. Each training
   query is shown ``--sessions`` times (independent displays and clicks); every session is
   its own list (``groups``) with the display positions of its full result page.
2. Negative down-sampling: in every session all clicked rows are kept and each non-clicked
   row is kept independently with probability ``--keep`` (0.1), whatever its position; the
   positions are not renumbered. Sessions left with no row disappear.
3. Every method trains on those rows (features, clicks, positions, sessions) only; the test
   queries are scored with the true labels: NDCG@5 (exponential gain, LightGBM's
   convention for queries without relevant documents), mean over ``--seeds`` seeds (the
   seed drives the click simulation, the down-sampling and the model initialisation).

Methods: Linear (logistic regression on clicks), Debiased Linear (logistic regression with
the display position as an extra raw feature at fit, fixed to 1 at predict), LambdaMART on
clicks (``LambdaMARTRanker``, sessions as queries), LambdaMART on clicks with positions
(LightGBM's unbiased lambdarank: one learned bias per display position, no regularisation),
XGBoost's ``lambdarank_unbiased`` (when ``xgboost`` is installed; XGBoost reads a
document's position as its index in its list, so each session's kept rows are sorted by
display position and renumbered 0, 1, 2, ... after the down-sampling), Single Tower
(``RankNetRanker`` with the sigmoid cross-entropy on clicks), PAL additive / multiplicative,
Observation Dropout and Gradient Reversal (both additive, as in Zhang et al.) with
``TwoTowerDebiasedRanker``; all networks share one relevance tower size and one training
budget, both boosted models 100 trees at learning rate 0.05.

Run: ``python studies/bench_debias.py [--data-dir ../shared/data] [--n-jobs 2]``; writes
``studies/results/debias.md`` and ``studies/results/debias_observation_curve.png``
(needs matplotlib). ``--quick`` runs a smoke test in about a minute (small MSLR-shaped data,
one seed, w in {1, 0}, two epochs) and writes to a temporary directory unless ``--out`` is given.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from joblib import Parallel, delayed
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_ltr.clicks import PositionBasedModel, simulate_click_log
from sklearn_ltr.datasets import load_svmlight_ranking, make_ranking
from sklearn_ltr.metrics import ndcg_score
from sklearn_ltr.preprocessing import Log1pTransformer
from sklearn_ltr.rankers import LambdaMARTRanker, RankNetRanker
from sklearn_ltr.rankers._two_tower import TwoTowerDebiasedRanker

WEIGHTS = (1.0, 0.8, 0.6, 0.2, 0.0)
HAS_XGBOOST = importlib.util.find_spec("xgboost") is not None
METHODS = ("Linear", "Debiased Linear", "LambdaMART (clicks)", "LambdaMART (clicks, positions)",
           *(("XGBoost lambdarank_unbiased",) if HAS_XGBOOST else ()), "Single Tower", "PAL additive",
           "PAL multiplicative", "Observation Dropout", "Gradient Reversal")
TWO_TOWER = {
    "PAL additive": {"combination": "additive"},
    "PAL multiplicative": {"combination": "multiplicative"},
    "Observation Dropout": {"combination": "additive", "observation_dropout": 0.3},
    "Gradient Reversal": {"combination": "additive", "gradient_reversal": 1.0, "reversal_target": "relevance"},
}
PUBLISHED_W1 = {"Single Tower": 0.322, "PAL additive": 0.347, "Observation Dropout": 0.353, "Gradient Reversal": 0.360}
CURVE_POSITIONS = 20


def _with_relevant(X, y, qid):
    """Rows of the queries with at least one relevant document (others score the same for every model)."""
    best = np.zeros(qid.max() + 1)
    np.maximum.at(best, qid, y)
    keep = best[qid] > 0
    return X[keep], y[keep], qid[keep]


def load_mq2008(data_dir, test="test.txt"):
    X, y, qid = load_svmlight_ranking(Path(data_dir) / "mq2008" / "Fold1" / "train.txt")
    X_test, y_test, q_test = load_svmlight_ranking(Path(data_dir) / "mq2008" / "Fold1" / test)
    scaler = StandardScaler().fit(X)
    return (scaler.transform(X), y, qid, *_with_relevant(scaler.transform(X_test), y_test, q_test), 2)


def load_mslr_shaped(n_train, n_test, seed=0):
    X, y, qid = make_ranking(n_queries=n_train + n_test, preset="mslr", random_state=seed)
    train = qid < np.unique(qid)[n_train]
    scale = make_pipeline(Log1pTransformer(), StandardScaler()).fit(X[train])
    X = scale.transform(X).astype(np.float32)
    return (X[train], y[train], qid[train], *_with_relevant(X[~train], y[~train], qid[~train]), 4)


def click_log(y, qid, *, w, y_max, sessions, keep, seed):
    """Rows, clicks, positions and session ids of the down-sampled click log (see the module docstring).

    One call of :func:`sklearn_ltr.clicks.simulate_click_log`: per session the draws of
    ``simulate_clicks`` then one uniform draw per row for the down-sampling, as this script's
    earlier per-session loop drew them (same logs for ``keep < 1``).
    """
    log = simulate_click_log(y, qid, click_model=PositionBasedModel(eta=1.0, epsilon=0.1), w=w, sessions=sessions,
                             keep_non_clicked=keep, y_max=y_max, random_state=seed)
    return log.rows, log.clicks, log.positions, log.sessions


def fit_predict(method, X, clicks, positions, sessions, X_test, seed, net, observation_lr=None):
    if method == "Linear":
        return LogisticRegression(solver="newton-cholesky").fit(X, clicks).decision_function(X_test)
    if method == "Debiased Linear":
        model = LogisticRegression(solver="newton-cholesky").fit(np.column_stack([X, positions]), clicks)
        return model.decision_function(np.column_stack([X_test, np.ones(len(X_test))]))
    if method == "LambdaMART (clicks)":
        model = LambdaMARTRanker(n_estimators=100, learning_rate=0.05, n_jobs=1, random_state=seed)
        return model.fit(X, clicks, sessions).predict(X_test)
    if method == "LambdaMART (clicks, positions)":
        model = LambdaMARTRanker(n_estimators=100, learning_rate=0.05, n_jobs=1, random_state=seed)
        return model.fit(X, clicks, sessions, positions=positions).predict(X_test)
    if method == "XGBoost lambdarank_unbiased":
        from xgboost import XGBRanker

        order = np.lexsort((positions, sessions))  # sorted by session, then by display position
        model = XGBRanker(objective="rank:ndcg", lambdarank_unbiased=True, tree_method="hist", n_estimators=100,
                          learning_rate=0.05, n_jobs=1, random_state=seed)
        return model.fit(X[order], clicks[order], qid=sessions[order]).predict(X_test)
    if method == "Single Tower":
        return RankNetRanker(loss="sigmoid_ce", random_state=seed, **net).fit(X, clicks, sessions).predict(X_test)
    model = TwoTowerDebiasedRanker(random_state=seed, observation_lr=observation_lr, **net, **TWO_TOWER[method])
    model.fit(X, clicks, sessions, positions=positions)
    return model.predict(X_test), model.observation_curve_[:CURVE_POSITIONS]


def run_cell(name, data, w, seed, args):
    """All methods on one dataset, one w, one seed: {method: ndcg@5}, {method: curve}."""
    torch.set_num_threads(1)
    X, y, qid, X_test, y_test, q_test, y_max = data
    rows, clicks, positions, sessions = click_log(y, qid, w=w, y_max=y_max, sessions=args.sessions[name],
                                                  keep=args.keep, seed=seed)
    net = {"hidden_sizes": tuple(args.hidden), "lr": args.lr, "max_epochs": args.epochs, "batch_size": args.batch_size,
           "device": "cpu"}
    scores, curves = {}, {}
    for method in METHODS:
        out = fit_predict(method, X[rows], clicks, positions, sessions, X_test, seed, net, args.observation_lr)
        if isinstance(out, tuple):
            out, curves[method] = out
        scores[method] = ndcg_score(y_test, out, q_test, k=5)
    return name, w, seed, scores, curves, len(rows), int(clicks.sum())


def _mean(results, name, w, method):
    return np.mean([r[3][method] for r in results if r[0] == name and r[1] == w])


def _relative_curve(results, name, w, method):
    return np.mean([r[4][method] / r[4][method][0] for r in results if r[0] == name and r[1] == w], axis=0)


def table(results, names, weights):
    head = ["| method | " + " | ".join(f"w = {w:g}" for w in weights) + " |", "| --- |" + " ---: |" * len(weights)]
    lines = []
    for name in names:
        lines += [f"### {name}", "", *head]
        for method in METHODS:
            cells = [f"{_mean(results, name, w, method):.3f}" for w in weights]
            lines.append(f"| {method} | " + " | ".join(cells) + " |")
        wins = {method: sum(_mean(results, name, w, method) > _mean(results, name, w, "Single Tower") for w in weights)
                for method in TWO_TOWER}
        lines += ["", "Two-tower variants above the single tower (mean over seeds): "
                  + "; ".join(f"{method} at {n}/{len(weights)} values of w" for method, n in wins.items()) + ".", "",
                  "Learned observation curve relative to position 1, at positions 2 / 5 / 10 "
                  "(truth 1/position: 0.50 / 0.20 / 0.10):", "", *head]
        for method in TWO_TOWER:
            cells = [" / ".join(f"{c:.2f}" for c in _relative_curve(results, name, w, method)[[1, 4, 9]])
                     for w in weights]
            lines.append(f"| {method} | " + " | ".join(cells) + " |")
        lines.append("")
    return lines


def plot_curves(results, names, weights, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    positions = np.arange(1, CURVE_POSITIONS + 1)
    fig, axes = plt.subplots(1, len(names), figsize=(6 * len(names), 4.2), squeeze=False)
    for ax, name in zip(axes[0], names, strict=True):
        ax.plot(positions, 1 / positions, "k--", lw=2, label="true 1/position")
        for method in TWO_TOWER:
            for w, style in zip((weights[0], weights[-1]), ("-", ":"), strict=True):
                curve = _relative_curve(results, name, w, method)
                ax.plot(positions, curve, style, marker=".", label=f"{method}, w={w:g}")
        ax.set(title=f"{name}: learned observation curve (relative to position 1)", xlabel="display position",
               ylabel="examination propensity / position 1", xticks=positions[::2])
        ax.title.set_fontsize(9)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=os.environ.get("SKLEARN_LTR_DATA", Path(__file__).parents[2] / "shared"
                                                             / "data"))
    parser.add_argument("--datasets", nargs="+", default=["MQ2008", "MSLR-shaped"])
    parser.add_argument("--weights", nargs="+", type=float, default=list(WEIGHTS))
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--keep", type=float, default=0.1, help="share of non-clicked rows kept")
    parser.add_argument("--mq-sessions", type=int, default=10, help="sessions per MQ2008 training query")
    parser.add_argument("--mslr-sessions", type=int, default=3, help="sessions per MSLR-shaped training query")
    parser.add_argument("--mslr-queries", type=int, nargs=2, default=[1000, 500], help="train and test queries")
    parser.add_argument("--hidden", type=int, nargs="+", default=[32])
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--observation-lr", type=float, default=1e-2)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=64, help="sessions per batch")
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--validation", action="store_true",
                        help="evaluate on MQ2008's vali.txt and unseen synthetic queries (for choosing settings)")
    parser.add_argument("--out", default=None, help="output folder (default: studies/results)")
    parser.add_argument("--quick", action="store_true",
                        help="smoke test: 300 + 100 MSLR-shaped queries, one seed, w in {1, 0}, two epochs; "
                             "writes to a temporary folder unless --out is given")
    args = parser.parse_args()
    if args.quick:
        args.datasets, args.weights, args.seeds, args.epochs = ["MSLR-shaped"], [1.0, 0.0], 1, 2
        args.mslr_queries, args.mslr_sessions = [300, 100], 2
    if args.out is None:
        args.out = tempfile.mkdtemp(prefix="bench_debias_") if args.quick else Path(__file__).parent / "results"
    args.sessions = {"MQ2008": args.mq_sessions, "MSLR-shaped": args.mslr_sessions}
    start = time.perf_counter()
    loaders = {"MQ2008": lambda: load_mq2008(args.data_dir, "vali.txt" if args.validation else "test.txt"),
               "MSLR-shaped": lambda: load_mslr_shaped(*args.mslr_queries, seed=1 if args.validation else 0)}
    data = {name: loaders[name]() for name in args.datasets}
    tasks = [(name, w, seed) for name in args.datasets for w in args.weights for seed in range(args.seeds)]
    results = Parallel(n_jobs=args.n_jobs, verbose=5)(
        delayed(run_cell)(name, data[name], w, seed, args) for name, w, seed in tasks
    )
    elapsed = time.perf_counter() - start
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    sizes = {name: (np.mean([r[5] for r in results if r[0] == name]), np.mean([r[6] for r in results if r[0] == name]))
             for name in args.datasets}
    published = ", ".join(f"{k} {v}" for k, v in PUBLISHED_W1.items())
    header = [
        "# Learning to rank from position-biased clicks (Zhang et al., KDD 2023, reproduced)", "",
        f"Test NDCG@5 on the true labels (test queries with at least one relevant document), mean over "
        f"{args.seeds} seeds. Clicks: `simulate_clicks` (epsilon = 0.1, examination 1/position), non-clicked rows "
        f"kept with probability {args.keep}. Networks: relevance tower {tuple(args.hidden)}, Adam lr {args.lr} "
        f"(observation tower {args.observation_lr}), {args.epochs} epochs, {args.batch_size} sessions per batch; "
        "Observation Dropout rate 0.3; Gradient Reversal weight 1.0, its adversary the exact ridge line of the "
        "detached relevance on the observation logit in each batch. "
        f"Published (MSLR-WEB30K, w = 1): {published}.", "",
        "Training data per cell (mean): " + "; ".join(
            f"{name}: {args.sessions[name]} sessions per query, {rows:,.0f} rows, {clicks:,.0f} clicks"
            for name, (rows, clicks) in sizes.items()) + ".",
        f"({platform.machine()}, {os.cpu_count()} CPUs, torch {torch.__version__}, CPU only, "
        f"n_jobs={args.n_jobs}; {elapsed / 60:.1f} min in all.)", "",
    ]
    (out / "debias.md").write_text("\n".join(header + table(results, args.datasets, args.weights)))
    plot_curves(results, args.datasets, args.weights, out / "debias_observation_curve.png")
    print((out / "debias.md").read_text())


if __name__ == "__main__":
    main()

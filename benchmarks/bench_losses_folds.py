"""Loss comparison over five LETOR folds: MQ2008, OHSUMED and MQ2007-agg, one network per loss.

The protocol of ``studies/bench_losses.py`` on every fold of three data sets: the same 64-32 ReLU
network (``RankNetRanker(hidden_sizes=(64, 32), max_epochs=20, batch_size=32, device="cpu")``,
Adam, no early stopping) is trained with each loss, seed 0, at each learning rate of the grid
(1e-3, 1e-2). Per fold and loss, the learning rate with the better vali NDCG@10 is selected
(ties: the first of the grid) and that same fitted model's test scores are reported: every
fitted model is scored on vali and test once, so the selection needs no extra fit.

The losses: ``lambdaloss`` (default scheme NDCG-Loss2++, ``mu=10``), ``lambdaloss`` with the
paper's NDCG-Loss2 scheme (``loss_params={"weighing_scheme": "ndcg_loss2"}``), ``hinge``
(pairwise, RankSVM) and ``mse`` (pointwise), with ``softmax``, ``ranknet``, ``lambdarank`` and
``approx_ndcg`` as references, and a ``LambdaMARTRanker`` row (300 trees, learning rate 0.05,
early stopping on vali after 30 rounds, as in ``studies/bench_losses.py``; ``n_jobs=1``).

Data (``$SKLEARN_LTR_DATA`` or ``../shared/data``): the five partitions of each set through
``sklearn_ltr.model_selection.load_letor_fold`` (fold k: train S(k..k+2), vali S(k+3), test
S(k+4), modulo 5). MQ2008 and OHSUMED: the features as given. MQ2007-agg (ranks, NULL read as
NaN): the recipe of ``docs/real_data.rst`` for rank features, ``QueryNormalizer("reciprocal")``,
``SimpleImputer(strategy="constant", fill_value=0, add_indicator=True)``, ``StandardScaler``,
fitted on the training partitions only and applied to vali and test with their own query ids
(the same for every loss); LambdaMART takes the raw NaN (LightGBM's missing-value branches).

NDCG is ``sklearn_ltr.metrics.ndcg_score`` with its defaults (exponential gain, queries without
a relevant document score 1). Each finished cell (dataset|fold|loss|lr) is stored in the results
JSON at once, with its per-query test NDCG@1/5/10, so that an interrupted run resumes; the
report pools the test queries of the five folds (each query once) and gives the mean with the
half-width of the 95% t-interval over queries.

    SKLEARN_LTR_DATA=../shared/data python benchmarks/bench_losses_folds.py
    python benchmarks/bench_losses_folds.py --quick             # smoke: 1 fold, 2 epochs, 2 losses
    python benchmarks/bench_losses_folds.py --datasets mq2008 --losses hinge mse --folds 1 2
    python benchmarks/bench_losses_folds.py --report            # the tables from the stored cells
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import shlex
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context
from pathlib import Path

import numpy as np
from _common import data_dir, machine

import sklearn_ltr  # first: its OpenMP setting reaches torch and LightGBM)

RESULTS = Path(__file__).resolve().parent / "results"
DATASETS = {"mq2008": ("MQ2008", "mq2008/partitions"), "ohsumed": ("OHSUMED", "ohsumed/partitions"),
            "mq2007-agg": ("MQ2007-agg", "mq2007-agg")}
LEARNING_RATES = (1e-3, 1e-2)
EPOCHS = 20
METRICS = (1, 5, 10)
#: name -> (loss, loss_params, label in the report); "lambdamart" is the LambdaMARTRanker reference.
LOSSES = {
    "lambdaloss": ("lambdaloss", None, "lambdaloss (NDCG-Loss2++, mu=10)"),
    "lambdaloss_ndcg2": ("lambdaloss", {"weighing_scheme": "ndcg_loss2"}, "lambdaloss (NDCG-Loss2)"),
    "hinge": ("hinge", None, "hinge"),
    "mse": ("mse", None, "mse"),
    "softmax": ("softmax", None, "softmax *(reference)*"),
    "ranknet": ("ranknet", None, "ranknet *(reference)*"),
    "lambdarank": ("lambdarank", None, "lambdarank *(reference)*"),
    "approx_ndcg": ("approx_ndcg", None, "approx_ndcg *(reference)*"),
    "lambdamart": (None, None, "*LambdaMARTRanker (reference, early stopping on vali)*"),
}
NEW_LOSSES = ("lambdaloss", "lambdaloss_ndcg2", "hinge", "mse")
LAMBDAMART = {"n_estimators": 300, "learning_rate": 0.05, "early_stopping_rounds": 30, "subsample": 0.8,
              "subsample_freq": 1, "random_state": 0, "n_jobs": 1}


def _init_worker():
    import torch

    torch.set_num_threads(1)


@functools.lru_cache(maxsize=32)
def _fold(dataset, fold, raw):
    """``(train, vali, test)`` of one fold; MQ2007-agg preprocessed unless ``raw``."""
    from sklearn.impute import SimpleImputer
    from sklearn.preprocessing import StandardScaler

    from sklearn_ltr.model_selection import load_letor_fold
    from sklearn_ltr.preprocessing import QueryNormalizer

    parts = load_letor_fold(data_dir() / DATASETS[dataset][1], fold)
    if dataset != "mq2007-agg" or raw:
        return parts
    steps = [QueryNormalizer("reciprocal"), SimpleImputer(strategy="constant", fill_value=0.0, add_indicator=True),
             StandardScaler()]
    out = []
    for i, (X, y, groups) in enumerate(parts):
        for step in steps:
            kwargs = {"groups": groups} if isinstance(step, QueryNormalizer) else {}
            if i == 0:
                step.fit(X, **kwargs)
            X = step.transform(X, **kwargs)
        out.append((X, y, groups))
    return tuple(out)


def run_cell(dataset, fold, name, lr, epochs):
    """Vali NDCG@10, per-query test NDCG@1/5/10, seconds and epochs of one fit."""
    from sklearn_ltr import LambdaMARTRanker, RankNetRanker
    from sklearn_ltr.metrics import ndcg_per_query, ndcg_score

    train, vali, test = _fold(dataset, fold, name == "lambdamart")
    start = time.perf_counter()
    if name == "lambdamart":
        model = LambdaMARTRanker(**LAMBDAMART).fit(*train, eval_set=[vali])
        rounds = getattr(model, "best_iteration_", None)
    else:
        loss, params, _ = LOSSES[name]
        model = RankNetRanker(hidden_sizes=(64, 32), loss=loss, loss_params=params, lr=lr, max_epochs=epochs,
                              batch_size=32, device="cpu", random_state=0).fit(*train)
        rounds = getattr(model, "n_iter_", None)
    seconds = time.perf_counter() - start
    vali_score = ndcg_score(vali[1], model.predict(vali[0]), vali[2], k=10)
    scores = model.predict(test[0])
    cell = {"vali_ndcg@10": float(vali_score), "seconds": round(seconds, 2),
            "rounds": None if rounds is None else int(rounds), "features": int(train[0].shape[1]),
            "load": round(os.getloadavg()[0], 2)}
    for k in METRICS:
        ids, values = ndcg_per_query(test[1], scores, test[2], k=k)
        if not np.isclose(values.mean(), ndcg_score(test[1], scores, test[2], k=k)):
            raise AssertionError("the mean of ndcg_per_query differs from ndcg_score")
        cell[f"ndcg@{k}"] = np.round(values, 6).tolist()
    cell["queries"] = [int(q) for q in ids]
    return cell


def _key(dataset, fold, name, lr):
    return f"{dataset}|{fold}|{name}|{'-' if lr is None else f'{lr:g}'}"


def _load(path):
    return json.loads(path.read_text()) if path.exists() else {"cells": {}, "queries": {}, "runs": []}


def _save(store, path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp") as f:
        json.dump(store, f, separators=(",", ":"))
    os.chmod(f.name, 0o644)
    os.replace(f.name, path)


def run(store, path, datasets, folds, names, epochs, workers):
    todo = []  # loss by loss (the new ones first), so that a cut-off run has whole rows
    for name in names:
        for dataset in datasets:
            for fold in folds:
                for lr in ([None] if name == "lambdamart" else LEARNING_RATES):
                    if _key(dataset, fold, name, lr) not in store["cells"]:
                        todo.append((dataset, fold, name, lr))
    print(f"{len(todo)} cells to run ({len(store['cells'])} stored)", flush=True)
    start, load_start, date = time.time(), os.getloadavg(), time.strftime("%Y-%m-%d %H:%M")
    with ProcessPoolExecutor(workers, mp_context=get_context("spawn"), initializer=_init_worker) as pool:
        futures = {pool.submit(run_cell, *args, epochs): args for args in todo}
        for done, future in enumerate(as_completed(futures), 1):
            dataset, fold, name, lr = futures[future]
            cell = future.result()
            store["queries"][f"{dataset}|{fold}"] = cell.pop("queries")
            store["cells"][_key(dataset, fold, name, lr)] = cell
            _save(store, path)
            print(f"[{done}/{len(todo)} {(time.time() - start) / 60:.1f} min] {dataset} fold {fold} {name} "
                  f"lr={lr} vali {cell['vali_ndcg@10']:.4f} test NDCG@10 {np.mean(cell['ndcg@10']):.4f} "
                  f"({cell['seconds']:.0f} s, load {os.getloadavg()[0]:.1f})", flush=True)
    command = " ".join(shlex.quote(a) for a in ["python", *sys.argv])
    if os.environ.get("PYTHONPATH"):
        command = f"PYTHONPATH={shlex.quote(os.environ['PYTHONPATH'])} {command}"
    store["runs"].append({"date": date, "cells": len(todo),
                          "minutes": round((time.time() - start) / 60, 1), "workers": workers,
                          "load_start": [round(v, 2) for v in load_start],
                          "load_end": [round(v, 2) for v in os.getloadavg()],
                          "command": command,
                          "library": _library()})
    _save(store, path)


def _library():
    """Where ``sklearn_ltr`` was imported from: the checkout's commit, or the folder of another copy."""
    import subprocess

    package = Path(sklearn_ltr.__file__).resolve().parent
    root = Path(__file__).resolve().parents[1]
    if package.parent != root:
        return f"sklearn_ltr from {package.parent}"
    commit = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--", "sklearn_ltr"],
                           capture_output=True, text=True).stdout.strip()
    return f"sklearn_ltr at {commit}" + (" with uncommitted changes" if dirty else "")


def _selected(store, dataset, fold, name):
    """The selected cell of one fold and loss: ``(lr, cell)``, or None if a learning rate is missing."""
    if name == "lambdamart":
        cell = store["cells"].get(_key(dataset, fold, name, None))
        return None if cell is None else (None, cell)
    cells = [(lr, store["cells"].get(_key(dataset, fold, name, lr))) for lr in LEARNING_RATES]
    if any(cell is None for _, cell in cells):
        return None
    return max(cells, key=lambda item: item[1]["vali_ndcg@10"])  # max keeps the first of equal values


def _half_width(values):
    from scipy import stats

    n = len(values)
    return stats.t.ppf(0.975, n - 1) * np.std(values, ddof=1) / np.sqrt(n) if n > 1 else float("nan")


def _inputs(store, dataset):
    """The network's input widths on ``dataset`` (from the stored cells), e.g. ``"42"``."""
    widths = sorted({c["features"] for key, c in store["cells"].items()
                     if key.startswith(f"{dataset}|") and "|lambdamart|" not in key})
    return "/".join(map(str, widths)) or "?"


def report(store, out, datasets, folds, names, epochs):
    runs = store["runs"]
    run_lines = "; ".join(
        f"started {r['date']}: {r['cells']} cells in {r['minutes']} min with {r['workers']} worker processes, load "
        f"average (1/5/15 min) {'/'.join(f'{v:g}' for v in r['load_start'])} at the start, "
        f"{'/'.join(f'{v:g}' for v in r['load_end'])} at the end (`{r['command']}`; {r.get('library', '?')})"
        for r in runs)
    lines = [
        "# Loss comparison over five LETOR folds: MQ2008, OHSUMED, MQ2007-agg", "",
        f"Machine: {platform.platform()}, {machine('torch', 'lightgbm', cpus='{} CPUs (shared with other jobs)')}. "
        f"Runs: {run_lines or 'none'}. Each worker process: `torch.set_num_threads(1)`; LambdaMART `n_jobs=1`.",
        "",
        f"Command: `SKLEARN_LTR_DATA=../shared/data python benchmarks/bench_losses_folds.py` (the protocol is the "
        f"script's docstring; the report: `--report`). The network of `studies/bench_losses.py`: "
        f"`RankNetRanker(hidden_sizes=(64, 32), loss=..., max_epochs={epochs}, batch_size=32, device=\"cpu\", "
        f"random_state=0)`, Adam, no early stopping, trained once at each lr of {list(LEARNING_RATES)}; the lr "
        "with the better vali NDCG@10 is selected per fold and that fitted model is scored on test. MQ2007-agg: "
        "`QueryNormalizer(\"reciprocal\")`, "
        "`SimpleImputer(constant 0, add_indicator=True)`, `StandardScaler`, fitted on the training partitions "
        f"({_inputs(store, 'mq2007-agg')} inputs); MQ2008 ({_inputs(store, 'mq2008')}) and OHSUMED "
        f"({_inputs(store, 'ohsumed')}): the features as given; LambdaMART: raw features (NaN as is).",
        "",
        "NDCG: `sklearn_ltr.metrics.ndcg_score` with its defaults: exponential gain, average over tied scores, "
        "queries without a relevant document score 1 (LightGBM's convention). Test NDCG: mean over the test queries "
        "of the five folds (each query of the data set once) ± half-width of the 95% t-interval over those "
        "queries. lr: the selected learning rate of each fold, folds 1-5 in order. Seconds: fit time summed over "
        "all fits of the loss (both learning rates, five folds), single-threaded, on a shared machine; the first fit "
        "in each worker process also holds torch's one-off start-up (2 to 10 s in smoke runs, by the load), which "
        "falls on the first loss run.",
    ]
    for dataset in datasets:
        title = DATASETS[dataset][0]
        rows, per_fold = [], {}
        for name in names:
            chosen = [_selected(store, dataset, fold, name) for fold in folds]
            per_fold[name] = chosen
            if any(c is None for c in chosen):
                continue
            ids = np.concatenate([store["queries"][f"{dataset}|{fold}"] for fold in folds])
            means = []
            for k in METRICS:
                values = np.concatenate([cell[f"ndcg@{k}"] for _, cell in chosen])
                means.append((values.mean(), _half_width(values)))
            lrs = "" if name == "lambdamart" else ", ".join(f"{lr:g}" for lr, _ in chosen)
            seconds = sum(store["cells"][_key(dataset, fold, name, lr)]["seconds"] for fold in folds
                for lr in ([None] if name == "lambdamart" else LEARNING_RATES))
            rows.append((name, lrs, means, seconds, len(ids)))
        if not rows:
            continue
        n_queries = rows[0][4]
        lines += ["", f"## {title}", "",
                  f"Test NDCG over {n_queries} queries (folds {', '.join(map(str, folds))}), sorted by NDCG@10; "
                  "the new losses in bold.", "",
                  "| loss | lr per fold | test NDCG@1 | test NDCG@5 | test NDCG@10 | seconds |",
                  "| --- | --- | ---: | ---: | ---: | ---: |"]
        for name, lrs, means, seconds, _ in sorted(rows, key=lambda r: -r[2][2][0]):
            label = LOSSES[name][2]
            label = f"**{label}**" if name in NEW_LOSSES else label
            cells = " | ".join(f"{m:.4f} ± {h:.4f}" for m, h in means)
            lines.append(f"| {label} | {lrs} | {cells} | {seconds:.0f} |")
        lines += ["", f"Test NDCG@10 per fold ({title}, selected lr):", "",
                  "| loss | " + " | ".join(f"Fold{fold}" for fold in folds) + " |",
                  "| --- |" + " ---: |" * len(folds)]
        for name, *_ in sorted(rows, key=lambda r: -r[2][2][0]):
            lines.append(f"| {LOSSES[name][2]} | "
                         + " | ".join(f"{np.mean(cell['ndcg@10']):.4f}" for _, cell in per_fold[name]) + " |")
    text = "\n".join(lines) + "\n"
    out.write_text(text)
    print(text)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=list(DATASETS))
    parser.add_argument("--losses", nargs="+", choices=list(LOSSES), help="default: all")
    parser.add_argument("--folds", type=int, nargs="+", choices=range(1, 6), help="default: 1 2 3 4 5")
    parser.add_argument("--epochs", type=int, help=f"default: {EPOCHS}")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--quick", action="store_true",
                        help="smoke test: fold 1, 2 epochs, lambdaloss and hinge, results in a temporary folder")
    parser.add_argument("--report", action="store_true", help="only write the report from the stored cells")
    parser.add_argument("--out", type=Path, default=RESULTS / "losses_folds.md")
    parser.add_argument("--json", type=Path, default=None, help="the cell store (default: --out with .json)")
    args = parser.parse_args()
    if args.quick:  # the options given explicitly win
        args.folds, args.epochs = args.folds or [1], args.epochs or 2
        args.losses = args.losses or ["lambdaloss", "hinge"]
        if args.out == RESULTS / "losses_folds.md":
            args.out = Path(tempfile.mkdtemp()) / "losses_folds_quick.md"
    args.folds, args.epochs = args.folds or [1, 2, 3, 4, 5], args.epochs or EPOCHS
    args.losses = args.losses or list(LOSSES)
    path = args.json or args.out.with_suffix(".json")
    store = _load(path)
    if store.setdefault("epochs", args.epochs) != args.epochs:
        parser.error(f"{path} holds cells of {store['epochs']} epochs; pass --epochs {store['epochs']} or --json")
    if not args.report:
        run(store, path, args.datasets, args.folds, args.losses, args.epochs, args.workers)
    report(store, args.out, args.datasets, args.folds, args.losses, args.epochs)


if __name__ == "__main__":
    main()

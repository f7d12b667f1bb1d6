"""Ranking quality on MQ2008 and OHSUMED: LambdaMART, RankNet, DASALC, DASALC-ens, SetRank.

Two studies (``--study``):

``folds`` (the default): all five LETOR folds
------------------------------------------------

Fold k trains on partitions S(k..k+2), validates on S(k+3) and tests on S(k+4) (mod 5), so
every query of a data set is a test query once: 784 MQ2008 and 106 OHSUMED test queries,
against 156 and 22 in Fold 1 alone. Each cell (data set, fold, model, configuration, seed)
is one call of ``sklearn_ltr.model_selection.evaluate_letor_folds`` on one fold.

1. Selection, per data set, fold and model: the same budget of 6 configurations for every
   model (``quality_folds.GRIDS``, listed in the report), trained with seed 0 on ``train`` and
   early-stopped on ``vali`` NDCG@10 (LightGBM: 50 rounds without improvement, up to 1,000
   trees, bagging 0.8 of rows and features; neural models: 8 epochs without improvement, up
   to 60, batches of 32 queries, best epoch's weights restored: the Fold-1 study's settings).
   The configuration with the best ``vali`` NDCG@10 wins. The grids hold the DASALC paper's
   ingredients: log1p inputs (on or off), Gaussian input noise (sigma 0, 0.5, 1.0, 1.5),
   batch normalisation (always in DASALC, on or off in the RankNet MLP), attention depth
   (0, 1, 2 layers) and width (2 heads of 32 or 64), dropout (0.2-0.4). RankNetRanker runs
   twice, with its pairwise ``loss="ranknet"`` and with ``loss="softmax"``. DASALC's
   attention-weight dropout is 0 (``attention_dropout=0.0``: the fused attention path, about
   a quarter faster on CPU).
2. Test: the winner is trained with seeds 0, 1, 2 (seed 0 is the selection run). DASALC-ens
   is ``RankingEnsemble`` of 5 copies of the selected DASALC configuration, once per seed
   (``random_state`` 0, 1, 2); the DASALC rows are the first member of each ensemble, and
   DASALC-ens has no grid of its own.
3. Report, per data set: NDCG@1/5/10 over all test queries (per-query mean over the seeds),
   with 95% t-intervals over queries and the SD over seeds; each model against LambdaMART,
   paired over queries (``sklearn_ltr.metrics.paired_significance``: t-test and randomization
   test, raw and Holm-corrected over the 5 models, bootstrap interval of the difference);
   NDCG@10 per fold; the configuration selected on each fold. Writes
   ``results/quality_folds.md``, ``quality_folds.json`` (every cell: vali score, per-query
   test values, seconds, epochs, load; the sorted test query ids of each fold) and
   ``quality_folds.png``.

Cost. The whole study must fit in 90 minutes on 2 cores (2 worker processes x 1 thread).
It has 2 data sets x 5 folds x (5 models x 6 configurations + 2 more seeds x 4 models +
3 DASALC-ens of 5 members) = 410 cells, 530 fits. Estimated from timing trials of Fold 1:
every configuration of every model on MQ2008 and OHSUMED, 4 epochs without early stopping
(LightGBM: a real fit), 2 workers side by side, while another job kept the machine loaded
(load average 4.4-5.7 on the 2 cores: the cells got about 0.25-0.5 CPU-seconds per second).
Measured per epoch: RankNet 0.05-0.5 s, DASALC 0.4-1.5 s, SetRank 0.5-3 s; LightGBM cells
1-3 s; about 1.5 s per cell to read the partitions and predict. With the epochs the
Fold-1 study's early stopping ran (about 27 for RankNet, 16 for DASALC and SetRank, its
``quality.json``), the study needs about 6,100 worker-seconds: **about 51 minutes at that
load**, and about 17 minutes on a quiet machine (from the cells' CPU time). If every neural
fit ran twice as many epochs it would take about 95 minutes at that load (31 quiet): run it
on a quiet machine, or continue a cut-off run (below). Per fold: MQ2008 about 680 s,
OHSUMED about 540 s of worker time at that load (DASALC with its ensembles and SetRank are
four fifths of it). The schedule runs DASALC grids first, then the longest cells, so that
the long DASALC-ens cells do not come last. ``--quick`` took 48-50 s at load 3.2-4.7.

The run is resumable: each finished cell is saved to the JSON at once, and a new run skips
the cells already there (same settings and grids; ``--fresh`` starts over). ``--quick`` is a
smoke run (Fold 1, 2 configurations per model, 2 seeds, at most 2 epochs, ensembles of 2)
that writes to the temporary directory unless ``--out`` is given.

``fold1``: the earlier Fold-1 study with the DASALC ablation
----------------------------------------------------------------

1. Selection: each model has a grid of 4 configurations (``GRIDS``), trained with seed 0 on
   ``train`` and early-stopped on ``vali`` NDCG@10 (LightGBM: 50 rounds without improvement,
   up to 1,000 trees; neural models: ``PATIENCE`` epochs, up to ``MAX_EPOCHS``, best epoch's
   weights restored). The configuration with the best ``vali`` NDCG@10 wins.
2. Test: the winner is trained with seeds 0, 1, 2 (seed 0 is the selection run) and scored on
   ``test``: NDCG@1/5/10, mean ± std over the seeds. LambdaMART uses bagging (0.8 of rows and
   features) so that seeds matter. DASALC-ens is ``RankingEnsemble`` of ``--members`` copies of
   the selected DASALC configuration (random_state 0, 1, 2); the single-model DASALC rows are
   the first member of each ensemble.
3. Ablation (the DASALC paper's, cumulative), on the selected DASALC configuration: plain MLP
   with softmax loss (no log1p, no noise, no attention) -> + log1p -> + Gaussian noise -> +
   self-attention with latent cross (= DASALC), 3 seeds each.

NDCG uses the library's default conventions (exponential gain, queries without a relevant
document score 1, as in LightGBM); the last column drops those queries (the DASALC paper's
convention). Fits run in ``--jobs`` worker processes with one torch/LightGBM thread each (on a
shared 2-core machine, two OpenMP threads per process spin-wait and run several times slower).

Run (from the repository root)::

    PYTHONPATH=. python benchmarks/bench_quality.py                      # five folds, both data sets
    PYTHONPATH=. python benchmarks/bench_quality.py --quick              # smoke run, under 2 minutes
    PYTHONPATH=. python benchmarks/bench_quality.py --datasets mq2008 --folds 1 2
    PYTHONPATH=. python benchmarks/bench_quality.py --study fold1        # quality.md / quality.json

Options: ``--data DIR`` (default ``$SKLEARN_LTR_DATA`` or ``../shared/data``), ``--jobs 2``,
``--out FILE.md``; for ``fold1`` also ``--members 5`` and ``--max-epochs``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from multiprocessing import get_context
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch/LightGBM start OpenMP

import numpy as np
from joblib import Parallel, delayed

sys.path.insert(0, str(Path(__file__).resolve().parent))
import quality_folds
from _common import data_dir, machine, version

DATASETS = ("mq2008", "ohsumed")
MAX_EPOCHS, PATIENCE, BATCH = 60, 8, 32
SEEDS = (0, 1, 2)
_LM = {"n_estimators": 1000, "min_child_samples": 20, "subsample": 0.8, "subsample_freq": 1,
       "colsample_bytree": 0.8, "early_stopping_rounds": 50, "eval_at": (10,), "n_jobs": 1}
_DASALC = {"n_attention_layers": 2, "n_heads": 2, "head_size": 64}
GRIDS = {
    "LambdaMARTRanker": [{"num_leaves": nl, "learning_rate": lr} for nl, lr in
                         [(7, 0.05), (15, 0.05), (31, 0.05), (31, 0.1)]],
    "RankNetRanker": [{"hidden_sizes": h, "lr": lr} for h in [(64, 32), (128, 64)] for lr in [1e-3, 3e-4]],
    "DASALCRanker": [{**_DASALC, "hidden_size": h, "dropout": d, "noise_std": n}
                     for h in (128, 256) for d, n in [(0.4, 1.0), (0.2, 0.5)]],
    "SetRankRanker": [{"d_model": d, "n_heads": 2, "n_blocks": 2, "block": b}
                      for d in (64, 128) for b in ("msab", "imsab")],
}
ABLATION = [
    ("MLP + softmax loss", {"log1p": False, "noise_std": 0.0, "n_attention_layers": 0}),
    ("+ log1p", {"log1p": True, "noise_std": 0.0, "n_attention_layers": 0}),
    ("+ Gaussian noise", {"log1p": True, "n_attention_layers": 0}),
]


def _load(data_dir, name):
    from sklearn_ltr.datasets import load_svmlight_ranking

    return [load_svmlight_ranking(data_dir / name / "Fold1" / f"{part}.txt") for part in ("train", "vali", "test")]


def _vali_callbacks(vali):
    """Early stopping of a neural ranker on the ``vali`` file's NDCG@10 (best epoch restored)."""
    return quality_folds._vali_callbacks(vali, PATIENCE)


def _make(model, params, seed, vali):
    from sklearn_ltr.rankers import LambdaMARTRanker, RankNetRanker
    from sklearn_ltr.rankers._dasalc import DASALCRanker
    from sklearn_ltr.rankers._setrank import SetRankRanker

    if model == "LambdaMARTRanker":
        return LambdaMARTRanker(**_LM, **params, random_state=seed)
    cls = {"RankNetRanker": RankNetRanker, "DASALCRanker": DASALCRanker, "SetRankRanker": SetRankRanker}[model]
    loss = {"RankNetRanker": {"loss": "ranknet"}}.get(model, {})
    max_epochs = int(os.environ.get("BENCH_MAX_EPOCHS", MAX_EPOCHS))
    return cls(**params, **loss, max_epochs=max_epochs, batch_size=BATCH, device="cpu", random_state=seed,
               callbacks=_vali_callbacks(vali))


def _metrics(model, split):
    from sklearn_ltr.metrics import ndcg_score

    X, y, groups = split
    scores = model.predict(X, groups=groups)
    values = {f"ndcg@{k}": ndcg_score(y, scores, groups, k=k) for k in (1, 5, 10)}
    values["ndcg@10_paper"] = ndcg_score(y, scores, groups, k=10, empty_value=None)
    return values


def _task(data_dir, dataset, model, params, seed, members=None):
    """One fit on ``train``; returns vali NDCG@10, test metrics (per member for ensembles) and time."""
    import torch

    torch.set_num_threads(1)
    from sklearn_ltr.rankers._ensemble import RankingEnsemble

    train, vali, test = _load(data_dir, dataset)
    start = time.perf_counter()
    estimator = _make(model, params, seed, vali)
    if members:
        estimator = RankingEnsemble(estimator, n_estimators=members, random_state=seed)
        estimator.fit(*train)
    elif model == "LambdaMARTRanker":
        estimator.fit(*train, eval_set=[vali])
    else:
        estimator.fit(*train)
    result = {"dataset": dataset, "model": model, "params": params, "seed": seed, "members": members,
              "vali": _metrics(estimator, vali)["ndcg@10"], "test": _metrics(estimator, test),
              "seconds": time.perf_counter() - start}
    if members:
        result["member_test"] = [_metrics(member, test) for member in estimator.estimators_]
        result["epochs"] = [member.n_iter_ for member in estimator.estimators_]
    else:
        result["epochs"] = getattr(estimator, "n_iter_", getattr(estimator, "best_iteration_", None))
    return result


def _fmt(values):
    return f"{np.mean(values):.4f} ± {np.std(values):.4f}"


def _row(name, results, key="test"):
    cells = [_fmt([r[key][m] for r in results]) for m in ("ndcg@1", "ndcg@5", "ndcg@10", "ndcg@10_paper")]
    return f"| {name} | " + " | ".join(cells) + " |"


def fold1_study(args):
    """The Fold-1 study with the DASALC ablation (``--study fold1``; writes ``quality.md``/``.json``)."""
    os.environ["BENCH_MAX_EPOCHS"] = str(args.max_epochs)  # read by the workers
    load_start = os.getloadavg()
    start = time.perf_counter()
    run = Parallel(n_jobs=args.jobs, verbose=0)

    # 1. Selection on vali (seed 0), 4 configurations per model.
    grid_tasks = [(d, m, p, 0) for d in DATASETS for m, grid in GRIDS.items() for p in grid]
    grid = run(delayed(_task)(args.data, *task) for task in grid_tasks)
    best = {}
    for d in DATASETS:
        for m in GRIDS:
            candidates = [r for r in grid if r["dataset"] == d and r["model"] == m]
            best[d, m] = max(candidates, key=lambda r: r["vali"])

    # 2. Test runs: more seeds of the winners, DASALC-ens, and the ablation.
    tasks = [(d, m, best[d, m]["params"], s) for (d, m) in best for s in SEEDS[1:] if m != "DASALCRanker"]
    tasks += [(d, "DASALCRanker", best[d, "DASALCRanker"]["params"], s, args.members) for d in DATASETS
              for s in SEEDS]
    tasks += [(d, "DASALCRanker", {**best[d, "DASALCRanker"]["params"], **change}, s) for d in DATASETS
              for _, change in ABLATION for s in SEEDS]
    final = run(delayed(_task)(args.data, *task) for task in tasks)
    elapsed = time.perf_counter() - start

    lines = [
        "# Ranking quality: MQ2008 and OHSUMED, Fold 1",
        "",
        f"{machine(cpus='{} CPUs (shared)', python=False)}, {args.jobs} worker processes x 1 thread; "
        f"whole script {elapsed / 60:.1f} min; load average {load_start[0]:.2f} at start, "
        f"{os.getloadavg()[0]:.2f} at end. Test NDCG, mean ± std over seeds {list(SEEDS)}; "
        f"DASALC-ens = RankingEnsemble of {args.members} DASALC models.",
        "",
    ]
    for d in DATASETS:
        lines += [f"## {d}", "", "| model | NDCG@1 | NDCG@5 | NDCG@10 | NDCG@10 (empty queries dropped) |",
                  "| --- | ---: | ---: | ---: | ---: |"]
        for m in GRIDS:
            if m == "DASALCRanker":
                ensembles = [r for r in final if r["dataset"] == d and r["members"]]
                singles = [{"test": r["member_test"][0]} for r in ensembles]
                every = [{"test": t} for r in ensembles for t in r["member_test"]]
                lines.append(_row("DASALCRanker", singles))
                lines.append(_row(f"DASALC-ens ({args.members} seeds)", ensembles))
                lines.append(_row(f"(DASALCRanker, all {len(every)} members)", every))
            else:
                runs = [best[d, m]] + [r for r in final if r["dataset"] == d and r["model"] == m]
                lines.append(_row(m, runs))
        lines += ["", "Selected configurations (vali NDCG@10 of seed 0; grid of 4 each):", ""]
        for m in GRIDS:
            tried = ", ".join(f"{r['vali']:.4f}" for r in grid if r["dataset"] == d and r["model"] == m)
            lines.append(f"- {m}: `{best[d, m]['params']}` (vali {best[d, m]['vali']:.4f}; grid: {tried})")
        dasalc = best[d, "DASALCRanker"]["params"]
        lines += ["", f"DASALC ablation ({d}, cumulative, 3 seeds, selected configuration `{dasalc}`):", "",
                  "| step | NDCG@5 | NDCG@10 |", "| --- | ---: | ---: |"]
        for name, change in ABLATION:
            runs = [r for r in final if r["dataset"] == d and not r["members"] and r["model"] == "DASALCRanker"
                    and r["params"] == {**dasalc, **change}]
            lines.append(f"| {name} | {_fmt([r['test']['ndcg@5'] for r in runs])} | "
                         f"{_fmt([r['test']['ndcg@10'] for r in runs])} |")
        lines.append(f"| + self-attention, latent cross (DASALC) | {_fmt([r['test']['ndcg@5'] for r in singles])} "
                     f"| {_fmt([r['test']['ndcg@10'] for r in singles])} |")
        lines.append("")
    text = "\n".join(lines)
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text + "\n")
    args.out.with_suffix(".json").write_text(json.dumps({"grid": grid, "final": final}, indent=1, default=str))


# ---------------------------------------------------------------------------- the five-fold study

#: Wall seconds of one cell in the timing trials (2 workers, load average 4.4-5.7), for the schedule.
CELL_SECONDS = {
    ("mq2008", "LambdaMART"): 2.5, ("mq2008", "RankNet (pairwise)"): 6.0, ("mq2008", "RankNet (softmax)"): 4.4,
    ("mq2008", "DASALC"): 15.6, ("mq2008", "SetRank"): 22.8, ("mq2008", "DASALC-ens"): 5 * 15.6,
    ("ohsumed", "LambdaMART"): 1.5, ("ohsumed", "RankNet (pairwise)"): 5.9, ("ohsumed", "RankNet (softmax)"): 2.1,
    ("ohsumed", "DASALC"): 9.2, ("ohsumed", "SetRank"): 26.4, ("ohsumed", "DASALC-ens"): 5 * 9.2,
}


def _priority(cell):
    """DASALC grids first (they unlock the long DASALC-ens cells), then the longest cells first."""
    return (cell["model"] not in ("DASALC", quality_folds.ENSEMBLE), -CELL_SECONDS[cell["dataset"], cell["model"]])


def _normalised(value):
    return json.loads(json.dumps(value, default=list))


def _new_store(settings):
    grids = quality_folds.grids(settings)
    return {"settings": _normalised(settings), "grids": _normalised(grids), "queries": {}, "cells": {}, "runs": []}


def _save(store, path):
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(store, default=list))
    os.replace(tmp, path)


def _open_store(path, settings, fresh):
    if not path.exists() or fresh:
        return _new_store(settings)
    store = json.loads(path.read_text())
    new = _new_store(settings)
    for key in ("settings", "grids"):
        if store.get(key) != new[key]:
            raise SystemExit(f"{path} holds cells of other {key} ({store.get(key)!r}); pass --fresh to start over "
                             f"or --out elsewhere.")
    return store


def _query_index(store, data_dir, datasets, folds):
    """The test queries of each fold (sorted ids, as the per-query values) and which have no relevant document."""
    from sklearn_ltr.model_selection import load_letor_fold

    for dataset in datasets:
        for fold in folds:
            known = store["queries"].setdefault(dataset, {})
            if str(fold) not in known:
                _, y, qid = load_letor_fold(data_dir / dataset / "partitions", fold)[2]
                ids = np.unique(qid)
                top = np.zeros(ids.size)
                np.maximum.at(top, np.searchsorted(ids, qid), y)
                known[str(fold)] = {"ids": ids.tolist(), "empty": (top == 0).tolist()}


def _header(store, settings, datasets, folds, jobs):
    runs = store["runs"]
    minutes = sum(r["seconds"] for r in runs) / 60
    loads = ", ".join(f"{r['load_start']:.2f} -> {r['load_end']:.2f}" for r in runs)
    grids = quality_folds.grids(settings)
    lines = [
        f"# Ranking quality: {' and '.join(d.upper() for d in datasets)}, folds {', '.join(map(str, folds))}",
        "",
        f"{machine(cpus='{} CPUs (shared)', python=False)}, {jobs} worker processes x 1 thread "
        f"(torch {version('torch')}, LightGBM {version('lightgbm')}); {len(runs)} run(s) of the script, "
        f"{minutes:.1f} min in all; load average at start -> end of each run: {loads}.",
        "",
        f"Protocol: per data set, fold and model, the same budget of {settings['grid_size']} configurations, "
        f"trained with seed {settings['seeds'][0]} and early-stopped on the fold's vali NDCG@10 (neural: patience "
        f"{settings['patience']}, at most {settings['max_epochs']} epochs, batches of {settings['batch_size']} "
        f"queries; LightGBM: {settings['lm_stop']} rounds, at most {settings['lm_trees']} trees, bagging 0.8); "
        f"the best on vali is trained with seeds {list(settings['seeds'])} and scored on test. DASALC-ens = "
        f"RankingEnsemble of {settings['members']} copies of the selected DASALC configuration, one per seed; "
        f"the DASALC rows are the first member of each. NDCG: exponential gain, queries without a relevant "
        f"document score 1 (LightGBM's convention).",
        "",
        "Configurations tried (grid index from 0):",
        "",
    ]
    lines += [f"- {model}: " + "; ".join(f"#{i} `{c}`" for i, c in enumerate(grid)) for model, grid in grids.items()]
    return [*lines, ""]


def folds_study(args):
    settings = dict(quality_folds.QUICK if args.quick else quality_folds.FULL)
    folds = args.folds or ([1] if args.quick else [1, 2, 3, 4, 5])
    out = args.out or (Path(tempfile.gettempdir()) / "quality_folds_quick.md" if args.quick
                       else Path(__file__).parent / "results" / "quality_folds.md")
    out.parent.mkdir(parents=True, exist_ok=True)
    path = out.with_suffix(".json")
    store = _open_store(path, settings, args.fresh)
    _query_index(store, args.data, args.datasets, folds)
    # Before the workers start (spawned processes inherit the environment): one thread, no spin-waiting.
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[name] = "1"
    load_start, start = os.getloadavg()[0], time.perf_counter()
    cells, done_before = store["cells"], len(store["cells"])
    print(f"{len(cells)} cells already in {path}", flush=True)
    try:
        with ProcessPoolExecutor(max_workers=args.jobs, mp_context=get_context("spawn")) as pool:
            running = {}
            while True:
                todo, _ = quality_folds.plan(cells, args.datasets, folds, settings)
                todo = [c for c in todo if quality_folds.cell_key(**c) not in running.values()]
                todo.sort(key=_priority)
                while len(running) < args.jobs and todo:
                    cell = todo.pop(0)
                    future = pool.submit(quality_folds.run_cell, cell, str(args.data), settings)
                    running[future] = quality_folds.cell_key(**cell)
                if not running:
                    break
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in finished:
                    key = running.pop(future)
                    result = future.result()
                    expected = len(store["queries"][result["dataset"]][str(result["fold"])]["ids"])
                    assert len(result["test"]["ndcg@10"]) == expected, key
                    cells[key] = result
                    _save(store, path)
                    print(f"[{time.perf_counter() - start:6.0f} s] {key}: vali {result['vali']:.4f}, "
                          f"{result['seconds']:.1f} s, epochs {result['epochs']}, load {result['load'][1]:.2f}",
                          flush=True)
    finally:
        store["runs"].append({"seconds": time.perf_counter() - start, "load_start": load_start,
                              "load_end": os.getloadavg()[0], "cells": len(cells) - done_before,
                              "datasets": args.datasets, "folds": folds})
        _save(store, path)
    todo, waiting = quality_folds.plan(cells, args.datasets, folds, settings)
    if todo or waiting:
        raise SystemExit(f"{len(todo)} cells left; run again to continue.")
    header = _header(store, settings, args.datasets, folds, args.jobs)
    text, summary = quality_folds.report(store, args.datasets, folds, header)
    out.write_text(text)
    quality_folds.figure(summary, args.datasets, folds, out.with_suffix(".png"))
    print(text)
    print(f"wrote {out}, {path} and {out.with_suffix('.png')}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--study", choices=("folds", "fold1"), default="folds")
    parser.add_argument("--data", type=Path, default=data_dir(required=False))
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None, help="the markdown report; the JSON and PNG go beside it")
    parser.add_argument("--datasets", nargs="+", choices=DATASETS, default=list(DATASETS))
    parser.add_argument("--folds", nargs="+", type=int, choices=range(1, 6), default=None,
                        help="default: all five (--quick: 1)")
    parser.add_argument("--quick", action="store_true", help="smoke run: about a minute")
    parser.add_argument("--fresh", action="store_true", help="ignore the cells stored in the JSON")
    parser.add_argument("--members", type=int, default=5, help="fold1: DASALC-ens members")
    parser.add_argument("--max-epochs", type=int, default=MAX_EPOCHS, help="fold1: fewer epochs for smoke tests")
    args = parser.parse_args()
    if args.study == "fold1":
        args.out = args.out or Path(__file__).parent / "results" / "quality.md"
        fold1_study(args)
    else:
        args.folds = sorted(set(args.folds)) if args.folds else None
        folds_study(args)


if __name__ == "__main__":
    main()

"""LambdaMARTRanker's two objectives: LightGBM's ``lambdarank`` vs ``rank_xendcg`` (XE-NDCG), test NDCG@10.

Three LETOR data sets, each with a train / validation / test split:

- MQ2008 Fold1 (``train.txt`` / ``vali.txt`` / ``test.txt``);
- OHSUMED Fold1 (the same files);
- MQ2007-agg: partitions S1-S3 for training, S4 for validation, S5 for test; its missing values
  (``NULL``, read as NaN) are passed as they are: LightGBM routes them down each split's default branch.

Each (data set, objective, seed) fits ``LambdaMARTRanker(objective=..., random_state=seed)`` with the
same settings (learning rate 0.05, 31 leaves, up to 1,000 trees, bagging and feature fraction 0.8, so
that the seed changes the model for both objectives, 2 threads), early-stopped on the validation
partition's NDCG@10 (50 rounds of patience) through ``fit(..., X_val=, y_val=, groups_val=)``. The table
gives the mean and standard deviation over seeds 0-2 of the test NDCG@10 (LightGBM's convention: a query
without a relevant document scores 1), the number of trees kept and the fit time in seconds.

Usage::

    PYTHONPATH=. python benchmarks/bench_lambdamart_objectives.py [--data-dir ../shared/data] [--seeds 0 1 2]

Writes ``benchmarks/results/lambdamart_objectives.md`` (``--out FILE`` elsewhere).
"""

from __future__ import annotations

import argparse
import datetime
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from _common import data_dir, load_average, machine

import sklearn_ltr  # noqa: F401  (first: its OpenMP setting reaches LightGBM)
from sklearn_ltr.datasets import load_svmlight_ranking
from sklearn_ltr.metrics import ndcg_score
from sklearn_ltr.rankers import LambdaMARTRanker

ROOT = Path(__file__).resolve().parents[1]
OBJECTIVES = ("lambdarank", "rank_xendcg")
PARAMS = {"n_estimators": 1000, "learning_rate": 0.05, "num_leaves": 31, "subsample": 0.8, "subsample_freq": 1,
          "colsample_bytree": 0.8, "early_stopping_rounds": 50, "eval_at": (10,), "n_jobs": 2}


def _dense(part):
    X, y, qid = part
    return (X.toarray() if sp.issparse(X) else np.asarray(X)), y, qid


def _concat(parts):
    return tuple(np.concatenate([part[k] for part in parts]) for k in range(3))


def load(root):
    """``{name: (train, vali, test)}``, each an ``(X, y, qid)`` triple."""
    sets = {}
    for name, folder in (("MQ2008 Fold1", "mq2008/Fold1"), ("OHSUMED Fold1", "ohsumed/Fold1")):
        sets[name] = tuple(_dense(load_svmlight_ranking(root / folder / f"{split}.txt"))
                           for split in ("train", "vali", "test"))
    parts = [_dense(load_svmlight_ranking(root / "mq2007-agg" / f"S{i}.txt")) for i in range(1, 6)]
    sets["MQ2007-agg S1-3/S4/S5"] = (_concat(parts[:3]), parts[3], parts[4])
    return sets


def run_one(train, vali, test, objective, seed):
    ranker = LambdaMARTRanker(objective=objective, random_state=seed, **PARAMS)
    start = time.perf_counter()
    ranker.fit(*train, X_val=vali[0], y_val=vali[1], groups_val=vali[2])
    seconds = time.perf_counter() - start
    X_test, y_test, qid_test = test
    return ndcg_score(y_test, ranker.predict(X_test), qid_test, k=10), ranker.n_estimators_, seconds


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "lambdamart_objectives.md"))
    args = parser.parse_args(argv)
    load_before = load_average(sep=" ")
    started = datetime.datetime.now(datetime.timezone.utc)
    rows = []
    for name, (train, vali, test) in load(Path(args.data_dir) if args.data_dir else data_dir()).items():
        for objective in OBJECTIVES:
            runs = [run_one(train, vali, test, objective, seed) for seed in args.seeds]
            ndcg, trees, seconds = (np.array(column, dtype=float) for column in zip(*runs, strict=True))
            rows.append((name, objective, ndcg, trees, seconds))
            print(f"{name:24s} {objective:12s} NDCG@10 {ndcg.mean():.4f} +- {ndcg.std():.4f}  "
                  f"trees {trees.mean():6.1f}  fit {seconds.mean():6.2f} s", flush=True)
    load_after = load_average(sep=" ")
    command = "PYTHONPATH=. python benchmarks/bench_lambdamart_objectives.py " + " ".join(argv or sys.argv[1:])
    lines = [
        "# LambdaMARTRanker: objective='lambdarank' vs 'rank_xendcg' (test NDCG@10)",
        "",
        f"Command: `{command.strip()}`  ",
        f"Date: {started:%Y-%m-%d %H:%M} UTC  ",
        f"Machine: {machine('lightgbm', cpus='{} CPUs shared with other jobs')}  ",
        f"Load average (1, 5, 15 min) before: {load_before}; after: {load_after}  ",
        f"Settings: {PARAMS}, seeds {args.seeds}; early stopping on the validation NDCG@10.",
        "",
        "| data | objective | test NDCG@10 (mean +- sd over seeds) | trees kept (mean) | fit seconds (mean) |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    lines += [f"| {name} | {objective} | {ndcg.mean():.4f} +- {ndcg.std():.4f} | {trees.mean():.1f} | "
              f"{seconds.mean():.2f} |" for name, objective, ndcg, trees, seconds in rows]
    lines += ["", "Per seed (test NDCG@10):", ""]
    lines += [f"- {name}, {objective}: " + ", ".join(f"{value:.4f}" for value in ndcg)
              for name, objective, ndcg, _, _ in rows]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

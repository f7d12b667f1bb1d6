"""The defaults of ``sklearn-ltr train``, measured: five LETOR folds of MQ2008 and OHSUMED.

Every cell trains one ``--model`` with one set of ``--param`` values exactly as
``sklearn-ltr train --train TRAIN --valid VALI`` trains it (``sklearn_ltr.cli._models.fit_model``:
default preprocessing, early stopping on the validation file's NDCG@10, seed 0, one thread),
on each fold of :func:`sklearn_ltr.model_selection.load_letor_fold`, and scores the fold's test
queries. Every query is a test query of exactly one fold, so a row of the table is one value
per query of the data set (784 for MQ2008, 106 for OHSUMED): its mean NDCG@10 (exponential
gain, an empty query scoring 1, the CLI's default) with a 95% t-interval, the per-fold means,
and the paired difference from the first row (bootstrap interval and randomization p-value of
:func:`sklearn_ltr.metrics.paired_significance`).

The row ``cli`` is whatever the command line uses today (no ``--param``); the others set their
parameters explicitly, so that the table stays reproducible after the defaults change.

Results are cached in a JSON file beside the report (one entry per cell, written as each
finishes), so an interrupted run continues where it stopped.

Usage::

    PYTHONPATH=. python studies/bench_cli_defaults.py            # LambdaMART
    PYTHONPATH=. python studies/bench_cli_defaults.py --model ranknet --folds 1
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATASETS = ("mq2008", "ohsumed")

#: ``--model`` -> {row name: --param values}; the first row is the reference of the paired differences.
CANDIDATES = {
    "lambdamart": {
        "before (100 trees, lr 0.1, 31 leaves)": {"n_estimators": 100, "learning_rate": 0.1, "num_leaves": 31},
        "demo (300 trees, lr 0.05, 15 leaves)": {"n_estimators": 300, "learning_rate": 0.05, "num_leaves": 15},
        "1000 trees, lr 0.05, 15 leaves": {"n_estimators": 1000, "learning_rate": 0.05, "num_leaves": 15},
        "1000 trees, lr 0.05, 7 leaves": {"n_estimators": 1000, "learning_rate": 0.05, "num_leaves": 7},
        "1000 trees, lr 0.02, 15 leaves": {"n_estimators": 1000, "learning_rate": 0.02, "num_leaves": 15},
        "1000 trees, lr 0.02, 7 leaves": {"n_estimators": 1000, "learning_rate": 0.02, "num_leaves": 7},
        "1000 trees, lr 0.02, 31 leaves": {"n_estimators": 1000, "learning_rate": 0.02, "num_leaves": 31},
        "1000 trees, lr 0.01, 15 leaves": {"n_estimators": 1000, "learning_rate": 0.01, "num_leaves": 15},
        "1000 trees, lr 0.02, 15 leaves, bagging 0.8": {"n_estimators": 1000, "learning_rate": 0.02, "num_leaves": 15,
                                                         "subsample": 0.8, "subsample_freq": 1,
                                                         "colsample_bytree": 0.8},
        "300 trees, lr 0.02, 15 leaves": {"n_estimators": 300, "learning_rate": 0.02, "num_leaves": 15},
        "500 trees, lr 0.02, 15 leaves": {"n_estimators": 500, "learning_rate": 0.02, "num_leaves": 15},
        "cli": {},
    },
    # The neural rankers: the CLI trains them with their constructors' defaults; the demo with smaller settings.
    "ranknet": {
        "class defaults (lr 1e-3, 20 epochs)": {"lr": 1e-3, "max_epochs": 20},
        "demo (lr 2e-3, 30 epochs)": {"hidden_sizes": (64, 32), "lr": 2e-3, "max_epochs": 30},
        "cli": {},
    },
    "dasalc": {
        "class defaults (the CLI's)": {},
        "demo (128 wide, 1 attention layer, 30 epochs)": {
            "hidden_size": 128, "n_attention_layers": 1, "n_heads": 2, "head_size": 32, "dropout": 0.2,
            "noise_std": 0.5, "attention_dropout": 0.0, "max_epochs": 30},
    },
    "setrank": {
        "class defaults (the CLI's)": {},
        "demo (d_model 64, 2 heads, 30 epochs)": {"d_model": 64, "n_heads": 2, "n_blocks": 2, "dropout": 0.1,
                                                  "attention_dropout": 0.0, "max_epochs": 30},
    },
}

#: ``--model`` -> the rows also run without ``--valid`` (every tree trained: the budget matters there).
WITHOUT_VALID = {
    "lambdamart": ("before (100 trees, lr 0.1, 31 leaves)", "demo (300 trees, lr 0.05, 15 leaves)",
                   "1000 trees, lr 0.02, 15 leaves", "300 trees, lr 0.02, 15 leaves", "500 trees, lr 0.02, 15 leaves",
                   "cli"),
}


def _data_dir(arg):
    if arg:
        return Path(arg)
    return Path(os.environ.get("SKLEARN_LTR_DATA", ROOT.parent / "shared" / "data"))


def _cell_key(dataset, fold, model, params, valid=True, seed=0):
    return (f"{dataset}|{fold}|{model}|{json.dumps(params, sort_keys=True)}" + ("" if valid else "|no-valid")
            + (f"|seed {seed}" if seed else ""))


def run_cell(data_dir, dataset, fold, model, params, valid=True, device="cpu", seed=0):
    """Train one cell as ``sklearn-ltr train`` does; the per-query test NDCG@10 and what training reported."""
    from sklearn_ltr.cli._models import MODELS, fit_model
    from sklearn_ltr.metrics import ndcg_per_query
    from sklearn_ltr.model_selection import load_letor_fold

    train, vali, test = (SimpleNamespace(X=X, y=y, groups=g)
                         for X, y, g in load_letor_fold(data_dir / dataset / "partitions", fold))
    spec = MODELS[model]
    params = {**params, "device": device} if spec.neural else params
    estimator, report = fit_model(spec, params, train, vali if valid else None, seed=seed, threads=1)
    scores = estimator.predict(test.X, groups=test.groups)
    _, values = ndcg_per_query(test.y, scores, test.groups, k=10)
    return {"ndcg@10": values.tolist(), "report": {k: v for k, v in report.items() if k != "preprocessing"}}


def _load(path):
    return json.loads(path.read_text()) if path.exists() else {}


def _save(path, cells):
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(cells, indent=1))
    tmp.replace(path)


def _t_half_width(values):
    from scipy import stats

    return float(stats.t.ppf(0.975, len(values) - 1) * np.std(values, ddof=1) / np.sqrt(len(values)))


def _cell(cells, dataset, fold, model, params, valid, seeds):
    """One fold's result over ``seeds``: per-query values averaged over the seeds, the first seed's report."""
    found = [cells.get(_cell_key(dataset, fold, model, params, valid, seed)) for seed in seeds]
    if any(c is None for c in found):
        return None
    return {"ndcg@10": np.mean([c["ndcg@10"] for c in found], axis=0).tolist(), "report": found[0]["report"],
            "fit_seconds": sum(c["report"]["fit_seconds"] for c in found)}


def report(cells, model, rows, folds, valid=True, seeds=(0,)):
    from sklearn_ltr.metrics import paired_significance

    lines = []
    for dataset in DATASETS:
        values = {row: [_cell(cells, dataset, f, model, params, valid, seeds) for f in folds]
                  for row, params in rows.items()}
        values = {row: v for row, v in values.items() if all(c is not None for c in v)}
        if not values:
            continue
        per_query = {row: np.concatenate([c["ndcg@10"] for c in v]) for row, v in values.items()}
        first = next(iter(per_query))
        others = {row: v for row, v in per_query.items() if row != first}
        table = paired_significance(per_query[first], others, random_state=0) if others else None
        mode = "with --valid (early stopping)" if valid else "without --valid (every tree)"
        lines += [f"### {dataset}, {mode}: {len(per_query[first])} test queries (folds "
                  f"{', '.join(map(str, folds))})", "",
                  "| settings | NDCG@10 (mean ± 95% t) | " + " | ".join(f"fold {f}" for f in folds)
                  + " | difference from the first row [95% bootstrap CI], randomization p | trees or epochs "
                    f"(per fold{', seed 0' if len(seeds) > 1 else ''}) | fit s (sum) |",
                  "| --- | ---: | " + " | ".join("---:" for _ in folds) + " | --- | --- | ---: |"]
        for row, v in values.items():
            vals = per_query[row]
            fold_means = " | ".join(f"{np.mean(c['ndcg@10']):.4f}" for c in v)
            if row == first or table is None:
                diff = "(reference)"
            else:
                r = table[row]
                diff = f"{r.mean_difference:+.4f} [{r.ci_low:+.4f}, {r.ci_high:+.4f}], p {r.randomization_pvalue:.4f}"
            stops = ", ".join(str(c["report"].get("best_iteration") or c["report"].get("best_epoch")
                                  or c["report"].get("rounds") or c["report"].get("epochs")) for c in v)
            seconds = sum(c["fit_seconds"] for c in v)
            label = row if row != "cli" else f"**the CLI today**: `{v[0]['report'].get('settings', '?')}`"
            lines.append(f"| {label} | {np.mean(vals):.4f} ± {_t_half_width(vals):.4f} | {fold_means} | {diff} | "
                         f"{stops} | {seconds:.1f} |")
        lines.append("")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", help="folder of the data sets (default $SKLEARN_LTR_DATA or ../shared/data)")
    parser.add_argument("--model", default="lambdamart", choices=list(CANDIDATES))
    parser.add_argument("--device", default="cpu", help="device of the neural rankers (default cpu)")
    parser.add_argument("--seeds", default="0", help="comma-separated seeds (--seed of train); the per-query values "
                                                     "are averaged over them (default 0)")
    parser.add_argument("--folds", default="1,2,3,4,5")
    parser.add_argument("--out", type=Path, help="markdown report (default studies/results/cli_defaults_MODEL.md)")
    parser.add_argument("--rows", help="comma-separated row numbers to run, from 0 (default all)")
    parser.add_argument("--datasets", default=",".join(DATASETS), help="comma-separated (default mq2008,ohsumed)")
    args = parser.parse_args(argv)
    data_dir = _data_dir(args.data)
    folds = [int(f) for f in args.folds.split(",")]
    rows = CANDIDATES[args.model]
    if args.rows:
        chosen = {int(i) for i in args.rows.split(",")}
        rows = {name: params for i, (name, params) in enumerate(rows.items()) if i in chosen}
    modes = [(True, rows)]
    if args.model in WITHOUT_VALID:
        modes.append((False, {name: params for name, params in rows.items() if name in WITHOUT_VALID[args.model]}))
    out = args.out or ROOT / "studies" / "results" / f"cli_defaults_{args.model}.md"
    cache = out.with_suffix(".json")
    cells = _load(cache)
    load_start, start = os.getloadavg()[0], time.perf_counter()
    seeds = [int(seed) for seed in args.seeds.split(",")]
    for valid, mode_rows in modes:
        for dataset in args.datasets.split(","):
            for row, params in mode_rows.items():
                for fold, seed in ((fold, seed) for fold in folds for seed in seeds):
                    key = _cell_key(dataset, fold, args.model, params, valid, seed)
                    if row == "cli" or key not in cells:  # the CLI's defaults are measured afresh each run
                        cells[key] = run_cell(data_dir, dataset, fold, args.model, params, valid, args.device, seed)
                        _save(cache, cells)
                        c = cells[key]
                        print(f"{dataset} fold {fold} seed {seed} {row}{'' if valid else ' (no --valid)'}: NDCG@10 "
                              f"{np.mean(c['ndcg@10']):.4f} ({c['report']['fit_seconds']:.1f} s)", flush=True)
    import lightgbm
    import torch

    header = (f"## `sklearn-ltr train --model {args.model}`: five LETOR folds\n\n"
              f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.machine()}, "
              f"{os.cpu_count()} CPUs (shared), one thread, LightGBM {lightgbm.__version__}, "
              f"torch {torch.__version__}; load average {load_start:.2f} at the start, {os.getloadavg()[0]:.2f} at "
              f"the end; {time.perf_counter() - start:.0f} s (cells cached in {cache.name} are not rerun, except the "
              f"CLI's own row).\n\nCommand: `PYTHONPATH=. python studies/bench_cli_defaults.py --model {args.model}"
              f"{' --seeds ' + args.seeds if args.seeds != '0' else ''}`. Each cell trains as `sklearn-ltr train "
              f"--model {args.model} --train TRAIN [--valid VALI] [--param ...] --seed S` does (seeds "
              f"{', '.join(map(str, seeds))}, one thread), on the fold's train split, with its vali split as --valid; "
              f"the table gives the NDCG@10 of the test queries (exponential gain, a query without a relevant "
              f"document scoring 1, the CLI's default; a query's value is its mean over the seeds): the mean over "
              f"every query of the five test splits with its 95% t-interval, each fold's mean, and the paired "
              f"difference from the first row.")
    text = "\n".join([header, ""] + [report(cells, args.model, mode_rows, folds, valid, seeds)
                                      for valid, mode_rows in modes])
    out.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()

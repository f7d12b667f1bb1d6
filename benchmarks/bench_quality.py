"""Ranking quality on MQ2008 and OHSUMED (Fold 1): LambdaMART, RankNet, DASALC, DASALC-ens, SetRank.

Protocol (the same budget for every model):

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

Run: ``python benchmarks/bench_quality.py [--data ../shared/data] [--jobs 2] [--members 5]``
(writes ``benchmarks/results/quality.md`` and ``quality.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch/LightGBM start OpenMP

import numpy as np
from joblib import Parallel, delayed

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
    from skorch.callbacks import Callback, EarlyStopping

    from sklearn_ltr._groups import QueryGroups
    from sklearn_ltr._skorch import build_dataset
    from sklearn_ltr.metrics import ndcg_score

    class ValiNDCG(Callback):
        def __init__(self, X, y, groups):
            self.X, self.y, self.groups = X, y, groups

        def on_train_begin(self, net, **kwargs):
            self.query_groups = QueryGroups(self.groups)
            self.dataset = build_dataset(self.query_groups, self.X)

        def on_epoch_end(self, net, **kwargs):
            scores = self.query_groups.unsort(net.score_rows(self.dataset))
            net.history.record("vali_ndcg@10", ndcg_score(self.y, scores, self.groups, k=10))
            net.module_.train()

    stop = EarlyStopping(monitor="vali_ndcg@10", lower_is_better=False, patience=PATIENCE, load_best=True)
    return [("vali_ndcg", ValiNDCG(*vali)), ("early_stopping", stop)]


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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path(os.environ.get(
        "SKLEARN_LTR_DATA", Path(__file__).resolve().parents[2] / "shared" / "data")))
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--members", type=int, default=5)
    parser.add_argument("--max-epochs", type=int, default=MAX_EPOCHS, help="smoke tests: fewer epochs")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "quality.md")
    args = parser.parse_args()
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
        f"{platform.machine()}, {os.cpu_count()} CPUs (shared), {args.jobs} worker processes x 1 thread; "
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


if __name__ == "__main__":
    main()

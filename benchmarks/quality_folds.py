"""The five-fold ranking-quality study of ``bench_quality.py``: models, grids, cells, cache and report.

A *cell* is one fit: (data set, fold, model, configuration, seed), run by
:func:`run_cell` in a worker process through :func:`sklearn_ltr.model_selection.evaluate_letor_folds`
(one fold, one candidate). Its result (validation NDCG@10, per-query test NDCG@1/5/10, seconds,
epochs, load average) is stored in the results JSON as soon as it finishes, so an interrupted
run continues where it stopped. :func:`plan` turns the finished cells into the next ones to run
(the selected configuration's extra seeds and DASALC-ens once a grid is complete), and
:func:`report` turns a complete file into the markdown tables and the figure.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import time
from pathlib import Path

import numpy as np

DATASETS = ("mq2008", "ohsumed")
METRICS = ("ndcg@1", "ndcg@5", "ndcg@10")
BASELINE = "LambdaMART"
#: model name -> (estimator, loss); DASALC-ens has no grid of its own (it ensembles DASALC's winner).
MODELS = {
    "LambdaMART": ("LambdaMARTRanker", None),
    "RankNet (pairwise)": ("RankNetRanker", "ranknet"),
    "RankNet (softmax)": ("RankNetRanker", "softmax"),
    "DASALC": ("DASALCRanker", "softmax"),
    "SetRank": ("SetRankRanker", "attention_rank"),
}
ENSEMBLE = "DASALC-ens"
ROWS = (*MODELS, ENSEMBLE)

_RANKNET = [  # the DASALC paper's ingredients for an MLP: log1p inputs, batch norm, dropout
    {"hidden_sizes": (64, 32), "lr": 1e-3},
    {"hidden_sizes": (128, 64), "lr": 1e-3, "log1p": True, "batch_norm": True},
    {"hidden_sizes": (128, 64), "lr": 1e-3, "log1p": True, "dropout": 0.2},
    {"hidden_sizes": (256, 128), "lr": 3e-4, "log1p": True, "batch_norm": True, "dropout": 0.2},
    {"hidden_sizes": (64, 32), "lr": 1e-3, "log1p": True},
    {"hidden_sizes": (128, 64), "lr": 3e-4, "batch_norm": True},
]
#: The configurations tried per model on each fold's vali set (the same budget for every model).
GRIDS = {
    "LambdaMART": [{"num_leaves": nl, "learning_rate": lr} for nl, lr in [(7, 0.05), (15, 0.05), (31, 0.05),
                                                                          (31, 0.1), (63, 0.05), (7, 0.1)]],
    "RankNet (pairwise)": _RANKNET,
    "RankNet (softmax)": _RANKNET,
    # DASALC always batch-normalises (inputs and tower); attention-weight dropout off (4x faster on CPU).
    "DASALC": [
        {"hidden_size": 128, "n_attention_layers": 1, "head_size": 32, "dropout": 0.2, "noise_std": 0.5},
        {"hidden_size": 256, "n_attention_layers": 2, "head_size": 64, "dropout": 0.4, "noise_std": 1.0},
        {"hidden_size": 256, "n_attention_layers": 2, "head_size": 64, "dropout": 0.2, "noise_std": 0.0},
        {"hidden_size": 128, "n_attention_layers": 1, "head_size": 32, "dropout": 0.2, "noise_std": 0.5,
         "log1p": False},
        {"hidden_size": 128, "n_attention_layers": 0, "dropout": 0.2, "noise_std": 0.5},
        {"hidden_size": 256, "n_attention_layers": 1, "head_size": 64, "dropout": 0.4, "noise_std": 1.5},
    ],
    "SetRank": [
        *({"d_model": d, "n_heads": 2, "n_blocks": 2, "block": b} for d in (64, 128) for b in ("msab", "imsab")),
        {"d_model": 64, "n_heads": 4, "n_blocks": 1, "block": "msab", "dropout": 0.2},
        {"d_model": 128, "n_heads": 2, "n_blocks": 2, "block": "msab", "dropout": 0.3},
    ],
}
FULL = {"seeds": (0, 1, 2), "max_epochs": 60, "patience": 8, "batch_size": 32, "members": 5,
        "lm_trees": 1000, "lm_stop": 50, "grid_size": 6}
QUICK = {"seeds": (0, 1), "max_epochs": 2, "patience": 1, "batch_size": 32, "members": 2,
         "lm_trees": 20, "lm_stop": 5, "grid_size": 2}
_LM = {"min_child_samples": 20, "subsample": 0.8, "subsample_freq": 1, "colsample_bytree": 0.8, "eval_at": (10,),
       "n_jobs": 1}
_DASALC = {"n_layers": 2, "n_heads": 2, "attention_dropout": 0.0}


def grids(settings):
    return {model: grid[: settings["grid_size"]] for model, grid in GRIDS.items()}


def config_id(config):
    """A short stable name of a configuration: a grid change never reuses a stale cell."""
    return hashlib.sha1(json.dumps(config, sort_keys=True, default=list).encode()).hexdigest()[:8]


def cell_key(dataset, fold, model, config, seed):
    return f"{dataset}|{fold}|{model}|{config_id(config)}|{seed}"


# ------------------------------------------------------------------------ estimators (in the workers)


def _vali_callbacks(vali, patience):
    """Early stopping of a neural ranker on the fold's ``vali`` NDCG@10 (best epoch restored)."""
    from skorch.callbacks import EarlyStopping

    from sklearn_ltr.training import ValidationNDCG

    stop = EarlyStopping(monitor="vali_ndcg@10", lower_is_better=False, patience=patience, load_best=True)
    X, y, groups = vali
    return [("vali_ndcg", ValidationNDCG(10, X=X, y=y, groups=groups, name="vali_ndcg@10")), ("early_stopping", stop)]


def make_factory(model, config, seed, settings, members=None):
    """``make(vali)`` for :func:`~sklearn_ltr.model_selection.evaluate_letor_folds`."""
    from sklearn.pipeline import Pipeline

    from sklearn_ltr import Log1pTransformer
    from sklearn_ltr.rankers import DASALCRanker, LambdaMARTRanker, RankingEnsemble, RankNetRanker, SetRankRanker

    name, loss = MODELS[model]
    if name == "LambdaMARTRanker":
        return lambda vali: LambdaMARTRanker(**_LM, **config, n_estimators=settings["lm_trees"],
                                             early_stopping_rounds=settings["lm_stop"], random_state=seed)
    config = dict(config)
    log1p = name == "RankNetRanker" and config.pop("log1p", False)
    cls = {"RankNetRanker": RankNetRanker, "DASALCRanker": DASALCRanker, "SetRankRanker": SetRankRanker}[name]
    extra = _DASALC if name == "DASALCRanker" else {}

    def make(vali):
        X, y, groups = vali
        if log1p:
            X = Log1pTransformer().fit_transform(X)
        ranker = cls(**config, **extra, loss=loss, max_epochs=settings["max_epochs"],
                     batch_size=settings["batch_size"], device="cpu", random_state=seed,
                     callbacks=_vali_callbacks((X, y, groups), settings["patience"]))
        if members:
            return RankingEnsemble(ranker, n_estimators=members, random_state=seed)
        return Pipeline([("log1p", Log1pTransformer()), ("rank", ranker)]) if log1p else ranker

    return make


@functools.lru_cache(maxsize=2)
def _test_split(partitions, fold):
    from sklearn_ltr.model_selection import load_letor_fold

    return load_letor_fold(partitions, fold)[2]


def _epochs(estimator):
    estimator = getattr(estimator, "steps", [[None, estimator]])[-1][1]
    if hasattr(estimator, "best_iteration_") and not hasattr(estimator, "net_"):
        return estimator.best_iteration_  # LambdaMART: the trees kept
    return getattr(estimator, "n_iter_", None)


def run_cell(cell, data_dir, settings):
    """Fit one cell and return its result (runs in a worker: one torch / LightGBM thread)."""
    import sklearn
    import torch

    from sklearn_ltr.metrics import ndcg_per_query
    from sklearn_ltr.model_selection import evaluate_letor_folds

    torch.set_num_threads(1)
    dataset, fold, model, config, seed = (cell[key] for key in ("dataset", "fold", "model", "config", "seed"))
    members = settings["members"] if model == ENSEMBLE else None
    base = "DASALC" if model == ENSEMBLE else model
    partitions = Path(data_dir) / dataset / "partitions"
    fit_params = (lambda vali: {"eval_set": [vali]}) if base == BASELINE else None
    load, start, cpu = os.getloadavg()[0], time.perf_counter(), time.process_time()
    with sklearn.config_context(enable_metadata_routing=True):  # the log1p pipelines route groups
        result = evaluate_letor_folds(make_factory(base, config, seed, settings, members), partitions,
                                      folds=[fold], k=(1, 5, 10), fit_params=fit_params, return_estimators=True)
    estimator = result.folds[0]["estimator"]
    out = {
        **cell,
        "vali": float(result.folds[0]["vali_scores"][0]),
        "test": {m: np.round(result.per_query[m], 6).tolist() for m in METRICS},
        "seconds": time.perf_counter() - start,
        "cpu_seconds": time.process_time() - cpu,
        "load": [load, os.getloadavg()[0]],
    }
    if members:
        X, y, groups = _test_split(str(partitions), fold)
        member = estimator.estimators_[0]
        scores = member.predict(X, groups=groups)
        out["member_test"] = {m: np.round(ndcg_per_query(y, scores, groups, k=int(m.split("@")[1]))[1], 6).tolist()
                              for m in METRICS}
        out["epochs"] = [_epochs(m) for m in estimator.estimators_]
    else:
        out["epochs"] = _epochs(estimator)
    return out


# ------------------------------------------------------------------------ planning (main process)


def plan(cells, datasets, folds, settings):
    """The cells that can run now and are not done: grids, then the winners' seeds and DASALC-ens.

    Returns ``(todo, waiting)``: cells ready to run, and the number of (data set, fold, model)
    groups whose grid is not finished yet (their follow-up cells come later).
    """
    todo, waiting = [], 0
    for dataset in datasets:
        for fold in folds:
            for model, grid in grids(settings).items():
                first = settings["seeds"][0]
                runs = [dict(dataset=dataset, fold=fold, model=model, config=c, seed=first) for c in grid]
                pending = [r for r in runs if cell_key(**r) not in cells]
                todo += pending
                if pending:
                    waiting += 1
                    continue
                best = select(cells, dataset, fold, model, settings)[1]
                # DASALC's seeds are the first members of the DASALC-ens cells.
                follow = [(ENSEMBLE, s) for s in settings["seeds"]] if model == "DASALC" else [
                    (model, s) for s in settings["seeds"][1:]]
                todo += [c for c in (dict(dataset=dataset, fold=fold, model=m, config=best, seed=s) for m, s in follow)
                         if cell_key(**c) not in cells]
    return todo, waiting


def select(cells, dataset, fold, model, settings):
    """``(index, configuration, cell)`` of the best vali NDCG@10 in the grid (first seed; first on ties)."""
    grid = grids(settings)[model]
    runs = [cells[cell_key(dataset, fold, model, c, settings["seeds"][0])] for c in grid]
    index = max(range(len(grid)), key=lambda i: runs[i]["vali"])  # max keeps the first of equal values
    return index, grid[index], runs[index]


def runs_of(cells, dataset, fold, row, settings):
    """The test runs of a report row on one fold, one per seed: ``[{metric: per-query list}]``."""
    if row == "DASALC":  # single DASALC models: the first member of each DASALC-ens
        return [r["member_test"] for r in runs_of_cells(cells, dataset, fold, ENSEMBLE, settings)]
    return [r["test"] for r in runs_of_cells(cells, dataset, fold, row, settings)]


def runs_of_cells(cells, dataset, fold, row, settings):
    model = "DASALC" if row == ENSEMBLE else row
    best = select(cells, dataset, fold, model, settings)[1]
    return [cells[cell_key(dataset, fold, row, best, s)] for s in settings["seeds"]]


# ------------------------------------------------------------------------ report


def _interval(values, level=0.95):
    from scipy import stats

    n = len(values)
    half = stats.t.ppf(0.5 + level / 2, n - 1) * np.std(values, ddof=1) / np.sqrt(n)
    return float(np.mean(values)), float(half)


def summarize(store, datasets, folds):
    """Per data set and row: per-query values (mean over seeds) per metric, seed means, fold means."""
    settings, cells, queries = store["settings"], store["cells"], store["queries"]
    summary = {}
    for dataset in datasets:
        for row in ROWS:
            per_seed = {m: [] for m in METRICS}  # per metric: (n_seeds, n_queries)
            fold_means = []
            for fold in folds:
                runs = runs_of(cells, dataset, fold, row, settings)
                for m in METRICS:
                    per_seed[m].append(np.array([r[m] for r in runs]))
                fold_means.append(float(np.mean([r["ndcg@10"] for r in runs])))
            seeds = {m: np.concatenate(v, axis=1) for m, v in per_seed.items()}
            empty = np.concatenate([queries[dataset][str(f)]["empty"] for f in folds])
            summary[dataset, row] = {
                "values": {m: s.mean(axis=0) for m, s in seeds.items()},
                "seed_means": {m: s.mean(axis=1) for m, s in seeds.items()},
                "fold_means": fold_means,
                "empty": np.asarray(empty, dtype=bool),
            }
    return summary


def significance(summary, dataset, metric, n_resamples=10_000):
    from sklearn_ltr.metrics import paired_significance

    others = {row: summary[dataset, row]["values"][metric] for row in ROWS if row != BASELINE}
    return paired_significance(summary[dataset, BASELINE]["values"][metric], others, n_resamples=n_resamples,
                               correction="holm", random_state=0)


def report(store, datasets, folds, header):
    """Markdown tables of a complete study: quality with CIs, tests against LambdaMART, folds, selections."""
    settings, cells = store["settings"], store["cells"]
    summary = summarize(store, datasets, folds)
    lines = list(header)
    for dataset in datasets:
        n = len(summary[dataset, BASELINE]["values"]["ndcg@10"])
        n_empty = int(summary[dataset, BASELINE]["empty"].sum())
        lines += [f"## {dataset}: {n} test queries (folds {', '.join(map(str, folds))})", "",
                  "Test NDCG, mean over queries of the per-query mean over seeds, ± half-width of the 95% "
                  "t-interval over queries; [SD of the mean over seeds]. Last column: NDCG@10 without the "
                  f"{n_empty} queries that have no relevant document (the DASALC paper's convention).", "",
                  "| model | NDCG@1 | NDCG@5 | NDCG@10 | NDCG@10, no empty queries |",
                  "| --- | ---: | ---: | ---: | ---: |"]
        for row in ROWS:
            s = summary[dataset, row]
            cells_ = []
            for m in METRICS:
                mean, half = _interval(s["values"][m])
                cells_.append(f"{mean:.4f} ± {half:.4f} [{np.std(s['seed_means'][m]):.4f}]")
            kept = s["values"]["ndcg@10"][~s["empty"]]
            mean, half = _interval(kept) if len(kept) > 1 else (float("nan"), float("nan"))
            cells_.append(f"{mean:.4f} ± {half:.4f}")
            lines.append(f"| {row} | " + " | ".join(cells_) + " |")
        lines += ["", f"Against {BASELINE}, paired over the {n} test queries (per-query means over seeds): mean "
                  "difference, its 95% bootstrap interval, t-test and randomization-test p-values (10,000 sign "
                  f"flips), raw / Holm-corrected over the {len(ROWS) - 1} models "
                  "(`sklearn_ltr.metrics.paired_significance`).", "",
                  "| model | metric | difference | 95% CI | t-test p (raw / Holm) | randomization p (raw / Holm) |",
                  "| --- | --- | ---: | --- | ---: | ---: |"]
        for m in METRICS:
            for r in significance(summary, dataset, m).results:
                lines.append(f"| {r.system} | {m.upper()} | {r.mean_difference:+.4f} | "
                             f"[{r.ci_low:+.4f}, {r.ci_high:+.4f}] | {_p(r.t_pvalue)} / {_p(r.t_pvalue_adjusted)} | "
                             f"{_p(r.randomization_pvalue)} / {_p(r.randomization_pvalue_adjusted)} |")
        lines += ["", "Test NDCG@10 per fold (mean over queries and seeds):", "",
                  "| model | " + " | ".join(f"fold {f}" for f in folds) + " |",
                  "| --- | " + " | ".join("---:" for _ in folds) + " |"]
        for row in ROWS:
            lines.append(f"| {row} | " + " | ".join(f"{v:.4f}" for v in summary[dataset, row]["fold_means"]) + " |")
        lines += ["", "Selected configuration per fold (grid index from 0, vali NDCG@10 of the first seed):", ""]
        for model in grids(settings):
            picks = []
            for fold in folds:
                index, _, best = select(cells, dataset, fold, model, settings)
                picks.append(f"{fold}: #{index} ({best['vali']:.4f})")
            lines.append(f"- {model}: " + ", ".join(picks))
        lines.append("")
    lines += cost_lines(store, datasets, folds)
    return "\n".join(lines) + "\n", summary


def _p(p):
    return f"{p:.4f}" if p >= 1e-4 else f"{p:.1e}"


def cost_lines(store, datasets, folds):
    cells = [c for c in store["cells"].values() if c["dataset"] in datasets and c["fold"] in folds]
    lines = ["## Cost", "", "Worker seconds per model (all cells: grid, seeds, ensembles), and cells run:", "",
             "| model | " + " | ".join(datasets) + " | cells |", "| --- | " + " | ".join("---:" for _ in datasets)
             + " | ---: |"]
    for row in ROWS:
        mine = [c for c in cells if c["model"] == row]
        lines.append(f"| {row} | " + " | ".join(f"{sum(c['seconds'] for c in mine if c['dataset'] == d):,.0f}"
                                                for d in datasets) + f" | {len(mine)} |")
    total, cpu = sum(c["seconds"] for c in cells), sum(c["cpu_seconds"] for c in cells)
    loads = [v for c in cells for v in c["load"]]
    lines += ["", f"{len(cells)} cells, {total / 60:.1f} worker-minutes ({cpu / 60:.1f} CPU-minutes: about the "
              f"worker-minutes on a quiet machine); load average seen by the cells {min(loads):.2f} to "
              f"{max(loads):.2f}.", ""]
    return lines


def figure(summary, datasets, folds, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(datasets), figsize=(6 * len(datasets), 4), squeeze=False)
    x = np.arange(len(ROWS))
    for ax, dataset in zip(axes[0], datasets, strict=True):
        for j, (m, marker) in enumerate(zip(METRICS, "os^", strict=True)):
            stats = [_interval(summary[dataset, row]["values"][m]) for row in ROWS]
            ax.errorbar(x + (j - 1) * 0.2, [s[0] for s in stats], yerr=[s[1] for s in stats], fmt=marker,
                        capsize=3, label=m.upper())
        n = len(summary[dataset, BASELINE]["values"]["ndcg@10"])
        ax.set_title(f"{dataset.upper()}: {n} test queries (folds {', '.join(map(str, folds))})")
        ax.set_xticks(x, ROWS, rotation=25, ha="right")
        ax.set_ylabel("test NDCG (mean, 95% CI over queries)")
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)

"""Real data with missing values: which preprocessing helps which ranker on LETOR 4.0 MQ2007-agg.

MQ2007-agg's 21 features are the ranks that 21 input rankers gave each document (1 = best), and NULL
where a ranker did not retrieve it (22-77% of each feature). The readers load NULL as NaN. Every
ranker (and a pointwise Ridge baseline) is trained on the five LETOR folds under five preprocessings:

- ``impute``: ``SimpleImputer(mean)`` then ``StandardScaler`` (LambdaMART: the raw NaN, which LightGBM
  routes down each split's learned default branch);
- ``impute+ind``: the same with missing-value indicator columns (LambdaMART: NaN plus the indicators);
- ``qnorm``: ``QueryNormalizer("zscore")`` (NaN-aware, per query) before ``impute``;
- ``qnorm+ind``: ``QueryNormalizer("zscore")`` before ``impute+ind``;
- ``recip+ind``: ``QueryNormalizer("reciprocal")`` (1 / rank), NaN filled with 0 (a rank never
  reached) with indicators, then ``StandardScaler``.

Each model has one configuration (seed 0), early-stopped on the fold's vali partition through
``fit(..., X_val=, y_val=, groups_val=)``; the preprocessing is fitted on the training partitions and
applied to vali and test with their own query ids. Per-query NDCG@1/5/10 on the test partitions of the
five folds (all 1,692 queries once) are stored in a JSON file, so that an interrupted run resumes; the
report pairs each preprocessing with the model's ``impute`` row, query by query
(``sklearn_ltr.metrics.paired_significance``, Holm over the four alternatives).

    PYTHONPATH=. python benchmarks/bench_mq2007_agg.py            # all folds, models and preprocessings
    PYTHONPATH=. python benchmarks/bench_mq2007_agg.py --folds 1 --models LambdaMART Ridge
    PYTHONPATH=. python benchmarks/bench_mq2007_agg.py --report   # the table from the stored results
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
from _common import data_dir, machine

import sklearn_ltr  # noqa: F401  (first: its OpenMP setting reaches torch and LightGBM)

RESULTS = Path(__file__).resolve().parent / "results"
STORE = RESULTS / "mq2007_agg.json"
REPORT = RESULTS / "mq2007_agg.md"
METRICS = (1, 5, 10)
VARIANTS = ("impute", "impute+ind", "qnorm", "qnorm+ind", "recip+ind")
BASE_VARIANT = "impute"
MODELS = ("Ridge", "LambdaMART", "RankNet", "DASALC", "SetRank")
_NEURAL = {"early_stopping": True, "random_state": 0, "batch_size": 32}
CONFIGS = {
    "Ridge": {"alpha": 1.0},
    "LambdaMART": {"n_estimators": 1000, "learning_rate": 0.05, "num_leaves": 31, "min_child_samples": 20,
                   "subsample": 0.8, "subsample_freq": 1, "colsample_bytree": 0.8, "early_stopping_rounds": 50,
                   "eval_at": (10,), "random_state": 0, "n_jobs": 2},
    "RankNet": {"hidden_sizes": (64, 32), "lr": 1e-3, "max_epochs": 40, "n_iter_no_change": 5, **_NEURAL},
    "DASALC": {"hidden_size": 64, "n_attention_layers": 1, "head_size": 16, "n_heads": 2, "dropout": 0.2,
               "noise_std": 0.5, "max_epochs": 15, "n_iter_no_change": 3, **_NEURAL},
    "SetRank": {"d_model": 32, "n_heads": 2, "n_blocks": 1, "max_epochs": 15, "n_iter_no_change": 3, **_NEURAL},
}


def _steps(variant, model):
    """The preprocessing steps of ``variant`` for ``model`` (a list of transformers)."""
    from sklearn.impute import SimpleImputer
    from sklearn.preprocessing import StandardScaler

    from sklearn_ltr.preprocessing import QueryNormalizer

    indicators = variant.endswith("+ind")
    if variant == "recip+ind":
        fill = [QueryNormalizer("reciprocal"), SimpleImputer(strategy="constant", fill_value=0.0, add_indicator=True)]
        return fill if model == "LambdaMART" else [*fill, StandardScaler()]
    steps = [QueryNormalizer("zscore")] if variant.startswith("qnorm") else []
    if model == "LambdaMART":  # NaN stays: LightGBM learns where missing values go
        return [*steps, _Indicators()] if indicators else steps
    return [*steps, SimpleImputer(strategy="mean", add_indicator=indicators), StandardScaler()]


class _Indicators:
    """Missing-value indicator columns appended to ``X``, NaN kept (for trees): the columns NaN in training."""

    def fit(self, X, groups=None):
        self.columns_ = np.flatnonzero(np.isnan(X).any(axis=0))
        return self

    def transform(self, X, groups=None):
        return np.hstack([X, np.isnan(X[:, self.columns_]).astype(X.dtype)])


def _apply(steps, X, groups, *, fit):
    from sklearn_ltr.preprocessing import QueryNormalizer

    for step in steps:
        kwargs = {"groups": groups} if isinstance(step, (QueryNormalizer, _Indicators)) else {}
        if fit:
            step.fit(X, **kwargs)
        X = step.transform(X, **kwargs)
    return X


def _model(name):
    from sklearn.linear_model import Ridge

    from sklearn_ltr import DASALCRanker, LambdaMARTRanker, RankNetRanker, SetRankRanker

    cls = {"Ridge": Ridge, "LambdaMART": LambdaMARTRanker, "RankNet": RankNetRanker, "DASALC": DASALCRanker,
           "SetRank": SetRankRanker}[name]
    return cls(**CONFIGS[name])


def run_cell(fold, model, variant):
    """Per-query test NDCG@1/5/10 (and the fit's time and epochs) of one model, preprocessing and fold."""
    from sklearn_ltr.metrics import ndcg_per_query
    from sklearn_ltr.model_selection import load_letor_fold

    train, vali, test = load_letor_fold(data_dir("mq2007-agg"), fold)
    steps = _steps(variant, model)
    X = _apply(steps, train[0], train[2], fit=True)
    X_vali = _apply(steps, vali[0], vali[2], fit=False)
    X_test = _apply(steps, test[0], test[2], fit=False)
    estimator = _model(model)
    start = time.perf_counter()
    if model == "Ridge":
        estimator.fit(X, train[1])
    else:
        estimator.fit(X, train[1], train[2], X_val=X_vali, y_val=vali[1], groups_val=vali[2])
    seconds = time.perf_counter() - start
    scores = estimator.predict(X_test) if model == "Ridge" else estimator.predict(X_test, groups=test[2])
    ids = np.unique(test[2])
    per_query = {f"ndcg@{k}": ndcg_per_query(test[1], scores, test[2], k=k)[1].tolist() for k in METRICS}
    rounds = getattr(estimator, "n_iter_", None) or getattr(estimator, "n_estimators_", None)
    return {"queries": [int(q) for q in ids], **per_query, "fit_seconds": seconds,
            "rounds": None if rounds is None else int(rounds), "features": int(X.shape[1])}


def _load():
    return json.loads(STORE.read_text()) if STORE.exists() else {"cells": {}, "runs": []}


def run(folds, models, variants):
    store = _load()
    start, load_start = time.time(), os.getloadavg()[0]
    for fold in folds:
        for model in models:
            for variant in variants:
                key = f"{fold}/{model}/{variant}"
                if key in store["cells"]:
                    continue
                cell = run_cell(fold, model, variant)
                store["cells"][key] = cell
                STORE.write_text(json.dumps(store))
                print(f"fold {fold} {model:10s} {variant:10s} NDCG@10 {np.mean(cell['ndcg@10']):.4f} "
                      f"({cell['fit_seconds']:.1f} s, {cell['rounds']} rounds; load {os.getloadavg()[0]:.1f})",
                      flush=True)
    store["runs"].append({"date": time.strftime("%Y-%m-%d"), "minutes": round((time.time() - start) / 60, 1),
                          "load": [round(load_start, 2), round(os.getloadavg()[0], 2)]})
    STORE.write_text(json.dumps(store))


def _per_query(store, model, variant, metric):
    """Per-query values over the five folds' test queries, sorted by query id (None if a fold is missing)."""
    ids, values = [], []
    for fold in range(1, 6):
        cell = store["cells"].get(f"{fold}/{model}/{variant}")
        if cell is None:
            return None
        ids += cell["queries"]
        values += cell[metric]
    order = np.argsort(ids, kind="stable")
    return np.asarray(values)[order]


def report(store):
    from sklearn_ltr.metrics import paired_significance

    runs = store["runs"]
    lines = [
        "# MQ2007-agg (LETOR 4.0, rank aggregation, NULL = missing): preprocessing by ranker, five folds", "",
        f"{machine('torch', cpus='{} CPUs (shared)', python=False)}; "
        + "; ".join(f"run of {r['date']}: {r['minutes']} min, load {r['load'][0]} -> {r['load'][1]}" for r in runs)
        + ".", "",
        "Command: `PYTHONPATH=. python benchmarks/bench_mq2007_agg.py` (the protocol is the script's docstring). "
        "Test NDCG over the 1,692 queries of the five test partitions (each query once), exponential gain, "
        "queries without a relevant document score 1. One configuration per model, seed 0, early-stopped on "
        "the fold's vali partition.", "",
        "| model | " + " | ".join(VARIANTS) + " |", "| --- |" + " ---: |" * len(VARIANTS),
    ]
    for model in MODELS:
        cells = []
        for variant in VARIANTS:
            values = _per_query(store, model, variant, "ndcg@10")
            cells.append("-" if values is None else f"{values.mean():.4f}")
        lines.append(f"| {model} | " + " | ".join(cells) + " |")
    lines += ["", "NDCG@10 of each preprocessing against the same model's `impute` row, paired over the 1,692 test "
              "queries: mean difference, 95% bootstrap interval, randomization-test p-value (10,000 sign flips), "
              "raw / Holm over the four alternatives.", "",
              "| model | preprocessing | NDCG@1 diff | NDCG@5 diff | NDCG@10 diff | 95% CI (NDCG@10) | p raw / Holm |",
              "| --- | --- | ---: | ---: | ---: | --- | ---: |"]
    for model in MODELS:
        base = {m: _per_query(store, model, BASE_VARIANT, f"ndcg@{m}") for m in METRICS}
        if base[10] is None:
            continue
        others = {v: _per_query(store, model, v, "ndcg@10") for v in VARIANTS[1:]}
        others = {v: values for v, values in others.items() if values is not None}
        if not others:
            continue
        result = paired_significance(base[10], others, tests=("randomization", "bootstrap"), correction="holm",
                                     random_state=0)
        for row in result:
            variant = row.system
            diffs = [(_per_query(store, model, variant, f"ndcg@{m}") - base[m]).mean() for m in METRICS]
            lines.append(
                f"| {model} | {variant} | " + " | ".join(f"{d:+.4f}" for d in diffs)
                + f" | [{row.ci_low:+.4f}, {row.ci_high:+.4f}] | {row.randomization_pvalue:.4f} / "
                f"{row.randomization_pvalue_adjusted:.4f} |")
    lines += ["", "Fit seconds (sum over folds) and features after preprocessing:", "",
              "| model | " + " | ".join(VARIANTS) + " |", "| --- |" + " ---: |" * len(VARIANTS)]
    for model in MODELS:
        cells = []
        for variant in VARIANTS:
            fold_cells = [store["cells"].get(f"{fold}/{model}/{variant}") for fold in range(1, 6)]
            fold_cells = [c for c in fold_cells if c is not None]
            cells.append("-" if not fold_cells else
                         f"{sum(c['fit_seconds'] for c in fold_cells):.0f} s ({fold_cells[0]['features']})")
        lines.append(f"| {model} | " + " | ".join(cells) + " |")
    REPORT.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--folds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    parser.add_argument("--report", action="store_true", help="only write the report from the stored results")
    args = parser.parse_args()
    if not args.report:
        run(args.folds, args.models, args.variants)
    report(_load())


if __name__ == "__main__":
    main()

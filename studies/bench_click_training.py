"""Why the library's rankers trained on a click log rank worse than the reference trainer: one cause at a time.

The debiasing study (``bench_debias_protocols.py``, ``results/debias_protocols.md``) found the
library's single tower (``RankNetRanker(loss="sigmoid_ce")``) 0.03-0.08 NDCG@5 below the
reference trainer's (``debias_protocols.fit_reference``: pointwise cross-entropy over rows in
batches of 32 rows, early stopping on the validation clicks' NDCG@5) on the same click logs.
This script trains the library's single tower on the logs of the study's cells (same seeds,
same rows: ``bench_debias_protocols._click_data``) with one change at a time against the
study's library set-up, and prints test NDCG@5 on the true labels beside the reference
trainer's value for the same cells (read from ``results/debias_protocols.json``).

Variants (``VARIANTS``; each a dict of changes to the study's set-up):

- ``study``: the library's row of the study: result pages as lists, batches of 32 pages, 20
  epochs, lr 1e-3, weight decay 1e-5, the loss averaged per page then over pages.
- ``rows``: each page weighted by its number of rows (``sample_weight``), so that the loss is
  the mean over rows, as the reference trainer's.
- ``early stopping``: at most 30 epochs, stop after 5 without a gain in the validation click
  log's NDCG@5 (the reference trainer's rule), best epoch kept.
- ``early stopping, 10% of the pages held out``: the same rule on the ranker's own held-out
  pages (``early_stopping=True, validation_fraction=0.1``, its ``valid_ndcg@10`` on the clicks),
  for a user with no separate validation log.
- ``lr 3e-3``, ``epochs 40``, ``batch 8 pages``: one training-length or step-size change each.
- and combinations of the changes that help.

Run (from the repository root; about 10 min on 2 cores)::

    PYTHONPATH=. python studies/bench_click_training.py [--seeds 0 1] [--datasets mq2008 mslr]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch
from joblib import Parallel, delayed
from skorch.callbacks import EarlyStopping

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_debias_protocols import _click_data, _test_queries, load_study
from sklearn.preprocessing import StandardScaler

from sklearn_ltr import RankNetRanker
from sklearn_ltr.metrics import ndcg_per_query
from sklearn_ltr.training import ValidationNDCG

RESULTS = Path(__file__).resolve().parent / "results"
STUDY = {"hidden_sizes": (64, 32), "lr": 1e-3, "weight_decay": 1e-5, "max_epochs": 20, "batch_size": 32}
VARIANTS = {
    "study": {},
    "rows": {"rows": True},
    "early stopping": {"early_stopping": True},
    "lr 3e-3": {"lr": 3e-3},
    "epochs 40": {"max_epochs": 40},
    "batch 8 pages": {"batch_size": 8},
    "rows + early stopping": {"rows": True, "early_stopping": True},
    "early stopping, 10% of the pages held out": {"held_out": True},
    "rows + early stopping + batch 8": {"rows": True, "early_stopping": True, "batch_size": 8},
    "early stopping + batch 8 pages": {"early_stopping": True, "batch_size": 8},
    "early stopping, patience 10": {"early_stopping": True, "patience": 10},
    "early stopping + lr 3e-3": {"early_stopping": True, "lr": 3e-3},
    "early stopping + lr 3e-4": {"early_stopping": True, "lr": 3e-4},
    "early stopping + rows + batch 4 pages": {"early_stopping": True, "rows": True, "batch_size": 4},
    "early stopping, batches not bucketed by length": {"early_stopping": True, "unbucketed": True},
    "early stopping, each impression its own list": {"early_stopping": True, "row_lists": True},
}


class _Args:
    data_dir = os.environ.get("SKLEARN_LTR_DATA", str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    folds = (1,)
    mslr_queries = (6000, 1000, 1000)
    data_seed = 0


def fit_variant(changes, train, val, seed):
    if not changes.get("unbucketed"):
        return _fit_variant(changes, train, val, seed)
    # Batches of pages drawn at random, not grouped by length: on a down-sampled click log a page's length
    # follows its clicks, so length-bucketed batches hold pages alike in their share of clicks. The default is
    # restored after the fit: a worker process runs other variants after this one.
    from sklearn_ltr.training import _batches

    defaults = _batches.QueryBatches.__init__.__kwdefaults__
    pool_batches, defaults["pool_batches"] = defaults["pool_batches"], 1
    try:
        return _fit_variant(changes, train, val, seed)
    finally:
        defaults["pool_batches"] = pool_batches


def _fit_variant(changes, train, val, seed):
    X, clicks, _, session = train
    X_val, clicks_val, session_val = val[:3]
    scaler = StandardScaler().fit(X)
    params = {**STUDY, **{k: v for k, v in changes.items() if k in STUDY}}
    callbacks = None
    if changes.get("early_stopping"):
        params["max_epochs"] = 30
        callbacks = [("valid_clicks", ValidationNDCG(k=5, X=scaler.transform(X_val).astype(np.float32),
                                                     y=clicks_val, groups=session_val, name="valid_clicks")),
                     ("stop", EarlyStopping(monitor="valid_clicks", lower_is_better=False,
                                            patience=changes.get("patience", 5), load_best=True))]
    if changes.get("held_out"):
        # What a user without a separate validation log does: the ranker holds out 10% of the pages.
        params.update(max_epochs=30, early_stopping=True, validation_fraction=0.1, n_iter_no_change=5)
    weight = None
    if changes.get("rows"):
        _, inverse, counts = np.unique(session, return_inverse=True, return_counts=True)
        weight = counts[inverse].astype(np.float64)
    model = RankNetRanker(loss="sigmoid_ce", random_state=seed, device="cpu", callbacks=callbacks, **params)
    # A pointwise loss needs no lists: each impression its own list gives batches of 32 rows drawn across all
    # pages, the reference trainer's batches.
    groups = np.arange(len(clicks)) if changes.get("row_lists") else session
    model.fit(scaler.transform(X).astype(np.float32), clicks, groups, sample_weight=weight)
    return model, scaler


def run(dataset, seed, names):
    torch.set_num_threads(1)
    folds, y_max = load_study(_Args, dataset)
    splits = folds[1]
    cfg = {"sessions": 10 if dataset == "mq2008" else 1, "keep": 0.1}
    X_test, y_test, qid_test = splits["test"]
    keep = _test_queries(y_test, qid_test)[1]
    out = []
    for protocol, train, val in _click_data(dataset, 1, 1.0, seed, splits, y_max, cfg):
        for name in names:
            start = time.perf_counter()
            model, scaler = fit_variant(VARIANTS[name], train, val, seed)
            scores = model.predict(scaler.transform(X_test).astype(np.float32))
            values = ndcg_per_query(y_test, scores, qid_test, k=5, empty_value=None)[1][keep]
            out.append({"dataset": dataset, "seed": seed, "protocol": protocol, "variant": name,
                        "ndcg": float(values.mean()), "epochs": model.n_iter_,
                        "seconds": time.perf_counter() - start})
    return out


def reference(dataset, seed, protocol):
    """The reference trainer's Single Tower on the same cell (fold 1, w = 1), from the study's store."""
    store = json.loads((RESULTS / "debias_protocols.json").read_text())
    for cell in store[f"{dataset} current"]["cells"]:
        if cell["fold"] == 1 and cell["w"] == 1.0 and cell["seed"] == seed:
            return float(np.mean(cell["results"][protocol]["Single Tower"]["ndcg"]))
    return float("nan")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["mq2008", "mslr"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS))
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--out", default=None, help="JSON file for the rows (default: print only)")
    args = parser.parse_args(argv)
    load = Path("/proc/loadavg").read_text().split()[:3] if Path("/proc/loadavg").exists() else ["?"]
    start = time.perf_counter()
    jobs = [(d, s, [v]) for d in args.datasets for s in args.seeds for v in args.variants]
    rows = [r for part in Parallel(n_jobs=args.n_jobs)(delayed(run)(*job) for job in jobs) for r in part]
    print(f"# {len(rows)} fits in {time.perf_counter() - start:.0f} s; load average at start {' '.join(load)}")
    print("| data set | positions | variant | NDCG@5 (seeds " + ",".join(map(str, args.seeds))
          + ") | reference single tower | epochs | s per fit |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: |")
    for d in args.datasets:
        for p in ("true-rank", "reference"):
            ref = np.mean([reference(d, s, p) for s in args.seeds])
            for v in args.variants:
                sel = [r for r in rows if r["dataset"] == d and r["protocol"] == p and r["variant"] == v]
                print(f"| {d} | {p} | {v} | {np.mean([r['ndcg'] for r in sel]):.3f} | {ref:.3f} | "
                      f"{np.mean([r['epochs'] for r in sel]):.1f} | {np.mean([r['seconds'] for r in sel]):.0f} |")
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()

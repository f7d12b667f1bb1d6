"""Pairwise debiasing for trees: Unbiased LambdaMART against naive and LightGBM/XGBoost debiasing, on MQ2008 clicks.

Data: MQ2008 Fold 1 (``$SKLEARN_LTR_DATA/mq2008/Fold1``). Clicks are simulated on the *train*
split with :func:`sklearn_ltr.clicks.simulate_click_log` (``--sessions`` result pages per query,
logging ranker ``w * y + (1 - w) * U``, ``w = 0.7``, every page its own list), under two click
models: the position-based model (examination ``1 / position``, click noise 0.1) and the cascade
model (scan from the top, stop at the first click, click noise 0.1). Every method trains on
those rows (features, clicks, positions, sessions) with 200 trees at learning rate 0.05; with
``--early-stopping labels`` it stops on the vali split's NDCG@5 of the true labels (patience 20),
with ``none`` (default) it keeps all 200 trees. The score is NDCG@5 of the true labels of the
test split (exponential gain, LightGBM's convention for queries without relevant documents),
mean over ``--seeds`` seeds (the seed drives the simulation and the models).

Methods:

- ``naive``: ``LambdaMARTRanker`` (LightGBM lambdarank) on the clicks;
- ``lightgbm positions``: ``fit(..., positions=pos)``, LightGBM's built-in position biases;
- ``unbiased p=0`` / ``p=1``: ``LambdaMARTRanker(position_bias="unbiased_lambdamart",
  lambdarank_position_bias_regularization=p)``, the library's Unbiased LambdaMART (Hu et al., 2019);
- ``true propensities``: ``fit(..., propensity=theta)``, pairs weighted by the clicked document's
  clipped inverse true examination probability (position-based: ``1 / position``; cascade: the
  probability that the user got down to the document, ``prod (1 - a(y))`` over the documents above);
- ``library, unweighted``: the library's objective with every pair weight 1 (``propensity=1``):
  separates the objective from the debiasing;
- ``xgboost naive`` / ``xgboost unbiased``: ``XGBRanker(objective="rank:ndcg")`` without and
  with ``lambdarank_unbiased=True`` (rows of each session sorted by display position, which
  XGBoost reads as the position).

Run: ``SKLEARN_LTR_DATA=../shared/data PYTHONPATH=. python benchmarks/bench_unbiased_lambdamart.py
[--seeds 2] [--models pbm cascade] [--early-stopping none|labels]`` (prints the table).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from _common import data_dir

from sklearn_ltr.clicks import CascadeModel, PositionBasedModel, simulate_click_log
from sklearn_ltr.datasets import load_svmlight_ranking
from sklearn_ltr.metrics import ndcg_score
from sklearn_ltr.rankers import LambdaMARTRanker

N_TREES, LEARNING_RATE, PATIENCE, EPSILON, W = 200, 0.05, 20, 0.1, 0.7
METHODS = ("naive", "lightgbm positions", "unbiased p=0", "unbiased p=1", "true propensities",
           "library, unweighted", "xgboost naive", "xgboost unbiased")


def load(root):
    fold = Path(root) / "mq2008" / "Fold1"
    return {name: load_svmlight_ranking(fold / f"{name}.txt") for name in ("train", "vali", "test")}


def true_propensity(log, y, click_model):
    """Examination probability of each logged row under the simulating click model."""
    if click_model == "pbm":
        return 1.0 / log.positions
    attract = EPSILON + (1 - EPSILON) * (2.0 ** y[log.rows] - 1) / (2.0 ** 2 - 1)
    order = np.lexsort((log.positions, log.sessions))
    skip = np.log(np.maximum(1.0 - attract[order], 1e-12))  # a(2) = 1: nobody gets below a perfect document
    above = np.cumsum(skip) - skip  # log prod over the rows above, then minus the session's start
    starts = np.r_[0, np.flatnonzero(np.diff(log.sessions[order])) + 1]
    above -= np.repeat(above[starts], np.diff(np.r_[starts, len(order)]))
    propensity = np.empty(len(order))
    propensity[order] = np.exp(above)
    return np.maximum(propensity, 1e-9)  # never examined (never clicked): any weight, it weighs no pair


def fit_predict(method, log, X, propensity, data, seed, early_stopping):
    X_train, clicks, sessions, positions = X[log.rows], log.clicks, log.sessions, log.positions
    X_vali, y_vali, q_vali = data["vali"]
    X_test = data["test"][0]
    if method.startswith("xgboost"):
        from xgboost import XGBRanker

        order = np.lexsort((positions, sessions))  # by session, then by display position
        extra = {"early_stopping_rounds": PATIENCE, "eval_metric": "ndcg@5"} if early_stopping == "labels" else {}
        model = XGBRanker(objective="rank:ndcg", lambdarank_unbiased=method == "xgboost unbiased", tree_method="hist",
                          n_estimators=N_TREES, learning_rate=LEARNING_RATE, n_jobs=1, random_state=seed, **extra)
        fit = {"eval_set": [(X_vali, y_vali)], "eval_qid": [q_vali], "verbose": False} if extra else {}
        model.fit(X_train[order], clicks[order], qid=sessions[order], **fit)
        return model.predict(X_test)
    params = {"n_estimators": N_TREES, "learning_rate": LEARNING_RATE, "n_jobs": 1, "random_state": seed}
    fit = {}
    if early_stopping == "labels":
        params.update(early_stopping_rounds=PATIENCE, eval_at=(5,))
        fit["eval_set"] = [(X_vali, y_vali, q_vali)]
    if method == "lightgbm positions":
        fit["positions"] = positions
    elif method.startswith("unbiased"):
        params.update(position_bias="unbiased_lambdamart",
                      lambdarank_position_bias_regularization=float(method.split("=")[1]))
        fit["positions"] = positions
    elif method == "true propensities":
        fit["propensity"] = propensity
    elif method == "library, unweighted":
        fit["propensity"] = np.ones(len(clicks))
    model = LambdaMARTRanker(**params).fit(X_train, clicks, groups=sessions, **fit)
    return model.predict(X_test)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=data_dir(required=False))
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--sessions", type=int, default=10)
    parser.add_argument("--models", nargs="+", default=["pbm", "cascade"], choices=["pbm", "cascade"])
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--early-stopping", default="none", choices=["none", "labels"])
    args = parser.parse_args()
    data = load(args.data_dir)
    X, y, qid = data["train"]
    y_test, q_test = data["test"][1], data["test"][2]
    results = {}
    for click_model in args.models:
        model = PositionBasedModel(eta=1.0, epsilon=EPSILON) if click_model == "pbm" else CascadeModel(epsilon=EPSILON)
        for seed in range(args.seeds):
            log = simulate_click_log(y, qid, click_model=model, w=W, sessions=args.sessions, y_max=2,
                                     random_state=seed)
            propensity = true_propensity(log, y, click_model)
            for method in args.methods:
                start = time.perf_counter()
                scores = fit_predict(method, log, X, propensity, data, seed, args.early_stopping)
                ndcg = ndcg_score(y_test, scores, q_test, k=5)
                results.setdefault((click_model, method), []).append(ndcg)
                print(f"{click_model:8s} seed {seed} {method:22s} NDCG@5 {ndcg:.4f} "
                      f"({time.perf_counter() - start:.1f} s)", flush=True)
    print(f"\n| method | {' | '.join(args.models)} |")
    print(f"| --- | {' | '.join('---' for _ in args.models)} |")
    for method in args.methods:
        cells = []
        for click_model in args.models:
            values = results[(click_model, method)]
            cells.append(f"{np.mean(values):.4f} ({' / '.join(f'{v:.3f}' for v in values)})")
        print(f"| {method} | {' | '.join(cells)} |")


if __name__ == "__main__":
    main()

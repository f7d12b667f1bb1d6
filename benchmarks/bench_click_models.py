"""Which way of learning from clicks works under which click model: the table of the click-log page.

For each data set (MQ2008 and MQ2007-agg, LETOR Fold 1: train S1-S3 (MQ2007-agg: S1 only), validation
S4, test S5), click model and seed, a logging ranker of quality ``w = 0.7`` shows every training query
``SESSIONS`` times (the top ``TOP_K`` documents of ``w * y + (1 - w) * U(0, y_max)``) and the click model clicks
(:func:`sklearn_ltr.clicks.simulate_click_log`); the validation queries get a log of their own. No
method sees a label of the training or validation queries. The click models:

- ``PBM eta=1`` and ``PBM eta=2``: examination ``(1 / k) ** eta``, click noise 0.1;
- ``cascade``: top-down scan stopping at the first click (Craswell et al., 2008);
- ``DBN``: the dynamic Bayesian network (Chapelle and Zhang, 2009);
- ``trust bias``: examination ``1 / k`` with the position-dependent clicks on non-relevant
  documents of Vardasbi et al. (2020).

The methods, every one selected on the validation log by the recipe of the click-log page (the IPS
estimate of DCG@5 with the propensities estimated from the training log; neural rankers stop early on
it, tree rankers take the number of trees that maximises it):

- ``naive``: RankNet (``sigmoid_ce``) on the clicks;
- ``IPS (estimated)`` / ``IPS (true)``: the same with inverse-propensity weights, from the estimate or
  from the click model's true examination (position-based models only);
- ``DLA``: ``TwoTowerDebiasedRanker(combination="dla")``; ``PAL``: its additive two-tower model;
- ``affine``: the affine correction for trust bias with its estimated parameters;
- ``LambdaMART (clicks)``: plain LambdaMART on the clicks;
- ``Unbiased LambdaMART``: the library's (Hu et al., 2019);
- ``XGBoost unbiased``: XGBoost's ``lambdarank_unbiased``.

The score is NDCG@5 of the true labels on the test queries. Per-cell results go to a JSON file, so
that an interrupted run resumes.

    PYTHONPATH=. python benchmarks/bench_click_models.py                 # everything (2 worker processes)
    PYTHONPATH=. python benchmarks/bench_click_models.py --datasets mq2008 --seeds 0 --models "PBM eta=1"
    PYTHONPATH=. python benchmarks/bench_click_models.py --report        # the table from the stored results
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
STORE = RESULTS / "click_models.json"
REPORT = RESULTS / "click_models.md"
DATASETS = ("mq2008", "mq2007-agg")
CLICK_MODELS = ("PBM eta=1", "PBM eta=2", "cascade", "DBN", "trust bias")
METHODS = ("naive", "IPS (estimated)", "IPS (true)", "DLA", "PAL", "affine", "LambdaMART (clicks)",
           "Unbiased LambdaMART", "XGBoost unbiased")
TREES = ("LambdaMART (clicks)", "Unbiased LambdaMART", "XGBoost unbiased")
# MQ2007-agg trains on its first partition only (339 queries, 14,105 documents): logs of the size of
# MQ2008's three (471 queries), so that the 30 cells run in under an hour on two cores.
TRAIN_PARTITIONS = {"mq2008": (1, 2, 3), "mq2007-agg": (1,)}
W = 0.7
SESSIONS = 10
TOP_K = 10
MAX_POSITION = 10
K = 5
N_TREES = 300
TREE_STEP = 10
NET = {"hidden_sizes": (64, 32), "lr": 1e-3, "batch_size": 32, "max_epochs": 30, "early_stopping": True,
       "n_iter_no_change": 5, "device": "cpu"}


# ------------------------------------------------------------------------------------------ data


def load_dataset(name):
    """``{"train"|"vali"|"test": (X_trees, X_net, y, qid)}`` and the highest grade of the data set."""
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from sklearn_ltr.datasets import load_svmlight_ranking
    from sklearn_ltr.preprocessing import QueryNormalizer

    folder = data_dir("mq2008", "partitions") if name == "mq2008" else data_dir("mq2007-agg")
    parts = {split: [load_svmlight_ranking(folder / f"S{i}.txt") for i in ids]
             for split, ids in (("train", TRAIN_PARTITIONS[name]), ("vali", (4,)), ("test", (5,)))}
    n_features = max(X.shape[1] for split in parts.values() for X, _, _ in split)
    splits = {}
    for split, files in parts.items():
        X = np.concatenate([np.pad(X, ((0, 0), (0, n_features - X.shape[1]))) for X, _, _ in files])
        splits[split] = (X, np.concatenate([y for _, y, _ in files]).astype(np.int64),
                         np.concatenate([q for _, _, q in files]).astype(np.int64))
    X_train, _, qid_train = splits["train"]
    if name == "mq2008":  # dense features in [0, 1]
        scale = StandardScaler().fit(X_train)

        def network_features(X, qid):
            return scale.transform(X).astype(np.float32)
    else:  # ranks with NULL: reciprocal ranks, 0 where absent, missing-value indicators (the real-data page)
        normalizer = QueryNormalizer("reciprocal")
        rest = make_pipeline(SimpleImputer(strategy="constant", fill_value=0.0, add_indicator=True),
                             StandardScaler()).fit(normalizer.fit_transform(X_train, groups=qid_train))

        def network_features(X, qid):
            return rest.transform(normalizer.transform(X, groups=qid)).astype(np.float32)
    data = {split: (X, network_features(X, qid), y, qid) for split, (X, y, qid) in splits.items()}
    return data, int(max(splits[s][1].max() for s in splits))


_CACHE = {}


def dataset(name):
    if name not in _CACHE:
        _CACHE[name] = load_dataset(name)
    return _CACHE[name]


def click_model(name):
    from sklearn_ltr.clicks import CascadeModel, DynamicBayesianNetwork, PositionBasedModel

    return {"PBM eta=1": lambda: PositionBasedModel(eta=1.0),
            "PBM eta=2": lambda: PositionBasedModel(eta=2.0),
            "cascade": lambda: CascadeModel(),
            "DBN": lambda: DynamicBayesianNetwork(),
            "trust bias": lambda: PositionBasedModel(eta=1.0, trust_bias="vardasbi2020")}[name]()


class Log:
    """One simulated click log of a split: network and tree features of each impression, clicks, positions."""

    def __init__(self, split, model, y_max, seed):
        from sklearn_ltr.clicks import simulate_click_log

        X_trees, X_net, y, qid = split
        log = simulate_click_log(y, qid, click_model=model, w=W, sessions=SESSIONS, top_k=TOP_K, y_max=y_max,
                                 random_state=seed)
        self.rows, self.clicks, self.positions, self.sessions = log.rows, log.clicks, log.positions, log.sessions
        self.documents = log.rows  # a training row is one (query, document)
        self.queries = log.groups
        self.X_trees, self.X_net = X_trees[log.rows], X_net[log.rows]


# --------------------------------------------------------------------------------------- methods


def estimate_propensity(log):
    """The estimate the click-log page recommends, from the training log alone."""
    from sklearn_ltr.clicks import estimate_propensity_document_em

    return estimate_propensity_document_em(log.clicks, log.positions, log.queries, log.documents,
                                           max_position=MAX_POSITION, n_bootstrap=0, random_state=0)


def ips_criterion(valid, propensity_val):
    from sklearn_ltr.metrics import ips_dcg_score

    return lambda scores: ips_dcg_score(valid.clicks, scores, valid.sessions, propensity_val, k=K)


def neural(method, train, valid, context, seed):
    """A neural ranker trained on the log, stopped on the validation log's IPS-DCG@5."""
    from sklearn_ltr import RankNetRanker, TwoTowerDebiasedRanker
    from sklearn_ltr.training import ValidationNDCG

    callbacks = [ValidationNDCG(k=K, X=valid.X_net, y=valid.clicks, groups=valid.sessions,
                                propensity=context["propensity_val"])]
    settings = {**NET, "random_state": seed, "callbacks": callbacks}
    if method in ("DLA", "PAL"):
        ranker = TwoTowerDebiasedRanker(combination="dla" if method == "DLA" else "additive",
                                        max_position=MAX_POSITION, observation_lr=1e-2, **settings)
        return ranker.fit(train.X_net, train.clicks, train.sessions, positions=train.positions)
    propensity = {"naive": None, "IPS (estimated)": context["propensity"], "IPS (true)": context["true_propensity"],
                  "affine": context["affine"]}[method]
    ranker = RankNetRanker(loss="sigmoid_ce", **settings)
    return ranker.fit(train.X_net, train.clicks, train.sessions, propensity=propensity)


def _best_trees(predict, X_val, criterion):
    """The number of trees (a multiple of ``TREE_STEP``) that maximises the validation criterion."""
    counts = range(TREE_STEP, N_TREES + 1, TREE_STEP)
    values = [criterion(predict(X_val, n)) for n in counts]
    return counts[int(np.argmax(values))]


def trees(method, train, valid, context, seed):
    """A tree ranker with the number of trees chosen on the validation log; returns ``predict(X)``."""
    criterion = context["criterion"]
    if method == "XGBoost unbiased":
        from xgboost import XGBRanker

        order = np.lexsort((train.positions, train.sessions))  # by session, then by display position
        model = XGBRanker(objective="rank:ndcg", lambdarank_unbiased=True, tree_method="hist", n_estimators=N_TREES,
                          learning_rate=0.05, n_jobs=1, random_state=seed)
        model.fit(train.X_trees[order], train.clicks[order], qid=train.sessions[order])

        def predict(X, n):
            return model.predict(X, iteration_range=(0, n))
    else:
        from sklearn_ltr import LambdaMARTRanker

        params = {"n_estimators": N_TREES, "learning_rate": 0.05, "n_jobs": 1, "random_state": seed}
        if method == "Unbiased LambdaMART":
            # p = 1: Hu et al.'s regularisation of the bias update (p = 0 is unstable on small logs)
            model = LambdaMARTRanker(position_bias="unbiased_lambdamart", lambdarank_position_bias_regularization=1.0,
                                     **params)
            model.fit(train.X_trees, train.clicks, train.sessions, positions=train.positions)
        else:
            model = LambdaMARTRanker(**params).fit(train.X_trees, train.clicks, train.sessions)

        def predict(X, n):
            return model.booster_.predict(X, num_iteration=n)
    n = _best_trees(predict, valid.X_trees, criterion)
    return lambda X: predict(X, n)


def run_cell(dataset_name, model_name, seed, methods):
    """Every method on the logs of one (data set, click model, seed): test NDCG@5 and seconds of each."""
    import torch

    from sklearn_ltr.metrics import ndcg_score

    torch.set_num_threads(1)
    data, y_max = dataset(dataset_name)
    model = click_model(model_name)
    seeds = np.random.SeedSequence([seed, DATASETS.index(dataset_name), CLICK_MODELS.index(model_name)])
    train_seed, valid_seed = (int(s.generate_state(1)[0]) for s in seeds.spawn(2))
    train, valid = Log(data["train"], model, y_max, train_seed), Log(data["vali"], model, y_max, valid_seed)
    start = time.perf_counter()
    estimate = estimate_propensity(train)
    context = {"propensity": estimate.propensity_of(train.positions),
               "propensity_val": estimate.propensity_of(valid.positions),
               "estimate_seconds": time.perf_counter() - start,
               "curve": estimate.propensity.tolist()}
    context["criterion"] = ips_criterion(valid, context["propensity_val"])
    examination = getattr(model, "examination", None)
    context["true_propensity"] = None if examination is None else examination(train.positions)
    context["affine"] = affine_parameters(train, model)
    _, _, y_test, qid_test = data["test"]
    X_test_trees, X_test_net = data["test"][0], data["test"][1]
    out = {"impressions": len(train.clicks), "clicks": int(train.clicks.sum()),
           "estimate_seconds": context["estimate_seconds"], "curve": context["curve"], "methods": {}}
    for method in methods:
        if method == "IPS (true)" and context["true_propensity"] is None:
            continue
        if method == "affine" and context["affine"] is None:
            continue
        start = time.perf_counter()
        if method in TREES:
            scores = trees(method, train, valid, context, seed)(X_test_trees)
        else:
            scores = neural(method, train, valid, context, seed).predict(X_test_net)
        out["methods"][method] = {"ndcg@5": float(ndcg_score(y_test, scores, qid_test, k=K)),
                                  "seconds": time.perf_counter() - start}
    return out


def affine_parameters(train, model):
    """Per-row (alpha, beta) of the affine correction, estimated from the training log."""
    from sklearn_ltr.clicks import estimate_trust_bias_em

    estimate = estimate_trust_bias_em(train.clicks, train.positions, train.sessions, documents=train.documents,
                                      max_position=MAX_POSITION, random_state=0)
    return estimate.affine_of(train.positions)


# ------------------------------------------------------------------------------------- run, report


def _load():
    return json.loads(STORE.read_text()) if STORE.exists() else {"cells": {}, "runs": []}


def _work(job):
    dataset_name, model_name, seed, methods = job
    return f"{dataset_name}/{model_name}/{seed}", run_cell(dataset_name, model_name, seed, methods)


def run(datasets, models, seeds, methods, workers):
    from multiprocessing import get_context

    store = _load()
    jobs = [(d, m, s, methods) for s in seeds for d in datasets for m in models  # whole seeds first
            if f"{d}/{m}/{s}" not in store["cells"]]
    start, load_start = time.time(), os.getloadavg()[0]
    with get_context("forkserver").Pool(workers) as pool:
        for key, cell in pool.imap_unordered(_work, jobs):
            store["cells"][key] = cell
            STORE.write_text(json.dumps(store, indent=1))
            scores = " ".join(f"{m}={v['ndcg@5']:.3f}" for m, v in cell["methods"].items())
            print(f"{key}: {scores} (load {os.getloadavg()[0]:.1f})", flush=True)
    store["runs"].append({"date": time.strftime("%Y-%m-%d"), "minutes": round((time.time() - start) / 60, 1),
                          "load": [round(load_start, 2), round(os.getloadavg()[0], 2)], "workers": workers,
                          "machine": machine(python=False)})
    STORE.write_text(json.dumps(store, indent=1))


def _values(store, dataset_name, model_name, method):
    return [cell["methods"][method]["ndcg@5"] for key, cell in store["cells"].items()
            if key.startswith(f"{dataset_name}/{model_name}/") and method in cell["methods"]]


def _beats(a, b):
    return "-" if a is None or b is None else ("yes" if a > b else "no") + f" ({a - b:+.4f})"


def report(store):
    lines = ["# Learning from clicks under five click models", "",
             "`PYTHONPATH=. python benchmarks/bench_click_models.py` "
             + "; ".join(f"{r['date']}, {r['minutes']} min, {r['workers']} workers, load {r['load'][0]}-{r['load'][1]}"
                         for r in store["runs"]), "",
             f"Test NDCG@5 on the true labels (queries without a relevant document count 1), mean ± standard "
             f"deviation over the seeds (their number in brackets); LETOR Fold 1; logging ranker w = {W}, {SESSIONS} "
             f"sessions per query, top {TOP_K} shown; every method selected on a validation log of other queries "
             f"by its IPS-DCG@5 with the propensities of the document EM. A dash: not defined for that click model "
             f"(no examination curve).", ""]
    library = [m for m in METHODS if m != "XGBoost unbiased"]
    for dataset_name in DATASETS:
        lines += [f"## {dataset_name}", "", "| method | " + " | ".join(CLICK_MODELS) + " |",
                  "| --- |" + " ---: |" * len(CLICK_MODELS)]
        means = {}
        for method in METHODS:
            row = []
            for model_name in CLICK_MODELS:
                values = _values(store, dataset_name, model_name, method)
                means[method, model_name] = np.mean(values) if values else None
                row.append(f"{np.mean(values):.4f} ± {np.std(values):.4f} ({len(values)})" if values else "-")
            lines.append(f"| {method} | " + " | ".join(row) + " |")
        lines += ["", "| click model | Unbiased LambdaMART > LambdaMART (clicks) | Unbiased LambdaMART > XGBoost "
                  "unbiased | the library's best | ... > XGBoost unbiased |", "| --- | --- | --- | --- | --- |"]
        for model_name in CLICK_MODELS:
            ours = means.get(("Unbiased LambdaMART", model_name))
            naive = means.get(("LambdaMART (clicks)", model_name))
            xgb = means.get(("XGBoost unbiased", model_name))
            scored = {m: means[m, model_name] for m in library if means.get((m, model_name)) is not None}
            best = max(scored, key=scored.get) if scored else None
            lines.append(f"| {model_name} | {_beats(ours, naive)} | {_beats(ours, xgb)} | {best or '-'} | "
                         f"{_beats(scored.get(best), xgb)} |")
        lines.append("")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=DATASETS)
    parser.add_argument("--models", nargs="+", default=list(CLICK_MODELS), choices=CLICK_MODELS)
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--report", action="store_true", help="only print the table of the stored results")
    args = parser.parse_args()
    if not args.report:
        run(args.datasets, args.models, args.seeds, args.methods, args.workers)
    text = report(_load())
    REPORT.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()

"""Command line: ``python -m sklearn_ltr demo`` (console script ``sklearn-ltr``)."""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

__all__ = ["main"]


def _demo_models(quick, seed):
    from sklearn.linear_model import Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from sklearn_ltr import LambdaMARTRanker, Log1pTransformer, RankNetRanker

    epochs = 5 if quick else 30
    # name -> (model, whether it takes query ids: the pointwise regression baseline does not)
    return {
        "Ridge regression on labels (pointwise)": (make_pipeline(Log1pTransformer(), StandardScaler(), Ridge()), False),
        "LambdaMARTRanker": (
            LambdaMARTRanker(n_estimators=100 if quick else 300, learning_rate=0.05, random_state=seed, n_jobs=2), True
        ),
        "RankNetRanker": (make_pipeline(
            Log1pTransformer(), StandardScaler(),
            RankNetRanker(hidden_sizes=(64, 32), max_epochs=epochs, lr=1e-3, random_state=seed),
        ), True),
        "RankNetRanker, softmax loss": (make_pipeline(
            Log1pTransformer(), StandardScaler(),
            RankNetRanker(hidden_sizes=(64, 32), loss="softmax", max_epochs=epochs, lr=1e-3, random_state=seed),
        ), True),
    }


def run_demo(n_queries, quick, seed, out=sys.stdout):
    """Train every ranker on synthetic web-search-like data and print a table of test metrics."""
    import sklearn
    from sklearn.model_selection import GroupShuffleSplit

    from sklearn_ltr.datasets import make_ranking

    X, y, groups = make_ranking(n_queries=n_queries, n_features=40, random_state=seed)
    train, test = next(GroupShuffleSplit(test_size=0.25, random_state=seed).split(X, y, groups))
    print(
        f"sklearn_ltr demo: {n_queries} synthetic queries, {len(y):,} documents, {X.shape[1]} features, "
        f"labels 0-4; {len(np.unique(groups[test]))} queries held out for testing.\n",
        file=out,
    )
    rows = [("random scores", *_metrics(y[test], np.random.default_rng(seed).normal(size=len(test)), groups[test]),
             0.0)]
    # Metadata routing carries groups through the pipelines to the rankers' fit.
    with sklearn.config_context(enable_metadata_routing=True):
        for name, (model, takes_groups) in _demo_models(quick, seed).items():
            start = time.perf_counter()
            model.fit(X[train], y[train], **({"groups": groups[train]} if takes_groups else {}))
            fit_time = time.perf_counter() - start
            scores = model.predict(X[test], **({"groups": groups[test]} if takes_groups else {}))
            rows.append((name, *_metrics(y[test], scores, groups[test]), fit_time))
            print(f"  trained {name} in {fit_time:.1f} s", file=out)
    header = f"{'model':<40} {'NDCG@1':>7} {'NDCG@5':>7} {'NDCG@10':>8} {'MAP@10':>7} {'fit (s)':>8}"
    print("\n" + header, file=out)
    print("-" * len(header), file=out)
    for name, n1, n5, n10, map10, fit_time in rows:
        print(f"{name:<40} {n1:>7.4f} {n5:>7.4f} {n10:>8.4f} {map10:>7.4f} {fit_time:>8.1f}", file=out)
    return rows


def _metrics(y, scores, groups):
    from sklearn_ltr.metrics import average_precision_score, ndcg_score

    return (
        ndcg_score(y, scores, groups, k=1),
        ndcg_score(y, scores, groups, k=5),
        ndcg_score(y, scores, groups, k=10),
        average_precision_score(y, scores, groups, k=10),
    )


def main(argv=None):
    """Entry point of ``python -m sklearn_ltr`` and the ``sklearn-ltr`` script."""
    parser = argparse.ArgumentParser(prog="sklearn-ltr", description="Learning to rank with scikit-learn.")
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="train the rankers on embedded synthetic data and compare them")
    demo.add_argument("--queries", type=int, default=None, help="number of synthetic queries (default 600)")
    demo.add_argument("--quick", action="store_true", help="fewer queries and epochs (a smoke run)")
    demo.add_argument("--seed", type=int, default=0, help="random seed of the data and the models")
    args = parser.parse_args(argv)
    if args.command == "demo":
        n_queries = args.queries or (150 if args.quick else 600)
        if n_queries < 8:
            parser.error("--queries must be at least 8 (a quarter is held out for testing)")
        run_demo(n_queries, args.quick, args.seed)
    return 0

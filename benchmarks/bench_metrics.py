"""NDCG@10 over 1,000,000 rows in 10,000 interleaved queries of 100 documents.

Compares ``sklearn_ltr.metrics.ndcg_score`` given per-row query ids (one vectorised pass,
no loop over queries) and given a ``RankingEvaluator`` built once for the same labels and
queries (what early stopping, a search and a comparison of rankers reuse), with a
well-written per-query NumPy loop over pre-sorted slices, with calling
``sklearn.metrics.ndcg_score`` once per query, and with ranx (``evaluate(qrels, run,
"ndcg_burges@10")`` once its ``Qrels`` and ``Run`` are built), and checks that all agree.

ranx's ``"ndcg"`` is Järvelin and Kekäläinen's NDCG, whose gain is the label itself
(our ``gain="linear"``); ``"ndcg_burges"`` has the exponential gain ``2**y - 1`` (our
default). Every query of this data set has a relevant document (ranx needs one in the
qrels for each query of the run), and the scores have no ties, so the values agree.
ranx is not a dependency: without it the ranx rows are skipped with a message.

The load average (``os.getloadavg()``, 1 minute) is printed beside every timing: the
methods are timed in alternating rounds so that they share the machine's load.

Run: ``python benchmarks/bench_metrics.py`` (writes ``benchmarks/results/metrics.md``).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
import sklearn.metrics
from _common import machine

from sklearn_ltr.metrics import RankingEvaluator, ndcg_score


def make_data(n_queries, length, seed=0):
    rng = np.random.default_rng(seed)
    n = n_queries * length
    y = rng.choice(5, size=n, p=[0.51, 0.33, 0.13, 0.02, 0.01])
    score = rng.normal(size=n) + 0.3 * y
    groups = np.repeat(np.arange(n_queries), length)
    shuffle = rng.permutation(n)  # interleave the queries
    return y[shuffle], score[shuffle], groups[shuffle]


def loop_over_sorted_slices(y, score, offsets, k=10):
    """NDCG@k per query with NumPy on each query's contiguous slice (rows pre-sorted by query)."""
    discount = 1.0 / np.log2(np.arange(k) + 2.0)
    values = np.empty(len(offsets) - 1)
    for q in range(len(offsets) - 1):
        labels = y[offsets[q] : offsets[q + 1]]
        top = labels[np.argsort(-score[offsets[q] : offsets[q + 1]])[:k]]
        ideal = np.sort(labels)[::-1][:k]
        idcg = ((2.0**ideal - 1) * discount[: len(ideal)]).sum()
        dcg = ((2.0**top - 1) * discount[: len(top)]).sum()
        values[q] = dcg / idcg if idcg > 0 else 1.0
    return values.mean()


def sklearn_per_query(y, score, offsets, k=10):
    values = []
    gains = 2.0**y - 1  # scikit-learn's gain is the label itself: pass exponential gains
    for q in range(len(offsets) - 1):
        sl = slice(offsets[q], offsets[q + 1])
        if gains[sl].sum() == 0:
            values.append(1.0)
            continue
        values.append(sklearn.metrics.ndcg_score(gains[None, sl], score[None, sl], k=k))
    return float(np.mean(values))


def ranx_inputs(y, score, groups):
    """ranx's ``Qrels`` and ``Run``, and the numba typed lists its ``evaluate`` converts them to; None without ranx."""
    try:
        import pandas as pd
        from ranx import Qrels, Run
    except ImportError as error:
        print(f"ranx is not importable ({error}); skipping the ranx rows (pip install ranx to add them).")
        return None
    query = pd.Series(groups.astype(str), dtype=object)
    doc = pd.Series(np.arange(len(y)).astype(str), dtype=object)
    relevant = y > 0
    qrels = Qrels.from_df(pd.DataFrame({"q_id": query[relevant], "doc_id": doc[relevant],
                                        "score": y[relevant].astype(np.int64)}))
    run = Run.from_df(pd.DataFrame({"q_id": query, "doc_id": doc, "score": score}))
    return qrels, run, qrels.to_typed_list(), run.to_typed_list()


def timed(function, times, loads):
    start = time.perf_counter()
    value = function()
    times.append(time.perf_counter() - start)
    loads.append(os.getloadavg()[0])
    return value


def alternating(functions, repeat):
    """Time each function ``repeat`` times, one call of each per round: ``{name: (times, loads, value)}``."""
    results = {name: ([], [], None) for name in functions}
    for function in functions.values():  # warm-up (numba compilation, caches)
        function()
    for _ in range(repeat):
        for name, function in functions.items():
            times, loads, _ = results[name]
            results[name] = (times, loads, timed(function, times, loads))
    return results


def summary(times, loads, value):
    """``(best, median, load at the best, load range, value)``."""
    best = int(np.argmin(times))
    return min(times), float(np.median(times)), loads[best], (min(loads), max(loads)), value


def best_of(function, repeat):
    times, loads = [], []
    value = None
    for _ in range(repeat):
        value = timed(function, times, loads)
    return summary(times, loads, value)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--length", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--no-ranx", action="store_true", help="skip the ranx rows")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "metrics.md")
    args = parser.parse_args()

    y, score, groups = make_data(args.queries, args.length)
    n = len(y)
    # The loops get their data pre-sorted by query (not timed): the best case for them.
    order = np.argsort(groups, kind="stable")
    ys, ss = y[order], score[order]
    offsets = np.concatenate(([0], np.cumsum(np.bincount(groups))))
    assert (np.bincount(groups, weights=y > 0) > 0).all()  # every query has a relevant document

    start = time.perf_counter()
    evaluator = RankingEvaluator(y, groups)
    evaluator.score(score, "ndcg@10")  # prepares the gains and the ideal DCG@10 too
    build = time.perf_counter() - start
    ranx = None if args.no_ranx else ranx_inputs(y, score, groups)

    fast = {
        "ids": lambda: ndcg_score(y, score, groups, k=10),
        "evaluator": lambda: ndcg_score(evaluator.y_true, score, evaluator, k=10),
        "evaluator_linear": lambda: ndcg_score(evaluator.y_true, score, evaluator, k=10, gain="linear"),
    }
    if ranx is not None:
        from ranx import evaluate

        qrels, run, qrels_list, run_list = ranx
        fast["ranx_lists"] = lambda: evaluate(qrels_list, run_list, "ndcg_burges@10")
        fast["ranx_lists_linear"] = lambda: evaluate(qrels_list, run_list, "ndcg@10")
        fast["ranx_objects"] = lambda: evaluate(qrels, run, "ndcg_burges@10")
    results = {name: summary(*result) for name, result in alternating(fast, args.repeat).items()}
    loop = best_of(lambda: loop_over_sorted_slices(ys, ss, offsets), max(1, args.repeat // 3))
    reference = best_of(lambda: sklearn_per_query(ys, ss, offsets), 1)
    ours = results["ids"]
    for other in (results["evaluator"], loop, reference, results.get("ranx_lists"), results.get("ranx_objects")):
        if other is not None:
            assert abs(ours[-1] - other[-1]) < 1e-9, (ours, other)
    if "ranx_lists_linear" in results:
        assert abs(results["evaluator_linear"][-1] - results["ranx_lists_linear"][-1]) < 1e-9

    rows = [
        ("sklearn_ltr ndcg_score, per-row ids (interleaved input)", ours),
        ("sklearn_ltr ndcg_score, RankingEvaluator built once", results["evaluator"]),
        ("sklearn_ltr ndcg_score, RankingEvaluator built once, linear gain", results["evaluator_linear"]),
    ]
    if ranx is not None:
        rows += [
            ('ranx evaluate(qrels, run, "ndcg_burges@10"), its typed lists built once', results["ranx_lists"]),
            ('ranx evaluate(qrels, run, "ndcg@10") (linear gain), typed lists built once',
             results["ranx_lists_linear"]),
            ('ranx evaluate(Qrels, Run, "ndcg_burges@10") on the objects', results["ranx_objects"]),
        ]
    rows += [
        ("per-query NumPy loop over pre-sorted slices", loop),
        ("sklearn.metrics.ndcg_score called per query", reference),
    ]
    reference_row = results.get("ranx_lists", results["evaluator"])
    reference_name = "ranx (typed lists)" if "ranx_lists" in results else "the evaluator"
    lines = [
        f"NDCG@10 over {n:,} rows in {args.queries:,} interleaved queries of {args.length} documents",
        f"({machine('numpy')}; best and median of {args.repeat} runs, fast methods timed in alternating rounds;",
        "load = 1-minute load average after the best run, and its range over the runs)",
        "",
        f"Command: `python benchmarks/bench_metrics.py --queries {args.queries} --length {args.length} "
        f"--repeat {args.repeat}`",
        "",
        f"| method | best (s) | median (s) | load at best | load range | vs {reference_name} (median) | NDCG@10 |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, (best, median, load, (low, high), value) in rows:
        lines.append(f"| {name} | {best:.4f} | {median:.4f} | {load:.2f} | {low:.2f}-{high:.2f} | "
                     f"{median / reference_row[1]:.2f}x | {value:.6f} |")
    lines += ["", f"Building the RankingEvaluator (grouping, gains, ideal DCG@10) once: {build:.3f} s "
              f"(load {os.getloadavg()[0]:.2f})."]
    text = "\n".join(lines)
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()

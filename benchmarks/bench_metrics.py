"""NDCG@10 over 1,000,000 rows in 10,000 interleaved queries of 100 documents.

Compares ``sklearn_ltr.metrics.ndcg_score`` (one vectorised pass, no loop over
queries) with a well-written per-query NumPy loop over pre-sorted slices and with
calling ``sklearn.metrics.ndcg_score`` once per query, and checks all three agree.

Run: ``python benchmarks/bench_metrics.py`` (writes ``benchmarks/results/metrics.md``).
"""

from __future__ import annotations

import argparse
import platform
import time
from pathlib import Path

import numpy as np
import sklearn.metrics

from sklearn_ltr.metrics import ndcg_score


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


def best_of(function, repeat):
    times, value = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        value = function()
        times.append(time.perf_counter() - start)
    return min(times), float(np.median(times)), value


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--length", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "metrics.md")
    args = parser.parse_args()

    y, score, groups = make_data(args.queries, args.length)
    n = len(y)
    # The loops get their data pre-sorted by query (not timed): the best case for them.
    order = np.argsort(groups, kind="stable")
    ys, ss = y[order], score[order]
    offsets = np.concatenate(([0], np.cumsum(np.bincount(groups))))

    ours = best_of(lambda: ndcg_score(y, score, groups, k=10), args.repeat)
    loop = best_of(lambda: loop_over_sorted_slices(ys, ss, offsets), max(1, args.repeat // 2))
    reference = best_of(lambda: sklearn_per_query(ys, ss, offsets), 1)
    assert abs(ours[2] - loop[2]) < 1e-9 and abs(ours[2] - reference[2]) < 1e-9, (ours, loop, reference)

    rows = [
        ("sklearn_ltr.metrics.ndcg_score (interleaved input)", ours),
        ("per-query NumPy loop over pre-sorted slices", loop),
        ("sklearn.metrics.ndcg_score called per query", reference),
    ]
    lines = [
        f"NDCG@10 over {n:,} rows in {args.queries:,} interleaved queries of {args.length} documents",
        f"({platform.processor() or platform.machine()}, Python {platform.python_version()}, "
        f"NumPy {np.__version__}; best and median of repeated runs)",
        "",
        "| method | best (s) | median (s) | vs sklearn_ltr | NDCG@10 |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for name, (best, median, value) in rows:
        lines.append(f"| {name} | {best:.3f} | {median:.3f} | {median / ours[1]:.1f}x | {value:.6f} |")
    text = "\n".join(lines)
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()

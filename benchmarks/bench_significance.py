"""Significance tests between rankers: 10,000 queries x 10,000 resamples.

Times :func:`sklearn_ltr.metrics.paired_significance` on per-query values (each test
alone, then all three) and :func:`sklearn_ltr.metrics.compare_rankings` from labels and
scores (10,000 queries of 100 documents, NDCG@10 of every system, then the three tests),
for one and three systems compared with the baseline. Prints the load average next to
the timings: the machine may be shared.

Run: ``python benchmarks/bench_significance.py`` (writes ``benchmarks/results/significance.md``).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
from _common import machine

from sklearn_ltr.metrics import compare_rankings, ndcg_per_query, paired_significance


def make_data(n_queries, length, n_systems, seed=0):
    """Graded labels, interleaved query ids, and the scores of a baseline and ``n_systems`` others."""
    rng = np.random.default_rng(seed)
    n = n_queries * length
    y = rng.choice(5, size=n, p=[0.51, 0.33, 0.13, 0.02, 0.01])
    groups = np.repeat(np.arange(n_queries), length)
    shuffle = rng.permutation(n)
    y, groups = y[shuffle], groups[shuffle]
    baseline = 0.3 * y + rng.normal(size=n)
    others = {f"system_{j}": (0.3 + 0.01 * j) * y + rng.normal(size=n) for j in range(n_systems)}
    return y, groups, baseline, others


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
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "significance.md")
    args = parser.parse_args()

    load_before = os.getloadavg()
    y, groups, baseline, others = make_data(args.queries, args.length, n_systems=3)
    first = {"system_0": others["system_0"]}
    _, base_values = ndcg_per_query(y, baseline, groups, k=10)
    other_values = {name: ndcg_per_query(y, scores, groups, k=10)[1] for name, scores in others.items()}
    one_value = {"system_0": other_values["system_0"]}
    options = {"n_resamples": args.resamples, "random_state": 0}

    cases = [
        ("paired_significance, 1 system: t-test", lambda: paired_significance(base_values, one_value, tests="t-test")),
        ("paired_significance, 1 system: randomization",
         lambda: paired_significance(base_values, one_value, tests="randomization", **options)),
        ("paired_significance, 1 system: bootstrap",
         lambda: paired_significance(base_values, one_value, tests="bootstrap", **options)),
        ("paired_significance, 1 system: all three", lambda: paired_significance(base_values, one_value, **options)),
        ("paired_significance, 3 systems, Holm: all three",
         lambda: paired_significance(base_values, other_values, correction="holm", **options)),
        ("compare_rankings (NDCG@10 from 1M rows), 1 system: all three",
         lambda: compare_rankings(y, baseline, first, groups, k=10, **options)),
        ("compare_rankings (NDCG@10 from 1M rows), 3 systems, Holm: all three",
         lambda: compare_rankings(y, baseline, others, groups, k=10, correction="holm", **options)),
    ]
    rows = [(name, *best_of(function, args.repeat)) for name, function in cases]
    load_after = os.getloadavg()
    table = rows[-1][3]

    lines = [
        f"Significance tests: {args.queries:,} queries x {args.resamples:,} resamples "
        f"(randomization sign flips and bootstrap resamples); compare_rankings also computes NDCG@10 "
        f"of every system from {args.queries * args.length:,} rows",
        f"({machine('numpy')}; best and median of {args.repeat} runs; load average "
        f"{load_before[0]:.2f} before, {load_after[0]:.2f} after (1-minute))",
        "",
        "| case | best (s) | median (s) |",
        "| --- | ---: | ---: |",
    ]
    lines += [f"| {name} | {best:.3f} | {median:.3f} |" for name, best, median, _ in rows]
    lines += ["", "The last comparison:", "", "```", repr(table), "```"]
    text = "\n".join(lines)
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()

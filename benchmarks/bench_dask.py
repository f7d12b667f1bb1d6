"""LambdaMARTRanker on one machine vs on a 2-worker Dask LocalCluster: wall time and peak memory.

Data: synthetic MSLR-shaped rows (``make_ranking(preset="mslr")``, 136 float32 features), made in
``PARTS`` partitions. In "scattered" mode every partition reuses the same query ids, so each query has
rows in every partition, out of order: the ranker must shuffle rows by query before training (the
worst case). In "aligned" mode each partition owns its queries (the case of files read with
``read_svmlight_ranking_dask``): no shuffle. Both sides train on exactly the same rows.

* single machine: a fresh subprocess builds the partitions, concatenates them and runs
  ``LambdaMARTRanker(n_jobs=J).fit``; its peak RSS (``ru_maxrss``) is reported.
* cluster: a fresh ``LocalCluster(n_workers=2, threads_per_worker=1, processes=True)``; the
  partitions are generated *on the workers* (the client never holds the rows) and persisted before
  the timing starts; ``fit`` then zips, checks, shuffles, sorts and trains with
  ``lightgbm.dask.DaskLGBMRanker``. Peak RSS of each worker process, and of the client process
  (which also runs the scheduler), are reported.

Usage::

    PYTHONPATH=. python benchmarks/bench_dask.py [--rows 500000 1000000 2000000] [--trees 20]

Writes ``benchmarks/results/dask.md``; the load average is printed with every timing (the machine
is shared).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from _common import machine

ROOT = Path(__file__).resolve().parents[1]
PARTS = 4
OUT = ROOT / "benchmarks" / "results" / "dask.md"
MEAN_LIST = 122  # mean rows per query of the mslr preset


def make_part(i, n_queries, mode):
    """Partition ``i``: (X, y, qid); the same on both sides."""
    from sklearn_ltr.datasets import make_ranking

    X, y, qid = make_ranking(n_queries, preset="mslr", random_state=1000 + i)
    qid = qid.astype(np.int64)
    if mode == "aligned":
        qid = qid + i * n_queries
    else:  # scattered: query q has rows in every partition; rows out of query order
        order = np.random.default_rng(i).permutation(qid.shape[0])
        X, y, qid = X[order], y[order], qid[order]
    return X, y.astype(np.float64), qid


def _peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _load():
    return "/".join(f"{v:.1f}" for v in os.getloadavg())


def single(rows, mode, trees, jobs):
    """Run in a subprocess: fit on one machine; print a JSON line."""
    from sklearn_ltr.rankers import LambdaMARTRanker

    n_queries = max(1, rows // (MEAN_LIST * PARTS))
    parts = [make_part(i, n_queries, mode) for i in range(PARTS)]
    X = np.concatenate([p[0] for p in parts])
    y = np.concatenate([p[1] for p in parts])
    qid = np.concatenate([p[2] for p in parts])
    del parts
    data_mb = _peak_mb()
    load = _load()
    start = time.perf_counter()
    LambdaMARTRanker(n_estimators=trees, random_state=0, n_jobs=jobs).fit(X, y, groups=qid)
    seconds = time.perf_counter() - start
    result = {"rows": int(X.shape[0]), "fit_s": seconds, "peak_mb": _peak_mb(), "data_peak_mb": data_mb}
    print(json.dumps({**result, "load_before": load, "load_after": _load()}))


def cluster(rows, mode, trees):
    import dask
    import dask.array as da
    from distributed import Client, LocalCluster, wait

    from sklearn_ltr.rankers import LambdaMARTRanker

    n_queries = max(1, rows // (MEAN_LIST * PARTS))
    with (
        LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as lc,
        Client(lc) as client,
    ):
        blocks = [dask.delayed(make_part)(i, n_queries, mode) for i in range(PARTS)]
        X = da.concatenate([da.from_delayed(b[0], shape=(np.nan, 136), dtype=np.float32) for b in blocks])
        y = da.concatenate([da.from_delayed(b[1], shape=(np.nan,), dtype=np.float64) for b in blocks])
        qid = da.concatenate([da.from_delayed(b[2], shape=(np.nan,), dtype=np.int64) for b in blocks])
        X, y, qid = client.persist([X, y, qid])
        wait([X, y, qid])
        load = _load()
        start = time.perf_counter()
        ranker = LambdaMARTRanker(n_estimators=trees, random_state=0).fit(X, y, groups=qid)
        seconds = time.perf_counter() - start
        workers = sorted(client.run(_peak_mb).values())
        info = ranker.dask_info_
    return {
        "rows": info["n_samples"],
        "fit_s": seconds,
        "arrange_s": info["arrange_seconds"],
        "train_s": info["train_seconds"],
        "shuffled": info["shuffled"],
        "worker_peak_mb": workers,
        "client_peak_mb": _peak_mb(),
        "load_before": load,
        "load_after": _load(),
    }


def run_single(rows, mode, trees, jobs):
    cmd = [sys.executable, __file__, "--single", str(rows), mode, str(trees), str(jobs)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[500_000, 1_000_000, 2_000_000])
    parser.add_argument("--modes", nargs="+", default=["scattered"], choices=["scattered", "aligned"])
    parser.add_argument("--trees", type=int, default=20)
    parser.add_argument("--jobs", type=int, default=2, help="threads of the single-machine fit")
    parser.add_argument("--out", type=Path, default=OUT, help="results file (markdown)")
    parser.add_argument("--single", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.single:
        rows, mode, trees, jobs = args.single
        return single(int(rows), mode, int(trees), int(jobs))
    header = (
        "| rows | mode | setup | fit (s) | of which arrange (s) | train (s) | peak RSS per process (MB) "
        "| load avg before -> after |\n| ---: | --- | --- | ---: | ---: | ---: | --- | --- |"
    )
    lines = []
    for rows in args.rows:
        for mode in args.modes:
            s = run_single(rows, mode, args.trees, args.jobs)
            lines.append(
                f"| {s['rows']:,} | {mode} | 1 process, n_jobs={args.jobs} | {s['fit_s']:.1f} | - | {s['fit_s']:.1f} "
                f"| {s['peak_mb']:,.0f} (after data: {s['data_peak_mb']:,.0f}) "
                f"| {s['load_before']} -> {s['load_after']} |"
            )
            print(lines[-1], flush=True)
            _write(args, header, lines)
            c = cluster(rows, mode, args.trees)
            peaks = " / ".join(f"{m:,.0f}" for m in c["worker_peak_mb"])
            lines.append(
                f"| {c['rows']:,} | {mode} | 2 workers x 1 thread | {c['fit_s']:.1f} | {c['arrange_s']:.1f}"
                f"{' (shuffle)' if c['shuffled'] else ''} | {c['train_s']:.1f} | workers {peaks}; client+scheduler "
                f"{c['client_peak_mb']:,.0f} | {c['load_before']} -> {c['load_after']} |"
            )
            print(lines[-1], flush=True)
            _write(args, header, lines)
    print(f"\nwrote {args.out}")


def _write(args, header, lines):
    """Rewrite the results file after every row, so an interrupted run keeps what it measured."""
    info = (
        f"{machine(cpus='{} CPUs shared with other jobs')}; "
        f"{args.trees} trees, random_state=0, {PARTS} input partitions"
    )
    text = "\n".join(
        [
            "LambdaMARTRanker: one process vs a 2-worker Dask LocalCluster (synthetic MSLR-shaped, 136 features)",
            f"({info})",
            "",
            header,
            *lines,
            "",
        ]
    )
    args.out.write_text(text)


if __name__ == "__main__":
    main()

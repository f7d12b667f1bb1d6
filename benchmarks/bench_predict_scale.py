"""Predict at scale: every document of an MSLR-WEB30K-sized synthetic set (2.27M documents).

For each ranker: train briefly on a few hundred queries (prediction cost does not depend on
how well a model is trained), then score all 2.27 million documents of
``make_ranking(preset="mslr-web30k")`` (18,919 queries, 136 float32 features) with their query
ids, and report documents per second and the memory predict adds on top of the data: the peak
resident set size during predict (sampled every 20 ms) minus the resident set size before it.
Each ranker runs in a fresh process, so that one peak does not hide the next. "one block" scores the whole set as a
single block, as predict did before it scored blocks of whole queries.

Run: ``python benchmarks/bench_predict_scale.py [--quick] [--threads 2]`` (writes
``benchmarks/results/predict_scale.md``). ``--quick`` uses 1,000 queries instead of 18,919.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

RESULTS = Path(__file__).parent / "results" / "predict_scale.md"
TRAIN_QUERIES = 300


def _rankers():
    from sklearn_ltr import DASALCRanker, LambdaMARTRanker, RankNetRanker, SetRankRanker, TwoTowerDebiasedRanker

    neural = {"max_epochs": 1, "device": "cpu", "random_state": 0}
    return {
        "LambdaMARTRanker": lambda: LambdaMARTRanker(n_estimators=100, random_state=0),
        "RankNetRanker": lambda: RankNetRanker(hidden_sizes=(144, 144), **neural),
        "DASALCRanker": lambda: DASALCRanker(**neural),
        "SetRankRanker": lambda: SetRankRanker(**neural),
        "TwoTowerDebiasedRanker": lambda: TwoTowerDebiasedRanker(**neural),
    }


def _rss_mb():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


class _PeakSampler:
    """Highest resident set size seen by a thread that reads it every 20 ms."""

    def __enter__(self):
        import threading

        self.peak, self._stop = _rss_mb(), threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self):
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, _rss_mb())

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _rss_mb())


def run_one(name, n_queries, one_block):
    """Fit ``name`` briefly and time predict on every document; return a result dict."""
    import numpy as np

    from sklearn_ltr.datasets import make_ranking, simulate_clicks
    from sklearn_ltr.rankers import _neural

    X, y, qid = make_ranking(n_queries=n_queries, preset="mslr-web30k", random_state=0)
    train = qid < TRAIN_QUERIES
    ranker = _rankers()[name]()
    if name == "TwoTowerDebiasedRanker":
        positions, clicks = simulate_clicks(y[train], qid[train], w=1.0, y_max=4, random_state=0)
        ranker.fit(X[train], clicks, groups=qid[train], positions=positions)
    else:
        ranker.fit(X[train], y[train], groups=qid[train])
    if one_block:
        _neural._PREDICT_DOCUMENTS = X.shape[0] + 1
    before_rss = _rss_mb()
    with _PeakSampler() as sampler:
        start, cpu_start = time.perf_counter(), time.process_time()
        scores = ranker.predict(X, groups=qid)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    assert scores.shape == (X.shape[0],) and np.isfinite(scores).all()
    peak = sampler.peak
    return {
        "ranker": name, "one_block": one_block, "documents": int(X.shape[0]), "queries": len(np.unique(qid)),
        "seconds": seconds, "docs_per_s": X.shape[0] / seconds, "docs_per_cpu_s": X.shape[0] / cpu,
        "data_mb": X.nbytes / 2**20, "rss_before_mb": before_rss,
        "added_peak_mb": peak - before_rss, "peak_mb": peak,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 queries instead of 18,919")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rankers", nargs="*", default=None)
    parser.add_argument("--one", nargs=2, metavar=("RANKER", "ONE_BLOCK"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    n_queries = 1000 if args.quick else 18919
    if args.one:
        import torch

        torch.set_num_threads(args.threads)
        print(json.dumps(run_one(args.one[0], n_queries, args.one[1] == "1")))
        return
    names = args.rankers or list(_rankers())
    rows = []
    load = os.getloadavg()[0]
    for name in names:
        for one_block in ((False, True) if name != "LambdaMARTRanker" else (False,)):
            command = [sys.executable, __file__, "--threads", str(args.threads), "--one", name, str(int(one_block))]
            if args.quick:
                command.append("--quick")
            env = {**os.environ, "OMP_NUM_THREADS": str(args.threads)}
            output = subprocess.run(command, capture_output=True, text=True, check=True, env=env).stdout
            row = json.loads(output.strip().splitlines()[-1])
            rows.append(row)
            print(f"{name:24s} {'one block' if one_block else 'blocks':9s} {row['docs_per_s']:>12,.0f} docs/s "
                  f"{row['added_peak_mb']:>8,.0f} MB added (data {row['data_mb']:,.0f} MB)", flush=True)
    load_end = os.getloadavg()[0]
    import torch

    lines = [
        f"Predict throughput and memory at scale: make_ranking(preset=\"mslr-web30k\"), {rows[0]['queries']:,} "
        f"queries, {rows[0]['documents']:,} documents, 136 float32 features ({rows[0]['data_mb']:,.0f} MB); "
        f"models trained for one epoch (LambdaMART: 100 trees) on {TRAIN_QUERIES} queries, default architectures.",
        f"({platform.machine()}, {args.threads} threads, torch {torch.__version__}; load average "
        f"{load:.2f} at start, {load_end:.2f} at end; \"added\" = peak resident memory during predict minus "
        f"resident memory before it, sampled every 20 ms; each row a fresh process)",
        "",
        "| ranker | predict | documents/s | documents/CPU-s | seconds | memory added (MB) |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for row in rows:
        mode = "one block (before)" if row["one_block"] else "blocks of whole queries"
        if row["ranker"] == "LambdaMARTRanker":
            mode = "LightGBM predict"
        lines.append(f"| {row['ranker']} | {mode} | {row['docs_per_s']:,.0f} | {row['docs_per_cpu_s']:,.0f} | "
                     f"{row['seconds']:.1f} | {row['added_peak_mb']:,.0f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.quick:
        RESULTS.write_text(text)


if __name__ == "__main__":
    main()

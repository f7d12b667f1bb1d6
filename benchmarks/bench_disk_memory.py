"""Memory per process of DASALCRanker.fit from memory and from a memory map, with 1 and N gloo processes.

For each data size (MSLR-shaped: 136 float32 features, ``make_ranking(preset="mslr")`` lists,
about 122 documents a query) and each number of processes, a fresh set of processes (spawned,
joined in a gloo group for N > 1, ``distributed=True``) loads the training data and fits
``DASALCRanker`` for one epoch:

- *in memory*: ``np.load("features.npy")``, the array read into each process's own memory;
- *memory map*: ``load_ranking_layout(...)`` (``mmap_mode="r"``) of the same rows, which the
  rankers train on in place (``sklearn_ltr.training._mapped``).

A thread of each process samples ``/proc/self/status`` (``RssAnon``: private anonymous memory,
which the page cache's file pages do not count) and ``/proc/self/smaps_rollup`` (``Pss``: the
proportional set size, each shared page divided among the processes mapping it) every 0.2 s from
before the data is loaded to the end of ``fit``; the table gives each process's peaks (the
largest over the processes) and the training throughput (rows of the epoch per second of
``fit``, all processes together). The page cache is not dropped between runs (that needs root):
the first run over a file may read it from disk, later runs from the cache.

``--convert`` also measures ``convert_ranking`` of an SVMlight file of each size (written
first): its peak resident memory (``VmHWM``) in a fresh process.

Run: ``python benchmarks/bench_disk_memory.py --rows 500000 4000000 --max-batches 0 100 --processes 1 4
--convert --convert-rows 500000 1000000`` (about 30 minutes on 2 shared CPU cores); ``--quick`` for
50,000 rows. Writes
``benchmarks/results/disk_memory.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
from _common import machine, utc_now

RESULTS = Path(__file__).resolve().parent / "results"
#: A small DASALC, so that an epoch over millions of rows stays minutes on a CPU; lists subsampled
#: to 200 documents, so that a batch's activations (attention is quadratic in the list) stay
#: small beside the data being measured.
MODEL = {"hidden_size": 32, "n_layers": 2, "n_attention_layers": 1, "n_heads": 2, "head_size": 16, "batch_size": 32,
         "max_list_length": 200, "max_epochs": 1, "device": "cpu", "random_state": 0}
_MIB = 2**20


def _kib(path, key):
    with open(path) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return 0


class _Sampler(threading.Thread):
    """Peaks of RssAnon and Pss of this process, sampled every ``interval`` seconds."""

    def __init__(self, interval=0.2):
        super().__init__(daemon=True)
        self.interval, self.anon, self.pss, self.stop = interval, 0, 0, threading.Event()

    def sample(self):
        self.anon = max(self.anon, _kib("/proc/self/status", "RssAnon"))
        self.pss = max(self.pss, _kib("/proc/self/smaps_rollup", "Pss"))

    def run(self):
        while not self.stop.is_set():
            self.sample()
            self.stop.wait(self.interval)


def _stop_after(n_batches):
    """A skorch callback that ends the epoch after ``n_batches`` training batches (Ctrl-C's way), counting rows."""
    from skorch.callbacks import Callback

    class StopAfter(Callback):
        def initialize(self):
            self.batches_ = self.rows_ = 0
            return self

        def on_batch_end(self, net, batch=None, training=False, **kwargs):
            if training:
                self.batches_ += 1
                self.rows_ += int(batch[0]["mask"].sum())
                if n_batches and self.batches_ >= n_batches:
                    raise KeyboardInterrupt

    return StopAfter()


def _worker(rank, world_size, layout, mapped, n_batches, init_file, out):
    import warnings

    import torch

    torch.set_num_threads(1)
    if world_size > 1:
        import torch.distributed as dist

        dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world_size)
    from sklearn_ltr import DASALCRanker
    from sklearn_ltr.datasets import load_ranking_layout

    sampler = _Sampler()
    sampler.sample()
    base_anon, base_pss = sampler.anon, sampler.pss
    sampler.start()
    X, y, groups = load_ranking_layout(layout)
    if not mapped:
        X = np.array(X)  # the whole array in this process's memory
    y, groups = np.asarray(y), np.asarray(groups)
    counter = _stop_after(n_batches)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TrainingInterruptedWarning of a partial epoch
        ranker = DASALCRanker(**MODEL, distributed=world_size > 1, callbacks=[("count", counter)],
                              keep_training_state=True).fit(X, y, groups=groups)
    seconds = time.perf_counter() - start
    trained = dict(ranker.net_.callbacks_)["count"].rows_
    sampler.stop.set()
    sampler.join()
    sampler.sample()
    with open(os.path.join(out, f"rank{rank}.json"), "w") as f:
        json.dump({"anon": sampler.anon, "pss": sampler.pss, "base_anon": base_anon, "base_pss": base_pss,
                   "seconds": seconds, "rows": int(X.shape[0]), "trained": trained}, f)


def _run(layout, world_size, mapped, n_batches):
    import torch.multiprocessing as mp

    with tempfile.TemporaryDirectory() as out:
        mp.spawn(_worker, args=(world_size, layout, mapped, n_batches, os.path.join(out, "init"), out),
                 nprocs=world_size, join=True)
        ranks = [json.load(open(os.path.join(out, f"rank{r}.json"))) for r in range(world_size)]
    return {"anon": max(r["anon"] for r in ranks), "pss": max(r["pss"] for r in ranks),
            "base_anon": max(r["base_anon"] for r in ranks), "seconds": max(r["seconds"] for r in ranks),
            "rows": ranks[0]["rows"], "trained": sum(r["trained"] for r in ranks)}


def _write_data(n_rows, folder):
    """An MSLR-shaped layout of about ``n_rows`` rows, generated 2,000 queries at a time (bounded memory)."""
    from sklearn_ltr.datasets import make_ranking, write_ranking_layout

    chunks, total, seed = [], 0, 0
    while total < n_rows:
        X, y, qid = make_ranking(2000, preset="mslr", random_state=seed)
        keep = np.searchsorted(np.cumsum(np.bincount(qid)), n_rows - total, side="left") + 1
        rows = qid < keep
        chunks.append((X[rows].astype(np.float32), y[rows], qid[rows] + 2000 * seed))
        total += int(rows.sum())
        seed += 1
    features = os.path.join(folder, "features.npy")
    array = np.lib.format.open_memmap(features, mode="w+", dtype=np.float32, shape=(total, 136))
    start = 0
    for X, _, _ in chunks:
        array[start:start + len(X)] = X
        start += len(X)
    array.flush()
    del array
    y = np.concatenate([c[1] for c in chunks])
    qid = np.concatenate([c[2] for c in chunks])
    del chunks
    layout = os.path.join(folder, f"mslr_{n_rows}.ltr")
    write_ranking_layout(np.load(features, mmap_mode="r"), y, qid, layout)
    os.unlink(features)
    return layout


_CONVERT = """
import resource, sys, time
from sklearn_ltr.datasets import convert_ranking
start = time.perf_counter()
convert_ranking(sys.argv[1], sys.argv[2])
seconds = time.perf_counter() - start
print(open("/proc/self/status").read().split("VmHWM:")[1].split()[0], seconds)
"""


def _convert_peak(layout, folder):
    """Peak RSS (VmHWM) of a fresh process converting an SVMlight file of ``layout``'s rows, and its seconds."""
    from sklearn.datasets import dump_svmlight_file

    from sklearn_ltr.datasets import load_ranking_layout

    X, y, qid = load_ranking_layout(layout)
    text = os.path.join(folder, "train.txt")
    with open(text, "wb") as f:
        for start in range(0, X.shape[0], 100_000):
            rows = slice(start, start + 100_000)
            dump_svmlight_file(np.round(X[rows], 4), np.array(y[rows]), f, query_id=np.array(qid[rows]),
                               zero_based=False)
    size = os.path.getsize(text)
    result = subprocess.run([sys.executable, "-c", _CONVERT, text, os.path.join(folder, "converted.ltr")],
                            capture_output=True, text=True, check=True)
    peak_kib, seconds = result.stdout.split()
    os.unlink(text)
    return int(peak_kib) * 1024, float(seconds), size


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[500_000, 4_000_000])
    parser.add_argument("--max-batches", type=int, nargs="+", default=None,
                        help="per size of --rows: end the epoch after this many global batches (0: the whole epoch)")
    parser.add_argument("--convert-rows", type=int, nargs="*", default=None,
                        help="sizes whose conversion is measured (default: those of --rows, with --convert)")
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--convert", action="store_true", help="also measure convert_ranking's peak memory")
    parser.add_argument("--quick", action="store_true", help="50,000 rows, 1 and 2 processes")
    parser.add_argument("--out", default=str(RESULTS / "disk_memory.md"))
    parser.add_argument("--folder", default=None, help="where the data is written (default: a temporary folder)")
    args = parser.parse_args(argv)
    if args.quick:
        args.rows, args.processes = [50_000], [1, 2]
    batches = dict(zip(args.rows, args.max_batches or [0] * len(args.rows), strict=True))
    convert_rows = set(args.rows if args.convert_rows is None else args.convert_rows) if args.convert else set()
    lines = [
        "# Memory per process of DASALCRanker.fit: in memory against a memory map", "",
        f"`python benchmarks/{Path(__file__).name} {' '.join(sys.argv[1:] if argv is None else argv)}` on "
        f"{utc_now()}, {machine(cpus='{} CPUs (shared with other work)', python=False)}, torch threads 1 per "
        f"process. Model: `DASALCRanker({MODEL})`, one epoch, "
        f"MSLR-shaped data (136 float32 features). Peaks are per process (the largest over the processes); "
        f"`RssAnon` is private anonymous memory, `Pss` counts shared file pages once, divided among the "
        f"processes that map them. Rows/s: documents trained on (after subsampling, all processes together) over "
        f"the seconds of `fit`. Batches: the global batches of the epoch trained on (`all`: the whole epoch; a "
        f"number: the epoch ended there, to keep the largest runs within time on 2 cores). The load average "
        f"(1, 5, 15 min) is read before each run.", "",
        "| rows | features MiB (float32) | processes | data | batches | peak RssAnon MiB | peak Pss MiB | "
        "RssAnon before load MiB | fit s | rows/s | mapped/in-memory rows/s | load average |",
        "| ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    converted = []
    with tempfile.TemporaryDirectory(dir=args.folder) as folder:
        for n_rows in sorted(set(args.rows) | convert_rows):
            layout = _write_data(n_rows, folder)
            for world_size in args.processes if n_rows in batches else ():
                speeds = {}
                for mapped in (False, True):
                    load = open("/proc/loadavg").read().split()[:3]
                    result = _run(layout, world_size, mapped, batches[n_rows])
                    speeds[mapped] = result["trained"] / result["seconds"]
                    ratio = f"{speeds[True] / speeds[False]:.2f}" if mapped else ""
                    lines.append(
                        f"| {result['rows']:,} | {result['rows'] * 136 * 4 / _MIB:,.0f} | {world_size} | "
                        f"{'memory map' if mapped else 'in memory'} | {batches[n_rows] or 'all'} | "
                        f"{result['anon'] / _MIB:,.0f} | "
                        f"{result['pss'] / _MIB:,.0f} | {result['base_anon'] / _MIB:,.0f} | {result['seconds']:,.1f} | "
                        f"{speeds[mapped]:,.0f} | {ratio} | {' '.join(load)} |")
                    print(lines[-1], flush=True)
            if n_rows in convert_rows:
                load = open("/proc/loadavg").read().split()[:3]
                peak, seconds, size = _convert_peak(layout, folder)
                converted.append(f"| {n_rows:,} | {size / _MIB:,.0f} | {peak / _MIB:,.0f} | {seconds:,.0f} | "
                                 f"{' '.join(load)} |")
                print(converted[-1], flush=True)
            os.system(f"rm -rf {layout}")
    if converted:
        lines += ["", "## convert_ranking: peak resident memory of a fresh process", "",
                  "An SVMlight file of the same rows (values rounded to 4 decimals) converted to the layout, "
                  "streaming in blocks of 16 MiB of text. Peak RSS is `VmHWM` of the converting process (Python, "
                  "NumPy, SciPy and scikit-learn imported included).", "",
                  "| rows | text MiB | peak RSS MiB | seconds | load average |", "| ---: | ---: | ---: | ---: | --- |",
                  *converted]
    Path(args.out).write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

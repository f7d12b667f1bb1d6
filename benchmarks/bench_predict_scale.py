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

``--speed`` measures instead how close predict comes to its limits, per model and size
(``--queries``, MSLR-shaped: 600 queries are about 74,000 documents, 8,200 about 1,000,000):

- **predict**: warm ``ranker.predict(X, groups)``, validation, grouping, canonical order, copies and
  un-sorting included;
- **module**: the module's forward pass over the very batches predict scores, already on the device;
- **host-fed**: the limit from host memory: each block's float32 rows (in predict's order, ordinary
  pageable memory) copied to the device, padded there by one gather and scored by the module, one
  block after the other, synchronised at the end;

and predict / module, predict / host-fed. Best of ``--repeats`` runs each.
Run: ``python benchmarks/bench_predict_scale.py --speed --device cuda`` (three models at about 74,000 and
1,000,000 documents, about a minute on a GPU); writes ``benchmarks/results/predict_speed_<device>.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from _common import device_name, machine, utc_now

RESULTS = Path(__file__).parent / "results" / "predict_scale.md"
TRAIN_QUERIES = 300
SPEED_MODELS = ("RankNetRanker", "DASALCRanker", "SetRankRanker")


#: ``--speed --model-sizes``: the neural rankers' settings per model size ("default" is RankNet 144-144 and
#: DASALC's and SetRank's defaults).
MODEL_SIZES = {
    "small": {"RankNetRanker": {"hidden_sizes": (32,)},
              "DASALCRanker": {"hidden_size": 64, "n_layers": 2, "n_attention_layers": 1, "n_heads": 2,
                               "head_size": 16},
              "SetRankRanker": {"d_model": 32, "n_blocks": 1, "n_heads": 2}},
    "default": {"RankNetRanker": {"hidden_sizes": (144, 144)}, "DASALCRanker": {}, "SetRankRanker": {}},
    "large": {"RankNetRanker": {"hidden_sizes": (512, 256, 128)},
              "DASALCRanker": {"hidden_size": 512, "n_layers": 3, "n_attention_layers": 3, "n_heads": 4,
                               "head_size": 64},
              "SetRankRanker": {"d_model": 256, "n_blocks": 4, "n_heads": 4}},
}


def _rankers(device="cpu", size="default"):
    from sklearn_ltr import DASALCRanker, LambdaMARTRanker, RankNetRanker, SetRankRanker, TwoTowerDebiasedRanker

    neural = {"max_epochs": 1, "device": device, "random_state": 0}
    settings = MODEL_SIZES[size]
    return {
        "LambdaMARTRanker": lambda: LambdaMARTRanker(n_estimators=100, random_state=0),
        "RankNetRanker": lambda: RankNetRanker(**settings["RankNetRanker"], **neural),
        "DASALCRanker": lambda: DASALCRanker(**settings["DASALCRanker"], **neural),
        "SetRankRanker": lambda: SetRankRanker(**settings["SetRankRanker"], **neural),
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


def torch_device(device):
    import torch

    return torch.device(device)


def _sync(device):
    import torch

    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def _best(function, device, repeats):
    """Fastest of ``repeats`` timed runs of ``function``, synchronised; on CUDA after one untimed run.

    The untimed run is for CUDA's lazy start (kernels, allocator); on CPU the runs are long
    enough without it (at a million documents an attention model takes minutes on 2 cores).
    """
    if torch_device(device).type == "cuda":
        function()
    best = float("inf")
    for _ in range(repeats):
        _sync(device)
        start = time.perf_counter()
        function()
        _sync(device)
        best = min(best, time.perf_counter() - start)
    return best


def speed_row(ranker, X, qid, repeats):
    """predict, module and host-fed documents per second of a fitted ranker on ``X``."""
    import dataclasses

    import numpy as np
    import torch

    from sklearn_ltr.training import _predict

    device = torch.device(ranker.net_.device)
    module = ranker.net_.module_.eval()
    # The blocks predict scores, staged in host memory as predict stages them.
    blocks, documents = ranker._scoring_plan(X, qid)
    host = list(_predict.prefetched_blocks(blocks, X, {}, documents, _predict._Transfer("cpu")))
    resident = [dataclasses.replace(block, tensors={k: v.to(device) for k, v in block.tensors.items()})
                for block in host]
    packed = bool(getattr(module, "packed_inputs", False))  # the batches predict gives the module
    batches = [inputs for block in resident for inputs, _ in block.device_batches(packed)]
    features = [np.ascontiguousarray(block.tensors["X"].numpy()) for block in host]  # pageable host rows

    def run_module():
        for inputs in batches:
            module(inputs["X"], inputs["mask"])

    def run_host_fed():
        for block, rows in zip(resident, features, strict=True):
            copied = dataclasses.replace(block, tensors={**block.tensors, "X": torch.from_numpy(rows).to(device)})
            for inputs, _ in copied.device_batches(packed):
                module(inputs["X"], inputs["mask"])

    with torch.no_grad():
        timings = {"module": _best(run_module, device, repeats), "host-fed": _best(run_host_fed, device, repeats)}
    timings["predict"] = _best(lambda: ranker.predict(X, qid), device, repeats)
    return {name: len(X) / seconds for name, seconds in timings.items()}


def _describe_sizes(sizes):
    return "; ".join(f"{size}: " + ", ".join(f"{name.removesuffix('Ranker')} {settings or 'defaults'}"
                                            for name, settings in MODEL_SIZES[size].items())
                     for size in sizes.split(","))


def speed(args):
    """Print and write predict against the module and the host-fed module, per model and size."""
    import numpy as np
    import torch

    from sklearn_ltr.datasets import make_ranking

    if args.device == "cpu":
        torch.set_num_threads(args.threads)
    sizes = [int(q) for q in args.queries.split(",")]
    load_start = os.getloadavg()[0]
    data = {}
    # Training and scored queries from one draw: the scored rows come from the training distribution, as in
    # use (make_ranking draws each feature's scale per seed, so another seed's rows would all be drift).
    X_all, y_all, qid_all = make_ranking(n_queries=TRAIN_QUERIES + max(sizes), preset="mslr", random_state=0)
    query = np.unique(qid_all, return_inverse=True)[1]
    train = query < TRAIN_QUERIES
    X_train, y_train, qid_train = X_all[train], y_all[train], qid_all[train]
    for q in sizes:
        rows = (query >= TRAIN_QUERIES) & (query < TRAIN_QUERIES + q)
        data[q] = np.ascontiguousarray(X_all[rows]), qid_all[rows]
    header = ("| model | size | documents | predict docs/s | module docs/s | host-fed docs/s | predict / module "
              "| predict / host-fed | load |")
    lines = [header, "|" + " --- |" * 3 + " ---: |" * 6]
    print(header, flush=True)
    for model_size in args.model_sizes.split(","):
        for name in (args.rankers or SPEED_MODELS):
            ranker = _rankers(args.device, model_size)[name]().fit(X_train, y_train, groups=qid_train)
            for q in sizes:
                X, qid = data[q]
                row = speed_row(ranker, X, qid, args.repeats)
                line = (f"| {name.removesuffix('Ranker')} | {model_size} | {len(X):,} | {row['predict']:,.0f} | "
                        f"{row['module']:,.0f} | {row['host-fed']:,.0f} | {row['predict'] / row['module']:.2f} | "
                        f"{row['predict'] / row['host-fed']:.2f} | {os.getloadavg()[0]:.2f} |")
                print(line, flush=True)
                lines.append(line)
    processor = device_name(args.device)
    text = (f"# Predict against its limits on {args.device}\n\n{processor}, "
            f"{machine('torch', 'numpy', cpus=False, python=False)}, {torch.get_num_threads()} threads; "
            f"{utc_now()}; load average {load_start:.2f} at the start "
            f"(last column: at the end of each row). Models trained one epoch on {TRAIN_QUERIES} MSLR-shaped "
            f"queries (model sizes: {_describe_sizes(args.model_sizes)}), then scoring "
            f"queries of the same make_ranking(preset=\"mslr\") draw; best of {args.repeats} runs (on CUDA after an "
            f"untimed one).\n\n"
            f"`python benchmarks/bench_predict_scale.py --speed --device {args.device} --queries {args.queries} "
            f"--repeats {args.repeats} --model-sizes {args.model_sizes}`\n\n" + "\n".join(lines) + "\n")
    out = Path(args.out or RESULTS.parent / f"predict_speed_{torch.device(args.device).type}.md")
    out.write_text(text)
    print(f"wrote {out}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 queries instead of 18,919")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rankers", nargs="*", default=None)
    parser.add_argument("--one", nargs=2, metavar=("RANKER", "ONE_BLOCK"), help=argparse.SUPPRESS)
    parser.add_argument("--speed", action="store_true", help="predict against the module and the host-fed module")
    parser.add_argument("--device", default="cpu", help="with --speed: where the models run")
    parser.add_argument("--queries", default="600,8200", help="with --speed: MSLR-shaped queries per size")
    parser.add_argument("--repeats", type=int, default=3, help="with --speed: timed runs, the best kept")
    parser.add_argument("--model-sizes", default="default",
                        help=f"with --speed: comma-separated model sizes among {', '.join(MODEL_SIZES)}")
    parser.add_argument("--out", default=None, help="with --speed: the results file")
    args = parser.parse_args()
    if args.speed:
        speed(args)
        return
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
        f"({machine('torch', cpus=False, python=False)}, {args.threads} threads; load average "
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

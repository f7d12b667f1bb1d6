"""Training throughput of DASALCRanker and SetRankRanker on MSLR-shaped data (CPU).

Data: ``make_ranking(n_queries=2000, preset="mslr")`` (136 features, list lengths with mean
about 122 and a tail to 1,250; about 240,000 documents). Batches of 64 queries, whole lists:
every document of every list is scored and back-propagated (no truncation, unlike allRank's
240-document lists). Sizes are comparable to allRank's reference transformer (2 layers, 1 head,
96 wide, feed-forward 384, dropout 0.1, ListNet loss): DASALC with a 2-layer 128-wide tower and
2 attention layers of one 96-wide head, and SetRank with 2 MSAB (or IMSAB, 20 inducing points)
blocks of width 96, one head, feed-forward 384. All use dropout 0.1 and the softmax loss; the
rows "no attention-weight dropout" keep dropout elsewhere but not on the attention weights,
which lets PyTorch use its fused (flash) CPU attention kernel.

Throughput is real documents per second of an epoch (median over the epochs after the first).
The machine is shared: the load average is recorded around each run, and runs use one or two
torch threads (``OMP_WAIT_POLICY=PASSIVE`` is set before torch starts, so that idle OpenMP
threads sleep instead of spinning against other users' processes).

Run: ``python benchmarks/bench_attention_throughput.py [--queries 2000] [--epochs 3] [--threads 1 2]``
(writes ``benchmarks/results/attention_throughput.md``).
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np
import torch

from sklearn_ltr.datasets import make_ranking
from sklearn_ltr.rankers._dasalc import DASALCRanker
from sklearn_ltr.rankers._setrank import SetRankRanker

ALLRANK_DOCS_PER_S = 12_400  # allRank's 2-layer, 1-head, 96-wide transformer with ListNet, per the issue

_DASALC = {"hidden_size": 128, "n_layers": 2, "n_attention_layers": 2, "n_heads": 1, "head_size": 96,
           "dropout": 0.1, "noise_std": 1.0}
_SETRANK = {"d_model": 96, "n_blocks": 2, "n_heads": 1, "ff_size": 384, "dropout": 0.1, "loss": "softmax"}
MODELS = {
    "DASALC (tower 2x128, 2 attention layers, 1 head x 96)": lambda: DASALCRanker(**_DASALC),
    "DASALC, no attention-weight dropout": lambda: DASALCRanker(**_DASALC, attention_dropout=0.0),
    "SetRank MSAB (2 blocks, d=96, 1 head, ff 384)": lambda: SetRankRanker(**_SETRANK),
    "SetRank MSAB, no attention-weight dropout": lambda: SetRankRanker(**_SETRANK, attention_dropout=0.0),
    "SetRank IMSAB (m=20 inducing points), no attention-weight dropout": lambda: SetRankRanker(
        **_SETRANK, block="imsab", n_inducing_points=20, attention_dropout=0.0),
}


def padded_share(groups, batch_size):
    """Share of padded slots in the shuffled, length-bucketed training batches."""
    from sklearn_ltr._groups import QueryGroups
    from sklearn_ltr._query_batches import QueryBatches, QueryDataset

    query_groups = QueryGroups(groups)
    dataset = QueryDataset({"X": torch.zeros(len(groups), 1)}, None, torch.as_tensor(query_groups.offsets))
    batches = QueryBatches(dataset, batch_size, shuffle=True, generator=torch.Generator().manual_seed(0))
    real = slots = 0
    for inputs, _ in batches:
        real += int(inputs["mask"].sum())
        slots += inputs["mask"].numel()
    return 1 - real / slots


def measure(make, X, y, groups, threads, epochs, batch_size):
    torch.set_num_threads(threads)
    ranker = make().set_params(max_epochs=epochs, batch_size=batch_size, device="cpu", random_state=0)
    load = os.getloadavg()[0]
    cpu, start = time.process_time(), time.perf_counter()
    ranker.fit(X, y, groups)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    durations = np.asarray(ranker.history_[:, "dur"])
    epoch = float(np.median(durations[1:] if len(durations) > 1 else durations))
    return {"epoch_s": epoch, "docs_per_s": len(y) / epoch, "fit_docs_per_s": len(y) * epochs / wall,
            "cpu_share": cpu / wall, "load": (load, os.getloadavg()[0])}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "attention_throughput.md")
    args = parser.parse_args()

    X, y, groups = make_ranking(n_queries=args.queries, preset="mslr", random_state=0)
    lines = [
        "# DASALC and SetRank training throughput, CPU",
        "",
        f"MSLR-shaped synthetic data: {args.queries:,} queries, {len(y):,} documents, 136 features; batches of "
        f"{args.batch_size} queries, whole lists (every document scored), "
        f"{padded_share(groups, args.batch_size):.1%} padded slots. {platform.machine()}, {os.cpu_count()} CPUs "
        f"shared with other users, torch {torch.__version__}, OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']}. "
        f"Median epoch of {args.epochs} (first excluded). CUDA: not measured (no GPU on this machine).",
        "",
        "| model | torch threads | epoch (s) | documents/s | vs allRank 12,400/s | whole fit (docs/s) "
        "| process CPU / wall | docs per CPU-second | load average (before → after) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for name, make in MODELS.items():
        for threads in args.threads:
            r = measure(make, X, y, groups, threads, args.epochs, args.batch_size)
            lines.append(
                f"| {name} | {threads} | {r['epoch_s']:.1f} | {r['docs_per_s']:,.0f} | "
                f"{r['docs_per_s'] / ALLRANK_DOCS_PER_S:.2f}x | {r['fit_docs_per_s']:,.0f} | {r['cpu_share']:.2f} | "
                f"{r['fit_docs_per_s'] / r['cpu_share']:,.0f} | {r['load'][0]:.2f} → {r['load'][1]:.2f} |"
            )
            print(lines[-1], flush=True)
    lines += [
        "",
        "Target: at least 2x allRank's transformer, i.e. 24,800 documents/s. 'process CPU / wall' is the",
        "share of one core this process got (CPU time of all its threads over wall time); 'docs per",
        "CPU-second' divides the whole fit's documents by that CPU time: the throughput one dedicated",
        "core would give, independent of the other users' load.",
    ]
    text = "\n".join(lines)
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()

"""Training throughput of RankNetRanker against a minimal hand-written torch loop.

On MSLR-shaped data (``make_ranking(preset="mslr")``: 136 features, list lengths
with mean about 122 and a tail to 1,250), both train a 136-144-144-1 ReLU network
with batches of 64 queries, with the softmax and the RankNet loss. The hand loop
gets the best case: batches of queries of similar length padded once, before
timing, and one optimiser step per batch with nothing else. Throughput is real
(non-padding) documents per second of training.

Run: ``python benchmarks/bench_neural.py [--queries 2000] [--epochs 3] [--device cpu]``
(writes ``benchmarks/results/neural_throughput.md``).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
import torch
from _common import machine
from skorch.callbacks import Callback

from sklearn_ltr import RankNetRanker
from sklearn_ltr.datasets import make_ranking
from sklearn_ltr.losses import get_loss


def hand_loop(X, y, groups, loss_name, epochs, batch_size, device, seed=0):
    """Minimal torch training loop over pre-built, length-bucketed padded batches."""
    torch.manual_seed(seed)
    order = np.argsort(groups, kind="stable")
    X, y, groups = X[order], y[order], groups[order]
    sizes = np.bincount(groups)
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    by_length = np.argsort(sizes, kind="stable")
    batches = []
    for chunk in np.array_split(by_length, int(np.ceil(len(sizes) / batch_size))):
        length = sizes[chunk].max()
        xb = torch.zeros(len(chunk), length, X.shape[1])
        yb = torch.zeros(len(chunk), length)
        mb = torch.zeros(len(chunk), length, dtype=torch.bool)
        for i, q in enumerate(chunk):
            n = sizes[q]
            xb[i, :n] = torch.as_tensor(X[offsets[q] : offsets[q + 1]])
            yb[i, :n] = torch.as_tensor(y[offsets[q] : offsets[q + 1]], dtype=torch.float32)
            mb[i, :n] = True
        batches.append((xb.to(device), yb.to(device), mb.to(device)))
    network = torch.nn.Sequential(
        torch.nn.Linear(X.shape[1], 144), torch.nn.ReLU(), torch.nn.Linear(144, 144), torch.nn.ReLU(),
        torch.nn.Linear(144, 1),
    ).to(device)
    optimizer = torch.optim.Adam(network.parameters(), lr=1e-3)
    loss_fn = get_loss(loss_name)
    times, cpu_times = [], []
    for _ in range(epochs):
        start, cpu_start = time.perf_counter(), time.process_time()
        for i in torch.randperm(len(batches)).tolist():
            xb, yb, mb = batches[i]
            optimizer.zero_grad()
            loss = loss_fn(network(xb).squeeze(-1), yb, mb)
            loss.backward()
            optimizer.step()
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
        cpu_times.append(time.process_time() - cpu_start)
    real = sum(int(b[2].sum()) for b in batches)
    slots = sum(b[2].numel() for b in batches)
    return times, cpu_times, real, 1 - real / slots


class EpochCPUTime(Callback):
    """Record the process CPU time of each epoch (robust to other load on a shared machine)."""

    def on_epoch_begin(self, net, **kwargs):
        self.start = time.process_time()

    def on_epoch_end(self, net, **kwargs):
        net.history.record("cpu", time.process_time() - self.start)


def ours(X, y, groups, loss_name, epochs, batch_size, device):
    ranker = RankNetRanker(
        hidden_sizes=(144, 144), loss=loss_name, lr=1e-3, max_epochs=epochs, batch_size=batch_size,
        device=device, random_state=0, callbacks=[("cpu", EpochCPUTime())],
    )
    start = time.perf_counter()
    ranker.fit(X, y, groups)
    total = time.perf_counter() - start
    return list(ranker.history_[:, "dur"]), list(ranker.history_[:, "cpu"]), total


def padded_share(groups, batch_size, epochs=3):
    """Share of padded slots in RankNetRanker's shuffled, bucketed training batches."""
    from sklearn_ltr._groups import QueryGroups
    from sklearn_ltr.training._batches import QueryBatches, QueryDataset

    qg = QueryGroups(groups)
    dataset = QueryDataset({"X": torch.zeros(len(groups), 1)}, None, torch.as_tensor(qg.offsets))
    batches = QueryBatches(dataset, batch_size, shuffle=True, generator=torch.Generator().manual_seed(0))
    real = slots = 0
    for _ in range(epochs):
        for inputs, _ in batches:
            real += int(inputs["mask"].sum())
            slots += inputs["mask"].numel()
    return 1 - real / slots


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "neural_throughput.md")
    args = parser.parse_args()

    X, y, groups = make_ranking(n_queries=args.queries, preset="mslr", random_state=0)
    n_docs = len(y)
    lines = [
        f"RankNetRanker training throughput: {args.queries:,} MSLR-shaped queries, {n_docs:,} documents, "
        f"136-144-144-1 ReLU, batch {args.batch_size} queries, device {args.device}",
        f"({machine('torch', cpus=False, python=False)}, {torch.get_num_threads()} torch threads; "
        f"median of {args.epochs} epochs after the first; load average at start {os.getloadavg()[0]:.1f}; "
        "docs/CPU-s divides by process CPU time, which other load on a shared machine barely changes)",
        "",
        "| loss | hand loop (docs/s) | RankNetRanker epoch (docs/s) | ratio | RankNetRanker whole fit (docs/s) "
        "| hand loop (docs/CPU-s) | RankNetRanker (docs/CPU-s) | CPU ratio |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for loss_name in ("softmax", "ranknet"):
        hand_times, hand_cpu, real, hand_padding = hand_loop(
            X, y, groups, loss_name, args.epochs + 1, args.batch_size, args.device
        )
        epoch_times, epoch_cpu, total = ours(X, y, groups, loss_name, args.epochs + 1, args.batch_size, args.device)
        hand = real / np.median(hand_times[1:])
        mine = n_docs / np.median(epoch_times[1:])
        whole = n_docs * (args.epochs + 1) / total
        hand_c, mine_c = real / np.median(hand_cpu[1:]), n_docs / np.median(epoch_cpu[1:])
        lines.append(f"| {loss_name} | {hand:,.0f} | {mine:,.0f} | {mine / hand:.2f} | {whole:,.0f} "
                     f"| {hand_c:,.0f} | {mine_c:,.0f} | {mine_c / hand_c:.2f} |")
    lines += [
        "",
        f"Padded slots: RankNetRanker {padded_share(groups, args.batch_size):.1%} of all slots "
        f"(shuffled, length-bucketed batches); hand loop {hand_padding:.1%} (sorted by length, not shuffled).",
    ]
    text = "\n".join(lines)
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()

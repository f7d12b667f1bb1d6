"""Training throughput beside allRank 1.4.3: RankNet against its FC network, DASALC and SetRank its transformer.

allRank is not a dependency: unzip its wheel and point ``--allrank-src`` at the folder::

    pip download allrank==1.4.3 --no-deps -d /tmp/allrank
    mkdir -p /tmp/allrank_src && unzip -oq /tmp/allrank/allRank-1.4.3-py3-none-any.whl -d /tmp/allrank_src
    pip install attrs  # allRank's configuration classes
    python benchmarks/bench_allrank_throughput.py --allrank-src /tmp/allrank_src

allRank's model classes (``make_model``, ``FCModel``, its transformer) and its ListNet loss are
loaded from its source; the loss module's two imports (``PADDED_Y_VALUE`` from
``allrank.data.dataset_loading``, whose package needs torchvision, and ``DEFAULT_EPS``) are
served by a stub module holding allRank's constants. allRank's training step is its
``loss_batch``: padded slates (label -1 on padding), ``model(x, mask, indices)``, the loss,
backward, Adam step. Its data path is written here as allRank's ``DataLoader`` runs it: queries
shuffled, each batch's slates padded to the longest in the batch and cut to
``slate_length`` = 240 documents (allRank's MSLR configuration; longer lists are sampled), one
list at a time on the host.

Rows, on ``make_ranking(preset="mslr")`` data (136 features, list lengths with mean about 122
and a tail to 1,250), every model trained with Adam (lr 1e-3) and the softmax (ListNet) loss:

- allRank FC: 136-144-144-1 ReLU (``--fc-hidden``), the same network as
  ``RankNetRanker(hidden_sizes=(144, 144))``;
- hand packed loop: that network in a minimal torch loop that gathers each batch's real rows
  from flat tensors (queries shuffled in pools and bucketed by length, as ``fit`` does), scores
  them, scatters the scores into ``[lists, longest]`` for the loss: the upper bound of the
  estimator's own loop;
- ``RankNetRanker``, padded (the module run on the padded batch's real rows after a padded
  feature tensor is built, as before packed batches) and packed (the default);
- allRank transformer: allRank's reference configuration (FC 136 -> 96, 2 encoder layers, one
  head, feed-forward 384, dropout 0.1);
- ``DASALCRanker`` (a 2-layer 128-wide tower, 2 attention layers of one 96-wide head, dropout 0.1)
  and ``SetRankRanker`` (2 MSAB blocks of width 96, one head, feed-forward 384, dropout 0.1).

Throughput is real documents trained per second of an epoch (allRank: the documents of its cut
slates; the rows "lists cut to 240" train DASALC and SetRank with ``max_list_length=240``, the same
work, and count the documents of the cut lists), median of the epochs after the first; models run
one after the other, each in its own turn, with the load average beside each.

Run: ``python benchmarks/bench_allrank_throughput.py --allrank-src DIR [--queries 2000] [--epochs 3]
[--threads 2]`` (writes ``benchmarks/results/allrank_throughput.md``); ``--quick`` for a smoke run.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import statistics
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np
import torch
from _common import allrank_loss_module, machine, utc_now

from sklearn_ltr import DASALCRanker, RankNetRanker, SetRankRanker
from sklearn_ltr.datasets import make_ranking
from sklearn_ltr.losses import get_loss
from sklearn_ltr.nn import MLPScorer, scatter_scores

SLATE_LENGTH = 240  # allRank's MSLR configuration
LR = 1e-3
_DASALC = {"hidden_size": 128, "n_layers": 2, "n_attention_layers": 2, "n_heads": 1, "head_size": 96,
           "dropout": 0.1, "attention_dropout": 0.1, "noise_std": 1.0}
_SETRANK = {"d_model": 96, "n_blocks": 2, "n_heads": 1, "ff_size": 384, "dropout": 0.1}


def load_allrank(src):
    """allRank's ``make_model``, its transformer configuration class and its ``listNet`` loss, from its source."""
    listnet = allrank_loss_module(src, "listNet")[0]
    from allrank.config import TransformerConfig
    from allrank.models.model import make_model

    return make_model, TransformerConfig, listnet.listNet


def _epoch_rates(times, documents):
    """Documents per second of the median epoch after the first."""
    return documents / statistics.median(times[1:])


def allrank_loop(model, loss_fn, X, y, offsets, epochs, batch_size, seed=0):
    """allRank's training: shuffled queries, slates padded to the batch's longest (at most 240), ``loss_batch``."""
    rng = np.random.default_rng(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=LR)
    lists = [(torch.as_tensor(X[a:b]), torch.as_tensor(y[a:b], dtype=torch.float32))
             for a, b in itertools.pairwise(offsets)]
    times, documents = [], 0
    model.train()
    for _ in range(epochs):
        start, documents = time.perf_counter(), 0
        order = rng.permutation(len(lists))
        for batch in np.array_split(order, int(np.ceil(len(order) / batch_size))):
            length = min(SLATE_LENGTH, max(len(lists[q][1]) for q in batch))
            xb = torch.zeros(len(batch), length, X.shape[1])
            yb = torch.full((len(batch), length), -1.0)
            for i, q in enumerate(batch):
                xq, yq = lists[q]
                if len(yq) > length:  # allRank's FixLength samples a slate that is too long
                    keep = torch.as_tensor(rng.choice(len(yq), length, replace=False))
                    xq, yq = xq[keep], yq[keep]
                xb[i, :len(yq)], yb[i, :len(yq)] = xq, yq
            mask = yb == -1
            indices = torch.arange(length).expand(len(batch), length)
            loss = loss_fn(model(xb, mask, indices), yb)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            documents += int((~mask).sum())
        times.append(time.perf_counter() - start)
    return _epoch_rates(times, documents)


def packed_loop(X, y, offsets, epochs, batch_size, hidden, seed=0, pool_batches=50):
    """The RankNet network and the softmax loss in a minimal loop over packed batches (no padded features)."""
    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    X, y = torch.as_tensor(X), torch.as_tensor(y, dtype=torch.float32)
    starts, sizes = torch.as_tensor(offsets[:-1]), torch.as_tensor(np.diff(offsets))
    network = MLPScorer(X.shape[1], hidden_sizes=hidden).network
    optimizer = torch.optim.Adam(network.parameters(), lr=LR)
    loss_fn = get_loss("softmax")
    times = []
    for _ in range(epochs):
        start = time.perf_counter()
        order = torch.randperm(len(sizes), generator=generator)
        batches = []
        for pool in torch.split(order, batch_size * pool_batches):
            batches.extend(torch.split(pool[torch.argsort(sizes[pool], stable=True)], batch_size))
        for i in torch.randperm(len(batches), generator=generator).tolist():
            queries = batches[i]
            n = sizes[queries]
            rows = torch.repeat_interleave(starts[queries] - torch.cumsum(n, 0) + n, n) + torch.arange(int(n.sum()))
            mask = torch.arange(int(n.max()))[None, :] < n[:, None]
            labels = scatter_scores(y[rows], mask)
            loss = loss_fn(scatter_scores(network(X[rows]).squeeze(-1), mask), labels, mask)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        times.append(time.perf_counter() - start)
    return _epoch_rates(times, len(y))


def ranker_rate(ranker, X, y, groups):
    """Documents trained per second of ``ranker.fit``: each list counts up to its ``max_list_length``."""
    ranker.fit(X, y, groups)
    sizes = np.bincount(np.unique(groups, return_inverse=True)[1])
    cut = ranker.get_params().get("max_list_length")
    documents = int(np.minimum(sizes, cut).sum()) if cut else len(y)
    return _epoch_rates(list(ranker.history_[:, "dur"]), documents)


@contextlib.contextmanager
def padded_batches():
    """``RankNetRanker`` as before packed batches: the module declares no packed inputs."""
    MLPScorer.packed_inputs = False
    try:
        yield
    finally:
        MLPScorer.packed_inputs = True


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--allrank-src", type=Path, required=True)
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--fc-batch", type=int, default=32, help="queries per batch of the FC rows")
    parser.add_argument("--fc-hidden", type=int, nargs="+", default=[144, 144],
                        help="hidden widths of the FC network (RankNetRanker's default: 64 32)")
    parser.add_argument("--transformer-batch", type=int, default=64, help="queries per batch of the transformer rows")
    parser.add_argument("--quick", action="store_true", help="300 queries, 2 epochs; writes only to --out")
    parser.add_argument("--only", nargs="*", help="row names to run (default: all)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "allrank_throughput.md")
    args = parser.parse_args()
    if args.quick:
        args.queries, args.epochs = 300, 2
    torch.set_num_threads(args.threads)
    make_model, TransformerConfig, listnet = load_allrank(args.allrank_src)

    X, y, groups = make_ranking(n_queries=args.queries, preset="mslr", random_state=0)
    order = np.argsort(groups, kind="stable")
    X, y, groups = np.ascontiguousarray(X[order], dtype=np.float32), y[order], groups[order]
    offsets = np.concatenate(([0], np.cumsum(np.bincount(groups))))
    epochs, fc_batch, tr_batch = args.epochs, args.fc_batch, args.transformer_batch
    hidden = tuple(args.fc_hidden)

    def allrank_fc():
        torch.manual_seed(0)
        model = make_model({"sizes": list(hidden), "input_norm": False, "activation": "ReLU", "dropout": 0.0}, None,
                           {"d_output": 1, "output_activation": None}, X.shape[1])
        return allrank_loop(model, listnet, X, y, offsets, epochs, fc_batch)

    def allrank_transformer():
        torch.manual_seed(0)
        model = make_model({"sizes": [96], "input_norm": False, "activation": None, "dropout": 0.0},
                           TransformerConfig(N=2, d_ff=384, h=1, positional_encoding=None, dropout=0.1),
                           {"d_output": 1, "output_activation": None}, X.shape[1])
        return allrank_loop(model, listnet, X, y, offsets, epochs, tr_batch)

    def ranknet():
        return ranker_rate(RankNetRanker(hidden_sizes=hidden, loss="softmax", lr=LR, max_epochs=epochs,
                                         batch_size=fc_batch, device="cpu", random_state=0), X, y, groups)

    def ranknet_padded():
        with padded_batches():
            return ranknet()

    rows = [  # (name, batch, what it is compared with, run)
        ("allRank FC", fc_batch, None, allrank_fc),
        ("hand packed loop (RankNet's network)", fc_batch, None,
         lambda: packed_loop(X, y, offsets, epochs, fc_batch, hidden)),
        ("RankNetRanker, padded batches (before)", fc_batch, "fc", ranknet_padded),
        ("RankNetRanker, packed batches", fc_batch, "fc", ranknet),
        ("allRank transformer", tr_batch, None, allrank_transformer),
        ("DASALCRanker", tr_batch, "transformer", lambda: ranker_rate(
            DASALCRanker(**_DASALC, lr=LR, max_epochs=epochs, batch_size=tr_batch, device="cpu", random_state=0),
            X, y, groups)),
        ("SetRankRanker (MSAB)", tr_batch, "transformer", lambda: ranker_rate(
            SetRankRanker(**_SETRANK, loss="softmax", lr=LR, max_epochs=epochs, batch_size=tr_batch, device="cpu",
                          random_state=0), X, y, groups)),
        # The same work as allRank's: lists cut to its slate length (relevant documents kept first).
        (f"DASALCRanker, lists cut to {SLATE_LENGTH} as allRank's", tr_batch, "transformer", lambda: ranker_rate(
            DASALCRanker(**_DASALC, lr=LR, max_epochs=epochs, batch_size=tr_batch, device="cpu", random_state=0,
                         max_list_length=SLATE_LENGTH), X, y, groups)),
        (f"SetRankRanker (MSAB), lists cut to {SLATE_LENGTH} as allRank's", tr_batch, "transformer",
         lambda: ranker_rate(SetRankRanker(**_SETRANK, loss="softmax", lr=LR, max_epochs=epochs, batch_size=tr_batch,
                                           device="cpu", random_state=0, max_list_length=SLATE_LENGTH), X, y, groups)),
    ]
    rates, results = {}, []
    for name, batch, against, run in rows:
        if args.only and name not in args.only:
            continue
        load = os.getloadavg()[0]
        rate = run()
        rates[name] = rate
        results.append((name, batch, against, rate, load, os.getloadavg()[0]))
        print(f"{name}: {rate:,.0f} documents/s (load {load:.2f})", flush=True)

    hand = rates.get("hand packed loop (RankNet's network)")
    lines = [
        "# Training throughput side by side with allRank 1.4.3 (CPU)",
        "",
        f"`python benchmarks/bench_allrank_throughput.py --allrank-src DIR --queries {args.queries} "
        f"--epochs {args.epochs} --threads {args.threads} --fc-hidden {' '.join(map(str, hidden))}`",
        "",
        f"MSLR-shaped synthetic data (`make_ranking(preset=\"mslr\")`): {args.queries:,} queries, {len(y):,} "
        f"documents, 136 features. {machine('torch', cpus='{} CPUs (shared)', python=False)}, "
        f"{args.threads} torch threads, {utc_now()}. Documents per second "
        f"of the median epoch after the first ({args.epochs} epochs). Adam lr {LR}, softmax (ListNet) loss. FC "
        f"network: 136-{'-'.join(map(str, hidden))}-1 ReLU. "
        f"allRank's slates are cut to {SLATE_LENGTH} documents (its documents count as trained).",
        "",
        "| model | batch (queries) | documents/s | vs allRank | vs hand packed loop | load (start → end) |",
        "| --- | ---: | ---: | ---: | ---: | --- |",
    ]
    reference = {"fc": rates.get("allRank FC"), "transformer": rates.get("allRank transformer")}
    for name, batch, against, rate, start, end in results:
        versus = f"{rate / reference[against]:.2f}x" if against and reference.get(against) else "-"
        vs_hand = f"{rate / hand:.2f}" if against == "fc" and hand else "-"
        lines.append(f"| {name} | {batch} | {rate:,.0f} | {versus} | {vs_hand} | {start:.2f} → {end:.2f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)


if __name__ == "__main__":
    main()

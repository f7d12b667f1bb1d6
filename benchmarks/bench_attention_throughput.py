"""Training and scoring throughput of DASALC and SetRank's attention against nn.TransformerEncoder (CPU).

Data: ``make_ranking(n_queries=2000, preset="mslr")`` (136 features, list lengths with mean
about 122 and a tail to 1,250; about 240,000 documents). Batches of 64 queries, whole lists:
every document of every list is scored and back-propagated (no truncation, unlike allRank's
240-document lists). The batches are the ones ``fit`` trains on (``QueryBatches``: shuffled,
bucketed by list length), built once and shared by every model, so all rows see the same
padded tensors.

Models, comparable to allRank's reference transformer (2 layers, 1 head, 96 wide, feed-forward
384, dropout 0.1, ListNet loss):

- DASALC with a 2-layer 128-wide tower and 2 attention layers of one 96-wide head;
- SetRank with 2 MSAB (or IMSAB, 20 inducing points) blocks of width 96, one head, feed-forward 384;
- ``torch.nn.TransformerEncoder`` at equal width, depth and heads (a 136 -> 96 linear embedding,
  2 post-norm ``TransformerEncoderLayer(96, 1, 384, dropout=0.1, batch_first=True)`` and a
  linear scorer, with ``src_key_padding_mask``): allRank's architecture on PyTorch's own layers.
  In evaluation its fast path runs (``torch._transformer_encoder_layer_fwd``); its nested-tensor
  path (which skips padding) needs an even number of heads, so with one head it runs on the
  padded batch.

All use dropout 0.1 (on the attention weights too, unless a row says otherwise) and the softmax
(ListNet) loss with Adam. "before" is the attention of the previous release, kept here only for
this comparison (:func:`_handwritten_forward`): on CPU in training with attention-weight dropout
it computed masked logits, softmax and the library's fast dropout sampler by hand; everywhere
else it already called ``scaled_dot_product_attention``, so before and after differ only in
those rows. "after" is the library's attention now: ``scaled_dot_product_attention`` with the
padding mask everywhere, attention-weight dropout through its ``dropout_p`` in training only.
PyTorch's CPU kernel runs fused (flash) without attention-weight dropout and falls back to its
math path with it.

Throughput is real documents per second of one epoch: ``train`` runs forward, loss, backward and
the optimiser step; ``eval`` scores in ``torch.inference_mode``. Each timed epoch runs the models
in turn (round robin), so that the other users' load falls on all of them alike; a row reports
the median epoch. "docs per CPU-second" divides documents by the process CPU time (all threads)
and moves less with the machine's load than documents/s. The rows ``fit`` time the public
estimators' ``fit`` (the skorch loop around the same module), median epoch of the same number.
``OMP_WAIT_POLICY=PASSIVE`` is set before torch starts, so that idle OpenMP threads sleep
instead of spinning against other users' processes.

Run: ``python benchmarks/bench_attention_throughput.py [--queries 2000] [--epochs 3] [--threads 1 2]
[--profile]`` (writes ``benchmarks/results/attention_throughput.md``); ``--quick`` is a smoke run
(300 queries, 2 epochs, 1 thread, no ``fit`` rows) that writes only where ``--out`` says.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import resource
import statistics
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch
from _common import machine
from torch import nn
from torch.nn import functional as F

from sklearn_ltr._groups import QueryGroups
from sklearn_ltr.datasets import make_ranking
from sklearn_ltr.losses import softmax_cross_entropy
from sklearn_ltr.nn import DASALCNet, SetRankNet, _attention
from sklearn_ltr.rankers._dasalc import DASALCRanker
from sklearn_ltr.rankers._setrank import SetRankRanker
from sklearn_ltr.training._batches import QueryBatches, QueryDataset

ALLRANK_DOCS_PER_S = 12_400  # allRank's 2-layer, 1-head, 96-wide transformer with ListNet, per the issue
N_FEATURES = 136

_DASALC = {"hidden_size": 128, "n_layers": 2, "n_attention_layers": 2, "n_heads": 1, "head_size": 96,
           "dropout": 0.1, "noise_std": 1.0}
_SETRANK = {"d_model": 96, "n_blocks": 2, "n_heads": 1, "ff_size": 384, "dropout": 0.1}
_ENCODER = {"d_model": 96, "n_layers": 2, "n_heads": 1, "ff_size": 384, "dropout": 0.1}


def _handwritten_forward(self, query, key, key_mask=None):
    """``MultiHeadAttention.forward`` of the previous release, for the "before" rows only."""
    q = self._heads(self.query(query))
    k, v = (self._heads(part) for part in self.key_value(key).chunk(2, dim=-1))
    attn_mask = _attention.key_padding_mask(key_mask)
    if self.training and self.dropout > 0 and q.device.type == "cpu":
        logits = (q * self.head_size**-0.5) @ k.transpose(-2, -1)
        if attn_mask is not None:
            logits = logits.masked_fill(~attn_mask, -math.inf)
        attended = _attention.dropout(torch.softmax(logits, dim=-1), self.dropout) @ v
    else:
        attended = F.scaled_dot_product_attention(
            q, k, v, attn_mask=attn_mask, dropout_p=self.dropout if self.training else 0.0
        )
    batch, _, length, _ = attended.shape
    return self.out(attended.transpose(1, 2).reshape(batch, length, self.n_heads * self.head_size))


@contextlib.contextmanager
def _attention_forward(before):
    """Run the library's attention (``before=False``) or the previous release's (``before=True``)."""
    current = _attention.MultiHeadAttention.forward
    if before:
        _attention.MultiHeadAttention.forward = _handwritten_forward
    try:
        yield
    finally:
        _attention.MultiHeadAttention.forward = current


class EncoderRanker(nn.Module):
    """allRank's architecture on ``torch.nn.TransformerEncoder``: embed, encode the list, score each row."""

    def __init__(self, n_features, d_model, n_layers, n_heads, ff_size, dropout, attention_dropout=None):
        super().__init__()
        self.embed = nn.Linear(n_features, d_model)
        layer = nn.TransformerEncoderLayer(d_model, n_heads, ff_size, dropout, batch_first=True)
        if attention_dropout is not None:
            layer.self_attn.dropout = attention_dropout
        # The nested-tensor path needs an even number of heads; asking for it otherwise only warns.
        self.encoder = nn.TransformerEncoder(layer, n_layers, enable_nested_tensor=n_heads % 2 == 0)
        self.output = nn.Linear(d_model, 1)

    def forward(self, X, mask):
        z = self.encoder(self.embed(X), src_key_padding_mask=~mask)
        return self.output(z).squeeze(-1).masked_fill(~mask, 0.0)


def _models():
    """``name -> (module factory, attention before/after, comparable TransformerEncoder row)``."""
    dasalc = _DASALC
    no_drop = {"attention_dropout": 0.0}
    return {
        "DASALC, before": (lambda: DASALCNet(N_FEATURES, **dasalc), True, "encoder"),
        "DASALC, after": (lambda: DASALCNet(N_FEATURES, **dasalc), False, "encoder"),
        "DASALC, no attention-weight dropout": (lambda: DASALCNet(N_FEATURES, **dasalc, **no_drop), False,
                                                "encoder0"),
        "SetRank MSAB, before": (lambda: SetRankNet(N_FEATURES, **_SETRANK), True, "encoder"),
        "SetRank MSAB, after": (lambda: SetRankNet(N_FEATURES, **_SETRANK), False, "encoder"),
        "SetRank MSAB, no attention-weight dropout": (lambda: SetRankNet(N_FEATURES, **_SETRANK, **no_drop), False,
                                                      "encoder0"),
        "SetRank IMSAB (m=20), before": (
            lambda: SetRankNet(N_FEATURES, **_SETRANK, block="imsab", n_inducing_points=20), True, "encoder"),
        "SetRank IMSAB (m=20), after": (
            lambda: SetRankNet(N_FEATURES, **_SETRANK, block="imsab", n_inducing_points=20), False, "encoder"),
        "SetRank IMSAB (m=20), no attention-weight dropout": (
            lambda: SetRankNet(N_FEATURES, **_SETRANK, block="imsab", n_inducing_points=20, **no_drop), False,
            "encoder0"),
        "nn.TransformerEncoder": (lambda: EncoderRanker(N_FEATURES, **_ENCODER), False, "encoder"),
        "nn.TransformerEncoder, no attention-weight dropout": (
            lambda: EncoderRanker(N_FEATURES, **_ENCODER, attention_dropout=0.0), False, "encoder0"),
    }


#: Rows scored in evaluation mode (no dropout: before, after and "no attention-weight dropout" coincide).
EVAL_MODELS = ("DASALC, after", "SetRank MSAB, after", "SetRank IMSAB (m=20), after", "nn.TransformerEncoder")
REFERENCE_ROWS = {"encoder": "nn.TransformerEncoder", "encoder0": "nn.TransformerEncoder, no attention-weight dropout"}


def make_batches(n_queries, batch_size, seed=0):
    """The shuffled, length-bucketed training batches of ``fit``, the data and the padded share."""
    X, y, groups = make_ranking(n_queries=n_queries, preset="mslr", random_state=seed)
    dataset = QueryDataset.from_arrays(QueryGroups(groups), X, y)
    batches = list(QueryBatches(dataset, batch_size, shuffle=True, generator=torch.Generator().manual_seed(seed)))
    real = sum(int(inputs["mask"].sum()) for inputs, _ in batches)
    slots = sum(inputs["mask"].numel() for inputs, _ in batches)
    return batches, (X, y, groups), 1 - real / slots


class Runner:
    """One model in one mode; :meth:`epoch` times one pass over the batches."""

    def __init__(self, make, before, training, seed=0):
        torch.manual_seed(seed)
        self.module = make()
        self.before = before
        self.training = training
        self.optimizer = torch.optim.Adam(self.module.parameters(), lr=1e-3) if training else None
        self.module.train(training)

    def step(self, inputs, labels):
        X, mask = inputs["X"], inputs["mask"]
        if not self.training:
            with torch.inference_mode():
                self.module(X, mask)
            return
        self.optimizer.zero_grad(set_to_none=True)
        loss = softmax_cross_entropy(self.module(X, mask), labels, mask)
        loss.backward()
        self.optimizer.step()

    def epoch(self, batches):
        with _attention_forward(self.before):
            load = os.getloadavg()[0]
            usage, start = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
            for inputs, labels in batches:
                self.step(inputs, labels)
            wall, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_SELF)
        user, system = after.ru_utime - usage.ru_utime, after.ru_stime - usage.ru_stime
        return {"wall": wall, "cpu": user + system, "system": system, "load": (load, os.getloadavg()[0])}


def _summary(epochs, n_docs):
    wall = statistics.median(e["wall"] for e in epochs)
    cpu = statistics.median(e["cpu"] for e in epochs)
    system = sum(e["system"] for e in epochs) / sum(e["cpu"] for e in epochs)
    return {"docs_per_s": n_docs / wall, "docs_per_cpu_s": n_docs / cpu, "cpu_share": cpu / wall,
            "system_share": system, "load": (epochs[0]["load"][0], epochs[-1]["load"][1])}


def measure_modules(batches, threads, epochs, warmup_batches=2):
    """``{(name, mode): summary}`` for every module, epochs interleaved across models."""
    torch.set_num_threads(threads)
    n_docs = sum(int(inputs["mask"].sum()) for inputs, _ in batches)
    runners = {}
    for name, (make, before, _) in _models().items():
        runners[name, "train"] = Runner(make, before, training=True)
        if name in EVAL_MODELS:
            runners[name, "eval"] = Runner(make, before, training=False)
    for runner in runners.values():  # allocator and kernel warm-up, not timed
        runner.epoch(batches[:warmup_batches])
    timings = {key: [] for key in runners}
    for _ in range(epochs):
        for key, runner in runners.items():
            timings[key].append(runner.epoch(batches))
    return {key: _summary(value, n_docs) for key, value in timings.items()}


def measure_fits(data, threads, epochs, batch_size):
    """Median epoch of the public estimators' ``fit`` (skorch loop included)."""
    X, y, groups = data
    torch.set_num_threads(threads)
    fits = {"DASALCRanker.fit": DASALCRanker(**_DASALC),
            "SetRankRanker.fit (MSAB)": SetRankRanker(**_SETRANK, loss="softmax")}
    results = {}
    for name, ranker in fits.items():
        ranker.set_params(max_epochs=epochs, batch_size=batch_size, device="cpu", random_state=0)
        load = os.getloadavg()[0]
        usage, start = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        ranker.fit(X, y, groups)
        wall, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_SELF)
        system = after.ru_stime - usage.ru_stime
        cpu = after.ru_utime - usage.ru_utime + system
        durations = list(ranker.history_[:, "dur"])
        epoch = statistics.median(durations[1:] if len(durations) > 1 else durations)
        results[name] = {"docs_per_s": len(y) / epoch, "docs_per_cpu_s": len(y) * epochs / cpu,
                         "cpu_share": cpu / wall, "system_share": system / cpu, "load": (load, os.getloadavg()[0])}
    return results


def profile(batches, names, threads, n_batches=4, row_limit=12):
    """torch.profiler tables (self CPU time) of a few training steps of ``names``."""
    torch.set_num_threads(threads)
    models = _models()
    tables = []
    for name in names:
        make, before, _ = models[name]
        runner = Runner(make, before, training=True)
        runner.epoch(batches[:1])
        with torch.profiler.profile() as prof:
            runner.epoch(batches[:n_batches])
        table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=row_limit)
        tables.append((name, table))
    return tables


def _row(name, mode, threads, result, reference):
    ratio = "-" if reference is None else f"{result['docs_per_s'] / reference['docs_per_s']:.2f}x"
    return (f"| {name} | {mode} | {threads} | {result['docs_per_s']:,.0f} | "
            f"{result['docs_per_s'] / ALLRANK_DOCS_PER_S:.2f}x | {ratio} | {result['docs_per_cpu_s']:,.0f} | "
            f"{result['cpu_share']:.2f} | {result['system_share']:.0%} | "
            f"{result['load'][0]:.2f} → {result['load'][1]:.2f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=None, help="default 2000 (300 with --quick)")
    parser.add_argument("--epochs", type=int, default=None, help="timed epochs per model (default 3, 2 with --quick)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--threads", type=int, nargs="+", default=None, help="default 1 2 (1 with --quick)")
    parser.add_argument("--quick", action="store_true", help="smoke run: small data, no fit rows, no file")
    parser.add_argument("--no-fit", action="store_true", help="skip the public estimators' fit rows")
    parser.add_argument("--profile", action="store_true", help="append torch.profiler tables of the 'after' rows")
    parser.add_argument("--out", type=Path, default=None,
                        help="default benchmarks/results/attention_throughput.md (none with --quick)")
    args = parser.parse_args()
    quick = args.quick
    queries = args.queries or (300 if quick else 2000)
    epochs = args.epochs or (2 if quick else 3)
    threads_list = args.threads or ([1] if quick else [1, 2])
    out = args.out
    if out is None and not quick:
        out = Path(__file__).parent / "results" / "attention_throughput.md"

    batches, data, padded = make_batches(queries, args.batch_size)
    n_docs = len(data[1])
    lines = [
        "# Attention throughput, CPU: DASALC and SetRank against nn.TransformerEncoder",
        "",
        f"MSLR-shaped synthetic data: {queries:,} queries, {n_docs:,} documents, {N_FEATURES} features; "
        f"{len(batches)} batches of {args.batch_size} queries, whole lists (every document scored), "
        f"{padded:.1%} padded slots, the same batches for every model. "
        f"{machine('torch', cpus='{} CPUs shared with other users', python=False)}, "
        f"OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']}. Median of {epochs} timed epochs, models run in turn. "
        "CUDA: not measured (no GPU on this machine).",
        "",
        "| model | mode | torch threads | documents/s | vs allRank 12,400/s | vs nn.TransformerEncoder "
        "| docs per CPU-second | process CPU / wall | system CPU | load average (first → last epoch) |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    print("\n".join(lines), flush=True)
    models = _models()
    for threads in threads_list:
        results = measure_modules(batches, threads, epochs)
        for (name, mode), result in results.items():
            if mode == "train":
                reference = results[REFERENCE_ROWS[models[name][2]], "train"]
            else:
                reference = results["nn.TransformerEncoder", "eval"]
            lines.append(_row(name, mode, threads, result, None if name.startswith("nn.") else reference))
            print(lines[-1], flush=True)
        if not (quick or args.no_fit):
            for name, result in measure_fits(data, threads, epochs, args.batch_size).items():
                reference = results["nn.TransformerEncoder", "train"]
                lines.append(_row(name, "fit", threads, result, reference))
                print(lines[-1], flush=True)
    lines += [
        "",
        "Target: at least 2x allRank's transformer (24,800 documents/s) for DASALC and SetRank MSAB, and",
        "at least as fast as nn.TransformerEncoder at equal width, depth and heads. 'vs nn.TransformerEncoder'",
        "compares with the encoder row of the same mode and the same attention-weight dropout, from the same",
        "run. 'process CPU / wall' is the share of one core this process got (CPU time of all its threads",
        "over wall time); 'docs per CPU-second' is the throughput one dedicated core would give, independent",
        "of the other users' load. 'system CPU' is the kernel's share of that CPU time: mostly page faults on",
        "fresh memory, as glibc's malloc maps every block over 32 MB (an [L, L] attention matrix of a long-list",
        "batch) anew and returns it on free. The previous release's figures (ranker fit, 1 thread, load 1.3 to 6.6):",
        "DASALC 22,480, DASALC without attention-weight dropout 20,482, SetRank MSAB 14,505 and 15,620,",
        "IMSAB without attention-weight dropout 10,337 documents/s (git history of this file).",
    ]
    if args.profile:
        for name, table in profile(batches, ["DASALC, after", "SetRank MSAB, after",
                                             "nn.TransformerEncoder"], threads_list[0]):
            section = ["", f"## Profile: {name}, training, {threads_list[0]} thread(s)", "", "```", table, "```"]
            print("\n".join(section), flush=True)
            lines += section
    text = "\n".join(lines)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text + "\n")
        print(f"wrote {out}")


if __name__ == "__main__":
    main()

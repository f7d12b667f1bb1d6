"""Peak memory and time of one forward + backward pass of each ranking loss.

Lists of 1,000 documents, batch of 16 queries, float32, MSLR-like labels (0-4 in
proportions 0.51 / 0.33 / 0.13 / 0.02 / 0.01), scores drawn around the labels. For scale, one
``[16, 1000, 1000]`` float32 tensor is 61 MiB.

How memory is measured: each loss runs in a fresh Python process. On CPU the process resets
its peak resident set size (``/proc/self/clear_refs``) after building the inputs and a small
warm-up, runs forward + backward once, and reports ``VmHWM - VmRSS`` (the growth of the
resident peak over the baseline), which counts every tensor the pass allocated, autograd's
saved tensors and temporaries included. On CUDA (``--device cuda``) it reports
``torch.cuda.max_memory_allocated`` minus the memory held before the pass.

Run: ``python benchmarks/bench_loss_memory.py`` (writes ``benchmarks/results/loss_memory.md``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from _common import machine, reset_peak_rss, status_kib

PAIRWISE = ["ranknet", "lambdarank"]
LISTWISE = [
    "sigmoid_ce",
    "softmax",
    "listmle",
    "attention_rank",
    "approx_ndcg",
    "gumbel_approx_ndcg",
    "neuralsort_ndcg",
    "gumbel_neuralsort_ndcg",
]
LIMIT_BYTES = 2 * 1024**3
MIB = 1024**2



def make_inputs(batch, length, device, seed=0):
    import torch

    generator = torch.Generator().manual_seed(seed)
    probabilities = torch.tensor([0.51, 0.33, 0.13, 0.02, 0.01])
    labels = torch.multinomial(probabilities, batch * length, replacement=True, generator=generator)
    labels = labels.reshape(batch, length).float()
    scores = 0.5 * labels + torch.randn(batch, length, generator=generator)
    mask = torch.ones(batch, length, dtype=torch.bool)
    return scores.to(device), labels.to(device), mask.to(device)


def measure_one(name, batch, length, device):
    """Run in a child process: forward + backward of one loss; returns a dict of figures."""
    import torch

    from sklearn_ltr.losses import get_loss

    torch.manual_seed(0)
    loss = get_loss(name)
    # Warm-up on a small batch: loads kernels and allocator state outside the measurement.
    small = make_inputs(2, 50, device)
    warm = small[0].clone().requires_grad_(True)
    loss(warm, small[1], small[2]).backward()

    base_scores, labels, mask = make_inputs(batch, length, device)
    scores = base_scores.clone().requires_grad_(True)
    if device == "cuda":
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
    else:
        baseline_kib = status_kib("VmRSS")
        reset = reset_peak_rss()
    start = time.perf_counter()
    value = loss(scores, labels, mask)
    value.backward()
    if device == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    if device == "cuda":
        peak = torch.cuda.max_memory_allocated() - before
        method = "cuda.max_memory_allocated"
    else:
        peak = (status_kib("VmHWM") - baseline_kib) * 1024
        method = "VmHWM - VmRSS" if reset else "VmHWM - VmRSS (peak not reset: upper bound)"
    finite = bool(torch.isfinite(scores.grad).all())
    return {
        "loss": name,
        "peak_bytes": int(peak),
        "seconds": seconds,
        "value": float(value),
        "finite_grad": finite,
        "method": method,
    }


def run_child(name, args):
    command = [
        sys.executable,
        __file__,
        "--child",
        name,
        "--batch",
        str(args.batch),
        "--length",
        str(args.length),
        "--device",
        args.device,
    ]
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    output = subprocess.run(command, check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(output.strip().splitlines()[-1])


def table(rows, args):
    lines = [
        "| loss | kind | peak memory (MiB) | x one [B, L, L] tensor | forward + backward (s) | finite grad |",
        "| --- | --- | ---: | ---: | ---: | --- |",
    ]
    one = args.batch * args.length * args.length * 4
    for row in rows:
        kind = "pairwise" if row["loss"] in PAIRWISE else "listwise / pointwise"
        lines.append(
            f"| {row['loss']} | {kind} | {row['peak_bytes'] / MIB:,.0f} | {row['peak_bytes'] / one:.1f} "
            f"| {row['seconds']:.2f} | {'yes' if row['finite_grad'] else 'NO'} |"
        )
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--length", type=int, default=1000)
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--losses", nargs="*", default=PAIRWISE + LISTWISE)
    parser.add_argument("--output", default=str(Path(__file__).parent / "results" / "loss_memory.md"))
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.child:
        print(json.dumps(measure_one(args.child, args.batch, args.length, args.device)))
        return 0

    rows = []
    for name in args.losses:
        row = run_child(name, args)
        rows.append(row)
        print(f"{name:24s} {row['peak_bytes'] / MIB:8,.0f} MiB  {row['seconds']:6.2f} s", flush=True)
    text = table(rows, args)
    pairwise_ok = all(r["peak_bytes"] < LIMIT_BYTES for r in rows if r["loss"] in PAIRWISE)
    header = (
        f"# Ranking losses: peak memory of forward + backward\n\n"
        f"Batch {args.batch} queries x {args.length} documents, float32, device {args.device}; "
        f"{machine('torch')}. Measured by `{rows[0]['method'] if rows else ''}` in a fresh "
        f"process per loss (`benchmarks/bench_loss_memory.py`). One [B, L, L] float32 tensor is "
        f"{args.batch * args.length**2 * 4 / MIB:,.0f} MiB.\n\n"
    )
    footer = (
        f"\n\nPairwise losses under 2 GiB: {'yes' if pairwise_ok else 'NO'}. "
        "RankNet and LambdaRank share one [B, L, L] kernel (score differences, label "
        "comparisons, pair mask) and a fused `binary_cross_entropy_with_logits`, so the "
        "autograd graph holds only its inputs. NeuralSort's Sinkhorn scaling works on scaling "
        "vectors with a hand-written backward pass (no [B, L, L] tensor per iteration).\n"
    )
    print("\n" + text)
    output = Path(args.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(header + text + footer)
    print(f"\nwritten {output}")
    return 0 if pairwise_ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""Peak memory of a training batch against the estimate that ``fit``'s memory check refuses by.

``fit`` refuses a batch whose estimate (``sklearn_ltr.training._memory``: ``[L, L]`` float32
tensors per list, declared by the loss and, where PyTorch runs its math attention kernel, by the
module's attention, plus values per document) exceeds 80% of the free memory. This script trains
one epoch of a single batch of ``lists`` lists of ``docs`` documents (136 random features, as
MSLR) with the check switched off, after a warm-up fit of a tiny batch in the same process (so
that one-time allocations, e.g. thread pools and cuBLAS handles, are not counted), and prints
the measured peak beside the estimate, its ``[L, L]`` part and the attention kernel it assumed:

- CUDA: ``torch.cuda.max_memory_allocated`` over the fit, minus the memory held before it;
- CPU (Linux): in a fresh process per configuration (the allocator keeps freed memory, so a
  second large fit in one process would reuse it), the growth of the resident peak (``VmHWM``,
  reset through ``/proc/self/clear_refs`` after the warm-up) over the fit.

With ``--acceptance`` (CUDA) it then fits ``DASALCRanker(batch_size=1024)`` for one epoch on
1,000 MSLR-shaped queries (``make_ranking(1000, preset="mslr", random_state=1)``: lists up to
696 documents) with the check on, and reports whether it was accepted and its peak.

Run: ``python benchmarks/bench_training_memory.py --device cuda --acceptance`` (about a minute
on a GPU), or ``--device cpu --quick`` for small shapes (a few minutes on 2 cores). Writes
``benchmarks/results/training_memory_<device>.md``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import torch
from _common import command_line, machine_header, reset_peak_rss, status_kib

from sklearn_ltr import DASALCRanker, RankNetRanker, SetRankRanker
from sklearn_ltr.datasets import make_ranking
from sklearn_ltr.training import _memory

MODELS = {"DASALC": (DASALCRanker, {}), "SetRank": (SetRankRanker, {}),
          "RankNet (pairwise loss)": (RankNetRanker, {"loss": "ranknet"}),
          # No attention dropout: PyTorch's fused CPU kernel runs in training too.
          "DASALC (attention_dropout=0)": (DASALCRanker, {"attention_dropout": 0.0}),
          # CUDA only (the default there): bf16 heads 100 wide rule the fused kernels out of padded batches.
          "DASALC (bf16-mixed)": (DASALCRanker, {"precision": "bf16-mixed"})}
SHAPES = ((8, 2000), (8, 4000), (2, 8000), (64, 696))
QUICK_SHAPES = ((4, 500), (2, 1000), (16, 200), (1, 2000))


def _resident_peak_growth(run):
    """Bytes by which ``run()`` raised the process's resident peak (Linux; read as bench_loss_memory reads it)."""
    if not reset_peak_rss():
        raise RuntimeError("cannot reset the resident peak through /proc/self/clear_refs")
    base = status_kib("VmRSS")
    run()
    return (status_kib("VmHWM") - base) * 1024


def _batch(lists, docs, rng):
    X = rng.normal(size=(lists * docs, 136)).astype(np.float32)
    return X, rng.integers(0, 5, lists * docs), np.repeat(np.arange(lists), docs)


def measure(cls, params, lists, docs, device, rng):
    """``(peak bytes, estimated bytes, [L, L] part of the estimate, attention kernel assumed)`` of one batch."""
    X, y, qid = _batch(lists, docs, rng)
    settings = dict(max_epochs=1, device=device, random_state=0, validation_fraction=None)
    ranker = cls(**params, batch_size=lists, **settings)
    ranker.uses_initial_rank_ = False  # SetRank's module spec reads it; fit sets it again
    memory = _memory.MemoryEstimate.declared(
        cls.__name__, _memory.module_cost(*ranker._module_spec(136)), 136, device=device,
        loss=getattr(ranker, "loss", None), loss_params=ranker.loss_params, precision=ranker.precision,
    )
    estimate = memory.training_bytes(lists, docs)
    square = _memory.batch_bytes(lists, docs, quadratic=memory.training_quadratic, linear=0)
    kernel = memory.training_kernel or "none"
    cls(**params, batch_size=2, **settings).fit(*_batch(2, 8, rng))  # warm-up: one-time allocations
    if device.startswith("cuda"):
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        ranker.fit(X, y, qid)
        torch.cuda.synchronize()
        peak = torch.cuda.max_memory_allocated() - base
    else:
        peak = _resident_peak_growth(lambda: ranker.fit(X, y, qid))
    return peak, estimate, square, kernel


def acceptance(device):
    """``DASALCRanker(batch_size=1024)`` on 1,000 MSLR-shaped queries, the check on: one line of text."""
    X, y, qid = make_ranking(1000, preset="mslr", random_state=1)
    ranker = DASALCRanker(batch_size=1024, max_epochs=1, device=device, random_state=0)
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    free = _memory.available_memory(device)
    try:
        ranker.fit(X, y, qid)
    except MemoryError as error:
        return f"refused with {_memory._gb(free)} free: {error}"
    peak = torch.cuda.max_memory_allocated() - base
    return (f"accepted with {_memory._gb(free)} free (largest batch: 1,000 lists padded to "
            f"{np.unique(qid, return_counts=True)[1].max()} documents); batch_size_={ranker.batch_size_}, "
            f"one epoch, peak {peak / 1e9:.2f} GB.")


def _in_fresh_process(name, lists, docs, device):
    """:func:`measure` in a new Python process: CPU peaks must not see an earlier fit's freed memory."""
    done = subprocess.run(
        [sys.executable, __file__, "--single", name, str(lists), str(docs), "--device", device],
        capture_output=True, text=True, check=True,
    )
    *numbers, kernel = done.stdout.split()[-4:]
    return (*(int(v) for v in numbers), kernel)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--models", default=None, help="comma-separated names of MODELS (default: all; on CPU "
                                                            "all but bf16)")
    parser.add_argument("--quick", action="store_true", help="small shapes (CPU-sized)")
    parser.add_argument("--acceptance", action="store_true",
                        help="then fit DASALCRanker(batch_size=1024) on 1,000 MSLR-shaped queries, the check on (CUDA)")
    parser.add_argument("--out", default=None)
    parser.add_argument("--single", nargs=3, metavar=("MODEL", "LISTS", "DOCS"), help=argparse.SUPPRESS)
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        parser.error("--device cuda needs a CUDA GPU")
    if args.acceptance and not args.device.startswith("cuda"):
        parser.error("--acceptance needs --device cuda")
    if not args.device.startswith("cuda") and not os.path.exists("/proc/self/clear_refs"):
        parser.error("the CPU measurement reads /proc/self/status (Linux)")
    # The check is what is being measured against: switched off, so the batches it refuses run.
    check = _memory.MemoryEstimate.check_training
    _memory.MemoryEstimate.check_training = lambda self, sizes, batch_size: None
    rng = np.random.default_rng(0)
    if args.single:
        name, lists, docs = args.single[0], int(args.single[1]), int(args.single[2])
        print(*measure(*MODELS[name], lists, docs, args.device, rng))
        return
    header = ("| model | lists x documents | peak GB | estimate GB | peak / estimate | [L, L] part of the estimate GB "
              "| attention assumed |")
    rows = [header, "|---|---|---|---|---|---|---|"]
    print("\n".join(rows), flush=True)
    names = args.models.split(",") if args.models else [
        name for name in MODELS if args.device.startswith("cuda") or "bf16" not in name]
    for name in names:
        cls, params = MODELS[name]
        for lists, docs in QUICK_SHAPES if args.quick else SHAPES:
            if args.device.startswith("cuda"):
                peak, estimate, square, kernel = measure(cls, params, lists, docs, args.device, rng)
            else:
                peak, estimate, square, kernel = _in_fresh_process(name, lists, docs, args.device)
            rows.append(f"| {name} | {lists} x {docs} | {peak / 1e9:.2f} | {estimate / 1e9:.2f} | "
                        f"{peak / estimate:.3f} | {square / 1e9:.2f} | {kernel} |")
            print(rows[-1], flush=True)
    if args.acceptance:
        _memory.MemoryEstimate.check_training = check
        rows += ["", "DASALCRanker(batch_size=1024) on 1,000 MSLR-shaped queries: " + acceptance(args.device)]
        print(rows[-1], flush=True)
    processor = torch.cuda.get_device_name() if args.device.startswith("cuda") else "CPU"
    header = machine_header("torch", load="at the end", command=command_line(argv))
    text = (f"# Training memory against fit's estimate on {args.device}\n\n{processor}. {header}\n\n"
            + "\n".join(rows) + "\n")
    kind = torch.device(args.device).type
    out = Path(args.out or Path(__file__).parent / "results" / f"training_memory_{kind}.md")
    out.write_text(text)
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()

"""Does bf16 training diverge where float32 does not? SetRank (and DASALC) over seeds x batch sizes.

For each precision (``32-true``, ``bf16-mixed``), batch size and seed, one ``fit`` on MSLR-shaped
data (``make_ranking(preset="mslr")``), with two skorch callbacks that watch the run:

- a forward hook on every submodule, which names the first module whose output holds NaN or
  infinity (the operation that overflowed or lost its precision);
- ``on_grad_computed``, which names the first parameter whose gradient is not finite (a NaN
  gradient makes the weights NaN at the next step, and the *next* batch's loss NaN).

``result`` is ``ok`` or where the loss became non-finite (``NonFiniteLossError``); NDCG@10 is on
200 held-out queries of the same distribution. ``--attention`` reruns the runs under a variant of
the attention call, to find which part of it is at fault:

- ``library``: the library as it is;
- ``bf16-sdpa``: the attention kernel fed bf16 under autocast (the library before it kept the
  attention in float32);
- ``fp32-sdpa``: the attention kernel fed float32 (autocast off around it);
- ``math``, ``efficient``: bf16 attention restricted to one of PyTorch's SDPA backends.

Run: ``python benchmarks/bench_bf16_stability.py --device cuda`` (about two minutes on a GPU), or
``--device cpu --queries 200 --epochs 2`` (CPU autocast). Prints a Markdown table; ``--out`` writes it.
"""

from __future__ import annotations

import argparse
import contextlib
import time
from typing import ClassVar

import torch
from _common import command_line, device_name, machine, write_report
from skorch.callbacks import Callback
from torch.nn import functional as F

from sklearn_ltr import DASALCRanker, SetRankRanker
from sklearn_ltr.datasets import make_ranking
from sklearn_ltr.exceptions import NonFiniteLossError
from sklearn_ltr.metrics import ndcg_score
from sklearn_ltr.nn import _attention

MODELS = {"SetRank": SetRankRanker, "DASALC": DASALCRanker}


class NonFiniteWatch(Callback):
    """Names the first module output and the first gradient that are not finite.

    The ranker deep-copies its callbacks, so what is found is kept on the class (``found``).
    """

    found: ClassVar[dict] = {}

    def __init__(self):
        self._handles = []
        self._step = (0, 0)

    @property
    def first_forward(self):
        return self.found.get("forward")

    @property
    def first_grad(self):
        return self.found.get("grad")

    def on_train_begin(self, net, **kwargs):
        self.found.clear()
        for name, module in net.module_.named_modules():
            self._handles.append(module.register_forward_hook(self._hook(name or "<net>")))

    def _hook(self, name):
        def check(module, inputs, output):
            if self.first_forward is None and torch.is_tensor(output) and output.is_floating_point() \
                    and not bool(torch.isfinite(output).all()):
                self.found["forward"] = f"{name} ({type(module).__name__}, {output.dtype}) at {self._step}"
        return check

    def on_batch_begin(self, net, batch=None, training=False, **kwargs):
        self._step = (len(net.history), len(net.history[-1]["batches"]))  # skorch opened the batch already

    def on_grad_computed(self, net, named_parameters, **kwargs):
        if self.first_grad is not None:
            return
        for name, parameter in named_parameters:
            if parameter.grad is not None and not bool(torch.isfinite(parameter.grad).all()):
                self.found["grad"] = f"{name} at {self._step}"
                return

    def on_train_end(self, net, **kwargs):
        for handle in self._handles:
            handle.remove()
        self._handles = []


@contextlib.contextmanager
def attention_variant(variant):
    """Run the attention call of :mod:`sklearn_ltr.nn._attention` as ``variant`` says."""
    if variant == "library":
        yield
        return
    original = F.scaled_dot_product_attention
    backends = {"math": [torch.nn.attention.SDPBackend.MATH],
                "efficient": [torch.nn.attention.SDPBackend.EFFICIENT_ATTENTION]}

    def bf16_sdpa(q, k, v, attn_mask=None, dropout_p=0.0, **kw):
        if variant == "fp32-sdpa":
            with torch.autocast(q.device.type, enabled=False):
                return original(q.float(), k.float(), v.float(), attn_mask=attn_mask, dropout_p=dropout_p, **kw)
        # Under autocast, cast as autocast would (the library keeps float32 here).
        if torch.is_autocast_enabled(q.device.type):
            dtype = torch.get_autocast_dtype(q.device.type)
            q, k, v = q.to(dtype), k.to(dtype), v.to(dtype)
        if variant in backends:
            with torch.nn.attention.sdpa_kernel(backends[variant]):
                return original(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, **kw)
        return original(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, **kw)

    patched = [(module, name) for module, name in ((F, "scaled_dot_product_attention"),
                                                   (_attention, "scaled_dot_product_attention"))
               if hasattr(module, name)]
    saved = [getattr(module, name) for module, name in patched]
    try:
        for module, name in patched:
            setattr(module, name, bf16_sdpa)
        yield
    finally:
        for (module, name), value in zip(patched, saved, strict=True):
            setattr(module, name, value)


def run(model, precision, batch, seed, variant, data, args):
    X, y, qid, X_test, y_test, qid_test = data
    watch = NonFiniteWatch()
    NonFiniteWatch.found.clear()
    ranker = MODELS[model](precision=precision, batch_size=batch, max_epochs=args.epochs, device=args.device,
                           random_state=seed, callbacks=[("nonfinite", watch)])
    start = time.perf_counter()
    with attention_variant(variant):
        try:
            ranker.fit(X, y, qid)
            result, ndcg = "ok", ndcg_score(y_test, ranker.predict(X_test, qid_test), qid_test, k=10)
        except NonFiniteLossError as error:
            where = str(error).split(":")[0].replace("The training loss became ", "")
            result, ndcg = f"diverged ({where})", float("nan")
        except RuntimeError as error:  # e.g. no kernel of the forced SDPA backend applies: a row, not a crash
            result, ndcg = f"error: {str(error).splitlines()[0][:160]}", float("nan")
    history = ranker.history_ if hasattr(ranker, "net_") else []  # a diverged fit keeps no net
    loss = history[-1]["train_loss"] if len(history) and "train_loss" in history[-1] else float("nan")
    return {"model": model, "precision": precision, "attention": variant, "batch": batch, "seed": seed,
            "result": result, "first non-finite output": watch.first_forward or "",
            "first non-finite gradient": watch.first_grad or "", "last train loss": f"{loss:.4f}",
            "NDCG@10": f"{ndcg:.4f}", "seconds": f"{time.perf_counter() - start:.1f}"}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--models", default="SetRank")
    parser.add_argument("--queries", type=int, default=1000, help="MSLR-shaped training queries")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-sizes", default="64,256,1024")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--precisions", default="32-true,bf16-mixed")
    parser.add_argument("--attention", default="library",
                        help="bf16 runs' variants, comma-separated: library, bf16-sdpa, fp32-sdpa, math, efficient")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)

    X, y, qid = make_ranking(args.queries + 200, preset="mslr", random_state=0)
    test = qid >= args.queries
    data = (X[~test], y[~test], qid[~test], X[test], y[test], qid[test])
    rows = []
    for model in args.models.split(","):
        for precision in args.precisions.split(","):
            variants = args.attention.split(",") if precision == "bf16-mixed" else ["library"]
            for variant in variants:
                for batch in map(int, args.batch_sizes.split(",")):
                    for seed in map(int, args.seeds.split(",")):
                        row = run(model, precision, batch, seed, variant, data, args)
                        print(row, flush=True)
                        rows.append(row)
    device = device_name(args.device)
    write_report(f"# bf16 stability on {args.device}",
                 f"{device}, {machine('torch')}; {args.queries} MSLR-shaped queries, {args.epochs} epochs. "
                 f"Command: `{command_line()}`", rows, args.out)

if __name__ == "__main__":
    main()

"""Does ``torch.compile`` pay for the neural rankers' modules? Eager against compiled, training and scoring.

For each model (RankNet, DASALC, SetRank at their defaults) fitted briefly on MSLR-shaped data
(``make_ranking(preset="mslr")``), the same module and the same padded batches, eager and through
``torch.compile(module, dynamic=True)`` (the batches' shapes vary with the list lengths):

- **train**: documents per second of a plain loop (forward, the ranker's loss, backward, Adam)
  over the training batches, median epoch after the first (the first holds the compilation);
- **score**: documents per second of the module's forward pass (eval, no autograd) over the
  batches ``predict`` scores, best of three after a warm-up pass (which compiles);
- **compile s**: seconds of the first compiled epoch (or warm-up pass) beyond an eager one;
- **max |diff|**: the largest difference between eager and compiled scores (float32 tolerance
  is about 1e-5 relative).

The library offers compilation only where it is faster by 1.3x or more with identical scores
within float32 tolerance. Run: ``python benchmarks/bench_compile.py --device cuda`` (a GPU), or
``--device cpu --queries 200`` on a CPU. Prints a Markdown table; ``--out`` writes it.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import torch
from _common import command_line, device_name, machine, sync, write_report

from sklearn_ltr import DASALCRanker, RankNetRanker, SetRankRanker
from sklearn_ltr._groups import QueryGroups
from sklearn_ltr.datasets import make_ranking
from sklearn_ltr.losses import get_loss
from sklearn_ltr.training._batches import QueryBatches, QueryDataset

MODELS = {"RankNet": (RankNetRanker, {"hidden_sizes": (144, 144)}), "DASALC": (DASALCRanker, {}),
          "SetRank": (SetRankRanker, {})}


def train_epochs(module, ranker, batches, epochs, device):
    """Seconds of each epoch of a plain training loop over ``batches``."""
    optimizer = torch.optim.Adam(module.parameters(), lr=ranker.lr)
    loss = get_loss(ranker.loss, **(ranker.loss_params or {}))
    times = []
    for _ in range(epochs):
        sync(device)
        start = time.perf_counter()
        for inputs, labels in batches:
            optimizer.zero_grad(set_to_none=True)
            loss(module(inputs["X"], inputs["mask"]).float(), labels, inputs["mask"]).backward()
            optimizer.step()
        sync(device)
        times.append(time.perf_counter() - start)
    return times


def score_passes(module, batches, passes, device):
    """Seconds of each forward pass over ``batches`` and the scores of the last one."""
    times, scores = [], None
    with torch.no_grad():
        for _ in range(passes):
            sync(device)
            start = time.perf_counter()
            scores = [module(inputs["X"], inputs["mask"])[inputs["mask"]] for inputs in batches]
            sync(device)
            times.append(time.perf_counter() - start)
    return times, torch.cat(scores)


def measure(name, cls, params, X, y, qid, args):
    ranker = cls(**params, max_epochs=1, device=args.device, random_state=0).fit(X, y, qid)
    device = ranker.net_.device
    module_class, kwargs = ranker._module_spec(X.shape[1])
    dataset = QueryDataset.from_arrays(QueryGroups(qid), X, y).to(device)
    train_batches = list(QueryBatches(dataset, ranker.batch_size, shuffle=True,
                                      generator=torch.Generator().manual_seed(0), device=device))
    groups = qid if ranker._list_context else np.zeros(len(X), dtype=np.int64)
    score_set = QueryDataset.from_arrays(QueryGroups(groups), X).to(device)
    score_batches = list(ranker.net_.prediction_batches(score_set))
    documents = sum(int(inputs["mask"].sum()) for inputs, _ in train_batches)
    row = {"model": name}
    times = {}
    for mode in ("eager", "compiled"):
        torch.manual_seed(0)
        module = module_class(**kwargs).to(device).train()
        runner = torch.compile(module, dynamic=True) if mode == "compiled" else module
        times[mode] = train_epochs(runner, ranker, train_batches, args.epochs, device)
    # Scoring: the same (eager-trained) weights, eager and compiled, so the scores must agree.
    module.eval()
    score_e, scores_e = score_passes(module, score_batches, 4, device)
    score_c, scores_c = score_passes(torch.compile(module, dynamic=True), score_batches, 4, device)
    train_e, train_c = times["eager"], times["compiled"]
    eager_train, compiled_train = documents / np.median(train_e[1:]), documents / np.median(train_c[1:])
    eager_score, compiled_score = len(X) / min(score_e[1:]), len(X) / min(score_c[1:])
    row.update({
        "train eager docs/s": f"{eager_train:,.0f}", "train compiled docs/s": f"{compiled_train:,.0f}",
        "train speed-up": f"{compiled_train / eager_train:.2f}",
        "score eager docs/s": f"{eager_score:,.0f}", "score compiled docs/s": f"{compiled_score:,.0f}",
        "score speed-up": f"{compiled_score / eager_score:.2f}",
        "compile s": f"{train_c[0] - np.median(train_e) + score_c[0] - min(score_e):.1f}",
        "max |diff|": f"{float((scores_e.float() - scores_c.float()).abs().max()):.2e}",
    })
    return row


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    X, y, qid = make_ranking(args.queries, preset="mslr", random_state=1)
    rows = []
    for name in args.models.split(","):
        cls, params = MODELS[name]
        try:
            row = measure(name, cls, params, X, y, qid, args)
        except Exception as error:  # a compiler failure is a finding, not a crash of the table
            row = {"model": name, "error": f"{type(error).__name__}: {str(error).splitlines()[0][:200]}"}
        print(row, flush=True)
        rows.append(row)
    device = device_name(args.device)
    load = os.getloadavg()[0]
    write_report(f"# torch.compile on {args.device}",
                 f"{device}, {machine('torch')}, {torch.get_num_threads()} threads, load {load:.2f} at the "
                 f"end; {len(X):,} MSLR-shaped documents ({args.queries} queries), {args.epochs} epochs. "
                 f"Command: `{command_line()}`", rows, args.out)


if __name__ == "__main__":
    main()

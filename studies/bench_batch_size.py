"""Test NDCG@10 of a neural ranker against its training batch size, on MQ2008 Fold 1.

The evidence behind ``batch_size="auto"``'s cap: for each batch size (queries per batch) and
seed, train on Fold 1 ``train.txt`` for a fixed number of epochs at the default learning rate,
and print the NDCG@10 on ``test.txt``, the number of optimiser steps, and the fit time. A
larger batch takes fewer steps per epoch: past some size the model is under-trained at the
same number of epochs, and the cap of ``"auto"`` sits below that size.

Run: ``python studies/bench_batch_size.py --data ../shared/data/mq2008`` (about 10 minutes
on 2 CPU cores with the defaults). Writes ``studies/results/batch_size_<device>.md``;
record the machine's load beside the times.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
import torch

from sklearn_ltr import DASALCRanker, RankNetRanker, SetRankRanker
from sklearn_ltr.datasets import load_svmlight_ranking
from sklearn_ltr.metrics import ndcg_score

MODELS = {"DASALC": DASALCRanker, "SetRank": SetRankRanker, "RankNet": RankNetRanker}


def run(cls, batch_size, seed, epochs, device, data):
    """``(NDCG@10 on test, optimiser steps, fit seconds, batch_size_)`` of one fit."""
    X, y, qid, X_test, y_test, qid_test = data
    ranker = cls(batch_size=batch_size, max_epochs=epochs, random_state=seed, device=device)
    start = time.perf_counter()
    ranker.fit(X, y, qid)
    seconds = time.perf_counter() - start
    chosen = getattr(ranker, "batch_size_", batch_size)
    steps = epochs * -(-len(np.unique(qid)) // chosen)
    return ndcg_score(y_test, ranker.predict(X_test, qid_test), qid_test, k=10), steps, seconds, chosen


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=os.path.join(os.environ.get("SKLEARN_LTR_DATA", "../shared/data"),
                                                       "mq2008"))
    parser.add_argument("--model", default="DASALC", choices=sorted(MODELS))
    parser.add_argument("--batch-sizes", default="8,16,32,64,128,256,471")
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    folder = Path(args.data) / "Fold1"
    X, y, qid = load_svmlight_ranking(folder / "train.txt")
    X_test, y_test, qid_test = load_svmlight_ranking(folder / "test.txt", n_features=X.shape[1])
    data = (X, y, qid, X_test, y_test, qid_test)
    seeds = [int(s) for s in args.seeds.split(",")]
    rows = [f"| batch_size | steps | NDCG@10 per seed ({', '.join(map(str, seeds))}) | mean | fit s (mean) |",
            "|---|---|---|---|---|"]
    print("\n".join(rows), flush=True)
    for batch in args.batch_sizes.split(","):
        batch_size = batch if batch == "auto" else int(batch)
        results = [run(MODELS[args.model], batch_size, seed, args.epochs, args.device, data) for seed in seeds]
        scores = [r[0] for r in results]
        label = f"auto ({results[0][3]})" if batch == "auto" else batch
        rows.append(f"| {label} | {results[0][1]} | {' / '.join(f'{s:.4f}' for s in scores)} | "
                    f"{np.mean(scores):.4f} | {np.mean([r[2] for r in results]):.1f} |")
        print(rows[-1], flush=True)
    load = os.getloadavg()[0]
    text = (f"# {args.model}: NDCG@10 against batch size, MQ2008 Fold 1 ({args.device})\n\n"
            f"{len(np.unique(qid))} training queries, {args.epochs} epochs, default learning rate; torch "
            f"{torch.__version__}, load {load:.2f} at the end.\n\n"
            f"`python studies/bench_batch_size.py {' '.join(argv or [])}`\n\n" + "\n".join(rows) + "\n")
    out = Path(args.out or Path(__file__).parent / "results" / f"batch_size_{torch.device(args.device).type}.md")
    out.write_text(text)
    print(f"\nwrote {out}")


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])

"""The DASALC paper's loss comparison: one feed-forward network trained with each ranking loss.

On MQ2008 Fold 1 (read from ``$SKLEARN_LTR_DATA`` or ``../shared/data``), the same
46-64-32-1 ReLU network (``RankNetRanker``) is trained with each loss of
``sklearn_ltr.losses``. For each loss the learning rate is chosen on ``vali.txt`` by
NDCG@10 from a small grid (the same budget for every loss); the chosen setting is then
trained with three seeds and scored on ``test.txt``. LambdaMART is shown for reference.

Run: ``python studies/bench_losses.py`` (writes ``studies/results/losses_mq2008.md``).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from sklearn_ltr import LambdaMARTRanker, RankNetRanker
from sklearn_ltr.datasets import load_svmlight_ranking
from sklearn_ltr.losses import LOSSES
from sklearn_ltr.metrics import ndcg_score

LEARNING_RATES = (1e-3, 1e-2)
SEEDS = (0, 1, 2)


def data_dir():
    default = Path(__file__).resolve().parents[2] / "shared" / "data"
    return Path(os.environ.get("SKLEARN_LTR_DATA", default))


def _ndcgs(y, scores, groups):
    return [ndcg_score(y, scores, groups, k=k) for k in (1, 5, 10)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "losses_mq2008.md")
    args = parser.parse_args()

    fold = data_dir() / "mq2008" / "Fold1"
    train = load_svmlight_ranking(fold / "train.txt")
    vali = load_svmlight_ranking(fold / "vali.txt")
    test = load_svmlight_ranking(fold / "test.txt")

    rows = []
    for loss in LOSSES:
        start = time.perf_counter()

        def model(lr, seed, loss=loss):
            return RankNetRanker(hidden_sizes=(64, 32), loss=loss, lr=lr, max_epochs=args.epochs, batch_size=32,
                                 device="cpu", random_state=seed)

        vali_scores = {lr: model(lr, 0).fit(*train).score(*vali) for lr in LEARNING_RATES}
        best_lr = max(vali_scores, key=vali_scores.get)
        results = np.array([_ndcgs(test[1], model(best_lr, seed).fit(*train).predict(test[0]), test[2])
                            for seed in SEEDS])
        rows.append((loss, best_lr, vali_scores[best_lr], results, time.perf_counter() - start))
        print(f"{loss}: lr={best_lr:g} vali NDCG@10={vali_scores[best_lr]:.4f} test NDCG@10={results[:, 2].mean():.4f}",
              flush=True)

    lambdamart = np.array([
        _ndcgs(test[1], LambdaMARTRanker(n_estimators=300, learning_rate=0.05, early_stopping_rounds=30,
                                         random_state=seed, n_jobs=2, subsample=0.8, subsample_freq=1)
               .fit(*train, eval_set=[vali]).predict(test[0]), test[2])
        for seed in SEEDS
    ])

    def cell(values):
        return f"{values.mean():.4f} ± {values.std():.4f}"

    lines = [
        "Loss comparison on MQ2008 Fold 1: 46-64-32-1 ReLU network (RankNetRanker), "
        f"{args.epochs} epochs, batch 32 queries, Adam; lr chosen on vali from {list(LEARNING_RATES)}; "
        f"test NDCG mean ± std over seeds {list(SEEDS)}. NDCG: exponential gain, queries without a relevant "
        "document score 1 (LightGBM's convention).",
        "",
        "| loss | lr | vali NDCG@10 | test NDCG@1 | test NDCG@5 | test NDCG@10 | time (s) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for loss, lr, vali_score, results, seconds in sorted(rows, key=lambda r: -r[3][:, 2].mean()):
        lines.append(f"| {loss} | {lr:g} | {vali_score:.4f} | {cell(results[:, 0])} | {cell(results[:, 1])} | "
                     f"{cell(results[:, 2])} | {seconds:.0f} |")
    lines.append(f"| *LambdaMARTRanker (reference, early stopping on vali)* | | | {cell(lambdamart[:, 0])} | "
                 f"{cell(lambdamart[:, 1])} | {cell(lambdamart[:, 2])} | |")
    text = "\n".join(lines)
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()

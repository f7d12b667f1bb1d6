"""The neural rankers on one device: precision x model x batch size, in one table.

For each configuration on MSLR-shaped data (``make_ranking(preset="mslr")``: 136 features,
lists of about 122 documents with a tail to 1,250):

- **fit**: training documents per second of ``ranker.fit`` (median epoch after the first,
  from skorch's per-epoch ``dur``);
- **loop**: the same module, loss, optimiser and batches (built by the library's
  ``QueryBatches`` and collated before timing) in a hand-written loop; ``fit / loop`` is the
  share of the loop's speed the library keeps (target >= 0.9);
- **module**: the module's own forward pass (eval, no autograd) over the padded batches that
  ``predict`` scores, collated before timing; **predict**: warm ``ranker.predict`` over the
  same rows, validation, copies and un-sorting included; ``predict / module`` (target >= 0.8);
- **distinct**: share of distinct values among the predicted scores (bf16-rounded scores
  would tie most documents of a list; float32 ones do not);
- **NDCG@10** on MQ2008 Fold 1 test after training on Fold 1 train (``--mq2008 DIR``).

Run on any machine: ``python benchmarks/bench_device.py --device cuda`` (about 5 minutes on a
GPU with the defaults), or the CI-sized CPU run ``python benchmarks/bench_device.py --quick``.
Writes ``benchmarks/results/device_<device>.md``. Record the machine's load beside CPU figures.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch
from _common import command_line, device_name, machine_header, sync

from sklearn_ltr import DASALCRanker, RankNetRanker, SetRankRanker
from sklearn_ltr._groups import QueryGroups
from sklearn_ltr.datasets import load_svmlight_ranking, make_ranking
from sklearn_ltr.exceptions import NonFiniteLossError
from sklearn_ltr.losses import get_loss
from sklearn_ltr.metrics import ndcg_score
from sklearn_ltr.training._batches import QueryBatches, QueryDataset

MODELS = {
    "RankNet": (RankNetRanker, {"hidden_sizes": (144, 144)}),
    "DASALC": (DASALCRanker, {}),
    "SetRank": (SetRankRanker, {}),
}


def fit_docs_per_second(ranker, n_docs):
    durations = [row["dur"] for row in ranker.history_][1:] or [ranker.history_[-1]["dur"]]
    return n_docs / float(np.median(durations))


def hand_loop_docs_per_second(ranker, X, y, qid, epochs, device):
    """Same module class and arguments, loss, Adam and batches as ``fit``, in a plain torch loop."""
    module_class, kwargs = ranker._module_spec(X.shape[1])
    torch.manual_seed(0)
    module = module_class(**kwargs).to(device).train()
    optimizer = torch.optim.Adam(module.parameters(), lr=ranker.lr)
    loss = get_loss(ranker.loss, **(ranker.loss_params or {}))
    dataset = QueryDataset.from_arrays(QueryGroups(qid), X, y).to(device)
    generator = torch.Generator().manual_seed(0)
    batches = list(QueryBatches(dataset, ranker.batch_size, shuffle=True, generator=generator, device=device))
    documents = sum(int(inputs["mask"].sum()) for inputs, _ in batches)
    times = []
    for _ in range(epochs):
        sync(device)
        start = time.perf_counter()
        for inputs, labels in batches:
            optimizer.zero_grad(set_to_none=True)
            scores = module(inputs["X"], inputs["mask"])
            loss(scores.float(), labels, inputs["mask"]).backward()
            optimizer.step()
        sync(device)
        times.append(time.perf_counter() - start)
    return documents / float(np.median(times[1:] or times))


def module_docs_per_second(ranker, X, qid, repeats=3):
    """The module's forward pass over the padded batches predict builds (collated before timing)."""
    net = ranker.net_
    module, device = net.module_.eval(), net.device
    # As predict groups the rows: by query for a list-context model, one list for a pointwise one.
    groups = qid if ranker._list_context else np.zeros(len(X), dtype=np.int64)
    dataset = QueryDataset.from_arrays(QueryGroups(groups), X).to(device)
    batches = list(net.prediction_batches(dataset))
    best = np.inf
    with torch.no_grad():
        for _ in range(repeats):
            sync(device)
            start = time.perf_counter()
            for inputs in batches:
                module(inputs["X"], inputs["mask"])
            sync(device)
            best = min(best, time.perf_counter() - start)
    return len(X) / best


def predict_docs_per_second(ranker, X, qid, repeats=3):
    ranker.predict(X, qid)  # warm: allocator, kernels
    best, scores = np.inf, None
    for _ in range(repeats):
        start = time.perf_counter()
        scores = ranker.predict(X, qid)
        best = min(best, time.perf_counter() - start)
    return len(X) / best, scores


def mq2008_ndcg(cls, params, folder):
    X, y, qid = load_svmlight_ranking(Path(folder) / "Fold1" / "train.txt")
    X_test, y_test, qid_test = load_svmlight_ranking(Path(folder) / "Fold1" / "test.txt", n_features=X.shape[1])
    ranker = cls(**params).fit(X, y, qid)
    return ndcg_score(y_test, ranker.predict(X_test, qid_test), qid_test, k=10)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--queries", type=int, default=1000, help="MSLR-shaped training queries")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-sizes", default="64,256,1024", help="queries per training batch")
    parser.add_argument("--precisions", default="32-true,bf16-mixed")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--mq2008", default=None, help="folder of MQ2008 (Fold1/train.txt, Fold1/test.txt)")
    parser.add_argument("--quick", action="store_true", help="CI-sized: 150 queries, small models, 2 epochs")
    parser.add_argument("--out", default=None)
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    models = {name: MODELS[name] for name in args.models.split(",")}
    if args.quick:
        args.queries, args.epochs = 150, 2
        models = {
            "RankNet": (RankNetRanker, {"hidden_sizes": (64, 32)}),
            "DASALC": (DASALCRanker, {"hidden_size": 64, "n_attention_layers": 2, "head_size": 32}),
            "SetRank": (SetRankRanker, {"d_model": 64, "n_blocks": 2}),
        }
        models = {name: models[name] for name in args.models.split(",")}
    X, y, qid = make_ranking(n_queries=args.queries, preset="mslr", random_state=1)
    rows = []
    header = ("| precision | model | batch | fit docs/s | loop docs/s | fit/loop | module docs/s | predict docs/s "
              "| predict/module | distinct | NDCG@10 MQ2008 |")
    print(header)
    print("|" + "---|" * 11)
    for precision in args.precisions.split(","):
        for name, (cls, params) in models.items():
            for batch_size in (int(b) for b in args.batch_sizes.split(",")):
                settings = {**params, "batch_size": batch_size, "max_epochs": args.epochs, "device": args.device,
                            "precision": precision, "random_state": 0}
                try:
                    ranker = cls(**settings).fit(X, y, qid)
                except (MemoryError, NonFiniteLossError) as error:  # fit's own checks: a row, not a crash
                    what = "does not fit" if isinstance(error, MemoryError) else "diverged"
                    row = f"| {precision} | {name} | {batch_size} | {what}: {error} |" + " |" * 7
                    print(row, flush=True)
                    rows.append(row)
                    continue
                fit = fit_docs_per_second(ranker, len(X))
                loop = hand_loop_docs_per_second(ranker, X, y, qid, args.epochs, ranker.net_.device)
                module = module_docs_per_second(ranker, X, qid)
                predict, scores = predict_docs_per_second(ranker, X, qid)
                distinct = len(np.unique(scores)) / len(scores)
                ndcg = mq2008_ndcg(cls, {**settings, "max_epochs": 20}, args.mq2008) if args.mq2008 else float("nan")
                row = (f"| {precision} | {name} | {batch_size} | {fit:,.0f} | {loop:,.0f} | {fit / loop:.2f} | "
                       f"{module:,.0f} | {predict:,.0f} | {predict / module:.2f} | {distinct:.4f} | {ndcg:.4f} |")
                print(row, flush=True)
                rows.append(row)
    run = machine_header("torch", note=f"{torch.get_num_threads()} torch threads", load="at the end",
                         command=command_line(argv))
    text = (f"# Neural rankers on {args.device}\n\n{device_name(args.device)}; {len(X):,} MSLR-shaped documents "
            f"({args.queries} queries), {args.epochs} epochs. {run}\n\n{header}\n|{'---|' * 11}\n"
            + "\n".join(rows) + "\n")
    out = Path(args.out or Path(__file__).parent / "results" / f"device_{torch.device(args.device).type}.md")
    out.write_text(text)
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()

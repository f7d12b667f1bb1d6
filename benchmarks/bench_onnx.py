"""ONNX export: parity with ``predict`` and CPU scoring throughput, per ranker, on MQ2008 Fold 1.

For each ranker: fit on MQ2008 Fold 1 train (default architecture, 2 epochs for the neural
rankers, 100 trees for LambdaMART: scoring cost depends on the architecture, not on how well
it is trained), export with :func:`sklearn_ltr.export.to_onnx`, then on the 2,874 test
documents (156 queries):

- the max abs difference between onnxruntime's scores and ``ranker.predict``'s;
- documents per second of ``ranker.predict`` (torch or LightGBM with 1 and 2 threads),
  :meth:`OnnxScorer.predict <sklearn_ltr.export.OnnxScorer.predict>` (grouping, padding and
  un-padding included, onnxruntime with 1 and 2 threads), and ``session.run`` alone on the
  same padded batches built beforehand (what a search service that already holds padded
  lists pays).

Each throughput figure is the median of ``--repeats`` timed runs after one warm-up run. The
load average (1 minute) is read before each ranker's timings.

Run: ``PYTHONPATH=. python benchmarks/bench_onnx.py [--quick] [--repeats 7]`` (writes
``benchmarks/results/onnx.md``). ``--quick`` trains smaller networks (a smoke test, not the
stored figures).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

import numpy as np
from _common import data_dir, machine

RESULTS = Path(__file__).parent / "results" / "onnx.md"


def _rankers(quick):
    from sklearn_ltr import DASALCRanker, LambdaMARTRanker, RankNetRanker, SetRankRanker, TwoTowerDebiasedRanker

    neural = {"max_epochs": 2, "device": "cpu", "random_state": 0}
    small = {"DASALCRanker": {"hidden_size": 64, "head_size": 16}, "SetRankRanker": {"d_model": 32}} if quick else {}
    return {
        "RankNetRanker": lambda: RankNetRanker(**neural),
        "DASALCRanker": lambda: DASALCRanker(**neural, **small.get("DASALCRanker", {})),
        "SetRankRanker": lambda: SetRankRanker(**neural, **small.get("SetRankRanker", {})),
        "TwoTowerDebiasedRanker": lambda: TwoTowerDebiasedRanker(**neural),
        "LambdaMARTRanker": lambda: LambdaMARTRanker(n_estimators=100, random_state=0, n_jobs=1),
    }


def _rate(function, n_documents, repeats):
    """Median documents per second of ``function()`` over ``repeats`` runs after a warm-up."""
    function()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return n_documents / statistics.median(times)


def _padded_batches(scorer, X, qid):
    """The padded batches ``OnnxScorer.predict`` runs, built once: ``[{"X": ..., "mask": ...}, ...]``."""
    return [{"X": feeds["X"], "mask": feeds["mask"]} for _, _, feeds in scorer._padded_batches(X, qid)]


def _set_threads(ranker, threads):
    import torch

    torch.set_num_threads(threads)
    if hasattr(ranker, "model_"):  # LightGBM predicts with the model's n_jobs
        ranker.model_.set_params(n_jobs=threads)


def run_one(name, make, data, repeats):
    import torch

    from sklearn_ltr.datasets import simulate_clicks
    from sklearn_ltr.export import OnnxScorer, to_onnx

    (X, y, qid), (X_test, _, qid_test) = data
    torch.set_num_threads(2)
    start = time.perf_counter()
    if name == "TwoTowerDebiasedRanker":
        positions, clicks = simulate_clicks(y, qid, random_state=0)
        ranker = make().fit(X, clicks, groups=qid, positions=positions)
    else:
        ranker = make().fit(X, y, groups=qid)
    fit_s = time.perf_counter() - start
    start = time.perf_counter()
    model = to_onnx(ranker)
    export_s = time.perf_counter() - start
    opsets = ", ".join(f"{o.domain or 'ai.onnx'} {o.version}" for o in model.opset_import)
    scorers = {threads: OnnxScorer(model, n_threads=threads) for threads in (1, 2)}
    expected = ranker.predict(X_test, groups=qid_test)
    diff = float(np.max(np.abs(scorers[1].predict(X_test, groups=qid_test) - expected)))
    n = len(qid_test)
    load = os.getloadavg()[0]
    row = {"name": name, "opsets": opsets, "diff": diff, "max_score": float(np.max(np.abs(expected))),
           "fit_s": fit_s, "export_s": export_s, "kib": len(model.SerializeToString()) / 1024,
           "nodes": len(model.graph.node), "load": load}
    for threads in (1, 2):
        _set_threads(ranker, threads)
        row[f"predict_{threads}"] = _rate(lambda: ranker.predict(X_test, groups=qid_test), n, repeats)
        scorer = scorers[threads]
        row[f"scorer_{threads}"] = _rate(lambda s=scorer: s.predict(X_test, groups=qid_test), n, repeats)
        batches = _padded_batches(scorer, X_test, qid_test)
        run = scorer.session_.run

        def run_all(batches=batches, run=run):
            for feeds in batches:
                run(["scores"], feeds)

        row[f"run_{threads}"] = _rate(run_all, n, repeats)
    row["load_end"] = os.getloadavg()[0]
    return row


def _adjacent_floats(n=3000, seed=0):
    """Feature 0 takes 200 adjacent float32 values: LightGBM's thresholds lie halfway between two of them."""
    rng = np.random.default_rng(seed)
    step = rng.integers(0, 200, n)
    X = np.column_stack([np.float32(1) + step.astype(np.float32) * np.spacing(np.float32(1)),
                         rng.normal(size=n)]).astype(np.float32)
    return X, (step % 7 > 3).astype(int) + (step > 100), np.repeat(np.arange(n // 20), 20)


def tree_thresholds(data):
    """LambdaMART: float64 thresholds (sklearn_ltr) against onnxmltools' float32 ones, on two data sets."""
    import onnxruntime

    from sklearn_ltr import LambdaMARTRanker
    from sklearn_ltr.export import OnnxScorer, to_onnx

    try:
        from onnxmltools import convert_lightgbm
        from onnxmltools.convert.common.data_types import FloatTensorType
    except ImportError:
        convert_lightgbm = None
    (X, y, qid), (X_test, _, _) = data
    X_adj, y_adj, qid_adj = _adjacent_floats()
    cases = {
        "MQ2008 Fold 1 test (float64 features cast to float32)": (X, y, qid, X_test),
        "adjacent float32 values (3,000 rows, predict on the training rows)": (X_adj, y_adj, qid_adj, X_adj),
    }
    rows = []
    for case, (X_fit, y_fit, qid_fit, X_score) in cases.items():
        ranker = LambdaMARTRanker(n_estimators=100, num_leaves=15, min_child_samples=5, random_state=0, n_jobs=1)
        ranker.fit(X_fit, y_fit, groups=qid_fit)
        expected = ranker.predict(X_score)
        X32 = np.asarray(X_score, dtype=np.float32)
        ours = OnnxScorer(to_onnx(ranker), n_threads=1).predict(X32)
        row = {"case": case, "ours": _diffs(ours, expected),
               "cast": _diffs(ranker.predict(X32), expected)}
        if convert_lightgbm is not None:
            model = convert_lightgbm(ranker.model_, initial_types=[("X", FloatTensorType([None, X32.shape[1]]))])
            session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
            row["onnxmltools"] = _diffs(session.run(None, {"X": X32})[0].ravel(), expected)
        rows.append(row)
    return rows


def _diffs(scores, expected):
    diff = np.abs(np.asarray(scores, dtype=np.float64) - expected)
    return f"{diff.max():.1e} ({int((diff > 1e-5).sum())} of {len(diff):,})"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller networks (a smoke test)")
    parser.add_argument("--repeats", type=int, default=7, help="timed runs per figure (median)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="report file (markdown)")
    args = parser.parse_args(argv)

    from sklearn_ltr.datasets import load_svmlight_ranking

    fold = data_dir("mq2008", "Fold1")
    data = load_svmlight_ranking(fold / "train.txt"), load_svmlight_ranking(fold / "test.txt")
    rows = []
    for name, make in _rankers(args.quick).items():
        row = run_one(name, make, data, args.repeats)
        rows.append(row)
        print(f"{name}: max |onnx - predict| = {row['diff']:.2e}; docs/s predict {row['predict_1']:,.0f} / "
              f"{row['predict_2']:,.0f}, OnnxScorer {row['scorer_1']:,.0f} / {row['scorer_2']:,.0f}, "
              f"session.run {row['run_1']:,.0f} / {row['run_2']:,.0f} (1 / 2 threads); load {row['load']:.2f}",
              flush=True)

    trees = tree_thresholds(data)
    n_test = len(data[1][2])
    lines = [
        "# ONNX export: parity with predict and CPU throughput (MQ2008 Fold 1 test)",
        "",
        f"{n_test:,} test documents in {len(np.unique(data[1][2]))} queries, 46 features; trained on Fold 1 train "
        f"({'quick networks' if args.quick else 'default architectures'}, 2 epochs; LambdaMART 100 trees). "
        f"{machine('torch', 'onnxruntime', 'lightgbm', cpus='{} CPUs shared with other jobs')}. "
        f"Documents per second, median of {args.repeats} runs after a warm-up; 1 / 2 = threads of torch or "
        f"LightGBM (predict) and of onnxruntime (intra-op). `OnnxScorer.predict` includes grouping rows by query, "
        f"padding and un-padding; `session.run` is the model alone on the same padded batches built beforehand. "
        f"Load: 1-minute load average before / after the ranker's timings.",
        "",
        "| ranker | opsets | max abs diff | max abs score | model KiB | nodes | predict 1 | predict 2 "
        "| OnnxScorer 1 | OnnxScorer 2 | session.run 1 | session.run 2 | load |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in rows:
        lines.append(
            f"| {r['name']} | {r['opsets']} | {r['diff']:.1e} | {r['max_score']:.2f} | {r['kib']:,.0f} | {r['nodes']} "
            f"| {r['predict_1']:,.0f} | {r['predict_2']:,.0f} | {r['scorer_1']:,.0f} | {r['scorer_2']:,.0f} "
            f"| {r['run_1']:,.0f} | {r['run_2']:,.0f} | {r['load']:.2f} / {r['load_end']:.2f} |"
        )
    export_times = ", ".join(f"{r['name']} {r['export_s']:.2f}" for r in rows)
    lines += ["", "Exporters: the neural rankers through torch's TorchScript-based exporter "
              "(`torch.onnx.export(..., dynamo=False)`); LambdaMART as one `ai.onnx.ml` TreeEnsembleRegressor "
              "with float64 thresholds and leaf values, written by sklearn_ltr from `Booster.dump_model()`. "
              f"Export times (s): {export_times}.", "",
              "## LambdaMART: float64 thresholds against float32 ones", "",
              "Max abs difference from `ranker.predict` on the same rows (rows that differ by more than 1e-5). "
              "sklearn_ltr: `to_onnx` (float64 thresholds and leaf values, float32 output); onnxmltools: "
              "`onnxmltools.convert_lightgbm` (float32 thresholds, rounded to nearest); LightGBM on float32: "
              "`ranker.predict` of the features cast to float32, as the ONNX models receive them. 100 trees of 15 "
              "leaves.", "",
              "| data | sklearn_ltr | onnxmltools | LightGBM on float32 features |", "| --- | --- | --- | --- |"]
    for row in trees:
        lines.append(f"| {row['case']} | {row['ours']} | {row.get('onnxmltools', 'not installed')} | {row['cast']} |")
    lines.append("")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

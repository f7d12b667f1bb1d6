"""Propensity estimation from simulated click logs against the simulation's 1/p.

Estimates the examination propensity per position from the click logs of the debiasing study
(``bench_debias_protocols.py``: same data, same position protocols, same seed streams) with
``sklearn_ltr.clicks.estimate_propensity_em`` (regression EM, cross-fitted LightGBM relevance),
``estimate_propensity_harvesting`` (intervention harvesting; only where a document of a query is
shown at several positions, i.e. with several result pages per query) and, for comparison,
``TwoTowerDebiasedRanker(...).observation_curve_`` trained on the study's down-sampled log with
the study's settings (hidden_sizes (64, 32), max_position 120, lr 1e-3, observation_lr 1e-2,
weight_decay 1e-5, 20 epochs, batches of 32 pages, standardised features), additive
(``exp(o_p - o_1)``) and multiplicative (``sigmoid(o_p) / sigmoid(o_1)``).

Down-sampling: the study keeps every clicked row and 10% of the non-clicked ones. That changes
the click rate of every position by a factor that depends on its click rate, so the estimators
run on the FULL logs (before down-sampling); one EM row runs on the down-sampled log with
weights ``1 / 0.1`` on the kept non-clicked rows (``sample_weight``), which accounts for it. The
two-tower models train on the down-sampled log, as in the study.

Data: MQ2008 Fold 1 (training part S1-S3, 10 result pages per query, labels 0-2) and the
MSLR-shaped ``make_ranking(preset="mslr")`` set of the study (6,000 training queries, one result
page per query, labels 0-4); positions by protocol "true-rank" (a document's rank in the logging
ordering) and "reference" (the inverse permutation); logging quality w. Figure of merit: the
maximum relative error ``max_k |p_k - 1/k| / (1/k)`` over positions 1-10, and how many of the
ten values of 1/k fall inside the estimator's bootstrap band.

Run (from the repository root)::

    PYTHONPATH=. python studies/bench_propensity.py
    PYTHONPATH=. python studies/bench_propensity.py --quick --out /tmp/propensity_quick

Each finished cell is saved at once in ``propensity.json`` (a cut-off run resumes); the run
rewrites ``propensity.md`` and ``propensity_curves.png``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from sklearn_ltr._atomic import write_atomically
from sklearn_ltr.clicks import estimate_propensity_em, estimate_propensity_harvesting
from sklearn_ltr.datasets import make_ranking

# debias_protocols (the study's logs) imports torch: loaded only when cells run, not for --report-only.
sys.path.insert(0, str(Path(__file__).resolve().parent))
PROTOCOLS = ("true-rank", "reference")

DATASETS = {"mq2008": "MQ2008 Fold 1 (10 pages per query)", "mslr": "MSLR-shaped (1 page per query)"}
#: Training queries of the MSLR-shaped set: the study's first 6,000, of which the first ``--mslr-queries[0]``.
METHODS = ("EM (full log)", "EM (down-sampled log, weighted)", "Harvesting (full log)",
           "TwoTower additive", "TwoTower multiplicative")
ERROR_POSITIONS = 10
MAX_POSITION = 20
KEEP = 0.1


def load_train(args, dataset):
    """Training rows ``(X, y, qid)`` and ``y_max`` of the study's data set."""
    from debias_protocols import load_mq2008_fold

    if dataset == "mq2008":
        return (*load_mq2008_fold(args.data_dir, 1)["train"], 2)
    n_train, n_val, n_test = args.mslr_queries
    X, y, qid = make_ranking(n_queries=n_train + n_val + n_test, preset="mslr", random_state=0)
    train = qid < np.unique(qid)[n_train]
    return X[train], y[train].astype(np.int64), qid[train], 4


def logs(X, y, qid, *, dataset, protocol, w, sessions, y_max, seed=0):
    """The study's full log of one cell and its down-sampling mask (same seed streams as the study)."""
    from debias_protocols import PROTOCOLS as STUDY_PROTOCOLS
    from debias_protocols import click_log, downsample_negatives, shuffle_within_queries

    assert STUDY_PROTOCOLS == PROTOCOLS
    streams = np.random.SeedSequence([seed, 1, round(100 * w), 0 if dataset == "mq2008" else 1]).spawn(2)
    rng = np.random.default_rng(streams[PROTOCOLS.index(protocol)])
    order = shuffle_within_queries(qid, rng)
    rows, positions, clicks, session = click_log(y[order], qid[order], w=w, protocol=protocol, sessions=sessions,
                                                 rng=rng, y_max=y_max)
    rows = order[rows]
    kept = downsample_negatives(clicks, KEEP, rng)
    return rows, positions, clicks, session, kept


def relative_error(curve):
    truth = 1.0 / np.arange(1, ERROR_POSITIONS + 1)
    return float(np.max(np.abs(np.asarray(curve[:ERROR_POSITIONS]) - truth) / truth))


def covered(estimate):
    if estimate.lower is None:
        return None
    truth = 1.0 / np.arange(1, ERROR_POSITIONS + 1)
    k = slice(0, ERROR_POSITIONS)
    return int(((estimate.lower[k] - 1e-9 <= truth) & (truth <= estimate.upper[k] + 1e-9)).sum())


def _estimate_entry(estimate, seconds):
    return {"curve": estimate.propensity.tolist(), "lower": None if estimate.lower is None else estimate.lower.tolist(),
            "upper": None if estimate.upper is None else estimate.upper.tolist(), "n_iter": estimate.n_iter,
            "converged": estimate.converged, "failed": estimate.n_bootstrap_failed, "seconds": seconds,
            "error": relative_error(estimate.propensity), "covered": covered(estimate)}


def run_cell(args, dataset, protocol, w, data):
    X, y, qid, y_max = data
    sessions = args.mq_sessions if dataset == "mq2008" else args.mslr_sessions
    rows, positions, clicks, session, kept = logs(X, y, qid, dataset=dataset, protocol=protocol, w=w,
                                                  sessions=sessions, y_max=y_max)
    out = {"dataset": dataset, "protocol": protocol, "w": w, "rows": len(rows), "clicks": int(clicks.sum()),
           "kept_rows": int(kept.sum()), "load_start": _load(), "methods": {}}
    em = {"max_position": MAX_POSITION, "random_state": 0, "n_jobs": 1,
          "n_bootstrap": args.em_bootstrap if dataset == "mq2008" else args.mslr_em_bootstrap}
    start = time.perf_counter()
    estimate = estimate_propensity_em(X[rows], clicks, positions, qid[rows], **em)
    out["methods"][METHODS[0]] = _estimate_entry(estimate, time.perf_counter() - start)
    start = time.perf_counter()
    weight = np.where(clicks[kept] == 1, 1.0, 1.0 / KEEP)
    estimate = estimate_propensity_em(X[rows[kept]], clicks[kept], positions[kept], qid[rows[kept]],
                                      sample_weight=weight, **em)
    out["methods"][METHODS[1]] = _estimate_entry(estimate, time.perf_counter() - start)
    start = time.perf_counter()
    try:
        estimate = estimate_propensity_harvesting(clicks, positions, qid[rows], rows, max_position=MAX_POSITION,
                                                  n_bootstrap=args.harvest_bootstrap, random_state=0)
        out["methods"][METHODS[2]] = _estimate_entry(estimate, time.perf_counter() - start)
    except ValueError as error:
        out["methods"][METHODS[2]] = {"refused": str(error).split(":")[0]}
    from sklearn.preprocessing import StandardScaler

    from sklearn_ltr import TwoTowerDebiasedRanker

    X_kept = StandardScaler().fit_transform(X[rows[kept]]).astype(np.float32)
    for combination, method in (("additive", METHODS[3]), ("multiplicative", METHODS[4])):
        start = time.perf_counter()
        ranker = TwoTowerDebiasedRanker(hidden_sizes=(64, 32), max_position=120, lr=1e-3, observation_lr=1e-2,
                                        weight_decay=1e-5, max_epochs=args.epochs, batch_size=32,
                                        combination=combination, random_state=0, device="cpu")
        ranker.fit(X_kept, clicks[kept], session[kept], positions=positions[kept])
        curve = ranker.observation_curve_[:MAX_POSITION]
        curve = curve / curve[0]
        out["methods"][method] = {"curve": curve.tolist(), "lower": None, "upper": None,
                                  "seconds": time.perf_counter() - start, "error": relative_error(curve),
                                  "covered": None}
    out["load_end"] = _load()
    return out


def _write(path, text):
    write_atomically(path, lambda f: f.write(text.encode()))


def _load():
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def _fmt(entry):
    if "refused" in entry:
        return "n/a (no document at two positions)"
    band = "" if entry["covered"] is None else f", 1/p in band at {entry['covered']}/10"
    conv = "" if entry.get("converged", True) else ", not converged"
    return f"{entry['error']:.2f}{band}{conv}"


def report(results, command):
    cells = results["cells"]
    args = argparse.Namespace(**{"mslr_em_bootstrap": results["settings"]["em_bootstrap"], **results["settings"]})
    lines = [
        "# Propensity estimation from click logs", "",
        "Estimated examination propensity per position (relative to position 1) against the simulation's truth "
        "1/p, on the click logs of the debiasing study (`bench_debias_protocols.py`: same data, position protocols "
        "and seed streams, seed 0). Figure of merit: the maximum relative error `max_k |p_k - 1/k| / (1/k)` over "
        "positions k = 1-10 (position 1 is 1 by construction), and how many of the ten values 1/k lie inside the "
        f"estimator's 95% bootstrap band (percentile, over queries; EM {args.em_bootstrap} replicates on MQ2008 and "
        f"{args.mslr_em_bootstrap} on the MSLR-shaped set, harvesting {args.harvest_bootstrap}: with so few EM "
        "replicates the band is a rough indication of the noise only). Estimators: `estimate_propensity_em` "
        "(regression EM, LightGBM relevance "
        f"cross-fitted over 2 folds of queries, 50 trees per M-step, max_position {MAX_POSITION}) and "
        "`estimate_propensity_harvesting` on the full logs; EM also on the study's down-sampled log (every click, "
        f"{KEEP:.0%} of the non-clicked rows) with weight {1 / KEEP:g} on the kept non-clicked rows; "
        "`TwoTowerDebiasedRanker.observation_curve_` trained on the down-sampled log with the study's settings "
        f"(hidden_sizes (64, 32), max_position 120, lr 1e-3, observation_lr 1e-2, weight_decay 1e-5, {args.epochs} "
        "epochs, batches of 32 pages, standardised features), curve divided by its value at position 1.", "",
        f"Command: `{command}`. Date: {results['date']}. Machine: {results['machine']}. Load average (1, 5, 15 min) "
        "at the start and end of each cell in the per-cell table below.", "",
        "## Maximum relative error over positions 1-10", "",
    ]
    for w in sorted({c["w"] for c in cells}, reverse=True):
        keys = [(d, p) for d in DATASETS for p in PROTOCOLS if any(c["dataset"] == d and c["protocol"] == p
                                                                    and c["w"] == w for c in cells)]
        lines += [f"w = {w:g}:", "", "| method | " + " | ".join(f"{DATASETS[d]}, {p}" for d, p in keys) + " |",
                  "| --- |" + " --- |" * len(keys)]
        for method in METHODS:
            row = []
            for d, p in keys:
                cell = next(c for c in cells if c["dataset"] == d and c["protocol"] == p and c["w"] == w)
                row.append(_fmt(cell["methods"][method]) if method in cell["methods"] else "-")
            lines.append(f"| {method} | " + " | ".join(row) + " |")
        lines.append("")
    lines += ["## Curves at positions 2 / 5 / 10 (truth 0.50 / 0.20 / 0.10), with the band", "",
              "| data | protocol | w | method | p2 | p5 | p10 | seconds | load avg start -> end |",
              "| --- | --- | ---: | --- | --- | --- | --- | ---: | --- |"]
    for c in cells:
        for method, e in c["methods"].items():
            if "refused" in e:
                continue
            values = []
            for k in (1, 4, 9):
                band = "" if e["lower"] is None else f" [{e['lower'][k]:.2f}, {e['upper'][k]:.2f}]"
                values.append(f"{e['curve'][k]:.3f}{band}")
            lines.append(f"| {DATASETS[c['dataset']]} | {c['protocol']} | {c['w']:g} | {method} | "
                         + " | ".join(values) + f" | {e['seconds']:.0f} | {c['load_start']} -> {c['load_end']} |")
    lines += ["", "Log sizes (full log): " + "; ".join(
        f"{DATASETS[c['dataset']]} {c['protocol']} w={c['w']:g}: {c['rows']:,} rows, {c['clicks']:,} clicks, "
        f"{c['kept_rows']:,} after down-sampling" for c in cells), "", "Notes:", "", *(f"- {n}" for n in NOTES), ""]
    return "\n".join(lines)


NOTES = [
    "MSLR-shaped set: the first `--mslr-queries[0]` of the study's 6,000 training queries (see the command), "
    "because every EM bootstrap replicate reruns the whole EM, which on the full set (about 730,000 rows, 136 "
    "features) takes minutes per replicate on 2 shared CPUs.",
    "Harvesting needs the same document of a query at two positions: the MSLR-shaped logs of the study have one "
    "result page per query, so it refuses them (with the error that points to the EM estimator).",
    "Under the true-rank protocol at w = 1, position and relevance are confounded (the logging ranker sorts by the "
    "label, so only documents with equal labels swap between pages): EM must separate them through a relevance "
    "model of the features, and a relevance model that misses part of the label puts the rest on the positions "
    "(a curve steeper than 1/p); harvesting only compares a document with itself.",
    "EM's band is a bootstrap over queries in which every replicate reruns the whole EM (same start and stopping "
    "rule): it measures the sampling noise of the estimator, not its bias, so it need not cover 1/p where the "
    "model is confounded.",
    "The two-tower curves are what its observation tower learned while training a ranker (no band): additive "
    "`exp(o_p - o_1)` is a click-odds ratio, which equals the examination ratio only when clicks are rare.",
]


def plot(results, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cells = [c for c in results["cells"] if c["w"] == max(x["w"] for x in results["cells"])]
    fig, axes = plt.subplots(len(DATASETS), len(PROTOCOLS), figsize=(11, 8.5), sharex=True, sharey=True,
                             squeeze=False)
    positions = np.arange(1, MAX_POSITION + 1)
    styles = {METHODS[0]: ("C0", "-"), METHODS[1]: ("C0", ":"), METHODS[2]: ("C1", "-"),
              METHODS[3]: ("C2", "--"), METHODS[4]: ("C3", "--")}
    for i, dataset in enumerate(DATASETS):
        for j, protocol in enumerate(PROTOCOLS):
            ax = axes[i, j]
            ax.plot(positions, 1 / positions, color="black", lw=2, label="truth 1/p")
            cell = next((c for c in cells if c["dataset"] == dataset and c["protocol"] == protocol), None)
            if cell is None:
                continue
            for method, e in cell["methods"].items():
                if "refused" in e:
                    continue
                color, style = styles[method]
                ax.plot(positions, e["curve"], color=color, ls=style, marker=".", label=method)
                if e["lower"] is not None:
                    ax.fill_between(positions, e["lower"], e["upper"], color=color, alpha=0.15)
            ax.set_yscale("log")
            ax.set_title(f"{DATASETS[dataset]}\n{protocol}, w = {cell['w']:g}", fontsize=9)
            ax.axvline(ERROR_POSITIONS + 0.5, color="grey", lw=0.5)
            ax.set_xlabel("position (20 = 20 and beyond)")
            ax.set_ylabel("propensity / propensity at 1")
    axes[0, 0].legend(fontsize=7)
    fig.suptitle("Estimated examination propensity against 1/p (bands: 95% bootstrap over queries)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", default=os.environ.get("SKLEARN_LTR_DATA",
                                                             Path(__file__).resolve().parents[2] / "shared" / "data"))
    parser.add_argument("--datasets", nargs="+", choices=list(DATASETS), default=list(DATASETS))
    parser.add_argument("--weights", type=float, nargs="+", default=[1.0, 0.0])
    parser.add_argument("--mslr-weights", type=float, nargs="+", default=[1.0],
                        help="values of w for the MSLR-shaped set (its EM costs most)")
    parser.add_argument("--mq-sessions", type=int, default=10)
    parser.add_argument("--mslr-sessions", type=int, default=1)
    parser.add_argument("--mslr-queries", type=int, nargs=3, default=[6000, 1000, 1000])
    parser.add_argument("--em-bootstrap", type=int, default=20)
    parser.add_argument("--mslr-em-bootstrap", type=int, default=5,
                        help="EM replicates on the MSLR-shaped set (each reruns the whole EM)")
    parser.add_argument("--harvest-bootstrap", type=int, default=200)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="smoke run: small MSLR set, few replicates and epochs")
    parser.add_argument("--fresh", action="store_true")
    parser.add_argument("--report-only", action="store_true",
                        help="rewrite the report and the figure from propensity.json, running no cell")
    parser.add_argument("--out", default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args(argv)
    if args.quick:
        args.mslr_queries, args.em_bootstrap, args.harvest_bootstrap, args.epochs = [300, 100, 100], 2, 20, 2
        args.mslr_em_bootstrap = 2
        args.weights, args.mslr_weights = [1.0], [1.0]
    return args


def main(argv=None):
    args = parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    json_path = out / "propensity.json"
    settings = {"em_bootstrap": args.em_bootstrap, "mslr_em_bootstrap": args.mslr_em_bootstrap,
                "harvest_bootstrap": args.harvest_bootstrap, "epochs": args.epochs,
                "mslr_queries": args.mslr_queries, "mq_sessions": args.mq_sessions,
                "mslr_sessions": args.mslr_sessions, "quick": args.quick}
    results = json.loads(json_path.read_text()) if json_path.exists() and not args.fresh else None
    if results is None or (results["settings"] != settings and not args.report_only):
        results = {"settings": settings, "cells": []}
    results["date"] = results.get("date") if args.report_only else datetime.now(timezone.utc).strftime("%Y-%m-%d")
    results["machine"] = (f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
                          f"LightGBM and torch on CPU with 1 thread")
    if not args.report_only:
        import torch

        torch.set_num_threads(1)
    command = "PYTHONPATH=. python studies/bench_propensity.py" + ("" if argv is None else " " + " ".join(argv))
    if argv is None and len(sys.argv) > 1:
        command += " " + " ".join(sys.argv[1:])
    if args.report_only:
        command = results.get("command", command)
    else:
        results["command"] = command
    for dataset in args.datasets:
        data = None
        for protocol in PROTOCOLS:
            for w in (args.weights if dataset == "mq2008" else args.mslr_weights):
                if args.report_only or any(c["dataset"] == dataset and c["protocol"] == protocol and c["w"] == w
                                           for c in results["cells"]):
                    continue
                data = data or load_train(args, dataset)
                start = time.perf_counter()
                cell = run_cell(args, dataset, protocol, w, data)
                results["cells"].append(cell)
                _write(json_path, json.dumps(results, indent=1))
                print(f"{dataset} {protocol} w={w:g}: {time.perf_counter() - start:.0f} s, load {cell['load_end']}; "
                      + "; ".join(f"{m} {_fmt(e)}" for m, e in cell["methods"].items()), flush=True)
    text = report(results, command)
    _write(out / "propensity.md", text)
    plot(results, out / "propensity_curves.png")
    print(text)


if __name__ == "__main__":
    main()

"""Size of a saved model, and the types a skops file of it asks to trust, before and after the lean model files
of 80deb2e (2026-11-25).

"Before" is a neural ranker fitted with ``keep_training_state=True``: its skorch net whole, with the
optimizer and its moment estimates, callbacks, criterion, random generator and per-batch history (what
every fit kept until then). "After" is the default: the module's weights and configuration and the
per-epoch history. For each ranker, with its default hyper-parameters on the same synthetic data
(``make_ranking``, 200 queries, 40 features, 5 epochs), the table gives the bytes of ``pickle.dumps`` and
of ``skops.io.dumps``, the number of types in the skops file outside skops's trusted defaults, and
whether ``skops.io.loads(data, trusted=TRUSTED_TYPES)`` loads it. LambdaMART has no training state to drop:
its row is the same both ways.

Run: ``PYTHONPATH=. python benchmarks/bench_model_files.py`` (writes ``benchmarks/results/model_files.md``;
``--quick`` fits tiny models in seconds; ``--out FILE`` writes elsewhere, ``--out -`` only prints).
"""

from __future__ import annotations

import argparse
import pickle
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import torch
from _common import machine

HERE = Path(__file__).resolve().parent


def _models(quick):
    from sklearn_ltr import DASALCRanker, LambdaMARTRanker, RankNetRanker, SetRankRanker, TwoTowerDebiasedRanker

    small = {
        "RankNetRanker": {"hidden_sizes": (16,)}, "DASALCRanker": {"hidden_size": 16, "head_size": 8},
        "SetRankRanker": {"d_model": 16}, "TwoTowerDebiasedRanker": {"hidden_sizes": (16,)},
        "LambdaMARTRanker": {"n_estimators": 10},
    } if quick else {}  # fmt: skip
    neural = {"max_epochs": 2 if quick else 5, "random_state": 0, "device": "cpu"}
    return [
        (RankNetRanker, {**neural, **small.get("RankNetRanker", {})}),
        (DASALCRanker, {**neural, **small.get("DASALCRanker", {})}),
        (SetRankRanker, {**neural, **small.get("SetRankRanker", {})}),
        (TwoTowerDebiasedRanker, {**neural, **small.get("TwoTowerDebiasedRanker", {})}),
        (LambdaMARTRanker, {"random_state": 0, "n_jobs": 1, **small.get("LambdaMARTRanker", {})}),
    ]


def _fit(cls, params, data):
    from sklearn_ltr import TwoTowerDebiasedRanker

    X, y, qid, positions, clicks = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if cls is TwoTowerDebiasedRanker:
            return cls(**params).fit(X, clicks, groups=qid, positions=positions)
        return cls(**params).fit(X, y, groups=qid)


def _measure(model):
    import skops.io as sio

    from sklearn_ltr.utils import TRUSTED_TYPES

    data = sio.dumps(model)
    untrusted = sio.get_untrusted_types(data=data)
    try:
        sio.loads(data, trusted=TRUSTED_TYPES)
        loads = "yes"
    except sio.exceptions.UntrustedTypesFoundException:
        loads = "no"
    return {"pickle": len(pickle.dumps(model)), "skops": len(data), "types": len(untrusted), "loads": loads}


def _kib(n_bytes):
    return f"{n_bytes / 1024:,.1f}"


def run(quick):
    from sklearn_ltr.datasets import make_ranking, simulate_clicks
    from sklearn_ltr.rankers._neural import NeuralRanker
    from sklearn_ltr.utils import TRUSTED_TYPES

    torch.set_num_threads(1)
    X, y, qid = make_ranking(n_queries=40 if quick else 200, n_features=40, random_state=0)
    positions, clicks = simulate_clicks(y, qid, random_state=0)
    data = (X, y, qid, positions, clicks)
    rows = []
    for cls, params in _models(quick):
        start = time.perf_counter()
        after = _fit(cls, params, data)
        before = _fit(cls, {**params, "keep_training_state": True}, data) if issubclass(cls, NeuralRanker) else after
        n_weights = (sum(p.numel() for p in after.net_.module_.parameters())
                     if issubclass(cls, NeuralRanker) else None)
        rows.append((cls.__name__, n_weights, _measure(before), _measure(after), time.perf_counter() - start))
        print(f"{cls.__name__}: done in {rows[-1][-1]:.1f} s", file=sys.stderr, flush=True)
    lines = [
        "# Saved model files: size and trusted types, before and after the lean model files of 80deb2e",
        "",
        f"{X.shape[0]:,} rows, {len(np.unique(qid))} queries, {X.shape[1]} features (make_ranking), "
        f"{'tiny models, 2 epochs (--quick)' if quick else 'default hyper-parameters, 5 epochs'}; "
        f"{machine('torch', cpus=False)}. Before: "
        f"keep_training_state=True (the whole skorch net); after: the default. KiB = 1024 bytes.",
        "",
        "| ranker | weights | pickle before (KiB) | pickle after (KiB) | after / before | skops before (KiB) "
        "| skops after (KiB) | untrusted types before -> after | loads with TRUSTED_TYPES before -> after |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for name, n_weights, before, after, _ in rows:
        lines.append(
            f"| {name} | {'-' if n_weights is None else f'{n_weights:,}'} | {_kib(before['pickle'])} | "
            f"{_kib(after['pickle'])} | {after['pickle'] / before['pickle']:.2f} | {_kib(before['skops'])} | "
            f"{_kib(after['skops'])} | {before['types']} -> {after['types']} | {before['loads']} -> "
            f"{after['loads']} |"
        )
    lines += ["", f"`sklearn_ltr.utils.TRUSTED_TYPES` lists {len(TRUSTED_TYPES)} types."]
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny models, 2 epochs: a smoke run of seconds")
    parser.add_argument("--out", default=str(HERE / "results" / "model_files.md"),
                        help="markdown report to write ('-': print only; default benchmarks/results/model_files.md)")
    args = parser.parse_args(argv)
    report = run(args.quick)
    print(report, end="")
    if args.out != "-":
        Path(args.out).write_text(report)
        print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

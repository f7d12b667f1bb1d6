"""Fit times from Python with and without the library's OpenMP default, on MQ2008 Fold 1.

Each (model, setting) runs in a fresh Python process, because an OpenMP runtime reads
``OMP_WAIT_POLICY`` once, when torch or LightGBM loads it. The settings:

- ``before``: the runtime's own default (libgomp: idle threads spin about 300,000 times
  before they sleep), as every fit from Python got before ``sklearn_ltr`` set a default:
  the child imports ``sklearn_ltr``, removes the ``OMP_WAIT_POLICY`` it set, then loads the
  backend.
- ``after``: plain ``import sklearn_ltr`` first, so the library's default
  (``OMP_WAIT_POLICY=PASSIVE``) is in place when the backend loads.
- ``late``: the backend (torch or LightGBM) is imported before ``sklearn_ltr``, which
  then sets its default too late for this process.

Every child starts with ``OMP_WAIT_POLICY``, ``GOMP_SPINCOUNT`` and ``KMP_BLOCKTIME`` removed
from its environment. The spin count column is what libgomp itself reports
(``omp_display_env``) where the loaded copy has that function (the system's libgomp, which
LightGBM loads; torch's bundled copy has not). A busy machine is part of the experiment:
run CPU burners beside it, e.g. two ``python -c 'while True: pass' &``.

Usage::

    SKLEARN_LTR_DATA=../shared/data PYTHONPATH=. python studies/bench_threads.py
    ... --models lambdamart --settings before after --out /tmp/threads.md

It prints the table and writes it, with the command, to ``--out``
(``studies/results/threads.md``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

SETTINGS = ("before", "after", "late")
MODELS = ("lambdamart", "ranknet", "dasalc")
_BACKEND = {"lambdamart": "lightgbm", "ranknet": "torch", "dasalc": "torch"}
_WAIT_VARIABLES = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME")


def _ranker(model, dasalc_epochs):
    import sklearn_ltr

    if model == "lambdamart":
        return sklearn_ltr.LambdaMARTRanker(random_state=0)
    if model == "ranknet":
        return sklearn_ltr.RankNetRanker(random_state=0, device="cpu")
    return sklearn_ltr.DASALCRanker(max_epochs=dasalc_epochs, random_state=0, device="cpu")


def _spin_count():
    """libgomp's spin count as it parsed it (printed on stderr), where the loaded copy can say."""
    import ctypes

    try:
        display = ctypes.CDLL("libgomp.so.1").omp_display_env
    except (OSError, AttributeError):
        return
    sys.stderr.flush()
    display(1)


def child(model, setting, data, dasalc_epochs):
    """Fit one model under one setting in this (fresh) process; print one JSON line."""
    import importlib
    import warnings

    if setting == "late":
        importlib.import_module(_BACKEND[model])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the late import's warning: expected here
        import sklearn_ltr
    policy = os.environ.get("OMP_WAIT_POLICY")
    if setting == "before":
        del os.environ["OMP_WAIT_POLICY"]  # what a fit from Python had before the default
    importlib.import_module(_BACKEND[model])
    from sklearn_ltr.datasets import load_svmlight_ranking
    from sklearn_ltr.metrics import ndcg_score

    X, y, qid = load_svmlight_ranking(Path(data, "train.txt"), dtype="float32")
    X_test, y_test, qid_test = load_svmlight_ranking(Path(data, "test.txt"), n_features=X.shape[1], dtype="float32")
    ranker = _ranker(model, dasalc_epochs)
    start = time.perf_counter()
    cpu = time.process_time()
    ranker.fit(X, y, groups=qid)
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu
    ndcg = ndcg_score(y_test, ranker.predict(X_test, groups=qid_test), qid_test, k=10)
    _spin_count()
    print(json.dumps({"seconds": seconds, "cpu_seconds": cpu_seconds, "ndcg10": float(ndcg),
                      "env_at_import": policy, "env_at_fit": os.environ.get("OMP_WAIT_POLICY"),
                      "load": os.getloadavg()[0], "sklearn_ltr": sklearn_ltr.__file__}), flush=True)


def _run_child(model, setting, data, dasalc_epochs, timeout):
    env = {key: value for key, value in os.environ.items() if key not in _WAIT_VARIABLES}
    command = [sys.executable, __file__, "--child", model, setting, "--data", data,
               "--dasalc-epochs", str(dasalc_epochs)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{model}/{setting} failed:\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    spin = re.search(r"GOMP_SPINCOUNT = '(\d+)'", done.stderr)
    result["spin_count"] = spin.group(1) if spin else "n/a"
    return result


def _cpu_name():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


_REPORT = """# Fit times with and without the library's OpenMP default (MQ2008 Fold 1)

Command: `{command}` (`SKLEARN_LTR_DATA` and `PYTHONPATH=.` set; see `studies/README.md`).
Each row is one fit in a fresh Python process, on `train.txt`, scored on `test.txt`. Settings:
`before`: `OMP_WAIT_POLICY` unset when torch or LightGBM loads its OpenMP runtime (what a fit from Python got
before `import sklearn_ltr` set a default); `after`: `import sklearn_ltr` first, so `OMP_WAIT_POLICY=PASSIVE` is
in place; `late`: torch or LightGBM imported before `sklearn_ltr`, which then sets the variable too late. The spin
count is libgomp's own report (`omp_display_env`), n/a where the loaded copy (torch's) cannot say. CPU is the
process's CPU time during the fit.

{table}
"""


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(Path(os.environ.get("SKLEARN_LTR_DATA", "../shared/data"),
                                                   "mq2008", "Fold1")), help="the MQ2008 Fold1 directory")
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    parser.add_argument("--settings", nargs="+", choices=SETTINGS, default=list(SETTINGS))
    parser.add_argument("--dasalc-epochs", type=int, default=5, help="DASALC's max_epochs (its default is 20)")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds allowed to one fit's process")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "threads.md"),
                        help="where to write the report (default studies/results/threads.md)")
    parser.add_argument("--child", nargs=2, metavar=("MODEL", "SETTING"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(*args.child, args.data, args.dasalc_epochs)
        return
    import lightgbm
    import torch

    lines = []

    def say(line=""):
        print(line, flush=True)
        lines.append(line)

    say(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {_cpu_name()}, {os.cpu_count()} CPUs; "
        f"torch {torch.__version__} ({torch.get_num_threads()} threads), LightGBM {lightgbm.__version__}; "
        f"load average at the start {os.getloadavg()[0]:.1f}")
    say()
    say("| model | setting | OMP_WAIT_POLICY when the backend loaded | libgomp spin count | fit (s) | CPU (s) "
        "| NDCG@10 (test) | load average after the fit |")
    say("| --- | --- | --- | --- | ---: | ---: | ---: | ---: |")
    for model in args.models:
        name = f"DASALC (max_epochs={args.dasalc_epochs})" if model == "dasalc" else \
            {"lambdamart": "LambdaMART", "ranknet": "RankNet"}[model]
        for setting in args.settings:
            row = _run_child(model, setting, args.data, args.dasalc_epochs, args.timeout)
            at_load = {"before": "unset", "after": row["env_at_import"], "late": "unset (set after)"}[setting]
            say(f"| {name} | {setting} | {at_load} | {row['spin_count']} | {row['seconds']:.1f} "
                f"| {row['cpu_seconds']:.1f} | {row['ndcg10']:.4f} | {row['load']:.1f} |")
    command = " ".join(["python", "studies/bench_threads.py", *(argv if argv is not None else sys.argv[1:])])
    Path(args.out).write_text(_REPORT.format(command=command, table="\n".join(lines)))


if __name__ == "__main__":
    main()

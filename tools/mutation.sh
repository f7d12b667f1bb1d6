#!/usr/bin/env bash
# Mutation testing of the core modules with mutmut (pip install mutmut): how many planted bugs the
# tests kill. Slow (the whole configured set is ~3,300 mutants, hours on 2 cores), so not part of CI.
# Configuration: [tool.mutmut] in pyproject.toml (the modules mutated, the test files run against
# each mutant). A subset runs with mutant-name patterns:
#   bash tools/mutation.sh                           # every configured module
#   bash tools/mutation.sh "sklearn_ltr._groups.*"   # one module
#   bash tools/mutation.sh --results                 # the last run's table and survivors, no run
#   bash tools/mutation.sh --results "sklearn_ltr.export.*"   # ... of the modules matching the patterns
# The table is markdown (benchmarks/results/mutation.md keeps the last full one).
set -euo pipefail
cd "$(dirname "$0")/.."
# One thread per test process: MUTMUT_CHILDREN processes share the cores, and a forked torch never
# inherits a started thread pool.
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
export SKLEARN_LTR_DATA="${SKLEARN_LTR_DATA:-$(cd .. && pwd)/shared/data}"
if [ "${1:-}" != "--results" ]; then
    mutmut run --max-children "${MUTMUT_CHILDREN:-2}" "$@" || true
else
    shift
fi
python - "$@" <<'PY'
# Read mutmut's own records (mutants/**/*.meta: exit code per mutant) rather than `mutmut results`,
# which files exit code 255 under "timeout": with process_isolation = "forkserver" a 255 is the worker
# failing to run the tests at all (pytest's usage error, e.g. a test id it cannot select), not a
# detection, so it counts as not run. Real timeouts are SIGXCPU (24, -24, 152) or the SIGKILL after it (-9).
import collections, fnmatch, glob, json, re, sys

patterns = sys.argv[1:] or ["*"]
STATUS = {0: "survived", 1: "killed", 3: "pytest internal error", 5: "no tests", 33: "no tests", 34: "skipped",
          35: "suspicious", 36: "timeout", 24: "timeout", -24: "timeout", 152: "timeout", -9: "timeout",
          -11: "segfault", 255: "not checked", None: "not checked"}  # 255: rerun it
# A mutant that fails the tests, hangs them or crashes them (an invalid ONNX graph can segfault
# torch's exporter) is detected.
DETECTED = ("killed", "timeout", "segfault")

counts = collections.defaultdict(collections.Counter)
survivors = []
for meta in sorted(glob.glob("mutants/**/*.meta", recursive=True)):
    with open(meta) as f:
        codes = json.load(f)["exit_code_by_key"]
    for name, code in codes.items():
        status = STATUS.get(code, f"exit code {code}")
        module = re.split(r"\.x[_ǁ]", name)[0]
        if not any(fnmatch.fnmatch(name, p) or fnmatch.fnmatch(module, p) for p in patterns):
            continue
        counts[module][status] += 1
        if status == "survived":
            survivors.append(name)
print("| module | killed | total | score | other | not run |\n| --- | ---: | ---: | ---: | --- | ---: |")
for module, c in sorted(counts.items()):
    checked = {k: v for k, v in c.items() if k != "not checked"}
    total = sum(checked.values())
    if not total:
        continue
    killed = sum(c[k] for k in DETECTED)
    other = {k: v for k, v in checked.items() if k not in DETECTED}
    print(f"| {module} | {killed} | {total} | {killed / total:.1%} | {other or ''} | {c['not checked']} |")
print(f"\n{len(survivors)} survivors (mutmut show NAME shows each):")
print("\n".join(survivors))
PY

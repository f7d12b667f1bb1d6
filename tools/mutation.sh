#!/usr/bin/env bash
# Mutation testing of the core modules with mutmut (pip install mutmut): how many planted bugs the
# tests kill. Slow (the whole configured set is ~3,300 mutants, hours on 2 cores), so not part of CI.
# Configuration: [tool.mutmut] in pyproject.toml (the modules mutated, the test files run against
# each mutant). A subset runs with mutant-name patterns:
#   bash tools/mutation.sh                           # every configured module
#   bash tools/mutation.sh "sklearn_ltr._groups.*"   # one module
#   bash tools/mutation.sh --results                 # the last run's table and survivors, no run
set -euo pipefail
cd "$(dirname "$0")/.."
# One thread per test process: MUTMUT_CHILDREN processes share the cores, and a forked torch never
# inherits a started thread pool.
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
export SKLEARN_LTR_DATA="${SKLEARN_LTR_DATA:-$(cd .. && pwd)/shared/data}"
if [ "${1:-}" != "--results" ]; then
    mutmut run --max-children "${MUTMUT_CHILDREN:-2}" "$@" || true
fi
python - <<'PY'
import collections, re, subprocess

out = subprocess.run(["mutmut", "results", "--all", "true"], capture_output=True, text=True).stdout
counts = collections.defaultdict(collections.Counter)
survivors = []
for line in out.splitlines():
    if ":" not in line:
        continue
    name, status = (part.strip() for part in line.strip().rsplit(":", 1))
    counts[re.split(r"\.x[_ǁ]", name)[0]][status] += 1
    if status == "survived":
        survivors.append(name)
print(f"{'module':36s} {'killed':>7s} {'total':>6s} {'score':>7s}  other")
for module, c in sorted(counts.items()):
    checked = {k: v for k, v in c.items() if k != "not checked"}
    total = sum(checked.values())
    if not total:
        continue
    killed = c["killed"] + c["timeout"]  # a mutant that hangs the tests is detected too
    other = {k: v for k, v in checked.items() if k not in ("killed", "timeout")}
    print(f"{module:36s} {killed:7d} {total:6d} {killed / total:7.1%}  {other}")
print(f"\n{len(survivors)} survivors (mutmut show NAME shows each):")
print("\n".join(survivors))
PY

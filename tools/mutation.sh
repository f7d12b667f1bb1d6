#!/usr/bin/env bash
# Mutation testing of the core modules with mutmut (pip install mutmut): how many planted bugs the
# tests kill. Slow (tens of minutes on 2 cores), so not part of CI. Configuration: [tool.mutmut]
# in pyproject.toml (the modules mutated and the test files run against each mutant).
#   bash tools/mutation.sh            # run, then print killed / total per module
#   bash tools/mutation.sh results    # print the last run's survivors
set -euo pipefail
cd "$(dirname "$0")/.."
export SKLEARN_LTR_DATA="${SKLEARN_LTR_DATA:-$(cd .. && pwd)/shared/data}"
if [ "${1:-run}" = "run" ]; then
    mutmut run --max-children "${MUTMUT_CHILDREN:-2}" || true
fi
mutmut export-cicd-stats >/dev/null 2>&1 || true
python - <<'PY'
import collections, json, pathlib, subprocess
out = subprocess.run(["mutmut", "results", "--all", "true"], capture_output=True, text=True).stdout
counts = collections.defaultdict(collections.Counter)
for line in out.splitlines():
    line = line.strip()
    if ":" not in line:
        continue
    name, status = line.rsplit(":", 1)
    module = name.split("x_")[0].rsplit(".", 1)[0] if "x_" in name else name
    counts[module][status.strip()] += 1
print(f"{'module':45s} {'killed':>7s} {'total':>6s} {'score':>6s}  other")
for module, c in sorted(counts.items()):
    total = sum(c.values())
    killed = c["killed"] + c["timeout"]
    other = {k: v for k, v in c.items() if k not in ("killed", "timeout")}
    print(f"{module:45s} {killed:7d} {total:6d} {killed / total:6.1%}  {other}")
PY

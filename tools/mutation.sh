#!/usr/bin/env bash
# Mutation testing of the core modules with mutmut (pip install mutmut): how many planted bugs the
# tests kill. Slow (the whole configured set is several thousand mutants, hours on 2 cores), so not part
# of CI. Configuration: [tool.mutmut] in pyproject.toml (the modules mutated, the test files run against
# each mutant). A subset runs with mutant-name patterns:
#   bash tools/mutation.sh                           # every configured module
#   bash tools/mutation.sh "sklearn_ltr._groups.*"   # one module
#   bash tools/mutation.sh --results                 # the last run's table and survivors, no run
#   bash tools/mutation.sh --results "sklearn_ltr.export.*"   # ... of the modules matching the patterns
# MUTMUT_CHILDREN (default 2) sets mutmut's --max-children.
# mutmut's stats run sees the calls of the pytest process only: the functions of training._distributed that run
# in the two worker processes of tests/training/test_distributed.py come out as "no tests". To run them, give
# those functions the two-process tests in mutants/mutmut-stats.json and rerun the mutants by name
# (tools/results/mutation.md, "The training layer", says how it was done).
# The table is markdown (tools/results/mutation.md keeps the scores of each round).
#
# When a run ends (or is stopped with Ctrl-C / SIGTERM), the modules it covered are recorded in
# tools/results/mutation_runs.json (committed; mutmut's own records in mutants/ are not): for
# each module with mutants matching the run's patterns, the command, its start and end (UTC), the commit
# at the start ("+changes" when the work tree differed from it) and the load average at the start and
# the end. --results prints each module's last run beside its score ("not run": the mutants it did not
# reach).
set -euo pipefail
cd "$(dirname "$0")/.."
# One thread per test process: MUTMUT_CHILDREN processes share the cores, and a forked torch never
# inherits a started thread pool.
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
export SKLEARN_LTR_DATA="${SKLEARN_LTR_DATA:-$(cd .. && pwd)/shared/data}"
RUNS=tools/results/mutation_runs.json
if [ "${1:-}" != "--results" ]; then
    START=$(date -u +%Y-%m-%dT%H:%M:%SZ) START_LOAD=$(cut -d' ' -f1-3 /proc/loadavg)
    COMMIT="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo +changes)"
    COMMAND="MUTMUT_CHILDREN=${MUTMUT_CHILDREN:-2} bash tools/mutation.sh"
    for pattern in "$@"; do COMMAND+=" \"$pattern\""; done
    record() {
        START="$START" START_LOAD="$START_LOAD" COMMAND="$COMMAND" COMMIT="$COMMIT" \
            python - "$RUNS" "$@" <<'PY'
# Record the run for the modules it covered: those with mutants matching its patterns (--results' "not run"
# column says how many of them the run did not reach).
import datetime, fnmatch, glob, json, os, re, sys

runs_path, patterns = sys.argv[1], sys.argv[2:] or ["*"]
runs = json.load(open(runs_path)) if os.path.exists(runs_path) else {}
end = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
for meta in glob.glob("mutants/**/*.meta", recursive=True):
    with open(meta) as f:
        names = json.load(f)["exit_code_by_key"]
    modules = {re.split(r"\.x[_ǁ]", name)[0] for name in names
               if any(fnmatch.fnmatch(name, p) or fnmatch.fnmatch(re.split(r"\.x[_ǁ]", name)[0], p) for p in patterns)}
    for module in modules:
        runs[module] = {"command": os.environ["COMMAND"], "start": os.environ["START"], "end": end,
                        "commit": os.environ["COMMIT"], "load_start": os.environ["START_LOAD"],
                        "load_end": " ".join(open("/proc/loadavg").read().split()[:3])}
with open(runs_path, "w") as f:
    json.dump(dict(sorted(runs.items())), f, indent=1)
    f.write("\n")
PY
    }
    # A stopped run still records what it ran (mutmut saves each module's results as it goes).
    trap 'record "$@"; exit 130' INT TERM
    mutmut run --max-children "${MUTMUT_CHILDREN:-2}" "$@" || true
    trap - INT TERM
    record "$@"
else
    shift
fi
python - "$RUNS" "$@" <<'PY'
# Read mutmut's own records (mutants/**/*.meta: exit code per mutant) rather than `mutmut results`,
# which files exit code 255 under "timeout": with process_isolation = "forkserver" a 255 is the worker
# failing to run the tests at all (pytest's usage error, e.g. a test id it cannot select), not a
# detection, so it counts as not run. Real timeouts are SIGXCPU (24, -24, 152) or the SIGKILL after it (-9).
import collections, fnmatch, glob, json, os, re, sys

runs = json.load(open(sys.argv[1])) if os.path.exists(sys.argv[1]) else {}
patterns = sys.argv[2:] or ["*"]
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
print("| module | killed | total | score | other | not run | last run (UTC) | command |\n"
      "| --- | ---: | ---: | ---: | --- | ---: | --- | --- |")
for module, c in sorted(counts.items()):
    checked = {k: v for k, v in c.items() if k != "not checked"}
    total = sum(checked.values())
    run = runs.get(module)
    if not total and not run:
        continue
    killed = sum(c[k] for k in DETECTED)
    other = {k: v for k, v in checked.items() if k not in DETECTED}
    when = f"{run['start']} to {run['end'][11:]}, {run['commit']}" if run else "not recorded"
    command = f"`{run['command']}`" if run else ""
    score = f"{killed / total:.1%}" if total else "-"  # a run that reached none of its mutants
    print(f"| {module} | {killed} | {total} | {score} | {other or ''} | {c['not checked']} | {when} "
          f"| {command} |")
print(f"\n{len(survivors)} survivors (mutmut show NAME shows each):")
print("\n".join(survivors))
PY

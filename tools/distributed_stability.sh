#!/usr/bin/env bash
# Stability of the distributed tests on a loaded machine: N rounds (default 20), one after the other, of
#   python -m pytest -q -p no:cacheprovider tests/training/test_distributed.py tests/training/test_elastic_restart.py
# beside BURNERS (default 2) busy-loop processes that keep the cores busy the whole time (load about 2 above the
# tests' own). The torchrun jobs, gloo's threads and the launcher's restarts then run late and out of step, as
# on a loaded CI machine, where a test that flakes shows it.
#   bash tools/distributed_stability.sh        # 20 rounds
#   bash tools/distributed_stability.sh 3      # 3 rounds
# After each round it rewrites tools/results/distributed_stability.md: the commit, the machine and the command,
# then a row per round (start UTC, duration, passed / failed tests, 1-minute load average at the start and the
# end). A failed round does not stop the run (the table says how often it happens); its pytest output is kept
# in tools/results/distributed_stability_round<N>.log. Exit status 1 when a round failed.
# PYTHON (default .venv/bin/python, else python) runs the tests, with this tree first on PYTHONPATH;
# STABILITY_TESTS (space-separated test files or ids) replaces the two files, e.g. for a short trial.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS="${1:-20}" BURNERS="${BURNERS:-2}"
if ! [[ "$ROUNDS" =~ ^[1-9][0-9]*$ && "$BURNERS" =~ ^[0-9]+$ ]]; then
    echo "usage: [BURNERS=2] bash tools/distributed_stability.sh [ROUNDS]  (ROUNDS a positive integer, default 20)" >&2
    exit 2
fi
PYTHON="${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python )}"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export SKLEARN_LTR_DATA="${SKLEARN_LTR_DATA:-$(cd .. && pwd)/shared/data}"
read -r -a TESTS <<< "${STABILITY_TESTS:-tests/training/test_distributed.py tests/training/test_elastic_restart.py}"
COMMAND="python -m pytest -q -p no:cacheprovider ${TESTS[*]}"
TABLE=tools/results/distributed_stability.md
LOGS=$(mktemp -d)
mkdir -p tools/results

COMMIT="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- sklearn_ltr tests || echo +changes)"
STARTED=$(date -u +%Y-%m-%dT%H:%M:%SZ)
MACHINE="$(nproc) CPUs ($(uname -m)), torch $("$PYTHON" -c 'import torch; print(torch.__version__)'), \
Python $("$PYTHON" -c 'import platform; print(platform.python_version())')"

# The busy loops: ended, by their own process ids, however the script ends.
BURNER_PIDS=()
stop_burners() { for pid in "${BURNER_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done; }
trap stop_burners EXIT
trap 'exit 130' INT TERM
for _ in $(seq "$BURNERS"); do
    "$PYTHON" -c "while True: pass" &
    BURNER_PIDS+=($!)
done
sleep 5  # the burners are running when the first round's load is read

load1() { cut -d' ' -f1 /proc/loadavg; }
count() {  # count WORD LOG: the number pytest's summary line gives for WORD (0 if absent)
    local n
    n=$(tail -n 1 "$2" | grep -oE "[0-9]+ $1" | grep -oE '^[0-9]+' || true)
    echo "${n:-0}"
}
ROWS=() FAILED_ROUNDS=0
write_table() {
    {
        echo "# Distributed tests beside a CPU burner"
        echo
        echo "- Command (each round): \`$COMMAND\`, beside $BURNERS busy-loop processes (\`python -c \"while True: pass\"\`)."
        echo "- Script: \`bash tools/distributed_stability.sh $ROUNDS\`, started $STARTED."
        echo "- Commit: $COMMIT."
        echo "- Machine: $MACHINE."
        echo "- Rounds: ${#ROWS[@]} of $ROUNDS run, $FAILED_ROUNDS failed."
        echo
        echo "| round | start (UTC) | duration | passed | failed | load (1 min) at start | load at end |"
        echo "| ---: | --- | ---: | ---: | ---: | ---: | ---: |"
        printf '%s\n' "${ROWS[@]}"
    } > "$TABLE"
}

for round in $(seq "$ROUNDS"); do
    start=$(date -u +%H:%M:%S) start_s=$(date +%s) load_start=$(load1)
    log="$LOGS/round$round.log"
    status=0
    "$PYTHON" -m pytest -q -p no:cacheprovider "${TESTS[@]}" > "$log" 2>&1 || status=$?
    seconds=$(( $(date +%s) - start_s ))
    passed=$(count passed "$log") failed=$(( $(count failed "$log") + $(count error "$log") ))
    if [ "$status" -ne 0 ]; then
        FAILED_ROUNDS=$((FAILED_ROUNDS + 1))
        cp "$log" "tools/results/distributed_stability_round$round.log"
        [ "$failed" -gt 0 ] || failed="exit $status"
    fi
    ROWS+=("| $round | $start | $((seconds / 60))m$(printf '%02d' $((seconds % 60)))s | $passed | $failed | $load_start | $(load1) |")
    write_table
    echo "round $round/$ROUNDS: ${seconds}s, $passed passed, $failed failed"
done
[ "$FAILED_ROUNDS" -eq 0 ]

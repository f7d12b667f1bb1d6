#!/usr/bin/env bash
# The GPU check: the whole test suite on a CUDA machine, then the device benchmark, in one call.
# Written for the workplace's lent GPU machine (a bare image with torch, scikit-learn, pytest and
# hypothesis but no skorch or lightgbm, no network). Prepare here, once:
#   printf '/.whl/\n/.devdata/\n' >> .git/info/exclude
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#       --platform manylinux_2_28_x86_64 -d .whl skorch==1.4.0 lightgbm==4.7.0
#   cp -r ../shared/data .devdata        # the benchmark data does not travel from ../shared
# then run `bash tools/device_check.sh` there, carrying .whl and .devdata. Logs and the benchmark
# table land in $OUT (or ./device_out).
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-device_out}"
mkdir -p "$out"
if [ -d .whl ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile .whl/*.whl || exit 1
fi
# Installed for the console script the CLI tests run; the import path alone if the install fails.
python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . >/dev/null \
    || export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export SKLEARN_LTR_DATA="${SKLEARN_LTR_DATA:-$PWD/.devdata}" PYTHONUNBUFFERED=1 OMP_NUM_THREADS=2
nvidia-smi -L
python3 -c "import numpy, sklearn, torch; print('torch', torch.__version__, 'sklearn', sklearn.__version__, \
'numpy', numpy.__version__, 'cuda', torch.cuda.is_available(), torch.cuda.get_device_name(0))"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
# The suite (or PYTEST_ARGS, e.g. a few test files): xdist workers share the GPU; -rfEs names every failure, error and skip.
start=$(date +%s)
timeout "${TEST_TIMEOUT:-300}" python3 -m pytest -q -p no:cacheprovider -n "${WORKERS:-8}" -rfEs \
    ${PYTEST_ARGS:-} >"$out/tests.log" 2>&1
echo "tests: exit $? in $(( $(date +%s) - start )) s"
grep -E "^(FAILED|ERROR)|passed|failed" "$out/tests.log" | tail -40
# The benchmark alone on the machine (no test workers beside it); BENCH_ARGS picks models, precisions...
if [ "${BENCH:-1}" = 1 ]; then
    echo "load average before the benchmark: $(cut -d' ' -f1-3 /proc/loadavg)"
    timeout "${BENCH_TIMEOUT:-300}" python3 benchmarks/bench_device.py --device cuda \
        --mq2008 "$SKLEARN_LTR_DATA/mq2008" --out "$out/device_cuda.md" ${BENCH_ARGS:-} >"$out/bench.log" 2>&1
    echo "benchmark: exit $?"
    tail -5 "$out/bench.log"
    cat "$out/device_cuda.md" 2>/dev/null
fi

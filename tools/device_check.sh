#!/usr/bin/env bash
# The GPU check, in one call of about 8 minutes on one GPU: the test suite on CUDA, then the GPU
# benchmarks one after the other (nothing else running beside them):
#   1. bench_bf16_stability   SetRank, 3 seeds x batch 64/256/1024, float32 and bf16
#   2. bench_training_memory  peak / estimate, DASALC, SetRank, RankNet at 4 shapes, and the
#                             DASALC batch_size=1024 acceptance on 1,000 MSLR-shaped queries
#   3. bench_predict_scale    predict docs/s against the module and the host-fed module
#   4. bench_compile          torch.compile against eager, training and scoring
# Written for a bare CUDA image with torch, scikit-learn, pytest and hypothesis but no skorch or
# lightgbm, and no network. Prepare, once, in the repository:
#   printf '/.whl/\n/.devdata/\n' >> .git/info/exclude
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#       --platform manylinux_2_28_x86_64 -d .whl skorch==1.4.0 lightgbm==4.7.0 numpydoc
#   mkdir -p .devdata && cp -r ../shared/data/mq2008 .devdata/   # the benchmark data, for the tests
# then run `bash tools/device_check.sh` on the GPU machine with .whl and .devdata beside it.
# Logs and tables land in $OUT (or ./device_out). STEPS picks the steps (default "tests bf16 memory
# predict compile"); PYTEST_ARGS narrows the tests (e.g. a few files).
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-device_out}"
mkdir -p "$out"
if [ -d .whl ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile .whl/*.whl >/dev/null 2>&1 || exit 1
fi
# Installed for the console script the CLI tests run; the import path alone if the install fails.
python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . >/dev/null 2>&1 \
    || export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export SKLEARN_LTR_DATA="${SKLEARN_LTR_DATA:-$PWD/.devdata}" PYTHONUNBUFFERED=1 OMP_NUM_THREADS=2
steps="${STEPS:-tests bf16 memory predict compile}"
nvidia-smi -L
python3 -c "import numpy, sklearn, torch; print('torch', torch.__version__, 'sklearn', sklearn.__version__, \
'numpy', numpy.__version__, 'cuda', torch.cuda.is_available(), torch.cuda.get_device_name(0))"

step() {  # step NAME TIMEOUT COMMAND...: run one step, its log in $out/NAME.log, print its exit and time
    local name=$1 limit=$2 start
    shift 2
    case " $steps " in *" $name "*) ;; *) return 0 ;; esac
    echo "== $name (load average $(cut -d' ' -f1-3 /proc/loadavg))"
    start=$(date +%s)
    timeout "$limit" "$@" >"$out/$name.log" 2>&1
    echo "$name: exit $? in $(( $(date +%s) - start )) s"
}

# The suite: xdist workers share the GPU; -rfEs names every failure, error and skip.
step tests "${TEST_TIMEOUT:-150}" python3 -m pytest -q -p no:cacheprovider -n "${WORKERS:-8}" -rfEs --device cuda \
    ${PYTEST_ARGS:-}
grep -E "^(FAILED|ERROR)|passed|failed" "$out/tests.log" 2>/dev/null | tail -30
step bf16 90 python3 benchmarks/bench_bf16_stability.py --device cuda --out "$out/bf16_cuda.md"
grep "^|" "$out/bf16_cuda.md" 2>/dev/null
step memory 90 python3 benchmarks/bench_training_memory.py --device cuda --acceptance --out "$out/training_memory_cuda.md"
grep -v "^$" "$out/training_memory_cuda.md" 2>/dev/null | grep "|\|accept\|refus"
step predict 100 python3 benchmarks/bench_predict_scale.py --speed --device cuda --queries 600,8200 --repeats 3 --out "$out/predict_cuda.md"
grep "^|" "$out/predict_cuda.md" 2>/dev/null
step compile 100 python3 benchmarks/bench_compile.py --device cuda --queries 300 --out "$out/compile_cuda.md"
grep "^|" "$out/compile_cuda.md" 2>/dev/null

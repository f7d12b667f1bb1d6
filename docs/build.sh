#!/usr/bin/env bash
# Build the HTML documentation; every Sphinx warning is an error.
#
#   docs/build.sh                 # into docs/_build/html
#   PYTHON=/path/to/python docs/build.sh [extra sphinx-build options]
#
# Needs the docs extra (pip install -e ".[docs]") and no network. -n (nitpicky) makes every
# cross-reference resolve; references into other projects (torch, scikit-learn, NumPy, ...) are
# not linked, since the build is offline (see nitpick_ignore_regex in docs/conf.py). -E rebuilds
# from scratch, so that warnings of unchanged pages are reported again.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python}"
rm -rf docs/generated
exec "$PYTHON" -m sphinx -W --keep-going -n -E -b html "$@" docs docs/_build/html

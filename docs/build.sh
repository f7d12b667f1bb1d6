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
#
# The example gallery (examples/, about 20 s of run time on two shared cores) is cached:
# sphinx-gallery stores each example's MD5 in docs/auto_examples/*.md5 and reruns only the
# examples whose script changed (run_stale_examples is off in docs/conf.py), so a second local
# build takes about 20 s instead of 30 to 45 s. The cached pages are
# still read again under -E, so their warnings are still reported. The cache does not know about
# changes to the library: to rerun every example (after changing what an example calls, or after
# renaming or deleting one), run with CI set (CI=1 docs/build.sh) or delete docs/auto_examples.
# Under CI (CI set and non-empty) the gallery is deleted first and every example runs again.
#
# After the build, the site is checked: no page may contain a mailto: link (a standalone
# "NDCG@10" would otherwise become one; see _StandaloneEmailsAsText in docs/conf.py), and no
# page may load a script, stylesheet or font from another site (MathJax and the theme's assets
# are served from _static/, so the pages render offline).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python}"
OUT=docs/_build/html
rm -rf docs/generated docs/sg_execution_times.rst
if [ -n "${CI:-}" ]; then
    rm -rf docs/auto_examples  # every example runs again, as on a fresh clone
fi
# One torch thread: the gallery's small models train fastest so, and the build shares the machine.
OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" MPLBACKEND=Agg "$PYTHON" -m sphinx -W --keep-going -n -E -b html "$@" docs "$OUT"

status=0
if mailto=$(grep -rlI --include='*.html' -i 'mailto:' "$OUT"); then
    echo "docs/build.sh: error: mailto: links in the built site (in:" $mailto "); write e-mail-like text" \
         "such as NDCG@10 as plain text, and no explicit mailto: link" >&2
    status=1
fi
# A <script src=...>, <link href=...> or CSS url(...) that starts with http:, https: or //.
remote='<script[^>]*src="(https?:)?//|<link[^>]*href="(https?:)?//|url\((["'"'"'])?(https?:)?//'
if remote_pages=$(grep -rlIE --include='*.html' --include='*.css' "$remote" "$OUT"); then
    echo "docs/build.sh: error: pages that load scripts, styles or fonts from another site (in:" \
         $remote_pages "); ship them in _static/ instead" >&2
    status=1
fi
exit "$status"

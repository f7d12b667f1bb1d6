"""Screenshots of built documentation pages, taken with headless Chromium.

Build the site first (``bash docs/build.sh``), then::

    python docs/screenshots.py /tmp/screens                      # the default pages
    python docs/screenshots.py /tmp/screens metrics.html api.html
    python docs/screenshots.py --window-size 1400,1800 --html docs/_build/html /tmp/screens

Each page (a path relative to the built site) becomes ``OUT_DIR/<path with / as ->.png``.
The browser resolves no host name (``--host-resolver-rules``), so a page that needed a CDN
for its formulas, fonts or scripts shows it: formulas that stay raw TeX, missing icons. The
browser is the first of ``--browser``, ``$CHROMIUM``, ``chromium``, ``chromium-browser``,
``google-chrome`` and ``google-chrome-stable`` found; on Debian, ``apt-get install chromium``.
Nothing is written but the PNG files (the browser's profile lives in a temporary directory).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

#: Pages taken when none are named: the home page, a page of formulas, the example gallery and
#: one example with its figures.
DEFAULT_PAGES = (
    "index.html",
    "metrics.html",
    "auto_examples/index.html",
    "auto_examples/plot_4_debiasing_clicks.html",
)
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
HTML_DIR = Path(__file__).resolve().parent / "_build" / "html"


def find_browser(name=None):
    """Path of the Chromium executable to use, or None when there is none."""
    for candidate in (name, os.environ.get("CHROMIUM"), *BROWSERS):
        if candidate and (path := shutil.which(candidate)):
            return path
    return None


def screenshot(browser, page, png, *, window_size="1400,1800", wait_ms=8000, timeout=120):
    """Render the HTML file ``page`` into the PNG file ``png``; return the browser's exit status."""
    with tempfile.TemporaryDirectory(prefix="sklearn-ltr-screens-") as profile:
        command = [
            browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            f"--user-data-dir={profile}", "--no-first-run", "--disable-extensions",
            # No network: every host name fails to resolve, file:// pages still load.
            "--host-resolver-rules=MAP * ~NOTFOUND",
            # Let deferred scripts (MathJax typesetting) finish before the picture is taken.
            f"--virtual-time-budget={wait_ms}",
            f"--window-size={window_size}", f"--screenshot={png}", Path(page).resolve().as_uri(),
        ]
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    if result.returncode != 0 or not Path(png).is_file():
        sys.stderr.write(result.stderr[-2000:])
        return result.returncode or 1
    return 0


def main(argv=None):
    """Command line: ``python docs/screenshots.py OUT_DIR [PAGE ...]``; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=Path, help="directory for the PNG files (created if missing)")
    parser.add_argument("pages", nargs="*", default=list(DEFAULT_PAGES),
                        help=f"pages relative to the built site (default: {' '.join(DEFAULT_PAGES)})")
    parser.add_argument("--html", type=Path, default=HTML_DIR, help="the built site (default: docs/_build/html)")
    parser.add_argument("--browser", help="Chromium executable (default: the first of $CHROMIUM, "
                        + ", ".join(BROWSERS) + " found)")
    parser.add_argument("--window-size", default="1400,1800", help="WIDTH,HEIGHT in pixels (default: 1400,1800)")
    parser.add_argument("--wait-ms", type=int, default=8000,
                        help="virtual time for the page's scripts before the screenshot (default: 8000)")
    args = parser.parse_args(argv)

    browser = find_browser(args.browser)
    if browser is None:
        parser.error("no Chromium found: install it (apt-get install chromium) or pass --browser PATH")
    missing = [page for page in args.pages if not (args.html / page).is_file()]
    if missing:
        parser.error(f"not in {args.html}: {', '.join(missing)} (build the site with docs/build.sh first)")
    args.out_dir.mkdir(parents=True, exist_ok=True)
    status = 0
    for page in args.pages:
        png = args.out_dir / (page.removesuffix(".html").replace("/", "-") + ".png")
        code = screenshot(browser, args.html / page, png, window_size=args.window_size, wait_ms=args.wait_ms)
        print(f"{png}" if code == 0 else f"failed ({code}): {page}")
        status = status or code
    return status


if __name__ == "__main__":
    sys.exit(main())

"""What the benchmark scripts share: the data folder, the record of the machine, Markdown tables, probes.

A script run as ``python benchmarks/bench_x.py`` has its own folder first on ``sys.path`` and imports
``from _common import ...``. The scripts import nothing else from each other (``bench_quality.py`` also imports
``quality_folds.py``, the module of its five-fold protocol), and nothing from ``studies/``.

* :func:`data_dir`: ``$SKLEARN_LTR_DATA``, else ``shared/data`` beside the repository (``../shared/data``
  from its root), with a clear error when the data set asked for is not there.
* :func:`machine`, :func:`version`, :func:`device_name`, :func:`load_average`, :func:`utc_now`,
  :func:`command_line`, and :func:`machine_header` for all of them in one paragraph: the machine, CPUs and
  library versions, the load, the date and the command, as the reports record them.
* :func:`table`, :func:`write_report`: a Markdown table, and a report of a title, a paragraph and a table.
* :func:`sync`, :func:`status_kib`, :func:`reset_peak_rss`: wait for the device; read and reset the
  process's memory counters (Linux ``/proc``).
"""

from __future__ import annotations

import ast
import importlib.util
import os
import platform
import shlex
import sys
import time
import types
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data"
# How the reports name the libraries whose versions they record.
NAMES = {"numpy": "NumPy", "lightgbm": "LightGBM", "dask": "Dask", "xgboost": "XGBoost", "scipy": "SciPy",
         "sklearn": "scikit-learn"}
DISTRIBUTIONS = {"sklearn": "scikit-learn"}  # import name -> distribution name, where they differ


# --------------------------------------------------------------------------------------------------------------
# Data


def data_dir(*parts, required=True):
    """The data folder (``$SKLEARN_LTR_DATA``, else ``shared/data`` beside the repository) joined with ``parts``.

    With ``required`` (the default) a missing path stops the script with a message that says where it looked
    and how to point it elsewhere; ``required=False`` returns the path as it is (for a command-line default).
    """
    base = Path(os.environ["SKLEARN_LTR_DATA"]) if os.environ.get("SKLEARN_LTR_DATA") else DEFAULT_DATA
    path = base.joinpath(*parts)
    if required and not path.exists():
        source = "$SKLEARN_LTR_DATA" if os.environ.get("SKLEARN_LTR_DATA") else "the default ../shared/data"
        raise SystemExit(f"benchmark data not found: {path} (from {source}); set SKLEARN_LTR_DATA to the folder "
                         "holding mq2008/, ohsumed/, ... (see benchmarks/README.md)")
    return path


# --------------------------------------------------------------------------------------------------------------
# The record of the machine


def version(package):
    """The version of ``package``: its ``__version__`` when imported, else the installed distribution's."""
    module = sys.modules.get(package)
    if getattr(module, "__version__", None):
        return str(module.__version__)
    try:
        return metadata.version(DISTRIBUTIONS.get(package, package))
    except metadata.PackageNotFoundError:
        return "not installed"


def machine(*packages, cpus=True, python=True):
    """``x86_64, 2 CPUs, Python 3.11.7, torch 2.13.0+cpu, LightGBM 4.7.0``: the machine and ``packages``' versions.

    ``cpus`` is True (``"2 CPUs"``), False (left out) or a format of the count (``"{} CPUs (shared)"``).
    """
    parts = [platform.machine() or "unknown machine"]
    if cpus:
        parts.append((cpus if isinstance(cpus, str) else "{} CPUs").format(os.cpu_count()))
    if python:
        parts.append(f"Python {platform.python_version()}")
    parts += [f"{NAMES.get(package, package)} {version(package)}" for package in packages]
    return ", ".join(parts)


def device_name(device):
    """The GPU's name for a CUDA ``device``, else the CPU's (``platform.processor()``, or ``"CPU"``)."""
    if str(device).startswith("cuda"):
        import torch

        return torch.cuda.get_device_name(torch.device(device))
    return platform.processor() or "CPU"


def load_average(fmt="{:.2f}", sep=" / "):
    """The 1, 5 and 15-minute load averages as ``"1.20 / 1.35 / 1.41"``; ``"n/a"`` where the system has none."""
    if not hasattr(os, "getloadavg"):
        return "n/a"
    return sep.join(fmt.format(value) for value in os.getloadavg())


def utc_now():
    """The date and time in UTC, to the minute: ``2026-12-02 04:42 UTC``."""
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())


def command_line(argv=None, script=None):
    """The command that ran the script, as a reader would type it from the repository's root."""
    argv = sys.argv[1:] if argv is None else list(argv)
    script = script or sys.argv[0]
    try:
        script = Path(script).resolve().relative_to(ROOT).as_posix()
    except ValueError:
        script = str(script)
    return " ".join(["python", script, *map(shlex.quote, argv)])


def machine_header(*packages, command=None, note=None, load="at the start", date=True):
    """One paragraph that records the run: machine, CPUs, versions, date (UTC), load average, command.

    ``packages`` are the libraries whose versions matter (``"torch"``, ``"numpy"``, ``"lightgbm"``, ...),
    ``note`` is added after the machine (e.g. ``"2 worker processes x 1 thread"``), ``load`` says when the
    load average was read (``"at the end"``; None leaves it out), and ``command`` defaults to the script's
    own command line (:func:`command_line`).
    """
    parts = [f"Machine: {machine(*packages)}"]
    if note:
        parts.append(note)
    if date:
        parts.append(utc_now())
    if load:
        parts.append(f"load average {load_average()} (1, 5, 15 min) {load}")
    return "; ".join(parts) + f". Command: `{command or command_line()}`."


# --------------------------------------------------------------------------------------------------------------
# Markdown


def table(headers, rows, align=None):
    """A Markdown table: the header, the separator (``---:`` where ``align`` has ``"r"``), the rows.

    ``rows`` are sequences of cells (any value; ``str`` of it is written). Returns the lines joined by
    newlines, without a final newline.
    """
    align = align or "l" * len(headers)
    if len(align) != len(headers):
        raise ValueError(f"align has {len(align)} columns, headers {len(headers)}")
    lines = ["| " + " | ".join(str(header) for header in headers) + " |",
             "| " + " | ".join("---:" if a == "r" else "---" for a in align) + " |"]
    for row in rows:
        if len(row) != len(headers):
            raise ValueError(f"a row of {len(row)} cells under {len(headers)} headers: {row}")
        lines.append("| " + " | ".join(str(cell) for cell in row) + " |")
    return "\n".join(lines)


def write_report(title, description, rows, out=None):
    """Print (and write to ``out``) a Markdown report: a title, a paragraph, and ``rows`` (dicts) as a table.

    The columns are those of the widest row; a row without a column leaves it empty.
    """
    columns = list(max(rows, key=len))
    body = table(columns, [[row.get(column, "") for column in columns] for row in rows])
    text = "\n".join([title, "", description, "", body]) + "\n"
    print(text)
    if out:
        Path(out).write_text(text)
    return text


# --------------------------------------------------------------------------------------------------------------
# Probes


def sync(device):
    """Wait for the work queued on ``device`` (a CUDA device; nothing to wait for on the CPU)."""
    import torch

    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def status_kib(field):
    """A memory field of ``/proc/self/status`` in KiB (``"VmRSS"``, ``"VmHWM"``)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def reset_peak_rss():
    """Reset VmHWM to the current RSS (Linux >= 4.0); False where that is not allowed."""
    try:
        with open("/proc/self/clear_refs", "w") as clear_refs:
            clear_refs.write("5")
        return True
    except OSError:
        return False


def _constant(path, name):
    """The value of the module-level assignment ``name = <literal>`` in the file ``path``."""
    for node in ast.parse(Path(path).read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise LookupError(f"{name} not assigned in {path}")


def allrank_loss_module(src, name):
    """allRank's loss module ``allrank/models/losses/<name>.py`` from its unzipped wheel at ``src``, loaded with torch.

    allRank is not a dependency. A loss module imports ``PADDED_Y_VALUE`` from
    ``allrank.data.dataset_loading`` (whose imports need torchvision) and ``DEFAULT_EPS`` from
    ``allrank.models.losses`` (whose ``__init__`` imports every loss): both are served by stub modules
    holding the values read from allRank's own source files. ``src`` goes on ``sys.path``, so that the
    rest of allRank (its model classes) imports as it is.

    Returns
    -------
    module, padded_value, eps
        The loaded module and the two constants.
    """
    src = Path(src)
    padded = _constant(src / "allrank/data/dataset_loading.py", "PADDED_Y_VALUE")
    eps = _constant(src / "allrank/models/losses/__init__.py", "DEFAULT_EPS")
    if str(src) not in sys.path:
        sys.path.insert(0, str(src))
    sys.modules["allrank.data.dataset_loading"] = types.SimpleNamespace(PADDED_Y_VALUE=padded)
    sys.modules["allrank.models.losses"] = types.SimpleNamespace(DEFAULT_EPS=eps)
    spec = importlib.util.spec_from_file_location(f"allrank.models.losses.{name}",
                                                  src / "allrank" / "models" / "losses" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, padded, eps

"""The OpenMP default (sklearn_ltr/_threads.py): set before the backends load, never over the user's setting."""

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from sklearn_ltr import _threads
from sklearn_ltr._threads import DEFAULT_WAIT_POLICY, WAIT_VARIABLES, apply_openmp_default

ROOT = Path(__file__).resolve().parents[1]


def _python(code, cwd=None, **env_changes):
    """Run ``code`` in a fresh interpreter with no OpenMP wait variable but ``env_changes``; its last stdout line."""
    env = {key: value for key, value in os.environ.items() if key not in WAIT_VARIABLES}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.update(env_changes)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120,
                          check=False, cwd=cwd)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1], done.stderr


# -- the function, on an environment given by hand ---------------------------------------------------------------

def test_sets_passive_when_nothing_is_set():
    env = {"PATH": "/bin"}
    assert apply_openmp_default(env, modules={}) == "set"
    assert env == {"PATH": "/bin", "OMP_WAIT_POLICY": "PASSIVE"}
    assert DEFAULT_WAIT_POLICY == "PASSIVE"


@pytest.mark.parametrize("name", WAIT_VARIABLES)
@pytest.mark.parametrize("value", ["ACTIVE", "active", "", "1000"])
def test_keeps_any_user_wait_variable_exactly(name, value):
    env = {name: value}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the user chose: no warning, even with torch loaded on a busy machine
        assert apply_openmp_default(env, modules={"torch": object()}, load=99.0, cpus=2) == "kept"
    assert env == {name: value}  # nothing changed, nothing added


def test_a_second_call_changes_nothing():
    env = {}
    apply_openmp_default(env, modules={})
    assert apply_openmp_default(env, modules={}) == "kept"
    assert env == {"OMP_WAIT_POLICY": "PASSIVE"}


@pytest.mark.parametrize("backend", ["torch", "lightgbm"])
def test_backend_loaded_first_on_a_busy_machine_warns_with_the_fix(backend):
    env = {}
    with pytest.warns(RuntimeWarning, match=f"{backend} was imported before sklearn_ltr") as caught:
        outcome = apply_openmp_default(env, modules={backend: object()}, load=2.0, cpus=2)
    assert outcome == "set-late"
    assert env == {"OMP_WAIT_POLICY": "PASSIVE"}  # still set: the processes it starts read it
    message = str(caught[0].message)
    assert "load average 2.0 on 2 CPUs" in message
    assert "OMP_WAIT_POLICY=PASSIVE in the environment before Python starts" in message
    assert "OMP_WAIT_POLICY=ACTIVE" in message


@pytest.mark.parametrize("load", [1.9, None])  # below the CPU count; no load average (Windows)
def test_backend_loaded_first_on_an_idle_machine_is_silent(load, monkeypatch):
    monkeypatch.setattr(_threads, "_load_average", lambda: load)
    env = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert apply_openmp_default(env, modules={"torch": object()}, cpus=2) == "set-late"
    assert env == {"OMP_WAIT_POLICY": "PASSIVE"}


def test_user_setting_with_a_backend_loaded_is_silent():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert apply_openmp_default({"OMP_WAIT_POLICY": "PASSIVE"}, modules={"torch": 1}, load=9.0, cpus=2) == "kept"


# -- import sklearn_ltr in a fresh process --------------------------------------------------------------------------

_SHOW = f"import os, json, sklearn_ltr; print(json.dumps({{k: os.environ.get(k) for k in {WAIT_VARIABLES!r}}}))"


def test_import_keeps_the_users_policy():
    shown, _ = _python(_SHOW, OMP_WAIT_POLICY="ACTIVE")
    assert json.loads(shown) == {"OMP_WAIT_POLICY": "ACTIVE", "GOMP_SPINCOUNT": None, "KMP_BLOCKTIME": None}


def test_import_keeps_a_users_spin_count_and_sets_nothing():
    shown, _ = _python(_SHOW, GOMP_SPINCOUNT="10000")
    assert json.loads(shown) == {"OMP_WAIT_POLICY": None, "GOMP_SPINCOUNT": "10000", "KMP_BLOCKTIME": None}


def test_import_sets_the_default_when_the_user_set_nothing():
    shown, _ = _python(_SHOW)
    assert json.loads(shown) == {"OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": None, "KMP_BLOCKTIME": None}


# libgomp prints how it parsed its environment (GOMP_SPINCOUNT: 0 when passive, 300000 by default):
# the setting reaches the runtime LightGBM loads, or does not when LightGBM was loaded first.
_SPIN = """
import ctypes, sys, warnings
{first}
with warnings.catch_warnings():
    warnings.simplefilter("ignore", RuntimeWarning)
    import sklearn_ltr
import lightgbm
try:
    display = ctypes.CDLL("libgomp.so.1").omp_display_env
except (OSError, AttributeError):
    print("no libgomp display")
    sys.exit()
sys.stderr.flush()
display(1)
print("shown")
"""


def _spin_count(first):
    shown, stderr = _python(_SPIN.format(first=first))
    if shown != "shown":
        pytest.skip("this OpenMP runtime is not a libgomp with omp_display_env")
    line = next(line for line in stderr.splitlines() if "GOMP_SPINCOUNT" in line)
    return line.split("=")[1].strip().strip("'")


def test_the_runtime_lightgbm_loads_after_import_sklearn_ltr_does_not_spin():
    assert _spin_count(first="") == "0"


def test_the_runtime_loaded_before_sklearn_ltr_keeps_spinning():
    # Why the late case warns: the runtime read its settings when lightgbm loaded it.
    assert _spin_count(first="import lightgbm") != "0"


# -- the command line goes through the same function ----------------------------------------------------------------

_CLI = """
import json, os
import sklearn_ltr._threads as threads
from sklearn_ltr.cli import main
calls = []
threads.apply_openmp_default = lambda *args, **kwargs: calls.append(args) or "kept"
del os.environ["OMP_WAIT_POLICY"]  # set by the import: undo it, to see whether the command sets it elsewhere
status = main(["predict", "--model", "no-such-model.joblib", "--data", "no-such-data.txt", "--out", "s.txt"])
print(json.dumps({"status": status, "calls": len(calls), "policy": os.environ.get("OMP_WAIT_POLICY")}))
"""


def test_cli_sets_the_policy_only_through_the_library_function(tmp_path):
    # Files named by absolute path, the interpreter started in the repository (mutmut reads its settings there).
    code = _CLI
    for name in ("no-such-model.joblib", "no-such-data.txt", "s.txt"):
        code = code.replace(f'"{name}"', repr(str(tmp_path / name)))
    shown, _ = _python(code, cwd=ROOT)
    # status 2: the missing model file, after the command started; the function ran once, and nothing
    # else in the command line set the variable.
    assert json.loads(shown) == {"status": 2, "calls": 1, "policy": None}


def test_the_late_import_warning_whole_and_where_it_points(monkeypatch):
    # Both backends named, the whole message, and the warning attributed to the caller of the function.
    env = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        apply_openmp_default(env, modules={"torch": object(), "lightgbm": object()}, load=3.0, cpus=2)
    (warning,) = caught
    assert warning.category is RuntimeWarning
    assert str(warning.message) == (
        "torch and lightgbm was imported before sklearn_ltr, so its OpenMP threads keep spinning while idle, and "
        "this machine is busy (load average 3.0 on 2 CPUs): fits may run many times slower. Set "
        "OMP_WAIT_POLICY=PASSIVE in the environment before Python starts, or import sklearn_ltr before torch and "
        "lightgbm; OMP_WAIT_POLICY=ACTIVE keeps the threads spinning and silences this."
    )
    assert warning.filename == __file__


def test_the_defaults_read_the_process(monkeypatch):
    # modules, load and cpus default to sys.modules, the load average and os.cpu_count().
    monkeypatch.setitem(sys.modules, "lightgbm", sys.modules.get("lightgbm", object()))
    monkeypatch.setattr(_threads, "_load_average", lambda: 64.0)
    monkeypatch.setattr(_threads.os, "cpu_count", lambda: 2)
    with pytest.warns(RuntimeWarning, match=r"load average 64\.0 on 2 CPUs"):
        assert apply_openmp_default({}) == "set-late"
    monkeypatch.setattr(_threads.os, "cpu_count", lambda: 128)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert apply_openmp_default({}) == "set-late"  # 64 on 128 CPUs: not busy, no warning

"""How idle OpenMP threads wait: the library's one default, set before torch or LightGBM load.

LightGBM and torch's CPU kernels run their threads on OpenMP (GNU libgomp in the Linux
wheels; one copy is shared by both). Between two parallel regions libgomp's idle threads
spin for a while before they sleep. On an idle machine that saves a wake-up; on a machine
whose cores are busy with other work, the spinning threads take CPU time from the threads
that have work: on 2 busy cores, fits on MQ2008 took 19 to 65 times longer than with
``OMP_WAIT_POLICY=PASSIVE``, with the same NDCG (``studies/results/threads.md``).

:func:`apply_openmp_default` sets ``OMP_WAIT_POLICY=PASSIVE`` in the process environment,
unless the user set any variable that says how idle OpenMP threads wait
(:data:`WAIT_VARIABLES`): those are left exactly as they are. ``sklearn_ltr/__init__.py``
calls it before anything imports torch or LightGBM, and the command line calls the same
function. An OpenMP runtime reads these variables once, when it is loaded: if torch or
LightGBM was imported before ``sklearn_ltr``, the setting comes too late for this process
(it still reaches the processes it starts, such as joblib's workers), and a warning says so
when the machine is busy, where spinning costs most.

This module imports only the standard library: it runs first, at ``import sklearn_ltr``.
"""

from __future__ import annotations

import os
import sys
import warnings

#: The variables through which a user says how idle OpenMP threads wait: the standard one,
#: libgomp's spin count and the Intel/LLVM runtime's block time. If any of them is set, the
#: library sets nothing.
WAIT_VARIABLES = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME")

#: The library's default for ``OMP_WAIT_POLICY``: idle threads sleep instead of spinning.
DEFAULT_WAIT_POLICY = "PASSIVE"

#: The modules whose import loads the OpenMP runtime of the library's fits.
OPENMP_BACKENDS = ("torch", "lightgbm")


def _busy(load, cpus):
    """Whether a one-minute load average ``load`` keeps ``cpus`` cores busy (None: unknown, not busy)."""
    return load is not None and load >= (cpus or 1)


def _load_average():
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):  # Windows has no load average
        return None


def apply_openmp_default(environ=None, modules=None, load=None, cpus=None):
    """Let idle OpenMP threads sleep, unless the user said how they wait.

    Sets ``OMP_WAIT_POLICY`` to :data:`DEFAULT_WAIT_POLICY` in ``environ`` when none of
    :data:`WAIT_VARIABLES` is set there; a value the user set (even an empty one) is never
    changed. When the default is set but an OpenMP backend (:data:`OPENMP_BACKENDS`) is
    already in ``modules``, the runtime has read its settings already: on a busy machine
    (one-minute load average at least the number of CPUs) a :class:`RuntimeWarning` says how
    to make the setting take effect or silence the warning.

    Parameters
    ----------
    environ : mutable mapping, default=None
        The environment to update; None means ``os.environ`` (which C code reads too).
    modules : mapping, default=None
        The imported modules; None means ``sys.modules``.
    load : float, default=None
        The one-minute load average; None reads ``os.getloadavg()``.
    cpus : int, default=None
        The number of CPUs; None reads ``os.cpu_count()``.

    Returns
    -------
    outcome : {"set", "set-late", "kept"}
        ``"set"``: the default was set before any backend was loaded; ``"set-late"``: it was
        set, but a backend was loaded already (this process's runtime keeps its own
        default); ``"kept"``: a value already there (the user's, or an earlier call's) was
        kept.

    Examples
    --------
    >>> from sklearn_ltr._threads import apply_openmp_default
    >>> env = {}
    >>> apply_openmp_default(env, modules={}), env
    ('set', {'OMP_WAIT_POLICY': 'PASSIVE'})
    >>> env = {"OMP_WAIT_POLICY": "ACTIVE"}
    >>> apply_openmp_default(env, modules={}), env
    ('kept', {'OMP_WAIT_POLICY': 'ACTIVE'})
    """
    environ = os.environ if environ is None else environ
    modules = sys.modules if modules is None else modules
    if any(name in environ for name in WAIT_VARIABLES):
        return "kept"
    environ["OMP_WAIT_POLICY"] = DEFAULT_WAIT_POLICY
    loaded = [name for name in OPENMP_BACKENDS if name in modules]
    if not loaded:
        return "set"
    load = _load_average() if load is None else load
    cpus = os.cpu_count() if cpus is None else cpus
    if _busy(load, cpus):
        warnings.warn(
            f"{' and '.join(loaded)} was imported before sklearn_ltr, so its OpenMP threads keep spinning while "
            f"idle, and this machine is busy (load average {load:.1f} on {cpus} CPUs): fits may run many times "
            "slower. Set OMP_WAIT_POLICY=PASSIVE in the environment before Python starts, or import sklearn_ltr "
            "before torch and lightgbm; OMP_WAIT_POLICY=ACTIVE keeps the threads spinning and silences this.",
            RuntimeWarning, stacklevel=2,
        )
    return "set-late"

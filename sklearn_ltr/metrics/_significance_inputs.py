"""The arguments of :func:`~sklearn_ltr.metrics.paired_significance` and
:func:`~sklearn_ltr.metrics.compare_rankings`, checked once for both: the test options, the
systems (one array, a sequence, a dict or a data frame) and per-query values."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from numbers import Integral, Real

import numpy as np

from sklearn_ltr._validation import NumberInterval
from sklearn_ltr.utils._sklearn_compat import Satisfies, StrOptions, check_parameters

__all__ = ["TESTS", "check_per_query", "check_test_options", "normalise_tests", "split_systems"]

#: The tests run by default, in their report order.
TESTS = ("t-test", "randomization", "bootstrap")


def _is_test_selection(value):
    if isinstance(value, str):
        return value in TESTS
    # A collection, not a one-shot iterator: this check would use it up, and no test would run.
    if not isinstance(value, Collection):
        return False
    return len(value) > 0 and all(isinstance(v, str) and v in TESTS for v in value)


_PAIRED_CONSTRAINTS = {
    "tests": [Satisfies(f"one of {TESTS!r} or a non-empty collection of them", _is_test_selection)],
    "n_resamples": [NumberInterval(Integral, 1, None, closed="left")],
    "confidence_level": [NumberInterval(Real, 0, 1, closed="neither")],
    "correction": [StrOptions({"holm", "bonferroni"}), None],
    "random_state": ["random_state", np.random.Generator],
}


def check_test_options(owner, *, tests, n_resamples, confidence_level, correction, random_state):
    """Raise scikit-learn's ``InvalidParameterError``, naming ``owner``, for an invalid test option."""
    check_parameters(
        owner,
        _PAIRED_CONSTRAINTS,
        {"tests": tests, "n_resamples": n_resamples, "confidence_level": confidence_level,
         "correction": correction, "random_state": random_state},
    )


def normalise_tests(tests):
    """The chosen tests (a name or a collection of names) as a tuple in :data:`TESTS` order."""
    chosen = {tests} if isinstance(tests, str) else set(tests)
    return tuple(test for test in TESTS if test in chosen)


def split_systems(others, name="others"):
    """``(names, arrays, argument names)`` of the systems in a dict, a sequence of arrays or one array."""
    if hasattr(others, "columns") and hasattr(others, "items"):  # a data frame: one system per column
        others = dict(others.items())
    if isinstance(others, Mapping):
        names = list(others)
        systems = [others[key] for key in names]
        labels = [f"{name}[{key!r}]" for key in names]
    else:
        if hasattr(others, "to_numpy"):
            others = others.to_numpy()
        several = (isinstance(others, np.ndarray) and others.ndim == 2) or (
            isinstance(others, (list, tuple)) and (len(others) == 0 or np.ndim(others[0]) >= 1)
        )
        systems = list(others) if several else [others]
        names = list(range(len(systems)))
        labels = [f"{name}[{j}]" for j in names] if several else [name]
    if not systems:
        raise ValueError(f"{name} is empty; pass at least one system to compare with the baseline.")
    return names, systems, labels


def check_per_query(values, name, n=None, against="baseline"):
    """``values`` as finite float64, one per query (``n`` of them, as ``against`` has, when given)."""
    if hasattr(values, "to_numpy"):
        values = values.to_numpy()
    values = np.asarray(values)
    if values.ndim != 1:
        raise ValueError(f"{name} must be 1-D, one value per query; got shape {values.shape}.")
    if values.dtype.kind not in "biuf":
        raise ValueError(f"{name} must be numeric; got dtype {values.dtype}.")
    values = values.astype(np.float64)
    if n is not None and values.shape[0] != n:
        raise ValueError(
            f"{name} has {values.shape[0]} values but {against} has {n}; pass one value per query, "
            "the same queries in the same order."
        )
    if not np.isfinite(values).all():
        raise ValueError(f"{name} contains NaN or infinite values; pass finite per-query metric values.")
    return values

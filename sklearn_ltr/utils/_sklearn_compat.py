"""The one place that reaches scikit-learn's private API.

scikit-learn keeps its declarative parameter validation, routing state and sample
counting private. Everything in :mod:`sklearn_ltr` imports them from here, so that a
scikit-learn release that moves one of them is a one-file change.
"""

from __future__ import annotations

import contextlib

from sklearn.utils._param_validation import (
    HasMethods,
    Hidden,
    Interval,
    InvalidParameterError,
    Options,
    StrOptions,
    validate_parameter_constraints,
    validate_params,
)
from sklearn.utils.metadata_routing import _routing_enabled
from sklearn.utils.validation import _num_samples

__all__ = [
    "HasMethods",
    "Hidden",
    "Interval",
    "InvalidParameterError",
    "Options",
    "Satisfies",
    "StrOptions",
    "_num_samples",
    "_routing_enabled",
    "check_parameters",
    "transformed_check_targets",
    "validate_estimator_params",
    "validate_params",
]


class Satisfies(Options):
    """A constraint met by the values for which ``predicate(value)`` is true.

    scikit-learn's ``make_constraint`` accepts only its own constraint classes, so this
    one derives from ``Options``; ``description`` completes the error message
    "The 'p' parameter of X must be <description>".

    Parameters
    ----------
    description : str
        What a valid value is, e.g. ``"a tuple of positive ints"``.
    predicate : callable
        ``predicate(value) -> bool``.

    Examples
    --------
    >>> from sklearn_ltr.utils._sklearn_compat import Satisfies, check_parameters
    >>> even = Satisfies("an even int", lambda v: isinstance(v, int) and v % 2 == 0)
    >>> check_parameters("Demo", {"n": [even]}, {"n": 4})
    >>> check_parameters("Demo", {"n": [even]}, {"n": 3})
    Traceback (most recent call last):
    ...
    sklearn...InvalidParameterError: The 'n' parameter of Demo must be an even int. Got 3 instead.
    """

    def __init__(self, description, predicate):
        super().__init__(object, set())
        self.description = description
        self.predicate = predicate

    def is_satisfied_by(self, val):
        try:
            return bool(self.predicate(val))
        except Exception:  # a predicate that cannot judge a value rejects it
            return False

    def __str__(self):
        return self.description


def validate_estimator_params(estimator):
    """Validate ``estimator.get_params(deep=False)`` against its ``_parameter_constraints``.

    Raises :class:`InvalidParameterError` naming the parameter and the valid values.
    """
    estimator._validate_params()


def check_parameters(owner, constraints, params):
    """Validate ``params`` (a dict) against ``constraints``, naming ``owner`` in the error.

    For objects that are not estimators (scorers, callbacks): estimators call their own
    ``_validate_params``. Raises :class:`InvalidParameterError` (a ``ValueError`` and a
    ``TypeError``) whose message names the parameter and the accepted values.

    Parameters
    ----------
    owner : str
        Name shown in the message, e.g. ``"NDCGScorer"``.
    constraints : dict
        Parameter name -> list of scikit-learn constraints.
    params : dict
        Parameter name -> value.

    Examples
    --------
    >>> from numbers import Integral
    >>> from sklearn_ltr.utils._sklearn_compat import Interval, check_parameters
    >>> check_parameters("Scorer", {"k": [Interval(Integral, 1, None, closed="left"), None]}, {"k": 0})
    Traceback (most recent call last):
    ...
    sklearn...InvalidParameterError: The 'k' parameter of Scorer must be an int in the range [1, inf) or None. ...
    """
    validate_parameter_constraints(constraints, params, caller_name=owner)


@contextlib.contextmanager
def transformed_check_targets(transform):
    """Within the block, scikit-learn's estimator checks pass their targets ``y`` through ``transform``.

    The checks adapt ``y`` to an estimator's tags in one private hook,
    ``_enforce_estimator_tags_y``; wrapping it is how the contract suite gives 0/1 clicks
    to a ranker whose target kind is ``"clicks"``. Checks that build ``y`` without the
    hook are not affected.
    """
    from sklearn.utils import estimator_checks as _estimator_checks  # heavy: only when checks run

    original = _estimator_checks._enforce_estimator_tags_y

    def enforce(estimator, y):
        return transform(original(estimator, y))

    _estimator_checks._enforce_estimator_tags_y = enforce
    try:
        yield
    finally:
        _estimator_checks._enforce_estimator_tags_y = original

"""Declared keyword parameters of the metrics, checked with scikit-learn's constraints.

Every public metric checks its options on entry with
:func:`~sklearn_ltr.utils._sklearn_compat.check_parameters`, which raises
:class:`~sklearn.utils._param_validation.InvalidParameterError` (a ``ValueError`` and a
``TypeError``) naming the parameter and the accepted values. The scorers check the same
constraints when they are constructed, so that a bad option fails before a search starts.
The check runs on every call, whatever scikit-learn's ``skip_parameter_validation``
setting: a metric never computes a number from an option it does not understand.
"""

from __future__ import annotations

from numbers import Integral, Real

from sklearn_ltr._validation import NumberInterval
from sklearn_ltr.utils._sklearn_compat import StrOptions, check_parameters

__all__ = ["CONSTRAINTS", "check_metric_params"]

_CUTOFF = NumberInterval(Integral, 1, None, closed="left")
_OPTIONAL_CUTOFF = [_CUTOFF, None]
_GAIN = [StrOptions({"exponential", "linear"})]
_TIES = [StrOptions({"average", "stable"})]
_EMPTY_VALUE = [NumberInterval(Real, 0, 1, closed="both"), None]
# Open on the right: an infinite top grade would make every stopping probability 0.
_MAX_GRADE = [NumberInterval(Real, 0, None, closed="left"), None]

_NDCG = {"k": _OPTIONAL_CUTOFF, "gain": _GAIN, "empty_value": _EMPTY_VALUE, "ties": _TIES}
# The smallest propensity kept before inverting (sklearn_ltr.clicks.inverse_propensity_weights): in (0, 1].
_CLIP = [NumberInterval(Real, 0, 1, closed="right")]
_IPS_DCG = {"k": _OPTIONAL_CUTOFF, "clip": _CLIP, "ties": _TIES}
_IPS_NDCG = {"k": _OPTIONAL_CUTOFF, "clip": _CLIP, "empty_value": _EMPTY_VALUE, "ties": _TIES}

#: Metric function name -> {keyword parameter: list of scikit-learn constraints}.
CONSTRAINTS = {
    "ndcg_score": _NDCG,
    "ndcg_per_query": _NDCG,
    "dcg_score": {"k": _OPTIONAL_CUTOFF, "gain": _GAIN, "ties": _TIES},
    "average_precision_score": {"k": _OPTIONAL_CUTOFF, "empty_value": _EMPTY_VALUE},
    "precision_at_k": {"k": [_CUTOFF]},
    "mrr_score": {"k": _OPTIONAL_CUTOFF},
    "err_score": {"k": _OPTIONAL_CUTOFF, "max_grade": _MAX_GRADE},
    "swapped_pairs": {"normalize": ["boolean"]},
    "ips_dcg_score": _IPS_DCG,
    "ips_dcg_per_query": _IPS_DCG,
    "ips_ndcg_score": _IPS_NDCG,
    "ips_ndcg_per_query": _IPS_NDCG,
}


def check_metric_params(metric, **params):
    """Check the keyword parameters of the metric named ``metric`` against :data:`CONSTRAINTS`."""
    check_parameters(metric, CONSTRAINTS[metric], params)

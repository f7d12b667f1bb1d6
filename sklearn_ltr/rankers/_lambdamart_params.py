"""The parameters of :class:`~sklearn_ltr.LambdaMARTRanker` as LightGBM receives them.

``LGBMRanker``'s keyword arguments (``label_gain`` checked, ``lgbm_params`` checked against
LightGBM's names and the estimator's own) and the NDCG cut-offs of ``eval_at``; read by the
in-memory ``fit`` and by the Dask path (``_lambdamart_dask``) alike.
"""

from __future__ import annotations

import numbers

import numpy as np

from sklearn_ltr.rankers._lambdarank_inputs import check_lgbm_param_names, is_positive_int, taken_names
from sklearn_ltr.utils._sklearn_compat import InvalidParameterError

__all__ = ["LAMBDARANK_ONLY", "LGBM_KEYWORDS", "OBJECTIVES", "check_objective_params", "lgbm_eval_at", "lgbm_kwargs"]

#: Constructor parameters handed to ``LGBMRanker`` under the same name.
LGBM_KEYWORDS = (
    "n_estimators", "learning_rate", "num_leaves", "max_depth", "min_child_samples",
    "min_child_weight", "subsample", "subsample_freq", "colsample_bytree", "reg_alpha",
    "reg_lambda", "importance_type", "random_state", "n_jobs", "verbose",
)  # fmt: skip


#: The objectives of ``objective=`` and the names LightGBM also accepts for each (its ``objective`` aliases).
OBJECTIVES = {
    "lambdarank": ("lambdarank",),
    "rank_xendcg": ("rank_xendcg", "xendcg", "xe_ndcg", "xe_ndcg_mart", "xendcg_mart"),
}

#: Constructor parameters that only LightGBM's lambdarank reads, with their defaults: under
#: ``objective="rank_xendcg"`` another value is refused (XE-NDCG has no truncation and no position biases).
LAMBDARANK_ONLY = {"lambdarank_truncation_level": 30, "lambdarank_position_bias_regularization": 0.0,
                   "position_bias": "lightgbm"}

#: ``lgbm_params`` keys that name the objective (LightGBM's aliases of ``objective``).
_OBJECTIVE_KEYS = ("objective", "objective_type", "app", "application", "loss")


def check_objective_params(ranker):
    """Raise when a parameter that only lambdarank reads is set while ``ranker.objective`` is another."""
    if ranker.objective == "lambdarank":
        return
    for name, default in LAMBDARANK_ONLY.items():
        if getattr(ranker, name) != default:
            raise ValueError(
                f"{name}={getattr(ranker, name)!r} applies only to objective='lambdarank' (LightGBM's "
                f"{ranker.objective} has no truncation level and no position biases); keep its default "
                f"{name}={default!r} or use objective='lambdarank'."
            )


def _objective_from_lgbm_params(ranker, extra):
    """Refuse an objective in ``lgbm_params`` unless it names ``ranker.objective``; drop it then."""
    keys = [key for key in _OBJECTIVE_KEYS if key in extra]
    if not keys:
        return extra
    for key in keys:
        value = extra[key]
        if not (isinstance(value, str) and value.strip().lower() in OBJECTIVES[ranker.objective]):
            raise ValueError(
                f"lgbm_params sets {key}={value!r}, which conflicts with objective={ranker.objective!r}; choose the "
                f"objective with the constructor parameter objective='lambdarank' or objective='rank_xendcg' "
                f"and remove {key!r} from lgbm_params."
            )
    return {key: value for key, value in extra.items() if key not in keys}


def lgbm_kwargs(ranker):
    """Validated keyword arguments of ``lightgbm.LGBMRanker`` for ``ranker``'s parameters."""
    check_objective_params(ranker)
    kwargs = {name: getattr(ranker, name) for name in LGBM_KEYWORDS}
    kwargs["objective"] = ranker.objective
    if ranker.objective == "lambdarank":
        kwargs["lambdarank_truncation_level"] = ranker.lambdarank_truncation_level
    if ranker.label_gain is not None:
        try:
            gain = np.asarray(ranker.label_gain, dtype=np.float64)
        except (TypeError, ValueError):
            gain = np.empty(0)
        if gain.ndim != 1 or gain.size == 0 or not np.isfinite(gain).all():
            raise InvalidParameterError(
                f"The 'label_gain' parameter of LambdaMARTRanker must be a non-empty 1-D sequence of finite "
                f"numbers or None. Got {ranker.label_gain!r} instead."
            )
        kwargs["label_gain"] = gain.tolist()
    if ranker.early_stopping_rounds is not None:
        kwargs["early_stopping_round"] = int(ranker.early_stopping_rounds)
    extra = {} if ranker.lgbm_params is None else ranker.lgbm_params
    check_lgbm_param_names(extra)
    extra = _objective_from_lgbm_params(ranker, extra)
    own = (*LGBM_KEYWORDS, "label_gain", "lambdarank_truncation_level",
           "lambdarank_position_bias_regularization")
    clashes = sorted(set(extra) & taken_names(own))
    if clashes:
        raise ValueError(
            f"lgbm_params sets {clashes}, which LambdaMARTRanker sets itself; use the constructor "
            f"parameter of the same meaning instead (the objective is the constructor's objective=)."
        )
    kwargs.update(extra)
    return kwargs


def lgbm_eval_at(ranker):
    """``eval_at`` as a list of positive ints (one int is a list of one)."""
    cutoffs = ranker.eval_at
    if isinstance(cutoffs, numbers.Integral):
        cutoffs = (cutoffs,)
    if not (isinstance(cutoffs, (list, tuple)) and cutoffs and all(is_positive_int(k) for k in cutoffs)):
        raise InvalidParameterError(
            f"The 'eval_at' parameter of LambdaMARTRanker must be a positive int or a non-empty sequence of "
            f"positive ints. Got {ranker.eval_at!r} instead."
        )
    return [int(k) for k in cutoffs]


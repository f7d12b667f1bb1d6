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

__all__ = ["LGBM_KEYWORDS", "lgbm_eval_at", "lgbm_kwargs"]

#: Constructor parameters handed to ``LGBMRanker`` under the same name.
LGBM_KEYWORDS = (
    "n_estimators", "learning_rate", "num_leaves", "max_depth", "min_child_samples",
    "min_child_weight", "subsample", "subsample_freq", "colsample_bytree", "reg_alpha",
    "reg_lambda", "importance_type", "random_state", "n_jobs", "verbose",
)  # fmt: skip


def lgbm_kwargs(ranker):
    """Validated keyword arguments of ``lightgbm.LGBMRanker`` for ``ranker``'s parameters."""
    kwargs = {name: getattr(ranker, name) for name in LGBM_KEYWORDS}
    kwargs["objective"] = "lambdarank"
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
    own = (*LGBM_KEYWORDS, "label_gain", "lambdarank_truncation_level",
           "lambdarank_position_bias_regularization")
    clashes = sorted(set(extra) & taken_names(own))
    if clashes:
        raise ValueError(
            f"lgbm_params sets {clashes}, which LambdaMARTRanker sets itself; use the constructor "
            f"parameter of the same meaning instead (objective is always 'lambdarank')."
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


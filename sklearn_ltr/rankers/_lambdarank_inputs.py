"""What LightGBM's lambdarank accepts, checked before LightGBM sees the data, and the inputs it is handed.

Shared by :class:`~sklearn_ltr.LambdaMARTRanker` on in-memory data and its Dask path
(``_lambdamart_dask``): the label and query-size limits, the rows sorted by query, scipy
sparse matrices, the ``eval_set`` entries and the parameter names the estimator sets itself;
and, on in-memory data, the display positions of unbiased lambdarank.
"""

from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp

from sklearn_ltr._blocks import canonical_query_order
from sklearn_ltr._groups import check_query_weights
from sklearn_ltr.clicks import check_positions as check_display_positions

__all__ = [
    "DEFAULT_LABEL_GAIN_SIZE",
    "MAX_QUERY_SIZE",
    "RESERVED",
    "as_spmatrix",
    "check_init_score",
    "check_label_range",
    "check_lgbm_param_names",
    "check_positions",
    "check_query_size",
    "checked_position_callback",
    "eval_entries",
    "is_positive_int",
    "lgbm_eval_kwargs",
    "position_callback",
    "row_weights",
    "sort_like",
    "sort_rows",
    "taken_names",
]

#: Most rows LightGBM's lambdarank objective and NDCG metric accept in one query:
#: ``DCGCalculator::kMaxPosition = 10000`` in LightGBM's ``src/metric/dcg_calculator.cpp``,
#: enforced by ``DCGCalculator::CheckMetadata`` ("Number of rows ... exceeds upper limit of
#: 10000 for a query") when the objective or the metric is initialised.
MAX_QUERY_SIZE = 10_000

#: LightGBM's default ``label_gain`` is ``2**i - 1`` for ``i = 0 .. 30``: labels 0 to 30.
DEFAULT_LABEL_GAIN_SIZE = 31

#: Parameters set by the estimator itself: not allowed in ``lgbm_params``.
RESERVED = ("objective", "group", "query", "early_stopping_round", "eval_at", "ndcg_eval_at")


def check_label_range(top, label_gain, name):
    """Raise unless the largest label ``top`` has a gain in ``label_gain`` (None: LightGBM's default)."""
    n_gains = DEFAULT_LABEL_GAIN_SIZE if label_gain is None else len(label_gain)
    if top >= n_gains:
        source = "label_gain" if label_gain is not None else "LightGBM's default label_gain (2**g - 1)"
        raise ValueError(
            f"{name} contains label {top:g}, but {source} covers only labels 0..{n_gains - 1}; "
            f"pass a label_gain with at least {int(top) + 1} entries."
        )


def check_query_size(largest, query, name, *, hint=""):
    """Raise when the largest query (``largest`` rows, id ``query``) exceeds LightGBM's limit."""
    if largest > MAX_QUERY_SIZE:
        raise ValueError(
            f"query {query!r} of {name} has {largest} rows; LightGBM's lambdarank accepts at most "
            f"{MAX_QUERY_SIZE} rows per query{hint}. Split the query or subsample its documents."
        )


def is_positive_int(value):
    return isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= 1


def taken_names(names):
    """The names plus :data:`RESERVED` and their LightGBM aliases (best effort: the alias table is private)."""
    taken = set(names) | set(RESERVED)
    try:
        from lightgbm.basic import _ConfigAliases

        taken |= set(_ConfigAliases.get_by_alias(*names, *RESERVED))
    except Exception:  # pragma: no cover - private LightGBM API changed
        pass
    return taken


def check_lgbm_param_names(params):
    """Raise for a key of ``lgbm_params`` that LightGBM does not know (a typo would be ignored silently).

    Known names: LightGBM's parameters and their aliases (its C API's alias table) and the
    keyword arguments of ``lightgbm.LGBMRanker``.
    """
    import difflib
    import inspect

    import lightgbm

    try:
        from lightgbm.basic import _ConfigAliases

        table = _ConfigAliases._get_all_param_aliases()
    except Exception:  # pragma: no cover - private LightGBM API changed: cannot judge the names
        return
    known = set(table) | {alias for aliases in table.values() for alias in aliases}
    known |= set(inspect.signature(lightgbm.LGBMModel.__init__).parameters) - {"self", "kwargs"}
    unknown = sorted(key for key in params if key not in known)
    if unknown:
        hints = []
        for key in unknown:
            close = difflib.get_close_matches(str(key), known, n=1)
            hints.append(f"{key!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        from sklearn_ltr.utils._sklearn_compat import InvalidParameterError

        raise InvalidParameterError(
            f"lgbm_params has parameter(s) LightGBM does not know: {', '.join(hints)}. LightGBM would ignore "
            f"them silently; see https://lightgbm.readthedocs.io/en/latest/Parameters.html."
        )


def eval_entries(eval_set):
    """``eval_set`` as a list of ``(X_val, y_val, groups_val)``; a single triple is accepted."""
    if isinstance(eval_set, tuple) and len(eval_set) in (2, 3) and not isinstance(eval_set[0], (tuple, list)):
        eval_set = [eval_set]  # a single (X_val, y_val, groups_val)
    if not isinstance(eval_set, (list, tuple)) or not eval_set:
        raise ValueError("eval_set must be a non-empty list of (X_val, y_val, groups_val) tuples.")
    for i, entry in enumerate(eval_set):
        if not isinstance(entry, (tuple, list)) or len(entry) != 3:
            length = len(entry) if isinstance(entry, (tuple, list)) else type(entry).__name__
            raise ValueError(
                f"eval_set[{i}] must be a (X_val, y_val, groups_val) tuple, got {length} items: "
                f"validation rows need their own query ids, e.g. eval_set=[(X_val, y_val, qid_val)]."
            )
    return eval_set


def lgbm_eval_kwargs(valid_sets, valid_groups, eval_names):
    """Evaluation data for ``LGBMRanker.fit``: ``eval_X``/``eval_y`` since LightGBM 4.7, else ``eval_set``."""
    import inspect

    import lightgbm

    kwargs = {"eval_group": valid_groups, "eval_names": eval_names}
    if "eval_X" in inspect.signature(lightgbm.LGBMRanker.fit).parameters:
        kwargs["eval_X"] = tuple(X_val for X_val, _ in valid_sets)
        kwargs["eval_y"] = tuple(y_val for _, y_val in valid_sets)
    else:  # pragma: no cover - LightGBM < 4.7
        kwargs["eval_set"] = valid_sets
    return kwargs


def as_spmatrix(X):
    """LightGBM takes scipy's sparse *matrices*; a sparse *array* would be converted with a warning."""
    if sp.issparse(X) and not isinstance(X, sp.spmatrix):
        return sp.csr_matrix(X) if X.format == "csr" else sp.csc_matrix(X)
    return X


def sort_rows(query_groups, X, y, *per_row):
    """Rows in the order LightGBM trains on; no copy when they already are.

    By query (queries in the order of their sorted ids), each query's rows in their canonical
    order (:func:`~sklearn_ltr._blocks.canonical_query_order`: by the features as numbers, then the
    label, then each of ``per_row``). LightGBM's lambdarank depends on the order of the rows
    within a query (it stable-sorts each query's documents by score, and sums gradients in row
    order), so this order makes the model the same, bit for bit, whatever the order of the rows
    given to ``fit``.

    Returns
    -------
    X_sorted, y_sorted, *per_row_sorted
        The rows of ``X``, ``y`` and each of ``per_row`` (e.g. display positions) in that order.
    """
    X = as_spmatrix(X)
    order = canonical_query_order(query_groups, X, y, *per_row)
    if order.shape[0] < 2 or not (order[1:] != order[:-1] + 1).any():
        return (X, y, *per_row)
    # np.take copies rows about 25% faster than fancy indexing (1M x 136 float32: 0.28 s vs 0.37 s).
    X_sorted = X[order] if sp.issparse(X) else np.take(X, order, axis=0)
    return (X_sorted, *(np.take(values, order, axis=0) for values in (y, *per_row)))


def sort_like(query_groups, values):
    """Per-row ``values`` in the order of :func:`sort_rows` (no copy when the rows already are)."""
    codes = query_groups.codes
    if codes.shape[0] < 2 or not (codes[1:] < codes[:-1]).any():
        return values
    return np.take(values, query_groups.order)


def check_positions(positions, n_samples):
    """Display positions as LightGBM's int32 position ids: whole numbers >= 1, one per row, as given.

    LightGBM treats positions as categories: it numbers the distinct values in order of first
    appearance (``Metadata::SetPosition``) and learns one bias per value, so any whole numbers
    work; 1-based display ranks are the convention of this library (``simulate_clicks``,
    ``TwoTowerDebiasedRanker``) and are passed unchanged. The checks are those of
    :func:`sklearn_ltr.clicks.check_positions`, plus LightGBM's two limits.
    """
    if np.ndim(positions) == 2:
        raise ValueError("positions must be 1-D, the 1-based display rank of each row (1 = top): LightGBM learns "
                         "one bias per distinct position, so bias features (2-D) need TwoTowerDebiasedRanker.")
    positions = check_display_positions(positions, n_samples)
    if positions.shape[0] and positions.max() > np.iinfo(np.int32).max:
        raise ValueError(f"positions must be below 2**31 (LightGBM stores int32); got {positions.max():g}.")
    return positions.astype(np.int32)


def check_init_score(init_score, n_samples, *, name="init_score", against="X"):
    """Per-row first-stage scores as float64: a 1-D array of finite numbers, one per row of ``against``."""
    if hasattr(init_score, "to_numpy"):
        init_score = init_score.to_numpy()
    try:
        values = np.asarray(init_score, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(
            f"{name} must be a 1-D array of numbers, the first-stage score of each row (e.g. BM25); got "
            f"{type(init_score).__name__} with values that are not numbers."
        ) from None
    if values.ndim != 1:
        raise ValueError(f"{name} must be 1-D, one first-stage score per row of {against}; got shape {values.shape}.")
    if values.shape[0] != n_samples:
        raise ValueError(
            f"{name} has {values.shape[0]} entries but {against} has {n_samples} rows; pass the first-stage score "
            f"of every row of {against} (in the same order)."
        )
    if not np.isfinite(values).all():
        raise ValueError(
            f"{name} contains NaN or infinite values; every row needs a finite first-stage score (fill the "
            f"missing ones, e.g. with the lowest score of their query)."
        )
    return values


def position_callback(positions):
    """A LightGBM callback that gives the training data its positions before the first round.

    ``LGBMRanker.fit`` has no ``position`` argument (LightGBM 4.7), and LightGBM reads the
    positions when its objective is initialised. Before the first boosting round this
    callback sets them on the booster's training ``Dataset`` (``Dataset.set_position``) and
    re-creates the objective (``Booster.reset_parameter`` with the objective re-initialises
    it from the dataset), so that training is exactly that of ``lightgbm.train`` on a
    ``Dataset(..., position=positions)``.
    """

    def _set_positions(env):
        if env.iteration == env.begin_iteration:
            env.model.train_set.set_position(positions)
            env.model.reset_parameter({"objective": "lambdarank"})

    _set_positions.before_iteration = True
    _set_positions.order = 0
    return _set_positions


def checked_position_callback(positions):
    """:func:`position_callback` of checked ``positions`` (sorted like the rows), once LightGBM can take them.

    Raises ``ImportError`` when the installed LightGBM predates ``Dataset.set_position`` (4.1).
    """
    import lightgbm

    if not hasattr(lightgbm.Dataset, "set_position"):
        raise ImportError(f"positions need LightGBM 4.1 or later (installed: {lightgbm.__version__}); "
                          f"upgrade with `pip install -U 'lightgbm>=4.1'`.")
    return position_callback(positions)


def row_weights(sample_weight, query_groups, *, to_mean_one=False):
    """Per-query ``sample_weight`` checked and repeated over the sorted rows of each query.

    ``to_mean_one`` rescales them to mean 1, as training with positions needs: LightGBM's
    Newton step on the position biases (first / (|second| + 0.001)) is not invariant to the
    scale of the weights, while relative weights are.
    """
    weights = np.repeat(check_query_weights(sample_weight, query_groups), query_groups.sizes)
    if to_mean_one and weights.mean() > 0:
        weights = weights / weights.mean()
    return weights

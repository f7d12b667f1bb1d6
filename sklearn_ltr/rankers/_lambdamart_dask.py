"""Dask support of :class:`~sklearn_ltr.rankers.LambdaMARTRanker`: training on a ``distributed`` cluster.

Imported lazily by ``LambdaMARTRanker`` only when ``fit`` or ``predict`` sees a Dask collection, so
the library works without the ``dask`` extra. Training uses LightGBM's own distributed engine,
``lightgbm.dask.DaskLGBMRanker`` (data-parallel tree learning over sockets between the workers).

How the rows are arranged
-------------------------
LightGBM needs every query whole on one worker, its rows contiguous, and the size of each query
(``group``) for every partition. Rows of a query may come in any order and in any partitions, so
``fit``:

1. zips ``X``, ``y`` and ``groups`` partition by partition into one Dask DataFrame (no data moves;
   lengths and query ids are checked inside each task, with :func:`~sklearn_ltr._groups.check_groups`);
2. looks at each partition's *query ids only* (one pass; the rows are not kept): when every partition
   already holds whole queries, each contiguous, and no query id occurs in two partitions (data read by
   :func:`~sklearn_ltr.datasets.read_svmlight_ranking_dask`, or written out sorted), nothing moves;
3. otherwise hash-partitions the rows by query id with Dask's distributed shuffle
   (``DataFrame.shuffle(on=qid)``, all-to-all: each row crosses the network at most once, and the
   workers hold the input and the shuffled copy at the same time until the input is released);
4. stable-sorts each partition by query id with :class:`~sklearn_ltr._groups.QueryGroups` (local
   ``O(n log n)``, no communication; the same order ``LambdaMARTRanker`` uses on one machine) and
   computes the partition's query sizes;
5. drops empty partitions and checks labels and query sizes from a small per-partition summary.

Only per-query ids (step 2) and per-partition summaries (step 5) ever reach the client; the rows
stay on the workers. Prediction is row-wise, so it maps over the input blocks and keeps the input
row order without any arrangement.
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from sklearn_ltr._blocks import canonical_query_order
from sklearn_ltr._feature_profile import (
    MIN_QUERIES_RELABELLED,
    FeatureProfile,
    column_stats,
    query_id_candidates,
    warn_query_id_columns,
)
from sklearn_ltr._groups import QueryGroups, check_groups
from sklearn_ltr.rankers._lambdamart_params import lgbm_eval_at, lgbm_kwargs
from sklearn_ltr.utils._optional import require_dask

__all__ = ["fit_dask", "is_dask_collection", "predict_dask", "to_local"]

_Y = "__sklearn_ltr_y__"
_QID = "__sklearn_ltr_qid__"


def is_dask_collection(obj):
    """Whether ``obj`` is a Dask array, DataFrame or Series (without importing dask)."""
    return hasattr(obj, "__dask_graph__") and hasattr(obj, "__dask_keys__")


def _is_dask_frame(obj):
    return is_dask_collection(obj) and hasattr(obj, "columns")


def _blocks(obj, name):
    """Row blocks of a Dask array / DataFrame / Series as a flat list of delayed objects."""
    if hasattr(obj, "ndim") and not hasattr(obj, "columns") and not hasattr(obj, "name") and obj.ndim == 2:
        if obj.numblocks[1] != 1:
            obj = obj.rechunk({1: -1})
    parts = obj.to_delayed()
    if isinstance(parts, np.ndarray):
        parts = parts.ravel().tolist()
    return list(parts)


def _as_dask_array_rows(obj):
    """Row chunk sizes of a Dask array, or None (DataFrame / unknown sizes)."""
    if _is_dask_frame(obj) or hasattr(obj, "to_frame"):
        return None
    chunks = obj.chunks[0]
    return None if any(np.isnan(c) for c in chunks) else tuple(int(c) for c in chunks)


def _align(obj, rows, name):
    """Rechunk a Dask array's rows like X's, after checking the total length."""
    own = _as_dask_array_rows(obj)
    if rows is None or own is None:
        return obj
    if sum(own) != sum(rows):
        raise ValueError(f"{name} has {sum(own)} entries but X has {sum(rows)} rows; pass exactly one per row of X.")
    if own != rows:
        obj = obj.rechunk({0: rows} if obj.ndim == 1 else {0: rows, 1: -1})
    return obj


def _frame_part(X, y, groups, *, columns, index):
    """One partition of the zipped frame: features, label, query id (checked here, on the worker)."""
    import pandas as pd

    if hasattr(X, "columns"):
        frame = X.reset_index(drop=True)
    else:
        frame = pd.DataFrame(np.asarray(X), columns=columns)
    n = len(frame)
    for name, values in (("y", y), ("groups", groups)):
        if len(values) != n:
            raise ValueError(
                f"partition {index}: {name} has {len(values)} entries but X has {n} rows; give X, y and groups "
                f"the same partitioning (e.g. take them as columns of one Dask DataFrame)."
            )
    y = y.to_numpy() if hasattr(y, "to_numpy") else np.asarray(y)
    frame[_Y] = y.astype(np.float64, copy=False)
    frame[_QID] = check_groups(groups, n, name="groups") if n else np.asarray(groups)
    return frame


def _zip(X, y, groups):
    """X, y and groups as one Dask DataFrame, partition by partition; also the feature names."""
    import dask
    import dask.dataframe as dd
    import pandas as pd

    if _is_dask_frame(X):
        if isinstance(groups, str):
            if groups not in X.columns:
                raise ValueError(f"groups={groups!r} names no column of X; columns are {list(X.columns)}.")
            qid_col, X_feat = X[groups], X.drop(columns=[groups])
            groups = qid_col
        else:
            X_feat = X
        columns = list(X_feat.columns)
        feature_names = np.asarray(columns, dtype=object) if all(isinstance(c, str) for c in columns) else None
        bad = [c for c, t in X_feat.dtypes.items() if t.kind not in "biuf"]
        if bad:
            raise ValueError(f"X has non-numeric columns {bad}; LambdaMARTRanker needs numeric features.")
        meta_X = X_feat._meta
        X = X_feat
    else:
        if isinstance(groups, str):
            raise ValueError(f"groups={groups!r} is a column name, but X is a Dask array, not a Dask DataFrame.")
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D; got a Dask array of shape {X.shape}.")
        if X.dtype.kind not in "biuf":
            raise ValueError(f"X must be numeric; got dtype {X.dtype}.")
        columns = [f"f{j}" for j in range(X.shape[1])]
        feature_names = None
        meta_X = pd.DataFrame(np.empty((0, X.shape[1]), dtype=X.dtype), columns=columns)
    rows = None if _is_dask_frame(X) else _as_dask_array_rows(X)
    y = _align(y, rows, "y")
    groups = _align(groups, rows, "groups")
    x_parts, y_parts, g_parts = _blocks(X, "X"), _blocks(y, "y"), _blocks(groups, "groups")
    if not len(x_parts) == len(y_parts) == len(g_parts):
        raise ValueError(
            f"X, y and groups have {len(x_parts)}, {len(y_parts)} and {len(g_parts)} partitions; give them the "
            f"same partitioning (e.g. take them as columns of one Dask DataFrame)."
        )
    meta = meta_X.copy()
    meta[_Y] = np.empty(0, dtype=np.float64)
    gmeta = getattr(groups, "_meta", None)
    meta[_QID] = pd.Series([], dtype=gmeta.dtype) if gmeta is not None else np.empty(0, dtype=groups.dtype)
    part = dask.delayed(_frame_part, pure=True)
    parts = [
        part(xp, yp, gp, columns=columns, index=i)
        for i, (xp, yp, gp) in enumerate(zip(x_parts, y_parts, g_parts, strict=True))
    ]
    return dd.from_delayed(parts, meta=meta, verify_meta=False), columns, feature_names


def _query_index(frame):
    """Per partition: whether each query's rows are contiguous, and the partition's query ids."""
    qid = frame[_QID].to_numpy()
    if qid.shape[0] == 0:
        return True, qid
    change = np.flatnonzero(qid[1:] != qid[:-1]) + 1
    starts = qid[np.concatenate(([0], change))]
    unique = np.unique(starts)
    return unique.shape[0] == starts.shape[0], unique


def _features(frame):
    """A partition's features as ``fit`` validates them on one machine: float32 kept, anything else float64."""
    values = frame.drop(columns=[_Y, _QID]).to_numpy()
    return values if values.dtype in (np.float32, np.float64) else values.astype(np.float64)


def _sort_partition(frame):
    """One partition by query id, each query's rows in canonical order: the order LambdaMARTRanker uses on one machine.

    So the rows of a query may come in any order, and one partition trains the single machine's model.
    """
    if len(frame) < 2:
        return frame
    query_groups = QueryGroups(frame[_QID].to_numpy())
    return frame.take(canonical_query_order(query_groups, _features(frame), frame[_Y].to_numpy()))


def _summary(frame):
    """Small per-partition facts checked on the client before training."""
    y = frame[_Y].to_numpy()
    n = y.shape[0]
    if n == 0:
        return {"n": 0}
    query_groups = QueryGroups(frame[_QID].to_numpy())
    sizes = query_groups.sizes
    largest = int(np.argmax(sizes))
    features = _features(frame)
    missing, minimum, maximum = column_stats(features)
    columns, heads, equals = query_id_candidates(features, query_groups)
    return {
        "features": (missing, minimum, maximum),
        "query_ids": (columns, heads, equals),
        "n": n,
        "n_queries": int(sizes.shape[0]),
        "max_size": int(sizes[largest]),
        "max_size_query": query_groups.ids[largest].item(),
        "finite": bool(np.isfinite(y).all()),
        "min_y": float(np.nanmin(y)) if np.isfinite(y).any() else 0.0,
        "max_y": float(np.nanmax(y)) if np.isfinite(y).any() else 0.0,
        "integer": bool(np.array_equal(y[np.isfinite(y)], np.round(y[np.isfinite(y)]))),
    }


def _sizes(frame):
    return QueryGroups(frame[_QID].to_numpy()).sizes.astype(np.int64) if len(frame) else np.zeros(0, np.int64)


def arrange(frame, client, *, npartitions=None):
    """Persisted frame with whole queries per partition, sorted by query inside; also whether it shuffled."""
    import dask

    # Not persisted first: computing the zipped rows twice (cheap for persisted input, a second parse for
    # read_svmlight_ranking_dask) keeps one copy fewer in worker memory, which is the scarce resource here.
    index = client.compute([dask.delayed(_query_index)(p) for p in frame.to_delayed()], sync=True)
    ids = [u for _, u in index]
    contiguous = all(c for c, _ in index)
    all_ids = np.concatenate(ids) if ids else np.zeros(0)
    disjoint = all_ids.shape[0] == np.unique(all_ids).shape[0]
    shuffled = not (contiguous and disjoint)
    if shuffled:
        n_out = npartitions or max(frame.npartitions, len(client.scheduler_info(n_workers=-1)["workers"]))
        frame = frame.shuffle(on=_QID, npartitions=n_out)
    arranged = client.persist(frame.map_partitions(_sort_partition, meta=frame._meta))
    return arranged, shuffled


def fit_dask(ranker, X, y, groups, *, eval_set=None, callbacks=None):
    """Train ``ranker`` (a LambdaMARTRanker) on Dask collections with ``lightgbm.dask.DaskLGBMRanker``."""
    require_dask()
    import dask
    import lightgbm.dask

    if groups is None:
        raise ValueError(
            "groups is required with Dask input: pass one query id per row (a Dask array or Series "
            "partitioned like X) or the name of X's query-id column, e.g. fit(X, y, groups='qid')."
        )
    if eval_set is not None or ranker.early_stopping_rounds is not None:
        raise ValueError(
            "eval_set and early_stopping_rounds are not supported with Dask input yet; train with a fixed "
            "n_estimators, or call to_local() and evaluate on a sample."
        )
    if not is_dask_collection(y) or not (isinstance(groups, str) or is_dask_collection(groups)):
        raise ValueError(
            "with a Dask X, y and groups must be Dask collections partitioned like X (groups may also name a "
            f"column of a Dask DataFrame X); got y: {type(y).__name__}, groups: {type(groups).__name__}."
        )
    kwargs = lgbm_kwargs(ranker)
    kwargs.pop("n_jobs", None)  # lightgbm.dask runs as many threads as each Dask worker has
    eval_at = lgbm_eval_at(ranker)
    client = _client(ranker.client)
    start = time.perf_counter()
    frame, columns, feature_names = _zip(X, y, groups)
    arranged, shuffled = arrange(frame, client)
    summaries = client.compute([dask.delayed(_summary)(p) for p in arranged.to_delayed()], sync=True)
    keep = [i for i, s in enumerate(summaries) if s["n"]]
    if not keep:
        raise ValueError("X has no rows: there is nothing to train on.")
    arranged = arranged.partitions[keep]
    _check_summaries(ranker, [summaries[i] for i in keep])
    _check_features(ranker, [summaries[i] for i in keep], feature_names)
    X_train = arranged[columns].to_dask_array()  # arrays, as on one machine: model_ knows no column names
    y_train = arranged[_Y].to_dask_array()
    sizes = arranged.map_partitions(lambda f: _series(_sizes(f)), meta=(None, np.int64)).to_dask_array()
    arranged_at = time.perf_counter()
    model = lightgbm.dask.DaskLGBMRanker(client=client, **kwargs)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Parameter n_jobs will be ignored", category=UserWarning)
        model.fit(X_train, y_train, group=sizes, eval_at=eval_at, callbacks=callbacks)
    n_features = len(columns)
    for name in ("n_features_in_", "feature_names_in_", "feature_profile_"):
        if hasattr(ranker, name):
            delattr(ranker, name)
    ranker.n_features_in_ = n_features
    if feature_names is not None:
        ranker.feature_names_in_ = feature_names
    ranker.feature_profile_ = _profile([summaries[i] for i in keep])
    ranker.model_ = model.to_local()  # a plain LGBMRanker: NumPy predict and pickling work as usual
    ranker.booster_ = ranker.model_.booster_
    ranker.feature_importances_ = model.feature_importances_
    ranker.best_iteration_ = None
    ranker.n_estimators_ = int(model.booster_.current_iteration())
    ranker.evals_result_ = dict(getattr(model, "evals_result_", {}) or {})
    ranker.dask_info_ = {
        "shuffled": shuffled,
        "n_partitions": len(keep),
        "n_queries": sum(summaries[i]["n_queries"] for i in keep),
        "n_samples": sum(summaries[i]["n"] for i in keep),
        "arrange_seconds": arranged_at - start,
        "train_seconds": time.perf_counter() - arranged_at,
    }
    return ranker


def _series(values):
    import pandas as pd

    return pd.Series(values, dtype=np.int64)


def _client(client):
    if client is not None:
        return client
    from distributed import default_client

    try:
        return default_client()
    except ValueError as err:
        raise ValueError(
            "LambdaMARTRanker got Dask input but no distributed.Client is running: start one "
            "(`from distributed import Client; client = Client(...)`) or pass client=... to the ranker."
        ) from err


def _check_summaries(ranker, summaries):
    from sklearn_ltr.rankers._lambdarank_inputs import check_label_range, check_query_size

    if not all(s["finite"] for s in summaries):
        raise ValueError("y contains NaN or infinite labels; relevance labels must be finite.")
    if min(s["min_y"] for s in summaries) < 0:
        raise ValueError("y contains negative labels; relevance grades must be >= 0.")
    if not all(s["integer"] for s in summaries):
        raise ValueError("y contains non-integral labels; LambdaMART needs whole-number grades 0, 1, 2, ...")
    check_label_range(max(s["max_y"] for s in summaries), ranker.label_gain, "y")
    worst = max(summaries, key=lambda s: s["max_size"])
    check_query_size(worst["max_size"], worst["max_size_query"], "y")


def _profile(summaries):
    """The :class:`~sklearn_ltr._feature_profile.FeatureProfile` of all partitions, from their summaries."""
    n = sum(s["n"] for s in summaries)
    missing = sum(s["features"][0] for s in summaries)
    with np.errstate(invalid="ignore"):
        minimum = np.fmin.reduce([s["features"][1] for s in summaries])
        maximum = np.fmax.reduce([s["features"][2] for s in summaries])
    return FeatureProfile(n, missing / n, minimum, maximum)


def _check_features(ranker, summaries, feature_names):
    """Warn for a feature column holding the query ids, judged over all partitions (each holds whole queries)."""
    candidates = None
    for summary in summaries:
        columns = set(summary["query_ids"][0].tolist())
        candidates = columns if candidates is None else candidates & columns
    n_queries = sum(s["n_queries"] for s in summaries)
    found = []
    for column in sorted(candidates or ()):
        picks = [(s["query_ids"][1][:, s["query_ids"][0] == column].ravel(),
                  bool(s["query_ids"][2][s["query_ids"][0] == column][0])) for s in summaries]
        values = np.concatenate([heads for heads, _ in picks])
        if all(equal for _, equal in picks):
            found.append((column, "equals"))
        elif n_queries >= MIN_QUERIES_RELABELLED and np.unique(values).size == values.size:
            found.append((column, "relabels"))
    warn_query_id_columns(ranker, found, feature_names, dask=True)


def _predict_block(block, *, model, columns):
    values = block[columns].to_numpy() if hasattr(block, "columns") else block
    scores = np.zeros(0) if len(block) == 0 else np.asarray(model.predict(values), dtype=np.float64)
    if hasattr(block, "columns"):
        import pandas as pd

        return pd.Series(scores, index=block.index, dtype=np.float64)
    return scores


def predict_dask(ranker, X, groups=None):
    """Scores of a Dask array or DataFrame as a Dask array, in input row order (one task per block)."""
    require_dask()
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(ranker)
    local = ranker.model_
    n_features = ranker.n_features_in_
    if _is_dask_frame(X):
        names = getattr(ranker, "feature_names_in_", None)
        if names is not None:
            missing = [c for c in names if c not in X.columns]
            if missing:
                raise ValueError(f"X lacks the feature columns {missing[:5]} seen in fit.")
            columns = list(names)
        else:
            columns = [c for c in X.columns if not (isinstance(groups, str) and c == groups)]
        if len(columns) != n_features:
            raise ValueError(f"X has {len(columns)} features, but LambdaMARTRanker was fitted with {n_features}.")
        X = X[columns]
        return X.map_partitions(_predict_block, model=local, columns=columns, meta=(None, np.float64)).to_dask_array()
    if X.ndim != 2 or X.shape[1] != n_features:
        raise ValueError(f"X has shape {X.shape}, but LambdaMARTRanker was fitted with {n_features} features.")
    if X.numblocks[1] != 1:
        X = X.rechunk({1: -1})
    return X.map_blocks(_predict_block, model=local, columns=None, drop_axis=1, dtype=np.float64)


def to_local(ranker):
    """A copy of a fitted LambdaMARTRanker with ``client=None`` and the same booster (works without dask)."""
    import copy

    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(ranker)
    params = ranker.get_params(deep=False)
    params["client"] = None
    local = type(ranker)(**params)
    for name, value in vars(ranker).items():
        if name.endswith("_") and not name.startswith("_") and name not in ("model_", "booster_"):
            setattr(local, name, copy.deepcopy(value))
    local.model_ = copy.deepcopy(ranker.model_)
    local.booster_ = local.model_.booster_
    return local

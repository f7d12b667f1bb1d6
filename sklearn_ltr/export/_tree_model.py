"""A fitted LambdaMART ranker (or a Pipeline of it) as trees over the raw float32 features.

What the exporters to search engines share: the ranker's trees (:func:`~sklearn_ltr.export._trees.lightgbm_trees`),
the feature names, and each split's *boundary*: the largest float32 feature value ``c`` that goes
left. LightGBM sends ``x`` left when ``double(x) <= t`` (a float64 threshold), so for a float32
``x`` the test is ``x <= c`` with ``c`` the largest float32 not above ``t``; a format that compares
``x <= c`` in float32 (RankLib, Solr) writes ``c``, one that compares ``x < c'`` (XGBoost, the
plugins' XGBoost format) writes ``c' = nextafter(c, +inf)``. Both send every float32 value the way
LightGBM does, a value exactly on a threshold included.

A Pipeline's steps before the ranker may be ``StandardScaler``, ``MinMaxScaler`` and
``Log1pTransformer``: each maps every feature on its own and never decreases it, so the raw float32
values that reach a leaf are still ``x <= c`` for one ``c``, found by bisection over the float32
values with the steps' own ``transform`` (the float32 arithmetic of ``pipeline.predict`` on float32
features). The steps then vanish into the thresholds.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from sklearn.utils.validation import check_is_fitted

__all__ = ["TREE_STEPS", "TreeModel", "feature_names_of", "lambdamart_tree_model", "refuse_learned_nan_left",
           "strictly_below"]

#: Class names of the steps a Pipeline may have before its LambdaMART ranker (those classes exactly).
TREE_STEPS = ("Log1pTransformer", "MinMaxScaler", "StandardScaler")

_FLOAT32_MAX = np.finfo(np.float32).max


class TreeModel(NamedTuple):
    """The trees (``_trees.Split`` / ``_trees.Leaf`` lists) and what a writer needs beside them."""

    trees: list
    #: Per tree, per node id: the boundary ``c`` of a split (float32; -inf: nothing goes left).
    boundaries: list
    average_output: bool
    n_features: int
    feature_names: list
    steps: list
    #: Whether the names were given or fitted (``feature_names_in_``), not the default ``f0``, ``f1``, ...
    named: bool


def _split_pipeline(model, exporter):
    from sklearn.pipeline import Pipeline

    from sklearn_ltr.rankers import LambdaMARTRanker

    steps, ranker = [], model
    if isinstance(model, Pipeline):
        steps = [(name, step) for name, step in model.steps[:-1] if step is not None and step != "passthrough"]
        ranker = model.steps[-1][1]
        for name, step in steps:
            if type(step).__name__ not in TREE_STEPS:
                raise TypeError(
                    f"{exporter} cannot export the Pipeline step {name!r} ({type(step).__name__}): the steps before "
                    f"a LambdaMARTRanker may be {', '.join(TREE_STEPS)} (each folds into the split thresholds)."
                )
            check_is_fitted(step)
    if not isinstance(ranker, LambdaMARTRanker):
        raise TypeError(f"{exporter} exports a fitted LambdaMARTRanker (or a Pipeline ending in one); "
                        f"got {type(ranker).__name__}.")
    check_is_fitted(ranker)
    if getattr(ranker, "query_column", None) is not None:
        raise ValueError(f"{exporter} cannot export a ranker with a query_column: the model must take the "
                         "features only. Fit it with groups instead.")
    return steps, ranker


def feature_names_of(first, n_features, feature_names, exporter):
    """The given names (checked), else ``first.feature_names_in_``, else ``f0``, ``f1``, ..."""
    if feature_names is None:
        names = getattr(first, "feature_names_in_", None)
        return [f"f{i}" for i in range(n_features)] if names is None else [str(name) for name in names]
    names = [str(name) for name in feature_names]
    if len(names) != n_features:
        raise ValueError(f"{exporter}: feature_names has {len(names)} names; the model takes {n_features} features.")
    if len(set(names)) != len(names):
        raise ValueError(f"{exporter}: feature_names must be unique.")
    return names


def float32_at_most(thresholds):
    """The largest float32 not above each float64 threshold (``-inf`` below the float32 range)."""
    thresholds = np.asarray(thresholds, dtype=np.float64)
    with np.errstate(over="ignore"):
        nearest = thresholds.astype(np.float32)
    above = nearest.astype(np.float64) > thresholds
    nearest[above] = np.nextafter(nearest[above], np.float32(-np.inf))
    return nearest


def strictly_below(boundaries):
    """``c'`` with ``x < c'`` exactly when ``x <= c``, for float32 ``x``: the next float32 above each boundary."""
    return np.nextafter(np.asarray(boundaries, dtype=np.float32), np.float32(np.inf))


def _ordered(values):
    """float32 values as uint64 keys in the same order (-0.0 just below +0.0)."""
    bits = np.asarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return np.where(bits & 0x80000000, 0xFFFFFFFF - bits, bits | 0x80000000)


def _from_ordered(keys):
    keys = np.asarray(keys, dtype=np.uint64)
    bits = np.where(keys & 0x80000000, keys & 0x7FFFFFFF, 0xFFFFFFFF - keys)
    return bits.astype(np.uint32).view(np.float32)


def _bisect_boundaries(transform, n_features, features, thresholds):
    """Largest float32 ``x`` with ``transform(x)[feature] <= threshold``, for each split at once."""
    rows = np.arange(len(features))

    def goes_left(values):
        X = np.zeros((len(features), n_features), dtype=np.float32)
        X[rows, features] = values
        with np.errstate(over="ignore", invalid="ignore"):
            return np.asarray(transform(X), dtype=np.float64)[rows, features] <= thresholds

    low = np.full(len(features), _ordered(np.float32(-_FLOAT32_MAX)))
    high = np.full(len(features), _ordered(np.float32(_FLOAT32_MAX)))
    none_left, all_left = ~goes_left(_from_ordered(low)), goes_left(_from_ordered(high))
    while np.any(high - low > 1):  # goes_left(low) and not goes_left(high), where both are still open
        middle = low + (high - low) // 2
        left = goes_left(_from_ordered(middle))
        low, high = np.where(left, middle, low), np.where(left, high, middle)
    boundaries = _from_ordered(low)
    boundaries[none_left] = -np.inf
    boundaries[all_left] = _FLOAT32_MAX  # the steps refuse infinite features: the largest finite value
    return boundaries


def lambdamart_tree_model(model, *, exporter, feature_names=None):
    """The :class:`TreeModel` of a fitted ``LambdaMARTRanker`` or a Pipeline of :data:`TREE_STEPS` ending in one."""
    from sklearn_ltr.export._trees import Split, lightgbm_trees

    steps, ranker = _split_pipeline(model, exporter)
    booster = ranker.booster_
    trees, average_output = lightgbm_trees(booster, num_iteration=booster.best_iteration, exporter=exporter)
    n_features = int((steps[0][1] if steps else ranker).n_features_in_)
    names = feature_names_of(steps[0][1] if steps else ranker, n_features, feature_names, exporter)
    splits = [(i, node) for i, tree in enumerate(trees) for node in tree if isinstance(node, Split)]
    features = np.array([node.feature for _, node in splits], dtype=np.intp)
    thresholds = np.array([node.threshold for _, node in splits], dtype=np.float64)
    if not steps:
        found = float32_at_most(thresholds)
    else:
        def transform(X):
            for _, step in steps:
                X = step.transform(X)
            return X

        found = _bisect_boundaries(transform, n_features, features, thresholds) if len(splits) else thresholds
    boundaries = [{} for _ in trees]
    for (tree_id, node), boundary in zip(splits, found, strict=True):
        boundaries[tree_id][node.node_id] = np.float32(boundary)
    named = feature_names is not None or hasattr(steps[0][1] if steps else ranker, "feature_names_in_")
    return TreeModel(trees, boundaries, average_output, n_features, names, [type(s).__name__ for _, s in steps],
                     named)


def leaf_scale(tree_model):
    """Factor of every leaf value: ``1 / n_trees`` for an averaging (random forest) model, else 1."""
    return 1.0 / len(tree_model.trees) if tree_model.average_output and tree_model.trees else 1.0


def refuse_learned_nan_left(tree_model, exporter, reason):
    """Refuse a split that learned to send NaN left, for an engine that sends NaN right (``reason`` says why)."""
    from sklearn_ltr.export._trees import Leaf

    for tree in tree_model.trees:
        for node in tree:
            if not isinstance(node, Leaf) and node.nan_learned and node.nan_left:
                raise ValueError(
                    f"{exporter} cannot express this model's missing values: it learned to send a missing "
                    f"feature ({tree_model.feature_names[node.feature]!r}, NaN in training) left, and {reason}. "
                    "Fill missing values with a number before training, or export to_xgboost_json or "
                    "to_elasticsearch_ltr, which take the learned side."
                )

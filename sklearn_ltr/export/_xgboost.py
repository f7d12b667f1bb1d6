"""XGBoost's JSON model, and the LTR plugins' ``model/xgboost+json`` definition, from LambdaMART's trees.

XGBoost sends ``x`` left when ``x < split_condition`` (float32 features and conditions) and a
missing value (NaN) to the side ``default_left`` names; the Elasticsearch / OpenSearch LTR plugins
read XGBoost's *dump* format (``Booster.get_dump(dump_format="json")``: nested nodes with
``split``, ``split_condition``, ``yes``, ``no``, ``missing``, ``children``, ``leaf``) and send
``x`` to ``yes`` when ``split_condition > x``, in float32. Each condition is the next float32 above
the split's boundary (``_tree_model``), so every float32 value goes the way LightGBM sends it.
XGBoost sums the leaves in float32: the scores equal ``predict``'s to float32 rounding.

Missing values: XGBoost itself follows ``default_left``, set to the side LightGBM sends a NaN.
The plugins ignore ``missing`` (their feature vectors hold no NaN: a feature whose query does not
match a document scores 0) and a NaN goes to ``no``: the plugin definition refuses a model that
learned to send missing values (NaN in training) the other way, and writes a split that sends every
finite value one way (LightGBM's split of NaN from the rest) as that side's subtree.
"""

from __future__ import annotations

import json

import numpy as np

from sklearn_ltr.export._ltr_plugin import plugin_upload, write_json
from sklearn_ltr.export._tree_model import (
    lambdamart_tree_model,
    leaf_scale,
    refuse_learned_nan_left,
    strictly_below,
)
from sklearn_ltr.export._trees import Leaf

__all__ = ["to_ltr_plugin_xgboost", "to_xgboost_json"]

#: The XGBoost release whose JSON schema the model follows (``version`` in the file).
XGBOOST_SCHEMA_VERSION = [2, 1, 0]


def _conditions(tree_model):
    """Per tree, per split node id: the float32 ``c'`` with ``x < c'`` exactly when LightGBM sends x left.

    ``c'`` is ``+inf`` where every finite value goes left (LightGBM's split of NaN from all
    else, threshold 1e300): XGBoost reads it (``Infinity``) and sends only ``+inf`` right.
    """
    conditions = []
    for boundaries in tree_model.boundaries:
        ids = list(boundaries)
        with np.errstate(over="ignore"):
            values = strictly_below([boundaries[i] for i in ids])
        conditions.append(dict(zip(ids, values.tolist(), strict=True)))
    return conditions


def _tree_json(tree_id, tree, conditions, scale, n_features):
    n_nodes = len(tree)
    left, right, parents = [-1] * n_nodes, [-1] * n_nodes, [2147483647] * n_nodes
    split_conditions, split_indices, default_left = [0.0] * n_nodes, [0] * n_nodes, [0] * n_nodes
    base_weights = [0.0] * n_nodes
    for node in tree:
        i = node.node_id
        if isinstance(node, Leaf):
            split_conditions[i] = base_weights[i] = float(np.float32(node.value * scale))
            continue
        left[i], right[i] = node.left, node.right
        parents[node.left] = parents[node.right] = i
        split_conditions[i], split_indices[i], default_left[i] = conditions[i], node.feature, int(node.nan_left)
    return {
        "base_weights": base_weights, "categories": [], "categories_nodes": [], "categories_segments": [],
        "categories_sizes": [], "default_left": default_left, "id": tree_id, "left_children": left,
        "loss_changes": [0.0] * n_nodes, "parents": parents, "right_children": right,
        "split_conditions": split_conditions, "split_indices": split_indices, "split_type": [0] * n_nodes,
        "sum_hessian": [0.0] * n_nodes,
        "tree_param": {"num_deleted": "0", "num_feature": str(n_features), "num_nodes": str(n_nodes),
                       "size_leaf_vector": "1"},
    }


def to_xgboost_json(model, path=None, *, feature_names=None):
    """XGBoost's JSON model of a fitted ``LambdaMARTRanker`` (or a Pipeline of scalers ending in one).

    ``xgboost.Booster(model_file=path)`` loads it; its ``predict`` (``output_margin`` or not:
    the objective is ``rank:ndcg``, base score 0) equals ``ranker.predict`` on the same float32
    features to float32 rounding, NaN included, and every row takes LightGBM's branches, rows
    exactly on a threshold included. A Pipeline's ``StandardScaler``, ``MinMaxScaler`` and
    ``Log1pTransformer`` fold into the thresholds: the model takes the raw features.

    Parameters
    ----------
    model : LambdaMARTRanker or Pipeline
        Fitted; a Pipeline's steps before the ranker may be the three above (or ``"passthrough"``).
    path : str or path-like, default=None
        Where to write the model as well (``.json``).
    feature_names : sequence of str, default=None
        The features' names; default ``feature_names_in_`` when fitted on a DataFrame, else
        ``f0``, ``f1``, ...

    Returns
    -------
    model_json : dict
        The model, as ``json.dump`` writes it.

    Raises
    ------
    TypeError
        For another estimator or a Pipeline step that cannot fold into thresholds (named).
    ValueError
        For what XGBoost cannot express: categorical splits, zero-as-missing splits, linear trees.

    Examples
    --------
    ..
        >>> import pytest
        >>> _ = pytest.importorskip("xgboost")

    >>> import numpy as np
    >>> import xgboost
    >>> from sklearn_ltr import LambdaMARTRanker
    >>> from sklearn_ltr.datasets import make_ranking
    >>> from sklearn_ltr.export import to_xgboost_json
    >>> X, y, qid = make_ranking(n_queries=20, n_features=3, random_state=0)
    >>> X = X.astype(np.float32)
    >>> ranker = LambdaMARTRanker(n_estimators=10, random_state=0, n_jobs=1).fit(X, y, groups=qid)
    >>> booster = xgboost.Booster(model_file=bytearray(json.dumps(to_xgboost_json(ranker)), "utf-8"))
    >>> scores = booster.predict(xgboost.DMatrix(X))
    >>> bool(np.abs(scores - ranker.predict(X)).max() < 1e-5)
    True
    """
    exporter = "to_xgboost_json"
    tree_model = lambdamart_tree_model(model, exporter=exporter, feature_names=feature_names)
    conditions, scale = _conditions(tree_model), leaf_scale(tree_model)
    n_features, n_trees = tree_model.n_features, len(tree_model.trees)
    trees = [_tree_json(i, tree, conditions[i], scale, n_features) for i, tree in enumerate(tree_model.trees)]
    document = {
        "learner": {
            "attributes": {},
            "feature_names": list(tree_model.feature_names) if tree_model.named else [],
            "feature_types": ["float"] * n_features if tree_model.named else [],
            "gradient_booster": {
                "model": {
                    "gbtree_model_param": {"num_parallel_tree": "1", "num_trees": str(n_trees)},
                    "iteration_indptr": list(range(n_trees + 1)),
                    "tree_info": [0] * n_trees,
                    "trees": trees,
                },
                "name": "gbtree",
            },
            "learner_model_param": {"base_score": "0E0", "boost_from_average": "0", "num_class": "0",
                                    "num_feature": str(n_features), "num_target": "1"},
            "objective": {"name": "rank:ndcg", "lambdarank_param": {
                "lambdarank_num_pair_per_sample": "4294967295", "lambdarank_pair_method": "topk",
                "lambdarank_unbiased": "0", "lambdarank_bias_norm": "1", "ndcg_exp_gain": "1"}},
        },
        "version": XGBOOST_SCHEMA_VERSION,
    }
    return write_json(document, path)


def _dump_tree(tree, conditions, scale, names):
    """One tree in XGBoost's dump format (nested nodes), as the plugins parse it."""
    nodes = {node.node_id: node for node in tree}

    def build(node_id, depth):
        node = nodes[node_id]
        if isinstance(node, Leaf):
            return {"nodeid": node_id, "leaf": float(np.float32(node.value * scale))}
        if conditions[node_id] == np.inf:  # every finite value goes yes: the plugin's values are finite
            return build(node.left, depth)
        return {"nodeid": node_id, "depth": depth, "split": names[node.feature], "split_condition": conditions[node_id],
                "yes": node.left, "no": node.right, "missing": node.left if node.nan_left else node.right,
                "children": [build(node.left, depth + 1), build(node.right, depth + 1)]}

    return build(0, 0)


def to_ltr_plugin_xgboost(model, path=None, *, feature_names=None, model_name="sklearn_ltr_lambdamart",
                          featureset="sklearn_ltr_features", feature_templates=None):
    """The Elasticsearch / OpenSearch LTR plugins' ``model/xgboost+json`` upload of a LambdaMART model.

    The definition is XGBoost's dump format (``split`` names the feature in the feature set,
    ``split_condition`` the float32 bound of ``x < split_condition``), so the plugin scores every
    NaN-free float32 feature vector as ``predict`` does, to float32 rounding.

    Parameters
    ----------
    model : LambdaMARTRanker or Pipeline
        As for :func:`to_xgboost_json`.
    path : str or path-like, default=None
        Where to write the returned document as well (JSON).
    feature_names : sequence of str, default=None
        The feature set's feature names, in the model's feature order.
    model_name, featureset : str
        The model's and the feature set's names in the plugin's store.
    feature_templates : dict, default=None
        Query template of each feature for the feature set body (placeholders otherwise).

    Returns
    -------
    upload : dict
        ``{"featureset": {...}, "model": {...}}``, each with the request's ``method``, ``path``
        and ``body`` (the model's ``definition`` is the JSON text of the trees).

    Raises
    ------
    ValueError
        As :func:`to_xgboost_json`, and for a model that learned to send missing values left.

    Examples
    --------
    >>> from sklearn_ltr import LambdaMARTRanker
    >>> from sklearn_ltr.datasets import make_ranking
    >>> from sklearn_ltr.export import to_ltr_plugin_xgboost
    >>> X, y, qid = make_ranking(n_queries=20, n_features=2, random_state=0)
    >>> ranker = LambdaMARTRanker(n_estimators=5, random_state=0, n_jobs=1).fit(X, y, groups=qid)
    >>> upload = to_ltr_plugin_xgboost(ranker, feature_names=["title_bm25", "body_bm25"], featureset="movies")
    >>> upload["model"]["method"], upload["model"]["path"]
    ('POST', '_ltr/_featureset/movies/_createmodel')
    >>> upload["model"]["body"]["model"]["model"]["type"]
    'model/xgboost+json'
    """
    exporter = "to_ltr_plugin_xgboost"
    tree_model = lambdamart_tree_model(model, exporter=exporter, feature_names=feature_names)
    refuse_learned_nan_left(tree_model, exporter, "the LTR plugins send NaN to the 'no' branch (they ignore "
                                                  "'missing'; an unmatched feature scores 0)")
    conditions, scale = _conditions(tree_model), leaf_scale(tree_model)
    trees = [_dump_tree(tree, conditions[i], scale, tree_model.feature_names)
             for i, tree in enumerate(tree_model.trees)]
    upload = plugin_upload("model/xgboost+json", json.dumps(trees), model_name=model_name, featureset=featureset,
                           feature_names=tree_model.feature_names, feature_templates=feature_templates)
    return write_json(upload, path)

"""Elasticsearch's native learning to rank: the trained model that ``PUT _ml/trained_models`` takes, from LambdaMART.

Elasticsearch (8.12 and later) reranks with a trained model whose ``inference_config`` is
``learning_to_rank`` (the feature extractors: one query per feature) and whose definition is a
tree ``ensemble``: each ``tree`` a list of nodes (``node_index``, ``split_feature`` an index into
``feature_names``, ``threshold``, ``decision_type``, ``default_left``, ``left_child``,
``right_child``; a leaf's ``leaf_value``), the trees' outputs combined by ``aggregate_output``
``weighted_sum``. Elasticsearch compares in float64 (``lte``: ``x <= threshold`` goes left) and
sends a missing feature (NaN) to the ``default_left`` side, as LightGBM does: the thresholds and
leaves are LightGBM's own float64 values and the scores equal ``predict``'s to float64 rounding.
Through a Pipeline of scalers the thresholds are the float32 boundaries in the raw features
(exact for float32 feature values, as query scores are). Elasticsearch also reads an infinite
feature as missing; LightGBM compares it: a model fed infinite features is not this one.
"""

from __future__ import annotations

from sklearn_ltr.export._ltr_plugin import write_json
from sklearn_ltr.export._tree_model import lambdamart_tree_model, leaf_scale
from sklearn_ltr.export._trees import Leaf

__all__ = ["to_elasticsearch_ltr"]


def _tree_structure(tree, boundaries, scale, exact_thresholds):
    nodes = []
    for node in sorted(tree, key=lambda node: node.node_id):
        if isinstance(node, Leaf):
            nodes.append({"node_index": node.node_id, "leaf_value": [node.value * scale]})
            continue
        threshold = node.threshold if exact_thresholds else float(boundaries[node.node_id])
        nodes.append({"node_index": node.node_id, "split_feature": node.feature, "threshold": threshold,
                      "decision_type": "lte", "default_left": bool(node.nan_left), "left_child": node.left,
                      "right_child": node.right})
    return nodes


def to_elasticsearch_ltr(model, path=None, *, feature_names=None, model_id="sklearn-ltr-lambdamart",
                         feature_queries=None, with_input=False):
    """Elasticsearch's ``PUT _ml/trained_models/<model_id>`` request for a LambdaMART model (learning to rank).

    Parameters
    ----------
    model : LambdaMARTRanker or Pipeline
        Fitted; a Pipeline's steps before the ranker may be ``StandardScaler``, ``MinMaxScaler``
        and ``Log1pTransformer`` (folded into the thresholds).
    path : str or path-like, default=None
        Where to write the returned document as well (JSON).
    feature_names : sequence of str, default=None
        The features' names (the feature extractors' ``feature_name``), in the model's order;
        default ``feature_names_in_`` or ``f0``, ``f1``, ...
    model_id : str, default="sklearn-ltr-lambdamart"
        The trained model's id.
    feature_queries : dict, default=None
        Each feature's query (a mustache template: ``{{query}}`` and the other ``params`` of the
        rescorer); a feature without one gets a placeholder ``match`` on a field of its name.
    with_input : bool, default=False
        Add ``"input": {"field_names": [...]}`` to the body, which Elasticsearch 8.12 to 8.14 want.

    Returns
    -------
    request : dict
        ``{"method": "PUT", "path": "_ml/trained_models/<model_id>", "body": {...}}``.

    Raises
    ------
    TypeError
        For another estimator or a Pipeline step that cannot fold into thresholds (named).
    ValueError
        For categorical splits, zero-as-missing splits and linear trees.

    Examples
    --------
    >>> from sklearn_ltr import LambdaMARTRanker
    >>> from sklearn_ltr.datasets import make_ranking
    >>> from sklearn_ltr.export import to_elasticsearch_ltr
    >>> X, y, qid = make_ranking(n_queries=20, n_features=2, random_state=0)
    >>> ranker = LambdaMARTRanker(n_estimators=5, random_state=0, n_jobs=1).fit(X, y, groups=qid)
    >>> request = to_elasticsearch_ltr(ranker, feature_names=["title_bm25", "body_bm25"], model_id="movies")
    >>> request["method"], request["path"]
    ('PUT', '_ml/trained_models/movies')
    >>> ensemble = request["body"]["definition"]["trained_model"]["ensemble"]
    >>> len(ensemble["trained_models"]), ensemble["aggregate_output"]["weighted_sum"]["weights"][:2]
    (5, [1.0, 1.0])
    """
    exporter = "to_elasticsearch_ltr"
    tree_model = lambdamart_tree_model(model, exporter=exporter, feature_names=feature_names)
    names, scale = list(tree_model.feature_names), leaf_scale(tree_model)
    queries = dict(feature_queries or {})
    unknown = sorted(set(queries) - set(names))
    if unknown:
        raise ValueError(f"feature_queries names features the model does not take: {unknown}.")
    exact = not tree_model.steps  # LightGBM's float64 thresholds, compared in float64 as LightGBM does
    trees = [{"tree": {"feature_names": names, "target_type": "regression",
                       "tree_structure": _tree_structure(tree, boundaries, scale, exact)}}
             for tree, boundaries in zip(tree_model.trees, tree_model.boundaries, strict=True)]
    extractors = [{"query_extractor": {"feature_name": name,
                                       "query": queries.get(name, {"match": {name: "{{query}}"}})}}
                  for name in names]
    body = {
        "description": f"LambdaMART exported by sklearn_ltr ({len(trees)} trees)",
        "inference_config": {"learning_to_rank": {"feature_extractors": extractors}},
        "definition": {"trained_model": {"ensemble": {
            "feature_names": names, "target_type": "regression", "trained_models": trees,
            "aggregate_output": {"weighted_sum": {"weights": [1.0] * len(trees)}},
        }}},
    }
    if with_input:
        body["input"] = {"field_names": names}
    return write_json({"method": "PUT", "path": f"_ml/trained_models/{model_id}", "body": body}, path)

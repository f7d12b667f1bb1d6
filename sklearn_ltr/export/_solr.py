"""Solr's learning-to-rank module: feature store and model store uploads of LambdaMART and RankNet.

- ``MultipleAdditiveTreesModel`` (a ``LambdaMARTRanker``): each tree a nest of
  ``{"feature", "threshold", "left", "right"}`` nodes and ``{"value"}`` leaves, weighted; Solr sends
  ``x`` left when ``x <= threshold`` in float32 and sums in float32, so each threshold is the split's
  boundary (the largest float32 LightGBM sends left). Solr's features hold no NaN (a feature that
  does not match takes its default value) and a NaN would go right: a model that learned to send
  missing values left is refused.
- ``LinearModel`` (a ``RankNetRanker(hidden_sizes=())``): the weights, and the bias as the weight of
  a ``ValueFeature`` of 1.
- ``NeuralNetworkModel`` (a ``RankNetRanker`` MLP): ``layers`` of ``matrix`` (one row per output),
  ``bias`` and ``activation``, batch norm folded in (``_dense``).

Each export returns the two PUT requests: ``schema/feature-store`` (the features, placeholders
``FieldValueFeature`` on a field of the feature's name unless given) and ``schema/model-store``.
"""

from __future__ import annotations

from sklearn_ltr.export._dense import BIAS_FEATURE, dense_model, linear_weights
from sklearn_ltr.export._ltr_plugin import write_json
from sklearn_ltr.export._ranklib import java_float
from sklearn_ltr.export._tree_model import lambdamart_tree_model, leaf_scale, refuse_learned_nan_left
from sklearn_ltr.export._trees import Leaf

__all__ = ["to_solr_linear", "to_solr_neural", "to_solr_trees"]

_PACKAGE = "org.apache.solr.ltr"


def _upload(model_class, params, names, *, model_name, store, feature_params, extra_features=()):
    given = dict(feature_params or {})
    unknown = sorted(set(given) - set(names))
    if unknown:
        raise ValueError(f"feature_params names features the model does not take: {unknown}.")
    features = [{"name": name, "store": store, **given.get(name, {
        "class": f"{_PACKAGE}.feature.FieldValueFeature", "params": {"field": name}})} for name in names]
    features += [{**feature, "store": store} for feature in extra_features]
    model = {"store": store, "class": f"{_PACKAGE}.model.{model_class}", "name": model_name,
             "features": [{"name": feature["name"]} for feature in features], "params": params}
    return {"features": {"method": "PUT", "path": "schema/feature-store", "body": features},
            "model": {"method": "PUT", "path": "schema/model-store", "body": model}}


def _solr_tree(tree, boundaries, scale, names):
    nodes = {node.node_id: node for node in tree}

    def build(node_id):
        node = nodes[node_id]
        if isinstance(node, Leaf):
            return {"value": java_float(node.value * scale)}
        return {"feature": names[node.feature], "threshold": java_float(boundaries[node_id]),
                "left": build(node.left), "right": build(node.right)}

    return build(0)


def to_solr_trees(model, path=None, *, feature_names=None, model_name="sklearn_ltr_lambdamart",
                  store="sklearn_ltr_features", feature_params=None):
    """Solr's ``MultipleAdditiveTreesModel`` of a fitted ``LambdaMARTRanker`` (or a Pipeline of scalers ending in one).

    Solr scores every float32 feature vector as ``predict`` does, to float32 rounding, rows exactly
    on a threshold included.

    Parameters
    ----------
    model : LambdaMARTRanker or Pipeline
        Fitted; a Pipeline's ``StandardScaler``, ``MinMaxScaler`` and ``Log1pTransformer`` fold into
        the thresholds.
    path : str or path-like, default=None
        Where to write the returned document as well (JSON).
    feature_names : sequence of str, default=None
        The feature store's feature names, in the model's feature order.
    model_name, store : str
        The model's and the feature store's names.
    feature_params : dict, default=None
        Each feature's ``class`` and ``params`` (e.g. a ``SolrFeature`` query); placeholders otherwise.

    Returns
    -------
    upload : dict
        ``{"features": {...}, "model": {...}}``, each with the request's ``method``, ``path``
        (under the collection) and ``body``.

    Raises
    ------
    TypeError
        For another estimator or a Pipeline step that cannot fold into thresholds (named).
    ValueError
        For categorical, zero-as-missing or linear-tree splits, and a model that learned to send
        missing values left.

    Examples
    --------
    >>> from sklearn_ltr import LambdaMARTRanker
    >>> from sklearn_ltr.datasets import make_ranking
    >>> from sklearn_ltr.export import to_solr_trees
    >>> X, y, qid = make_ranking(n_queries=20, n_features=2, random_state=0)
    >>> ranker = LambdaMARTRanker(n_estimators=5, random_state=0, n_jobs=1).fit(X, y, groups=qid)
    >>> upload = to_solr_trees(ranker, feature_names=["title", "body"])
    >>> upload["model"]["body"]["class"], len(upload["model"]["body"]["params"]["trees"])
    ('org.apache.solr.ltr.model.MultipleAdditiveTreesModel', 5)
    """
    exporter = "to_solr_trees"
    tree_model = lambdamart_tree_model(model, exporter=exporter, feature_names=feature_names)
    refuse_learned_nan_left(tree_model, exporter, "Solr sends a missing (NaN) feature right and its features "
                                                  "take a default value (0) when they do not match")
    scale, names = leaf_scale(tree_model), tree_model.feature_names
    trees = [{"weight": "1.0", "root": _solr_tree(tree, boundaries, scale, names)}
             for tree, boundaries in zip(tree_model.trees, tree_model.boundaries, strict=True)]
    upload = _upload("MultipleAdditiveTreesModel", {"trees": trees}, names, model_name=model_name, store=store,
                     feature_params=feature_params)
    return write_json(upload, path)


def to_solr_linear(model, path=None, *, feature_names=None, model_name="sklearn_ltr_linear",
                   store="sklearn_ltr_features", feature_params=None):
    """Solr's ``LinearModel`` of a linear ``RankNetRanker`` (``hidden_sizes=()``); the bias is a ``ValueFeature``.

    Parameters
    ----------
    model : RankNetRanker or Pipeline
        A fitted ``RankNetRanker(hidden_sizes=())``, alone or after one ``StandardScaler`` or
        ``MinMaxScaler`` (folded into the weights).
    path : str or path-like, default=None
        Where to write the returned document as well (JSON).
    feature_names : sequence of str, default=None
        The feature store's feature names, in the model's feature order.
    model_name, store : str
        The model's and the feature store's names.
    feature_params : dict, default=None
        Each feature's ``class`` and ``params``; placeholders otherwise.

    Returns
    -------
    upload : dict
        ``{"features": {...}, "model": {...}}`` as :func:`to_solr_trees` returns.

    Raises
    ------
    TypeError
        For another estimator or Pipeline step.
    ValueError
        For a RankNetRanker with hidden layers.

    Examples
    --------
    >>> from sklearn_ltr import RankNetRanker
    >>> from sklearn_ltr.datasets import make_ranking
    >>> from sklearn_ltr.export import to_solr_linear
    >>> X, y, qid = make_ranking(n_queries=20, n_features=2, random_state=0)
    >>> ranker = RankNetRanker(hidden_sizes=(), max_epochs=2, random_state=0).fit(X, y, groups=qid)
    >>> upload = to_solr_linear(ranker, feature_names=["title", "body"])
    >>> sorted(upload["model"]["body"]["params"]["weights"])
    ['body', 'sklearn_ltr_bias', 'title']
    """
    exporter = "to_solr_linear"
    names, weights, bias = linear_weights(model, exporter=exporter, feature_names=feature_names)
    bias_feature = {"name": BIAS_FEATURE, "class": f"{_PACKAGE}.feature.ValueFeature", "params": {"value": 1.0}}
    params = {"weights": {**dict(zip(names, weights, strict=True)), BIAS_FEATURE: bias}}
    upload = _upload("LinearModel", params, names, model_name=model_name, store=store, feature_params=feature_params,
                     extra_features=[bias_feature])
    return write_json(upload, path)


def to_solr_neural(model, path=None, *, feature_names=None, model_name="sklearn_ltr_ranknet",
                   store="sklearn_ltr_features", feature_params=None):
    """Solr's ``NeuralNetworkModel`` of a ``RankNetRanker`` MLP (relu, tanh, sigmoid or leaky_relu; batch norm folded).

    Parameters
    ----------
    model : RankNetRanker or Pipeline
        A fitted ``RankNetRanker``, alone or after one ``StandardScaler`` or ``MinMaxScaler``
        (folded into the first layer).
    path : str or path-like, default=None
        Where to write the returned document as well (JSON).
    feature_names : sequence of str, default=None
        The feature store's feature names, in the model's feature order.
    model_name, store : str
        The model's and the feature store's names.
    feature_params : dict, default=None
        Each feature's ``class`` and ``params``; placeholders otherwise.

    Returns
    -------
    upload : dict
        ``{"features": {...}, "model": {...}}`` as :func:`to_solr_trees` returns.

    Raises
    ------
    TypeError
        For another estimator or Pipeline step.
    ValueError
        For an activation Solr does not have (gelu, elu).

    Examples
    --------
    >>> from sklearn_ltr import RankNetRanker
    >>> from sklearn_ltr.datasets import make_ranking
    >>> from sklearn_ltr.export import to_solr_neural
    >>> X, y, qid = make_ranking(n_queries=20, n_features=2, random_state=0)
    >>> ranker = RankNetRanker(hidden_sizes=(4,), max_epochs=2, random_state=0).fit(X, y, groups=qid)
    >>> layers = to_solr_neural(ranker)["model"]["body"]["params"]["layers"]
    >>> [(len(layer["matrix"]), len(layer["matrix"][0]), layer["activation"]) for layer in layers]
    [(4, 2, 'relu'), (1, 4, 'identity')]
    """
    exporter = "to_solr_neural"
    dense = dense_model(model, exporter=exporter, feature_names=feature_names)
    layers = [{"matrix": weights.tolist(), "bias": bias.tolist(), "activation": activation}
              for weights, bias, activation in dense.layers]
    upload = _upload("NeuralNetworkModel", {"layers": layers}, dense.feature_names, model_name=model_name,
                     store=store, feature_params=feature_params)
    return write_json(upload, path)

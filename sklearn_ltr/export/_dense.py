"""A fitted ``RankNetRanker`` (or a Pipeline of scalers ending in one) as dense layers, and the plugins' linear model.

``RankNetRanker`` scores each document with an MLP: ``Linear`` -> [batch norm] -> activation ->
[dropout] per hidden layer, then a ``Linear`` to one score (``hidden_sizes=()``: a linear model).
In evaluation, as ``predict`` runs it, dropout is the identity and batch norm an affine map, folded
into the ``Linear`` before it; a ``StandardScaler`` or ``MinMaxScaler`` before the ranker folds into
the first ``Linear``. What remains is ``activation(W x + b)`` per layer, in float64, which Solr's
``NeuralNetworkModel`` and ``LinearModel`` and the LTR plugins' ``model/linear`` compute in float32:
the scores equal ``predict``'s to float32 rounding.

A linear model's bias is a constant feature: the LTR plugins' feature set gets a query that scores 1
on every document (``constant_score`` over ``match_all``), Solr's a ``ValueFeature`` of 1.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from sklearn.utils.validation import check_is_fitted

from sklearn_ltr.export._ltr_plugin import plugin_upload, write_json

__all__ = ["BIAS_FEATURE", "DenseModel", "dense_model", "to_ltr_plugin_linear"]

#: Name of the constant feature that carries a linear model's bias.
BIAS_FEATURE = "sklearn_ltr_bias"

#: RankNet's activations and Solr's names for them (torch's LeakyReLU slope 0.01 is Solr's).
ACTIVATION_NAMES = {"relu": "relu", "tanh": "tanh", "sigmoid": "sigmoid", "leaky_relu": "leakyrelu"}

_SCALERS = ("MinMaxScaler", "StandardScaler")


class DenseModel(NamedTuple):
    """``layers``: ``(W [out, in] float64, b [out] float64, activation)``, the last one's activation ``"identity"``."""

    layers: list
    feature_names: list


def _ranker_and_scaler(model, exporter):
    from sklearn.pipeline import Pipeline

    from sklearn_ltr import RankNetRanker

    scaler, ranker = None, model
    if isinstance(model, Pipeline):
        steps = [(name, step) for name, step in model.steps[:-1] if step is not None and step != "passthrough"]
        ranker = model.steps[-1][1]
        refused = [(name, step) for name, step in steps if type(step).__name__ not in _SCALERS] or steps[1:]
        if refused:
            name, step = refused[0]
            raise TypeError(f"{exporter} cannot export the Pipeline step {name!r} ({type(step).__name__}): "
                            "before a RankNetRanker it takes one StandardScaler or MinMaxScaler (folded into "
                            "the weights).")
        if steps:
            scaler = steps[0][1]
            check_is_fitted(scaler)
    if type(ranker) is not RankNetRanker:
        raise TypeError(f"{exporter} exports a fitted RankNetRanker (or a Pipeline ending in one); "
                        f"got {type(ranker).__name__}.")
    check_is_fitted(ranker)
    if getattr(ranker, "query_column", None) is not None:
        raise ValueError(f"{exporter} cannot export a ranker with a query_column: the model must take the "
                         "features only. Fit it with groups instead.")
    return scaler, ranker


def _scaler_affine(scaler, n_features):
    """``(a, c)`` with ``scaler.transform(x) == a * x + c`` (float64)."""
    if scaler is None:
        return np.ones(n_features), np.zeros(n_features)
    if type(scaler).__name__ == "MinMaxScaler":
        return np.asarray(scaler.scale_, dtype=np.float64), np.asarray(scaler.min_, dtype=np.float64)
    scale = np.ones(n_features) if scaler.scale_ is None else np.asarray(scaler.scale_, dtype=np.float64)
    mean = np.zeros(n_features) if scaler.mean_ is None else np.asarray(scaler.mean_, dtype=np.float64)
    return 1.0 / scale, -mean / scale


def dense_model(model, *, exporter, feature_names=None):
    """The :class:`DenseModel` of a fitted ``RankNetRanker`` or a Pipeline of one scaler ending in one."""
    from torch import nn

    from sklearn_ltr.export._tree_model import feature_names_of

    scaler, ranker = _ranker_and_scaler(model, exporter)
    if type(ranker.net_.module_).__name__ != "MLPScorer":
        raise TypeError(f"{exporter} exports RankNetRanker's MLP scorer; got {type(ranker.net_.module_).__name__}.")
    if getattr(scaler, "clip", False):
        raise ValueError(f"{exporter} cannot fold a MinMaxScaler with clip=True into the weights.")
    n_features = int((scaler if scaler is not None else ranker).n_features_in_)
    names = feature_names_of(scaler if scaler is not None else ranker, n_features, feature_names, exporter)
    layers, pending = [], None
    for module in ranker.net_.module_.network:
        if isinstance(module, nn.Linear):
            pending = [module.weight.detach().double().cpu().numpy(), module.bias.detach().double().cpu().numpy()]
            layers.append(pending)
        elif isinstance(module, nn.BatchNorm1d):
            factor = (module.weight.detach().double() / (module.running_var.detach().double() + module.eps).sqrt()
                      ).cpu().numpy()
            mean, shift = module.running_mean.detach().double().cpu().numpy(), module.bias.detach().double().cpu()
            pending[0] = pending[0] * factor[:, None]
            pending[1] = (pending[1] - mean) * factor + shift.numpy()
        elif isinstance(module, nn.Dropout):
            continue
        else:
            name = ranker.activation
            if name not in ACTIVATION_NAMES or (name == "leaky_relu" and module.negative_slope != 0.01):
                raise ValueError(f"{exporter} cannot export the activation {name!r}: Solr's neural network "
                                 f"takes {', '.join(sorted(ACTIVATION_NAMES))}.")
            pending.append(ACTIVATION_NAMES[name])
    layers[-1].append("identity")
    scale, shift = _scaler_affine(scaler, n_features)
    first = layers[0]
    first[1] = first[1] + first[0] @ shift
    first[0] = first[0] * scale[None, :]
    return DenseModel([tuple(layer) for layer in layers], names)


def linear_weights(model, *, exporter, feature_names=None):
    """``(names, weights, bias)`` of a RankNetRanker with no hidden layer."""
    dense = dense_model(model, exporter=exporter, feature_names=feature_names)
    if len(dense.layers) != 1:
        raise ValueError(f"{exporter} exports a linear RankNetRanker (hidden_sizes=()); this one has "
                         f"{len(dense.layers) - 1} hidden layers.")
    weights, bias, _ = dense.layers[0]
    if BIAS_FEATURE in dense.feature_names:
        raise ValueError(f"{exporter}: {BIAS_FEATURE!r} is the name of the bias feature; rename that feature.")
    return dense.feature_names, [float(w) for w in weights[0]], float(bias[0])


def to_ltr_plugin_linear(model, path=None, *, feature_names=None, model_name="sklearn_ltr_linear",
                         featureset="sklearn_ltr_features", feature_templates=None):
    """The Elasticsearch / OpenSearch LTR plugins' ``model/linear`` upload of a linear ``RankNetRanker``.

    The definition maps each feature to its weight; the bias is the weight of one more feature,
    ``sklearn_ltr_bias``, whose query scores 1 on every document (``constant_score`` over
    ``match_all``). The plugin's score (``sum(weight * value)`` in float32) equals ``predict``'s to
    float32 rounding.

    Parameters
    ----------
    model : RankNetRanker or Pipeline
        A fitted ``RankNetRanker(hidden_sizes=())``, alone or after one ``StandardScaler`` or
        ``MinMaxScaler`` (folded into the weights).
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
        and ``body``.

    Raises
    ------
    TypeError
        For another estimator or Pipeline step.
    ValueError
        For a RankNetRanker with hidden layers.

    Examples
    --------
    >>> import json
    >>> from sklearn_ltr import RankNetRanker
    >>> from sklearn_ltr.datasets import make_ranking
    >>> from sklearn_ltr.export import to_ltr_plugin_linear
    >>> X, y, qid = make_ranking(n_queries=20, n_features=2, random_state=0)
    >>> ranker = RankNetRanker(hidden_sizes=(), max_epochs=2, random_state=0).fit(X, y, groups=qid)
    >>> upload = to_ltr_plugin_linear(ranker, feature_names=["title_bm25", "body_bm25"])
    >>> sorted(json.loads(upload["model"]["body"]["model"]["model"]["definition"]))
    ['body_bm25', 'sklearn_ltr_bias', 'title_bm25']
    """
    exporter = "to_ltr_plugin_linear"
    names, weights, bias = linear_weights(model, exporter=exporter, feature_names=feature_names)
    import json

    definition = json.dumps({**dict(zip(names, weights, strict=True)), BIAS_FEATURE: bias})
    upload = plugin_upload("model/linear", definition, model_name=model_name, featureset=featureset,
                           feature_names=names, feature_templates=feature_templates)
    upload["featureset"]["body"]["featureset"]["features"].append(
        {"name": BIAS_FEATURE, "params": ["keywords"], "template_language": "mustache",
         "template": {"constant_score": {"filter": {"match_all": {}}, "boost": 1.0}}})
    return write_json(upload, path)

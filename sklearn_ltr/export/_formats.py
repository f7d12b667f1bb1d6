"""The registry of export formats: one entry per format, read by :func:`export`, the CLI and the docs."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from sklearn_ltr.export._dense import to_ltr_plugin_linear
from sklearn_ltr.export._elasticsearch import to_elasticsearch_ltr
from sklearn_ltr.export._onnx import to_onnx
from sklearn_ltr.export._ranklib import to_ltr_plugin_ranklib, to_ranklib
from sklearn_ltr.export._solr import to_solr_linear, to_solr_neural, to_solr_trees
from sklearn_ltr.export._xgboost import to_ltr_plugin_xgboost, to_xgboost_json

__all__ = ["EXPORT_FORMATS", "ExportFormat", "export"]


class ExportFormat(NamedTuple):
    """One export format.

    Attributes
    ----------
    name : str
        The format's name in :func:`export` and ``sklearn-ltr export --format``.
    models : str
        What it exports.
    write : callable
        ``write(model, path=None, **options) -> document``: the exported model (an ONNX
        ``ModelProto``, a dict written as JSON, or text), also written to ``path`` when given.
    suffix : str
        The usual file suffix.
    target : str
        Where the file goes.

    Examples
    --------
    >>> from sklearn_ltr.export import EXPORT_FORMATS
    >>> entry = EXPORT_FORMATS["xgboost-json"]
    >>> entry.name, entry.suffix
    ('xgboost-json', '.json')
    """

    name: str
    models: str
    write: Callable
    suffix: str
    target: str


_LAMBDAMART = "LambdaMARTRanker, or a Pipeline of StandardScaler / MinMaxScaler / Log1pTransformer ending in one"
_LINEAR = "RankNetRanker(hidden_sizes=()), alone or after one StandardScaler / MinMaxScaler"

#: Every export format, by name.
EXPORT_FORMATS = {
    entry.name: entry
    for entry in (
        ExportFormat("onnx", "every ranker, or a Pipeline ending in one (see to_onnx)", to_onnx, ".onnx",
                     "onnxruntime (OnnxScorer), or any ONNX runtime"),
        ExportFormat("xgboost-json", _LAMBDAMART, to_xgboost_json, ".json",
                     "XGBoost: xgboost.Booster(model_file=...)"),
        ExportFormat("ltr-plugin-xgboost", _LAMBDAMART, to_ltr_plugin_xgboost, ".json",
                     "Elasticsearch / OpenSearch LTR plugin: model/xgboost+json with its feature set"),
        ExportFormat("ranklib", _LAMBDAMART, to_ranklib, ".txt", "RankLib: java -jar RankLib.jar -load"),
        ExportFormat("ltr-plugin-ranklib", _LAMBDAMART, to_ltr_plugin_ranklib, ".json",
                     "Elasticsearch / OpenSearch LTR plugin: model/ranklib with its feature set"),
        ExportFormat("elasticsearch-ltr", _LAMBDAMART, to_elasticsearch_ltr, ".json",
                     "Elasticsearch 8.12+ native learning to rank: PUT _ml/trained_models"),
        ExportFormat("ltr-plugin-linear", _LINEAR, to_ltr_plugin_linear, ".json",
                     "Elasticsearch / OpenSearch LTR plugin: model/linear with its feature set"),
        ExportFormat("solr-trees", _LAMBDAMART, to_solr_trees, ".json",
                     "Solr LTR: MultipleAdditiveTreesModel and its feature store"),
        ExportFormat("solr-linear", _LINEAR, to_solr_linear, ".json", "Solr LTR: LinearModel and its feature store"),
        ExportFormat("solr-neural", "RankNetRanker (relu, tanh, sigmoid or leaky_relu), alone or after one "
                     "StandardScaler / MinMaxScaler", to_solr_neural, ".json",
                     "Solr LTR: NeuralNetworkModel and its feature store"),
    )
}


def export(model, format, path=None, **options):
    """Export a fitted model in one of :data:`EXPORT_FORMATS`.

    Parameters
    ----------
    model : estimator
        The fitted ranker or Pipeline the format takes.
    format : str
        One of the names in :data:`EXPORT_FORMATS`.
    path : str or path-like, default=None
        Where to write the exported model as well.
    **options
        The format's writer's keyword arguments (e.g. ``feature_names``).

    Returns
    -------
    document : object
        What the format's writer returns.

    Raises
    ------
    ValueError
        For an unknown format (the message lists the formats), or a model the format cannot express.

    Examples
    --------
    >>> from sklearn_ltr import LambdaMARTRanker
    >>> from sklearn_ltr.datasets import make_ranking
    >>> from sklearn_ltr.export import export
    >>> X, y, qid = make_ranking(n_queries=20, n_features=3, random_state=0)
    >>> ranker = LambdaMARTRanker(n_estimators=5, random_state=0, n_jobs=1).fit(X, y, groups=qid)
    >>> export(ranker, "xgboost-json")["learner"]["objective"]["name"]
    'rank:ndcg'
    """
    entry = EXPORT_FORMATS.get(format)
    if entry is None:
        raise ValueError(f"unknown export format {format!r}; the formats are: {', '.join(EXPORT_FORMATS)}.")
    return entry.write(model, path, **options)

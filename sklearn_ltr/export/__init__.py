"""Export fitted rankers to ONNX and to search engines' formats, and score with the exported ONNX model.

:data:`~sklearn_ltr.export.EXPORT_FORMATS` lists every format (name, what it exports, writer);
:func:`~sklearn_ltr.export.export` writes any of them.

:func:`~sklearn_ltr.export.to_onnx` writes a ranker's scorer as an ONNX model that takes padded lists of
documents, ``X`` ``[batch, list, n_features]`` (float32) and ``mask`` ``[batch, list]``
(bool, True on real documents), and returns ``scores`` ``[batch, list]``, with dynamic
batch and list sizes. :class:`~sklearn_ltr.export.OnnxScorer` runs such a model on rows with their query ids,
the way ``predict`` does. Both need the ``serving`` extra
(``pip install 'sklearn-ltr[serving]'``: onnx, onnxruntime).

Examples
--------
..
    >>> import pytest
    >>> _ = pytest.importorskip("onnxruntime")

>>> from sklearn_ltr import LambdaMARTRanker
>>> from sklearn_ltr.datasets import make_ranking
>>> from sklearn_ltr.export import OnnxScorer, to_onnx
>>> X, y, qid = make_ranking(n_queries=20, n_features=5, random_state=0)
>>> ranker = LambdaMARTRanker(n_estimators=10, random_state=0, n_jobs=1).fit(X, y, groups=qid)
>>> scorer = OnnxScorer(to_onnx(ranker))
>>> bool(abs(scorer.predict(X, groups=qid) - ranker.predict(X, groups=qid)).max() < 1e-5)
True

The formats, each a name for :func:`~sklearn_ltr.export.export`:

>>> from sklearn_ltr.export import EXPORT_FORMATS
>>> [name for name in EXPORT_FORMATS][:3]
['onnx', 'xgboost-json', 'ltr-plugin-xgboost']
"""

from sklearn_ltr.export._dense import to_ltr_plugin_linear
from sklearn_ltr.export._elasticsearch import to_elasticsearch_ltr
from sklearn_ltr.export._formats import EXPORT_FORMATS, ExportFormat, export
from sklearn_ltr.export._onnx import to_onnx
from sklearn_ltr.export._ranklib import to_ltr_plugin_ranklib, to_ranklib
from sklearn_ltr.export._scorer import OnnxScorer
from sklearn_ltr.export._solr import to_solr_linear, to_solr_neural, to_solr_trees
from sklearn_ltr.export._xgboost import to_ltr_plugin_xgboost, to_xgboost_json

__all__ = ["EXPORT_FORMATS", "ExportFormat", "OnnxScorer", "export", "to_elasticsearch_ltr", "to_ltr_plugin_linear",
           "to_ltr_plugin_ranklib", "to_ltr_plugin_xgboost", "to_onnx", "to_ranklib", "to_solr_linear",
           "to_solr_neural", "to_solr_trees", "to_xgboost_json"]

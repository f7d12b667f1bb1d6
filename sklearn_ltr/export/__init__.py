"""Export fitted rankers to ONNX, and score with the exported model in onnxruntime.

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
"""

from sklearn_ltr.export._onnx import to_onnx
from sklearn_ltr.export._scorer import OnnxScorer

__all__ = ["OnnxScorer", "to_onnx"]

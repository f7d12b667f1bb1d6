"""``to_onnx``: a fitted ranker's scorer as an ONNX model over padded lists of documents."""

from __future__ import annotations

import json
import os

from sklearn.utils.validation import check_is_fitted

from sklearn_ltr.utils._optional import import_optional

__all__ = ["to_onnx"]

#: Default opset of ONNX's default domain (onnxruntime 1.14 and later run it).
DEFAULT_OPSET = 17
#: Lowest supported opset (``CastLike``, which the export of DASALC's log1p uses).
MIN_OPSET = 15
#: Output of every exported model: one score per slot, 0 on padding.
OUTPUT = "scores"
#: Prefix of the metadata keys ``to_onnx`` writes into the model (``metadata_props``).
METADATA_PREFIX = "sklearn_ltr."

def _module_of(ranker):
    """The trained torch module that a neural ranker's ``predict`` runs."""
    return ranker.net_.module_


def _is_neural(ranker):
    from sklearn_ltr.rankers._neural import NeuralRanker

    return isinstance(ranker, NeuralRanker)


def _check_ranker(ranker):
    from sklearn_ltr.rankers import LambdaMARTRanker

    if hasattr(ranker, "steps"):
        raise TypeError(
            "to_onnx exports a ranker, not a Pipeline: export its last step (pipeline[-1]) and apply the "
            "earlier steps in the service, or use a ranker that transforms its own inputs (DASALCRanker's "
            "log1p=True)."
        )
    if isinstance(ranker, LambdaMARTRanker):
        check_is_fitted(ranker)
        return "trees"
    if _is_neural(ranker):
        check_is_fitted(ranker)
        return "neural"
    raise TypeError(
        f"to_onnx exports RankNetRanker, DASALCRanker, SetRankRanker, TwoTowerDebiasedRanker and "
        f"LambdaMARTRanker; got {type(ranker).__name__}."
    )


def _version():
    from sklearn_ltr import __version__

    return __version__


def _metadata(ranker, inputs):
    """String metadata a service (and ``OnnxScorer``) reads from the model."""
    names = getattr(ranker, "feature_names_in_", None)
    tags = ranker.__sklearn_tags__()
    return {
        "ranker": type(ranker).__name__,
        "version": _version(),
        "n_features": str(int(ranker.n_features_in_)),
        "feature_names": json.dumps(None if names is None else [str(name) for name in names]),
        "list_context": json.dumps(bool(tags.ranker_tags.list_context)),
        "allow_nan": json.dumps(bool(tags.input_tags.allow_nan)),
        "query_column": json.dumps(_query_column(ranker)),
        "inputs": json.dumps(list(inputs)),
    }


def _query_column(ranker):
    column = getattr(ranker, "query_column", None)
    return column if column is None or isinstance(column, str) else int(column)


def _doc_string(ranker, inputs):
    extra = " initial_rank: [batch, list] float32, 1-based ranks of the initial ranking." if (
        "initial_rank" in inputs) else ""
    return (
        f"{type(ranker).__name__} exported by sklearn_ltr. Inputs: X [batch, list, {ranker.n_features_in_}] float32, "
        f"the features of each list's documents, padded with zeros; mask [batch, list] bool, True on real "
        f"documents.{extra} Output: scores [batch, list] float32, higher ranks first, 0 on padding."
    )


def _neural_model(ranker, opset):
    import onnx

    from sklearn_ltr.export._neural import export_module

    initial_rank = bool(getattr(ranker, "uses_initial_rank_", False))
    data = export_module(_module_of(ranker), int(ranker.n_features_in_), opset=opset, initial_rank=initial_rank)
    return onnx.load_from_string(data)


def _trees_model(ranker, opset):
    from onnx import helper

    from sklearn_ltr.export._trees import lightgbm_graph

    booster = ranker.booster_
    graph, opsets = lightgbm_graph(booster, int(ranker.n_features_in_), num_iteration=booster.best_iteration)
    opsets = [helper.make_opsetid("", opset), *opsets]
    return helper.make_model(graph, opset_imports=opsets, ir_version=helper.find_min_ir_version_for(opsets))


def to_onnx(ranker, path=None, *, opset=None):
    """Export a fitted ranker's scorer to ONNX: padded lists of documents in, one score per document out.

    The model scores a batch of queries at once, each list padded to the longest:

    - input ``X``: float32 ``[batch, list, n_features]``, the documents' features (exactly the
      ``n_features_in_`` features the ranker was fitted on, without a ``query_column``),
      padded with zeros;
    - input ``mask``: bool ``[batch, list]``, True on real documents, False on padding;
    - input ``initial_rank`` (only for a :class:`~sklearn_ltr.SetRankRanker` fitted with
      ``initial_rank``): float32 ``[batch, list]``, 1-based ranks;
    - output ``scores``: float32 ``[batch, list]``, higher ranks first, 0 on padding.

    ``batch`` and ``list`` are dynamic. Padding never changes a real document's score, and
    a list-context model (DASALC, SetRank) scores each document against the other real
    documents of its own list only. The scores equal ``ranker.predict``'s on CPU up to
    float32 rounding (see the user guide's ONNX page for measured differences).

    What is exported:

    - ``RankNetRanker``, ``DASALCRanker``, ``SetRankRanker``: the trained network in
      evaluation mode (DASALC's log1p and batch norm included, its noise and dropout off),
      through torch's TorchScript-based exporter (``torch.onnx.export(..., dynamo=False)``);
    - ``TwoTowerDebiasedRanker``: the relevance tower alone, as ``predict`` uses it;
    - ``LambdaMARTRanker``: the trees (up to ``best_iteration_``) as one ``ai.onnx.ml``
      ``TreeEnsembleRegressor`` with float64 thresholds and leaf values, so each split
      decides as LightGBM does (numerical splits only).

    The model's ``metadata_props`` record the ranker, ``n_features``, ``feature_names``,
    ``list_context``, ``query_column`` and the input names, under the prefix
    ``"sklearn_ltr."``; :class:`~sklearn_ltr.export.OnnxScorer` reads them.

    Parameters
    ----------
    ranker : estimator
        A fitted ``RankNetRanker``, ``DASALCRanker``, ``SetRankRanker``,
        ``TwoTowerDebiasedRanker`` or ``LambdaMARTRanker``. Not a ``Pipeline``: export its
        last step and apply the earlier steps in the service.
    path : str or path-like, default=None
        Where to save the model as well (``.onnx``); ``None`` saves nothing.
    opset : int, default=None
        Opset of ONNX's default domain, 15 or higher (for the neural rankers at most the
        highest that torch's TorchScript-based exporter writes, 20 in torch 2.13); ``None``
        is 17.

    Returns
    -------
    model : onnx.ModelProto
        The checked model (``onnx.checker.check_model``).

    Raises
    ------
    ImportError
        If ``onnx`` (or, for the neural rankers, torch's exporter) is missing: install the
        ``serving`` extra, ``pip install 'sklearn-ltr[serving]'``.

    See Also
    --------
    sklearn_ltr.export.OnnxScorer : Scores rows with onnxruntime the way ``predict`` does.

    Examples
    --------
    ..
        >>> import pytest
        >>> _ = pytest.importorskip("onnxruntime")

    >>> import numpy as np
    >>> import onnxruntime
    >>> from sklearn_ltr import LambdaMARTRanker
    >>> from sklearn_ltr.datasets import make_ranking
    >>> from sklearn_ltr.export import to_onnx
    >>> X, y, qid = make_ranking(n_queries=20, n_features=5, random_state=0)
    >>> ranker = LambdaMARTRanker(n_estimators=10, random_state=0, n_jobs=1).fit(X, y, groups=qid)
    >>> model = to_onnx(ranker)
    >>> [i.name for i in model.graph.input], [o.name for o in model.graph.output]
    (['X', 'mask'], ['scores'])

    Two lists, of three and two documents, padded to three:

    >>> session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    >>> padded = np.zeros((2, 3, 5), dtype=np.float32)
    >>> padded[0], padded[1, :2] = X[:3], X[3:5]
    >>> mask = np.array([[True, True, True], [True, True, False]])
    >>> scores = session.run(None, {"X": padded, "mask": mask})[0]
    >>> scores.shape
    (2, 3)
    >>> np.allclose(scores[mask], ranker.predict(X[:5]), atol=1e-5)
    True
    """
    onnx = import_optional("onnx", "to_onnx")

    kind = _check_ranker(ranker)
    opset = DEFAULT_OPSET if opset is None else opset
    if isinstance(opset, bool) or not isinstance(opset, int) or opset < MIN_OPSET:
        raise ValueError(f"opset must be an int >= {MIN_OPSET}; got {opset!r}.")
    if opset > onnx.defs.onnx_opset_version():
        raise ValueError(f"opset={opset} is newer than this onnx package supports ({onnx.defs.onnx_opset_version()}).")
    model = _neural_model(ranker, opset) if kind == "neural" else _trees_model(ranker, opset)
    inputs = [value.name for value in model.graph.input]
    model.producer_name = "sklearn_ltr"
    model.producer_version = _version()
    model.doc_string = _doc_string(ranker, inputs)
    onnx.helper.set_model_props(
        model, {METADATA_PREFIX + key: value for key, value in _metadata(ranker, inputs).items()}
    )
    onnx.checker.check_model(model)
    if path is not None:
        onnx.save_model(model, os.fspath(path))
    return model

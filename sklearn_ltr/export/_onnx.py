"""``to_onnx``: a fitted ranker's scorer as an ONNX model over padded lists of documents."""

from __future__ import annotations

import json
import os

from sklearn.exceptions import NotFittedError
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


def _split_pipeline(model):
    """``(steps, ranker)``: a Pipeline's preprocessing steps (passthrough left out) and its last step."""
    from sklearn.pipeline import Pipeline

    from sklearn_ltr.export._onnx_steps import SUPPORTED_STEPS, is_supported_step

    if not isinstance(model, Pipeline):
        if hasattr(model, "steps"):
            raise TypeError(f"to_onnx exports a ranker or a sklearn.pipeline.Pipeline; got {type(model).__name__}.")
        return [], model
    steps = [(name, step) for name, step in model.steps[:-1] if step is not None and step != "passthrough"]
    for name, step in steps:
        if not is_supported_step(step):
            raise TypeError(
                f"to_onnx cannot export the Pipeline step {name!r} ({type(step).__name__}): the steps before "
                f"the ranker may be {', '.join(SUPPORTED_STEPS)}."
            )
        check_is_fitted(step)
        if not hasattr(step, "n_features_in_"):  # a stateless step that was never fitted
            raise NotFittedError(f"the Pipeline step {name!r} is not fitted: fit the Pipeline before exporting it.")
    ranker = model.steps[-1][1]
    if getattr(ranker, "query_column", None) is not None:
        raise ValueError(
            "to_onnx cannot export a Pipeline whose ranker has a query_column: the steps before it would "
            "transform the query ids as a feature. Pass groups to the Pipeline instead."
        )
    return steps, ranker


def _check_ranker(ranker):
    from sklearn_ltr.rankers import LambdaMARTRanker

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


def _n_features(steps, ranker):
    """Features the model takes: a Pipeline's first step's input (an imputer's indicators come later)."""
    return int((steps[0][1] if steps else ranker).n_features_in_)


def _allow_nan(steps, ranker):
    """Whether the model takes NaN features: the first step that removes or refuses NaN decides."""
    from sklearn_ltr.export._onnx_steps import step_allows_nan

    for _, step in steps:
        allowed = step_allows_nan(step)
        if allowed is not None:
            return allowed
    return bool(ranker.__sklearn_tags__().input_tags.allow_nan)


def _metadata(model, steps, ranker, inputs):
    """String metadata a service (and ``OnnxScorer``) reads from the model (``model``: the ranker or its Pipeline)."""
    from sklearn_ltr.export._onnx_steps import step_is_list_context

    first = steps[0][1] if steps else ranker  # the Pipeline's input is its first step's
    names = getattr(first, "feature_names_in_", None)
    tags = ranker.__sklearn_tags__()
    list_context = tags.ranker_tags.list_context or any(step_is_list_context(step) for _, step in steps)
    metadata = {
        "ranker": type(ranker).__name__,
        "version": _version(),
        "n_features": str(_n_features(steps, ranker)),
        "feature_names": json.dumps(None if names is None else [str(name) for name in names]),
        "list_context": json.dumps(bool(list_context)),
        "allow_nan": json.dumps(_allow_nan(steps, ranker)),
        "query_column": json.dumps(_query_column(ranker)),
        "inputs": json.dumps(list(inputs)),
    }
    if model is not ranker:
        metadata["steps"] = json.dumps([type(step).__name__ for _, step in steps] + [type(ranker).__name__])
    return metadata


def _query_column(ranker):
    column = getattr(ranker, "query_column", None)
    return column if column is None or isinstance(column, str) else int(column)


def _doc_string(model, steps, ranker, inputs):
    extra = " initial_rank: [batch, list] float32, 1-based ranks of the initial ranking." if (
        "initial_rank" in inputs) else ""
    name = type(ranker).__name__
    if model is not ranker:
        name = f"Pipeline({', '.join([type(step).__name__ for _, step in steps] + [name])})"
    return (
        f"{name} exported by sklearn_ltr. Inputs: X [batch, list, {_n_features(steps, ranker)}] float32, "
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


def _prepend_steps(model, steps, n_features, opset, *, steps_dtype, output_float32):
    """Feed the ranker's graph from the steps' graph: its input ``X`` becomes the steps' output."""
    from onnx import TensorProto, helper

    from sklearn_ltr.export._onnx_steps import preprocessing_nodes

    graph = model.graph
    features = "pipeline_features"
    taken = {name for node in graph.node for name in (*node.input, *node.output)} | {t.name for t in graph.initializer}
    if any(name.startswith("pipeline_") for name in taken):
        raise RuntimeError("the ranker's ONNX graph already uses names starting with 'pipeline_'.")
    nodes, initializers = preprocessing_nodes(steps, opset=opset, output=features, steps_dtype=steps_dtype,
                                              output_float32=output_float32)
    for node in graph.node:
        node.input[:] = [features if name == "X" else name for name in node.input]
    inputs = list(graph.input)
    position = [value.name for value in inputs].index("X")
    dims = [d.dim_param or None for d in inputs[position].type.tensor_type.shape.dim[:2]]
    dims = [dim if dim else name for dim, name in zip(dims, ("batch", "list"), strict=True)]
    inputs[position] = helper.make_tensor_value_info("X", TensorProto.FLOAT, [*dims, n_features])
    del graph.input[:]
    graph.input.extend(inputs)
    ranker_nodes = list(graph.node)
    del graph.node[:]
    graph.node.extend([*nodes, *ranker_nodes])
    graph.initializer.extend(initializers)
    return model


def to_onnx(ranker, path=None, *, opset=None, steps_dtype="float32"):
    """Export a fitted ranker's scorer (or a Pipeline ending in one) to ONNX: padded lists in, scores out.

    The model scores a batch of queries at once, each list padded to the longest:

    - input ``X``: float32 ``[batch, list, n_features]``, the documents' features (exactly the
      ``n_features_in_`` features the ranker, or the Pipeline, was fitted on, without a
      ``query_column``), padded with zeros;
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
      decides as LightGBM does (numerical splits only);
    - a ``Pipeline`` whose last step is one of these rankers: its earlier steps as ONNX
      operators before the ranker's graph. They may be ``Log1pTransformer``,
      ``QueryNormalizer`` (each padded list's statistics over its real documents),
      ``StandardScaler``, ``MinMaxScaler`` and ``SimpleImputer`` (``add_indicator`` too), or
      ``"passthrough"``.

    The model's ``metadata_props`` record the ranker, ``n_features`` (a Pipeline's input
    width), ``feature_names``, ``list_context`` (also true after a ``QueryNormalizer``),
    ``allow_nan``, ``query_column``, the input names and, for a Pipeline, its ``steps``,
    under the prefix ``"sklearn_ltr."``; :class:`~sklearn_ltr.export.OnnxScorer` reads them.

    Parameters
    ----------
    ranker : estimator
        A fitted ``RankNetRanker``, ``DASALCRanker``, ``SetRankRanker``,
        ``TwoTowerDebiasedRanker`` or ``LambdaMARTRanker``, or a fitted
        ``sklearn.pipeline.Pipeline`` of the steps above ending in one (its ranker without a
        ``query_column``).
    path : str or path-like, default=None
        Where to save the model as well (``.onnx``); ``None`` saves nothing.
    opset : int, default=None
        Opset of ONNX's default domain, 15 or higher (for the neural rankers at most the
        highest that torch's TorchScript-based exporter writes, 20 in torch 2.13); ``None``
        is 17.
    steps_dtype : {"float32", "float64"}, default="float32"
        For a Pipeline: the input dtype whose ``pipeline.predict`` the steps reproduce.
        scikit-learn's transformers keep float32 input in float32: with ``"float32"`` the model
        scores as ``pipeline.predict(X.astype(np.float32), groups)``, the float32 features it
        takes; with ``"float64"``, as ``pipeline.predict`` on float64 ``X``. The two differ by
        float32 rounding in the steps, which can send a LightGBM row near a threshold the
        other way. Ignored for a ranker alone.

    Returns
    -------
    model : onnx.ModelProto
        The checked model (``onnx.checker.check_model``).

    Raises
    ------
    ImportError
        If ``onnx`` (or, for the neural rankers, torch's exporter) is missing: install the
        ``serving`` extra, ``pip install 'sklearn-ltr[serving]'``.
    TypeError
        For an estimator that is not one of the rankers, or a Pipeline step that is not one of
        the steps above (the message names the step and the steps supported).

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

    pipeline = ranker
    steps, ranker = _split_pipeline(pipeline)
    kind = _check_ranker(ranker)
    if steps_dtype not in ("float32", "float64"):
        raise ValueError(f"steps_dtype must be 'float32' or 'float64'; got {steps_dtype!r}.")
    opset = DEFAULT_OPSET if opset is None else opset
    if isinstance(opset, bool) or not isinstance(opset, int) or opset < MIN_OPSET:
        raise ValueError(f"opset must be an int >= {MIN_OPSET}; got {opset!r}.")
    if opset > onnx.defs.onnx_opset_version():
        raise ValueError(f"opset={opset} is newer than this onnx package supports ({onnx.defs.onnx_opset_version()}).")
    model = _neural_model(ranker, opset) if kind == "neural" else _trees_model(ranker, opset)
    if pipeline is not ranker:
        # The trees take the steps' float64 output as it is (they compare in float64); a network takes float32.
        model = _prepend_steps(model, steps, _n_features(steps, ranker), opset, steps_dtype=steps_dtype,
                               output_float32=kind == "neural")
    inputs = [value.name for value in model.graph.input]
    model.producer_name = "sklearn_ltr"
    model.producer_version = _version()
    model.doc_string = _doc_string(pipeline, steps, ranker, inputs)
    onnx.helper.set_model_props(
        model, {METADATA_PREFIX + key: value for key, value in _metadata(pipeline, steps, ranker, inputs).items()}
    )
    onnx.checker.check_model(model)
    if path is not None:
        onnx.save_model(model, os.fspath(path))
    return model

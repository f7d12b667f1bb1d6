"""ONNX for the preprocessing steps of an exported ``Pipeline``, on padded lists of documents.

The steps compute on ``X`` ``[batch, list, n_features]`` as scikit-learn's transformers compute
on an input of dtype ``steps_dtype``, so that what reaches the ranker is what ``Pipeline.predict``
gives it. scikit-learn keeps float32 input in float32: with ``"float32"`` each operation runs in
float64 and its result is rounded to float32 where NumPy stores it in a float32 array (for
``+ - * /`` that is float32 arithmetic exactly), and the statistics a transformer casts to ``X``'s
dtype (``StandardScaler``'s, ``SimpleImputer``'s) are rounded to float32 first; with
``"float64"`` nothing is rounded. A neural ranker's input is then rounded to float32, as its
``predict`` does; LightGBM's trees compare the float64 values with their float64 thresholds, as
LightGBM does. ``mask`` ``[batch, list]`` marks the real documents: a
:class:`~sklearn_ltr.preprocessing.QueryNormalizer` computes each list's statistics over them
only, and the padding slots are set to 0 after the last step, whatever the steps made of them.
"""

from __future__ import annotations

import numpy as np

__all__ = ["SUPPORTED_STEPS", "is_supported_step", "preprocessing_nodes", "step_allows_nan", "step_is_list_context"]

#: Class names of the steps a Pipeline may have before its ranker (those classes exactly, not subclasses).
SUPPORTED_STEPS = ("Log1pTransformer", "MinMaxScaler", "QueryNormalizer", "SimpleImputer", "StandardScaler")

_INT64_MAX = np.iinfo(np.int64).max


class _Builder:
    """Collects the nodes and constants of the preprocessing graph; every name starts with ``prefix``."""

    def __init__(self, opset, prefix, float32):
        from onnx import TensorProto, helper, numpy_helper

        self.helper, self.numpy_helper, self.TensorProto = helper, numpy_helper, TensorProto
        self.opset, self.prefix, self.float32 = opset, prefix, float32
        self.nodes, self.initializers, self._count = [], [], 0

    def _name(self, hint):
        self._count += 1
        return f"{self.prefix}{hint}_{self._count}"

    def const(self, value, dtype=np.float64):
        name = self._name("const")
        self.initializers.append(self.numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def op(self, op_type, *inputs, n_outputs=1, **attributes):
        outputs = [self._name(op_type.lower()) for _ in range(n_outputs)]
        self.nodes.append(self.helper.make_node(op_type, list(inputs), outputs, name=outputs[0], **attributes))
        return outputs[0] if n_outputs == 1 else outputs

    def reduce(self, op_type, x, axis):
        """``op_type`` over one axis, kept: axes are an input from opset 13 (ReduceSum) or 18 (the others)."""
        if op_type == "ReduceSum" or self.opset >= 18:
            return self.op(op_type, x, self.const([axis], np.int64), keepdims=1)
        return self.op(op_type, x, axes=[axis], keepdims=1)

    def where(self, condition, a, b):
        return self.op("Where", condition, a, b)

    def stored(self, x):
        """``x`` as an array of the input's dtype holds it: rounded to float32 in float32 mode."""
        if not self.float32:
            return x
        return self.op("Cast", self.op("Cast", x, to=self.TensorProto.FLOAT), to=self.TensorProto.DOUBLE)

    def stored_const(self, value):
        """A statistic cast to the input's dtype, as a float64 constant."""
        value = np.asarray(value, dtype=np.float64)
        return self.const(value.astype(np.float32).astype(np.float64) if self.float32 else value)


def _translations():
    """Step class -> function adding its nodes: ``f(builder, step, x, mask) -> output name``."""
    from sklearn.impute import SimpleImputer
    from sklearn.preprocessing import MinMaxScaler, StandardScaler

    from sklearn_ltr.preprocessing import Log1pTransformer, QueryNormalizer

    return {Log1pTransformer: _log1p, MinMaxScaler: _min_max_scaler, QueryNormalizer: _query_normalizer,
            SimpleImputer: _simple_imputer, StandardScaler: _standard_scaler}


def is_supported_step(step):
    """Whether ``step`` is one of :data:`SUPPORTED_STEPS` (a subclass may transform otherwise: refused)."""
    return type(step) in _translations()


def step_is_list_context(step):
    """Whether a document's output depends on the other documents of its list."""
    return type(step).__name__ == "QueryNormalizer" and step.method != "reciprocal"


def step_allows_nan(step):
    """``True`` if the step removes NaN (an imputer), ``None`` if it passes NaN on, ``False`` if it refuses it."""
    if type(step).__name__ == "SimpleImputer":  # with numeric missing_values, scikit-learn refuses NaN
        return _is_nan(step.missing_values)
    return None if is_supported_step(step) else False


def _is_nan(value):
    return value is None or (isinstance(value, float) and bool(np.isnan(value))) or type(value).__name__ == "NAType"


# ------------------------------------------------------------------------------------------------ steps
def _log1p(b, step, x, mask):
    """``sign(x) * log1p(|x|)``; log1p as ``log(u) * a / (u - 1)`` with ``u = 1 + a``, accurate for small ``a``."""
    a = b.op("Abs", x)
    u = b.op("Add", a, b.const(1.0))
    log1p = b.where(b.op("Equal", u, b.const(1.0)), a, b.op("Div", b.op("Mul", b.op("Log", u), a),
                                                              b.op("Sub", u, b.const(1.0))))
    return b.stored(b.where(b.op("Less", x, b.const(0.0)), b.op("Neg", log1p), log1p))


def _standard_scaler(b, step, x, mask):
    # scikit-learn casts mean_ and scale_ to X's dtype; MinMaxScaler uses its own (float64 X *= float64 scale_).
    if step.with_mean and step.mean_ is not None:
        x = b.stored(b.op("Sub", x, b.stored_const(step.mean_)))
    if step.with_std and step.scale_ is not None:
        x = b.stored(b.op("Div", x, b.stored_const(step.scale_)))
    return x


def _min_max_scaler(b, step, x, mask):
    x = b.stored(b.op("Add", b.stored(b.op("Mul", x, b.const(step.scale_))), b.const(step.min_)))
    if step.clip:  # comparisons with NaN are false: NaN passes, as through np.clip
        low, high = (b.stored_const(value) for value in step.feature_range)
        x = b.where(b.op("Less", x, low), low, x)
        x = b.where(b.op("Greater", x, high), high, x)
    return x


def _simple_imputer(b, step, x, mask):
    from onnx import TensorProto

    if _is_nan(step.missing_values):
        missing = b.op("IsNaN", x)
    elif isinstance(step.missing_values, (int, float, np.number)) and not isinstance(step.missing_values, bool):
        missing = b.op("Equal", x, b.const(float(step.missing_values)))
    else:
        raise TypeError(f"to_onnx exports SimpleImputer with numeric or NaN missing_values; got "
                        f"{step.missing_values!r}.")
    statistics = np.asarray(step.statistics_, dtype=np.float64)
    kept = np.ones(len(statistics), bool) if step.keep_empty_features else ~np.isnan(statistics)
    out = b.where(missing, b.stored_const(np.where(kept, statistics, 0.0)), x)
    if not kept.all():  # scikit-learn drops the features that had no value in fit
        out = b.op("Gather", out, b.const(np.flatnonzero(kept), np.int64), axis=2)
    if step.add_indicator:  # after the imputed features, one column per feature missing in fit
        indicator = b.op("Gather", missing, b.const(step.indicator_.features_, np.int64), axis=2)
        out = b.op("Concat", out, b.op("Cast", indicator, to=TensorProto.DOUBLE), axis=2)
    return out


def _query_normalizer(b, step, x, mask):
    from onnx import TensorProto

    if step.method == "reciprocal":
        return b.stored(b.op("Reciprocal", x))
    valid = b.op("And", mask, b.op("Not", b.op("IsNaN", x)))  # [batch, list, features]
    if step.method == "rank":
        return b.stored(b.where(b.op("IsNaN", x), x, _ranks(b, x, valid)))
    zero, one = b.const(0.0), b.const(1.0)
    if step.method == "sum":
        total = b.reduce("ReduceSum", b.op("Abs", b.where(valid, x, zero)), 1)
        positive = b.op("Greater", total, zero)
        out = b.where(positive, b.op("Div", x, b.where(positive, total, one)), zero)
    else:
        low = b.reduce("ReduceMin", b.where(valid, x, b.const(np.inf)), 1)
        high = b.reduce("ReduceMax", b.where(valid, x, b.const(-np.inf)), 1)
        if step.method == "minmax":
            span = b.op("Sub", high, low)
            positive = b.op("Greater", span, zero)
            out = b.where(positive, b.op("Div", b.op("Sub", x, low), b.where(positive, span, one)), zero)
        else:  # zscore: population variance in two passes, as QueryNormalizer computes it
            count = b.op("Max", b.reduce("ReduceSum", b.op("Cast", valid, to=TensorProto.DOUBLE), 1), one)
            mean = b.op("Div", b.reduce("ReduceSum", b.where(valid, x, zero), 1), count)
            centred = b.op("Sub", x, mean)
            squares = b.where(valid, b.op("Mul", centred, centred), zero)
            std = b.op("Sqrt", b.op("Div", b.reduce("ReduceSum", squares, 1), count))
            positive = b.op("Greater", std, zero)
            out = b.where(positive, b.op("Div", centred, b.where(positive, std, one)), centred)
            out = b.where(b.op("Equal", low, high), zero, out)
    return b.stored(b.where(b.op("IsNaN", x), x, out))  # computed in float64, stored in X's dtype


def _ranks(b, x, valid):
    """Tie-averaged ascending rank within each list, over the valid slots, scaled to [0, 1].

    The values are sorted along the list (``TopK``; invalid slots as +inf, last); each run of
    equal values gets the mean of its first and last sorted positions, found by scattering
    each run's first (last) position into a table indexed by run number and gathering it
    back; the scaled ranks are scattered back to the input slots.
    """
    from onnx import TensorProto

    key = b.where(valid, x, b.const(np.inf))
    length = b.op("Slice", b.op("Shape", x), b.const([1], np.int64), b.const([2], np.int64))
    values, order = b.op("TopK", key, length, axis=1, largest=0, sorted=1, n_outputs=2)
    axis, nan = b.const([1], np.int64), b.const(np.nan)

    def piece(start, end):
        return b.op("Slice", values, b.const([start], np.int64), b.const([end], np.int64), axis)

    previous = b.op("Concat", b.op("Add", piece(0, 1), nan), piece(0, -1), axis=1)
    following = b.op("Concat", piece(1, _INT64_MAX), b.op("Add", piece(-1, _INT64_MAX), nan), axis=1)
    run_start = b.op("Not", b.op("Equal", values, previous))
    run_end = b.op("Not", b.op("Equal", values, following))
    run = b.op("Sub", b.op("CumSum", b.op("Cast", run_start, to=TensorProto.INT64), b.const(1, np.int64)),
               b.const(1, np.int64))
    slots = b.op("Range", b.const(0, np.int64), b.op("Squeeze", length), b.const(1, np.int64))
    slot = b.op("Expand", b.op("Reshape", slots, b.const([1, -1, 1], np.int64)), b.op("Shape", x))
    position = b.op("Cast", slot, to=TensorProto.DOUBLE)
    zeros = b.op("Mul", position, b.const(0.0))
    table = b.op("Concat", zeros, zeros, axis=1)  # [batch, 2 * list, features]: rows past list are scratch
    spare = b.op("Add", slot, length)  # one scratch row per slot, so that no two writes meet

    def run_edge(is_edge):
        written = b.op("ScatterElements", table, b.where(is_edge, run, spare), position, axis=1)
        return b.op("GatherElements", written, run, axis=1)

    average = b.op("Mul", b.op("Add", run_edge(run_start), run_edge(run_end)), b.const(0.5))
    count = b.reduce("ReduceSum", b.op("Cast", valid, to=TensorProto.DOUBLE), 1)
    denominator = b.op("Sub", count, b.const(1.0))
    scaled = b.where(b.op("Greater", denominator, b.const(0.0)),
                     b.op("Div", average, b.op("Max", denominator, b.const(1.0))), b.const(0.5))
    return b.op("ScatterElements", zeros, order, scaled, axis=1)


def preprocessing_nodes(steps, *, opset, output, steps_dtype, output_float32, prefix="pipeline_"):
    """Nodes turning graph inputs ``X`` (float32) and ``mask`` into ``output``, the ranker's input.

    Parameters
    ----------
    steps : list of (str, estimator)
        The fitted steps before the ranker, each of :data:`SUPPORTED_STEPS`.
    opset : int
        Opset of ONNX's default domain.
    output : str
        Name of the preprocessed features ``[batch, list, n_features_out]``, 0 on padding.
    steps_dtype : {"float32", "float64"}
        The dtype of the input whose ``Pipeline.predict`` the steps reproduce.
    output_float32 : bool
        Cast the output to float32 (a neural ranker's input); otherwise it stays float64.
    prefix : str, default="pipeline_"
        Prefix of every node and constant name.

    Returns
    -------
    nodes : list of onnx.NodeProto
    initializers : list of onnx.TensorProto
    """
    b = _Builder(opset, prefix, float32=steps_dtype == "float32")
    x = b.op("Cast", "X", to=b.TensorProto.DOUBLE)
    mask = b.op("Unsqueeze", "mask", b.const([2], np.int64))  # [batch, list, 1]
    translations = _translations()
    for _, step in steps:
        x = translations[type(step)](b, step, x, mask)
    padded = b.where(mask, x, b.const(0.0))
    b.nodes.append(b.helper.make_node("Cast", [padded], [output], name=f"{prefix}output",
                                      to=b.TensorProto.FLOAT if output_float32 else b.TensorProto.DOUBLE))
    return b.nodes, b.initializers

"""ONNX graph of a LightGBM LambdaMART model with LightGBM's exact split decisions.

The trees become one ``ai.onnx.ml`` ``TreeEnsembleRegressor`` (opset 3) read from
``Booster.dump_model()``. The thresholds and leaf values stay float64
(``nodes_values_as_tensor``, ``target_weights_as_tensor``) and the float32 features are
cast to float64 first, so every comparison is LightGBM's own ``double(x) <= threshold``:
a float32 feature takes the branch LightGBM takes, even one ulp from a threshold. (A
converter that stores the thresholds as float32 rounds them to the nearest float32, and a
feature equal to that rounded value then goes the other way.) Missing values follow
LightGBM's rules: with ``missing_type`` ``"NaN"`` a NaN goes to the default side, with
``"None"`` it is read as 0. The leaves are summed in float64 and the sum rounded once to
the float32 output.

The walk over the trees (:func:`lightgbm_trees`: the nodes, each split's float64 threshold and
the side a NaN takes, and the refusals) is shared with the exporters to search engines
(``_xgboost``, ``_ranklib``, ...), which map the thresholds to their own comparisons.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["Leaf", "Split", "lightgbm_graph", "lightgbm_trees", "walk_tree"]

#: ``ai.onnx.ml`` opset of the tree ensemble: the first with float64 thresholds and weights.
ML_OPSET = 3


class Split(NamedTuple):
    """A numerical split: ``x <= threshold`` (float64) goes to ``left``, a NaN to ``left`` if ``nan_left``.

    ``nan_learned``: the side of a NaN was learned (LightGBM's ``missing_type`` ``"NaN"``: the
    feature had missing values in training); otherwise LightGBM reads a NaN as 0.
    """

    node_id: int
    feature: int
    threshold: float
    nan_left: bool
    left: int
    right: int
    nan_learned: bool


class Leaf(NamedTuple):
    """A leaf and its value (float64, as LightGBM sums it)."""

    node_id: int
    value: float


def nan_goes_left(missing_type, default_left, threshold):
    """Where LightGBM sends a NaN: with ``missing_type`` ``"NaN"`` to the default side, with ``"None"`` as a 0."""
    if missing_type == "NaN":
        return bool(default_left)
    return 0.0 <= threshold  # "None": LightGBM reads a NaN as 0


def _check_split(node, exporter):
    if node["decision_type"] != "<=":
        raise ValueError(
            f"{exporter} exports numerical splits only; this LightGBM model has a categorical split "
            f"(decision_type {node['decision_type']!r}). Encode categories as numbers (one-hot or ordinal) "
            "without LightGBM's categorical_feature to export the model."
        )
    if node["missing_type"] == "Zero":
        raise ValueError(
            f"{exporter} cannot export splits that treat zero as missing (LightGBM's zero_as_missing=True); "
            "train with zero_as_missing=False (the default) to export the model."
        )


def walk_tree(root, *, exporter="to_onnx"):
    """The nodes of one tree of ``Booster.dump_model()``, depth-first; a split numbers its two children in turn.

    Refuses (``ValueError`` naming ``exporter``) what no exporter expresses: categorical splits,
    zero-as-missing splits and linear trees.
    """
    nodes, stack, next_id = [], [(root, 0)], 1
    while stack:
        node, node_id = stack.pop()
        if "leaf_value" in node:  # a leaf, or a tree that is a single leaf
            if "leaf_coeff" in node:
                raise ValueError(f"{exporter} cannot export linear trees (LightGBM's linear_tree=True).")
            nodes.append(Leaf(node_id, float(node["leaf_value"])))
            continue
        _check_split(node, exporter)
        threshold = float(node["threshold"])
        left, right = next_id, next_id + 1
        next_id += 2
        nan_left = nan_goes_left(node["missing_type"], node["default_left"], threshold)
        nodes.append(Split(node_id, int(node["split_feature"]), threshold, nan_left, left, right,
                           node["missing_type"] == "NaN"))
        stack.append((node["right_child"], right))
        stack.append((node["left_child"], left))
    return nodes


def lightgbm_trees(booster, *, num_iteration=None, exporter="to_onnx"):
    """``(trees, average_output)``: each tree of a single-output model as :func:`walk_tree`'s node list."""
    dump = booster.dump_model(num_iteration=num_iteration)
    if dump.get("num_tree_per_iteration", 1) != 1:
        raise ValueError(f"{exporter} exports single-output LightGBM models only (one tree per iteration).")
    trees = [walk_tree(tree["tree_structure"], exporter=exporter) for tree in dump["tree_info"]]
    return trees, bool(dump.get("average_output"))


def _tree_arrays(tree_id, tree):
    """Node and leaf attributes of one walked tree for ONNX's ``TreeEnsembleRegressor``."""
    nodes = {"treeids": [], "nodeids": [], "featureids": [], "modes": [], "values": [], "truenodeids": [],
             "falsenodeids": [], "missing_value_tracks_true": []}
    leaves = {"treeids": [], "nodeids": [], "weights": []}
    for node in tree:
        nodes["treeids"].append(tree_id)
        nodes["nodeids"].append(node.node_id)
        if isinstance(node, Leaf):
            values = (0, "LEAF", 0.0, 0, 0, 0)
            leaves["treeids"].append(tree_id)
            leaves["nodeids"].append(node.node_id)
            leaves["weights"].append(node.value)
        else:  # LightGBM: x <= threshold goes left
            values = (node.feature, "BRANCH_LEQ", node.threshold, node.left, node.right, int(node.nan_left))
        for key, value in zip(("featureids", "modes", "values", "truenodeids", "falsenodeids",
                               "missing_value_tracks_true"), values, strict=True):
            nodes[key].append(value)
    return nodes, leaves


def tree_ensemble_node(booster, input_name, output_name, *, num_iteration=None):
    """The ``TreeEnsembleRegressor`` node scoring ``[n, n_features]`` float64 rows as ``[n, 1]`` float32."""
    from onnx import helper, numpy_helper

    trees, average_output = lightgbm_trees(booster, num_iteration=num_iteration)
    nodes = {key: [] for key in ("treeids", "nodeids", "featureids", "modes", "values", "truenodeids",
                                 "falsenodeids", "missing_value_tracks_true")}
    leaves = {"treeids": [], "nodeids": [], "weights": []}
    for tree_id, tree in enumerate(trees):
        tree_nodes, tree_leaves = _tree_arrays(tree_id, tree)
        for key, values in tree_nodes.items():
            nodes[key].extend(values)
        for key, values in tree_leaves.items():
            leaves[key].extend(values)
    values = numpy_helper.from_array(np.asarray(nodes.pop("values"), dtype=np.float64), "nodes_values")
    weights = numpy_helper.from_array(np.asarray(leaves["weights"], dtype=np.float64), "target_weights")
    return helper.make_node(
        "TreeEnsembleRegressor", [input_name], [output_name], domain="ai.onnx.ml", name="lambdamart_trees",
        n_targets=1, aggregate_function="AVERAGE" if average_output else "SUM",
        post_transform="NONE", nodes_values_as_tensor=values, target_weights_as_tensor=weights,
        target_ids=[0] * len(leaves["nodeids"]), target_nodeids=leaves["nodeids"], target_treeids=leaves["treeids"],
        **{f"nodes_{key}": value for key, value in nodes.items()},
    )


def lightgbm_graph(booster, n_features, *, num_iteration=None):
    """Graph ``(X [batch, list, n_features] float32, mask [batch, list] bool) -> scores [batch, list]``.

    Returns ``(graph, opset_imports)``; the caller sets the default domain's opset.
    """
    from onnx import TensorProto, helper

    constants = [
        helper.make_tensor("rows_shape", TensorProto.INT64, [2], [-1, n_features]),
        helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0]),
        helper.make_tensor("start", TensorProto.INT64, [1], [0]),
        helper.make_tensor("stop", TensorProto.INT64, [1], [2]),
    ]
    nodes = [
        helper.make_node("Reshape", ["X", "rows_shape"], ["rows"], name="flatten_lists"),
        helper.make_node("Cast", ["rows"], ["rows_float64"], to=TensorProto.DOUBLE, name="to_float64"),
        tree_ensemble_node(booster, "rows_float64", "row_scores", num_iteration=num_iteration),
        helper.make_node("Shape", ["X"], ["X_shape"], name="shape"),
        helper.make_node("Slice", ["X_shape", "start", "stop"], ["lists_shape"], name="batch_and_list"),
        helper.make_node("Reshape", ["row_scores", "lists_shape"], ["padded_scores"], name="unflatten_lists"),
        helper.make_node("Where", ["mask", "padded_scores", "zero"], ["scores"], name="zero_padding"),
    ]
    graph = helper.make_graph(
        nodes, "lambdamart",
        inputs=[helper.make_tensor_value_info("X", TensorProto.FLOAT, ["batch", "list", n_features]),
                helper.make_tensor_value_info("mask", TensorProto.BOOL, ["batch", "list"])],
        outputs=[helper.make_tensor_value_info("scores", TensorProto.FLOAT, ["batch", "list"])],
        initializer=constants,
    )
    return graph, [helper.make_opsetid("ai.onnx.ml", ML_OPSET)]

"""RankLib's LambdaMART model text, and the LTR plugins' ``model/ranklib`` upload, from LambdaMART's trees.

RankLib writes a LambdaMART model as ``## LambdaMART`` header lines and an ``<ensemble>`` of
``<tree id= weight=>`` elements, each a nest of ``<split>`` elements: a split holds ``<feature>``
(1-based), ``<threshold>`` and two ``<split pos="left">`` / ``<split pos="right">`` children, a leaf
one ``<output>``. RankLib sends ``x`` left when ``x <= threshold`` in float32 and sums
``output * weight`` over the trees in float32, so each threshold is the split's boundary (the largest
float32 LightGBM sends left) and each weight 1: every float32 value goes the way LightGBM sends it.

RankLib has no missing values: it reads an unknown (NaN) feature as 0. A split whose side for NaN
was learned (NaN in training) and differs from the side of 0 cannot be written: refused. A model that
never saw NaN has no learned side; RankLib's rule (NaN read as 0) is LightGBM's own there.
"""

from __future__ import annotations

import numpy as np

from sklearn_ltr.export._ltr_plugin import plugin_upload, write_json
from sklearn_ltr.export._tree_model import lambdamart_tree_model, leaf_scale
from sklearn_ltr.export._trees import Leaf

__all__ = ["java_float", "to_ltr_plugin_ranklib", "to_ranklib"]


def java_float(value):
    """A float32 as text that Java's ``Float.parseFloat`` reads back exactly."""
    value = float(np.float32(value))
    if np.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return repr(value)


def _check_missing(tree_model, exporter):
    for tree, boundaries in zip(tree_model.trees, tree_model.boundaries, strict=True):
        for node in tree:
            if isinstance(node, Leaf) or not node.nan_learned:
                continue
            if node.nan_left != bool(np.float32(0) <= boundaries[node.node_id]):
                raise ValueError(
                    f"{exporter} cannot express this model's missing values: it learned to send a missing "
                    f"feature ({tree_model.feature_names[node.feature]!r}, NaN in training) "
                    f"{'left' if node.nan_left else 'right'}, and RankLib reads a missing feature as 0, which "
                    f"this split sends {'right' if node.nan_left else 'left'}. Fill missing values with a number "
                    "before training, or export to_xgboost_json."
                )


def _tree_lines(tree, boundaries, scale, indent):
    nodes = {node.node_id: node for node in tree}
    lines = []

    def add(node_id, depth, position):
        node, pad = nodes[node_id], "\t" * depth
        lines.append(f'{pad}<split pos="{position}">' if position else f"{pad}<split>")
        if isinstance(node, Leaf):
            lines.append(f"{pad}\t<output> {java_float(node.value * scale)} </output>")
        else:
            lines.append(f"{pad}\t<feature> {node.feature + 1} </feature>")
            lines.append(f"{pad}\t<threshold> {java_float(boundaries[node_id])} </threshold>")
            add(node.left, depth + 1, "left")
            add(node.right, depth + 1, "right")
        lines.append(f"{pad}</split>")

    add(0, indent, None)
    return lines


def _ranklib_text(tree_model):
    scale = leaf_scale(tree_model)
    n_leaves = max((sum(isinstance(node, Leaf) for node in tree) for tree in tree_model.trees), default=1)
    lines = ["## LambdaMART", f"## No. of trees = {len(tree_model.trees)}", f"## No. of leaves = {n_leaves}",
             "## No. of threshold candidates = -1", "## Learning rate = 1.0", "## Stop early = -1",
             "## Exported by sklearn_ltr from LightGBM: the leaves hold the shrunk outputs, each tree weighs 1.",
             "", "<ensemble>"]
    for i, (tree, boundaries) in enumerate(zip(tree_model.trees, tree_model.boundaries, strict=True)):
        lines.append(f'\t<tree id="{i + 1}" weight="1.0">')
        lines.extend(_tree_lines(tree, boundaries, scale, 2))
        lines.append("\t</tree>")
    lines.append("</ensemble>")
    return "\n".join(lines) + "\n"


def to_ranklib(model, path=None, *, feature_names=None):
    """RankLib's LambdaMART model text of a fitted ``LambdaMARTRanker`` (or a Pipeline of scalers ending in one).

    RankLib (``java -jar RankLib.jar -load model.txt``) and the LTR plugins' ``model/ranklib``
    score every float32 feature vector with it as ``predict`` does, to float32 rounding, rows
    exactly on a threshold included. Features are RankLib's 1-based ordinals (feature ``i`` of the
    model is RankLib's ``i + 1``). A Pipeline's ``StandardScaler``, ``MinMaxScaler`` and
    ``Log1pTransformer`` fold into the thresholds.

    Parameters
    ----------
    model : LambdaMARTRanker or Pipeline
        Fitted; a Pipeline's steps before the ranker may be the three above (or ``"passthrough"``).
    path : str or path-like, default=None
        Where to write the text as well.
    feature_names : sequence of str, default=None
        Only checked (RankLib names features by ordinal).

    Returns
    -------
    text : str
        The model file's text.

    Raises
    ------
    TypeError
        For another estimator or a Pipeline step that cannot fold into thresholds (named).
    ValueError
        For categorical splits, zero-as-missing splits, linear trees, and a learned side for
        missing values that RankLib (a missing feature read as 0) cannot take.

    Examples
    --------
    >>> from sklearn_ltr import LambdaMARTRanker
    >>> from sklearn_ltr.datasets import make_ranking
    >>> from sklearn_ltr.export import to_ranklib
    >>> X, y, qid = make_ranking(n_queries=20, n_features=3, random_state=0)
    >>> ranker = LambdaMARTRanker(n_estimators=5, random_state=0, n_jobs=1).fit(X, y, groups=qid)
    >>> text = to_ranklib(ranker)
    >>> text.splitlines()[0], text.count("<tree ")
    ('## LambdaMART', 5)
    """
    exporter = "to_ranklib"
    tree_model = lambdamart_tree_model(model, exporter=exporter, feature_names=feature_names)
    _check_missing(tree_model, exporter)
    text = _ranklib_text(tree_model)
    if path is not None:
        with open(path, "w", encoding="utf-8") as file:
            file.write(text)
    return text


def to_ltr_plugin_ranklib(model, path=None, *, feature_names=None, model_name="sklearn_ltr_lambdamart",
                          featureset="sklearn_ltr_features", feature_templates=None):
    """The Elasticsearch / OpenSearch LTR plugins' ``model/ranklib`` upload of a LambdaMART model.

    The definition is :func:`to_ranklib`'s text; RankLib's feature ``i + 1`` is the feature set's
    ``i``-th feature.

    Parameters
    ----------
    model : LambdaMARTRanker or Pipeline
        As for :func:`to_ranklib`.
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
    ValueError
        As :func:`to_ranklib`.

    Examples
    --------
    >>> from sklearn_ltr import LambdaMARTRanker
    >>> from sklearn_ltr.datasets import make_ranking
    >>> from sklearn_ltr.export import to_ltr_plugin_ranklib
    >>> X, y, qid = make_ranking(n_queries=20, n_features=2, random_state=0)
    >>> ranker = LambdaMARTRanker(n_estimators=5, random_state=0, n_jobs=1).fit(X, y, groups=qid)
    >>> upload = to_ltr_plugin_ranklib(ranker, feature_names=["title_bm25", "body_bm25"])
    >>> upload["model"]["body"]["model"]["model"]["type"]
    'model/ranklib'
    """
    exporter = "to_ltr_plugin_ranklib"
    tree_model = lambdamart_tree_model(model, exporter=exporter, feature_names=feature_names)
    _check_missing(tree_model, exporter)
    upload = plugin_upload("model/ranklib", _ranklib_text(tree_model), model_name=model_name,
                           featureset=featureset, feature_names=tree_model.feature_names,
                           feature_templates=feature_templates)
    return write_json(upload, path)

"""Evaluators of the exported models, each written from its format's documentation; tests and benchmarks share them.

- ``xgboost_scores``: XGBoost itself (``xgboost.Booster(model_file=...)``) on the exported JSON model.
- ``plugin_scores``: the Elasticsearch / OpenSearch LTR plugins' ``model/xgboost+json`` (docs/training-models.rst
  of o19s/elasticsearch-learning-to-rank: XGBoost's dump format, ``split`` a feature name, ``yes`` / ``no``
  children); a node sends a feature vector to ``yes`` when ``split_condition > x``, in float32, and the trees'
  outputs are summed in float32.
- ``ranklib_scores``: RankLib's LambdaMART text (the plugin's docs, "Ranklib Example", and RankLib's format:
  ``##`` comment lines, the other lines read trimmed; ``<split>`` with ``<feature>`` (1-based), ``<threshold>``,
  ``pos="left"`` / ``pos="right"`` children and ``<output>`` leaves; ``x <= threshold`` goes left, in float32; an
  unknown (NaN) feature value reads as 0; the score is the float32 sum of output times the tree's weight).
- ``elasticsearch_scores``: Elasticsearch's trained model definition (create trained models API): an ensemble of
  trees of ``node_index``-addressed nodes; ``decision_type`` (``lte``, ``lt``, ``gt``, ``gte``) between the feature
  (``split_feature`` into ``feature_names``) and ``threshold`` sends a document to ``left_child``, a missing feature
  goes left exactly when ``default_left``; ``aggregate_output.weighted_sum``; doubles.
- ``solr_scores``: Solr Reference Guide, "Learning To Rank": ``MultipleAdditiveTreesModel`` (``weight`` times
  each tree's output, ``<=`` ``threshold`` goes ``left``, leaves ``value``), ``LinearModel``
  (``sum(weights[name] * value)``), ``NeuralNetworkModel`` (``activation(matrix . input + bias)`` per layer,
  ``matrix`` one row per output node), a ``ValueFeature`` its ``value``; float32.
- ``plugin_linear_scores``: the plugin's ``model/linear`` ("Simple linear models": feature name to weight, the
  weighted sum), the bias feature's ``constant_score`` query scoring 1.
"""

import json
import operator
import xml.etree.ElementTree as ET

import numpy as np


def _leaf_outputs(root, X, split, leaf):
    """Each row's output from one tree, all rows at once: ``split(node)`` is ``None`` at a leaf, else
    ``(feature, goes_left(values) -> bool array, left, right)``; ``leaf(node)`` is a leaf's output."""
    out = np.zeros(len(X))
    stack = [(root, np.arange(len(X)))]
    while stack:
        node, rows = stack.pop()
        if not len(rows):
            continue
        decision = split(node)
        if decision is None:
            out[rows] = leaf(node)
            continue
        feature, goes_left, left, right = decision
        to_left = np.asarray(goes_left(X[rows, feature]), dtype=bool)
        stack += [(left, rows[to_left]), (right, rows[~to_left])]
    return out


def xgboost_scores(document, X, tmp_path):
    import xgboost

    path = tmp_path / "model.json"
    path.write_text(json.dumps(document))
    booster = xgboost.Booster(model_file=str(path))
    names = document["learner"]["feature_names"] or None
    return booster.predict(xgboost.DMatrix(np.asarray(X, dtype=np.float32), feature_names=names))


def plugin_scores(upload, X):
    """The plugin's scores: each tree walked with ``split_condition > x`` to ``yes``, float32 sums."""
    body = upload["model"]["body"]["model"]
    assert body["model"]["type"] == "model/xgboost+json"
    trees = json.loads(body["model"]["definition"])
    names = [feature["name"] for feature in upload["featureset"]["body"]["featureset"]["features"]]

    def split(node):
        if "leaf" in node:
            return None
        assert [child["nodeid"] for child in node["children"]] == [node["yes"], node["no"]]
        threshold = np.float32(node["split_condition"])
        return names.index(node["split"]), lambda x: threshold > x, node["children"][0], node["children"][1]

    X = np.asarray(X, dtype=np.float32)
    scores = np.zeros(len(X), dtype=np.float32)
    for tree in trees:
        scores = scores + _leaf_outputs(tree, X, split, lambda node: np.float32(node["leaf"])).astype(np.float32)
    return scores


def ranklib_scores(text, X):
    lines = [line.strip() for line in text.splitlines()]
    ensemble = ET.fromstring("".join(line for line in lines if line and not line.startswith("##")))
    assert ensemble.tag == "ensemble"

    def split(element):
        if element[0].tag == "output":
            return None
        feature, threshold, left, right = element
        assert feature.tag == "feature" and threshold.tag == "threshold"
        assert (left.get("pos"), right.get("pos")) == ("left", "right")
        threshold = np.float32(threshold.text.strip())
        return int(feature.text.strip()) - 1, lambda x: x <= threshold, left, right

    X = np.nan_to_num(np.asarray(X, dtype=np.float32), nan=0.0)  # an unknown feature value is 0
    scores = np.zeros(len(X), dtype=np.float32)
    for tree in ensemble.findall("tree"):
        outputs = _leaf_outputs(tree[0], X, split, lambda element: np.float32(element[0].text.strip()))
        # Java: float s += (double output) * (float weight)
        scores = (scores + outputs * np.float64(np.float32(tree.get("weight")))).astype(np.float32)
    return scores


DECISIONS = {"lte": operator.le, "lt": operator.lt, "gt": operator.gt, "gte": operator.ge}


def elasticsearch_scores(request, X):
    body = json.loads(json.dumps(request["body"]))  # what goes over the wire
    assert "learning_to_rank" in body["inference_config"]
    ensemble = body["definition"]["trained_model"]["ensemble"]
    names = ensemble["feature_names"]
    extracted = [e["query_extractor"]["feature_name"] for e in body["inference_config"]["learning_to_rank"][
        "feature_extractors"]]
    assert extracted == names
    # weighted_sum's weights are optional: 1 for every model (as eland writes it).
    weights = ensemble["aggregate_output"]["weighted_sum"].get("weights") or [1.0] * len(ensemble["trained_models"])
    X = np.asarray(X, dtype=np.float64)
    scores = np.zeros(len(X))
    for model, weight in zip(ensemble["trained_models"], weights, strict=True):
        tree = model["tree"]
        assert tree["feature_names"] == names
        nodes = {node["node_index"]: node for node in tree["tree_structure"]}

        def split(node, nodes=nodes):
            if "leaf_value" in node:
                return None
            decide, threshold = DECISIONS[node.get("decision_type", "lte")], node["threshold"]
            default_left = node.get("default_left", True)
            return (node["split_feature"], lambda x: np.where(np.isnan(x), default_left, decide(x, threshold)),
                    nodes[node["left_child"]], nodes[node["right_child"]])

        scores += weight * _leaf_outputs(nodes[0], X, split, lambda node: np.ravel(node["leaf_value"])[0])
    return scores


ACTIVATIONS = {"relu": lambda v: np.maximum(v, np.float32(0)), "identity": lambda v: v,
               "tanh": np.tanh, "sigmoid": lambda v: np.float32(1) / (np.float32(1) + np.exp(-v)),
               "leakyrelu": lambda v: np.where(v >= 0, v, np.float32(0.01) * v)}


def solr_feature_values(upload, X):
    """The feature vector Solr builds: each feature of the store, a ValueFeature its value, the others from X."""
    features = upload["features"]["body"]
    assert [f["name"] for f in features] == [f["name"] for f in upload["model"]["body"]["features"]]
    columns, X = [], np.asarray(X, dtype=np.float32)
    for i, feature in enumerate(features):
        if feature["class"].endswith(".ValueFeature"):
            columns.append(np.full(len(X), feature["params"]["value"], dtype=np.float32))
        else:
            columns.append(X[:, i])
    return [f["name"] for f in features], np.column_stack(columns)


def solr_scores(upload, X):
    body = upload["model"]["body"]
    names, values = solr_feature_values(upload, X)
    kind = body["class"].rsplit(".", 1)[1]
    if kind == "LinearModel":
        weights = np.array([body["params"]["weights"][name] for name in names], dtype=np.float32)
        scores = np.zeros(len(values), dtype=np.float32)
        for column, weight in zip(values.T, weights, strict=True):
            scores = (scores + column * weight).astype(np.float32)
        return scores
    if kind == "NeuralNetworkModel":
        out = values
        for layer in body["params"]["layers"]:
            matrix = np.array(layer["matrix"], dtype=np.float32)
            out = ACTIVATIONS[layer["activation"]]((out @ matrix.T + np.array(layer["bias"], dtype=np.float32))
                                                   .astype(np.float32)).astype(np.float32)
        return out[:, 0]
    assert kind == "MultipleAdditiveTreesModel"

    def split(node):
        if "value" in node:
            return None
        threshold = np.float32(node["threshold"])
        return names.index(node["feature"]), lambda x: x <= threshold, node["left"], node["right"]

    scores = np.zeros(len(values), dtype=np.float32)
    for tree in body["params"]["trees"]:
        outputs = _leaf_outputs(tree["root"], values, split, lambda node: np.float32(node["value"])).astype(np.float32)
        scores = (scores + np.float32(tree["weight"]) * outputs).astype(np.float32)
    return scores


def plugin_linear_scores(upload, X):
    weights = json.loads(upload["model"]["body"]["model"]["model"]["definition"])
    features = [f["name"] for f in upload["featureset"]["body"]["featureset"]["features"]]
    assert features[-1] == "sklearn_ltr_bias"
    assert upload["featureset"]["body"]["featureset"]["features"][-1]["template"] == {
        "constant_score": {"filter": {"match_all": {}}, "boost": 1.0}}
    values = np.column_stack([np.asarray(X, dtype=np.float32), np.ones(len(X), dtype=np.float32)])  # boost 1
    scores = np.zeros(len(X), dtype=np.float32)
    for name, column in zip(features, values.T, strict=True):
        scores = (scores + np.float32(weights[name]) * column).astype(np.float32)
    return scores

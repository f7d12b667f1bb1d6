"""Fractional and large labels wherever a convention counts relevant documents.

A document is relevant when its label is above 0, whatever the label's size: 0.5 counts as a
relevant document and 1000 as one relevant document. A convention written ``label >= 1``
agrees with ``label > 0`` on integer grades only, so every check here feeds labels of 0.5 (and
large ones): the binary metrics, and the empty-query counts and means of ``evaluate`` and
``compare`` under each ``--empty-queries`` rule, checked against the library's metrics.
"""

import json

import numpy as np
import pytest
from cli_helpers import run  # tests/cli_helpers.py

from sklearn_ltr.cli._metrics import empty_queries
from sklearn_ltr.datasets import dump_svmlight_ranking
from sklearn_ltr.metrics import METRICS

# q1: its one relevant document is graded 0.5, ranked second; q2: graded 1, first; q3: none;
# q4: graded 0.25 and 30 (gain 2**30 - 1), q5: none.
QID = np.array([1, 1, 1, 2, 2, 3, 3, 4, 4, 4, 5, 5])
Y = np.array([0, 0.5, 0, 1, 0, 0, 0, 0, 0.25, 30, 0, 0])
SCORES = np.array([.9, .5, .1, .8, .2, .3, .4, .1, .2, .3, .2, .1])
METRIC_SPELLINGS = "ndcg@10,map,mrr,p@2"


def test_a_fractional_or_large_label_makes_a_query_non_empty():
    np.testing.assert_array_equal(empty_queries(Y, QID), [False, False, True, False, True])
    np.testing.assert_array_equal(empty_queries(Y * 1e-6, QID), [False, False, True, False, True])


@pytest.mark.parametrize("name", ["map", "mrr", "precision"])
@pytest.mark.parametrize("scale", [1e-3, 0.5, 7.0, 1e6])
def test_binary_metrics_read_only_whether_a_label_is_above_0(name, scale):
    """MAP, MRR and precision give every positive grade the same weight, fractional or large."""
    binary = (Y > 0).astype(float)
    options = {"k": 2} if name == "precision" else {}
    metric = METRICS[name]
    np.testing.assert_array_equal(metric.per_query(binary * scale, SCORES, QID, **options),
                                  metric.per_query(binary, SCORES, QID, **options))


@pytest.fixture
def files(tmp_path):
    data, scores, other = tmp_path / "test.txt", tmp_path / "scores.txt", tmp_path / "other.txt"
    dump_svmlight_ranking(np.ones((len(Y), 2)), Y, QID, data)
    np.savetxt(scores, SCORES)
    np.savetxt(other, SCORES[::-1])
    return str(data), str(scores), str(other)


def _reference(rule):
    """``{metric: mean}`` from the library's metrics (their defaults), empty queries by ``rule``."""
    empty = np.array([False, False, True, False, True])
    expected = {}
    for key, name, options in (("ndcg@10", "ndcg", {"k": 10}), ("map", "map", {}),
                               ("mrr", "mrr", {}), ("precision@2", "precision", {"k": 2})):
        values = np.asarray(METRICS[name].per_query(Y, SCORES, QID, **options))
        if rule == "zero":
            values = np.where(empty, 0.0, values)
        elif rule == "drop":
            values = values[~empty]
        expected[key] = float(values.mean())
    return expected


@pytest.mark.parametrize("rule", ["default", "zero", "drop"])
def test_evaluate_counts_and_means_with_fractional_labels(capsys, files, rule):
    data, scores, _ = files
    status, out, err = run(capsys, "evaluate", "--data", data, "--scores", scores, "--metrics", METRIC_SPELLINGS,
                           "--empty-queries", rule, "--json")
    assert status == 0, err
    report = json.loads(out)
    assert (report["queries"], report["empty_queries"]) == (5, 2)
    assert report["metrics"] == pytest.approx(_reference(rule), rel=1e-12)
    status, out, err = run(capsys, "evaluate", "--data", data, "--scores", scores, "--metrics", METRIC_SPELLINGS,
                           "--empty-queries", rule)
    assert status == 0, err
    assert "2 of 5 queries have no relevant document (label > 0)" in out


@pytest.mark.parametrize("rule", ["zero", "drop"])
def test_compare_counts_and_means_with_fractional_labels(capsys, files, rule):
    data, scores, other = files
    status, out, err = run(capsys, "compare", "--data", data, "--scores", scores, "--scores", other, "--metrics",
                           "map,mrr", "--resamples", "100", "--empty-queries", rule, "--json")
    assert status == 0, err
    report = json.loads(out)
    assert (report["queries"], report["empty_queries"]) == (5, 2)
    expected = _reference(rule)
    for key in ("map", "mrr"):
        table = report["metrics"][key]
        assert table["n_queries"] == (5 if rule == "zero" else 3)
        assert table["baseline_mean"] == pytest.approx(expected[key], rel=1e-12)


@pytest.mark.parametrize("grade", [0.25, 0.5, 30.0])
def test_subsampled_training_lists_keep_every_relevant_document(grade):
    """max_list_length keeps relevant documents (label > 0) first, a fractional or large grade included."""
    import torch

    from sklearn_ltr._groups import QueryGroups
    from sklearn_ltr.training._batches import QueryBatches, QueryDataset

    labels = np.zeros(40, dtype=np.float32)
    labels[[3, 17, 29, 38]] = grade  # two lists of 20 documents, two relevant in each
    groups = np.repeat([0, 1], 20)
    X = np.arange(40, dtype=np.float32)[:, None]
    dataset = QueryDataset.from_arrays(QueryGroups(groups), X, labels)
    for seed in range(5):
        generator = torch.Generator().manual_seed(seed)
        ((_, kept),) = list(QueryBatches(dataset, 2, shuffle=True, max_list_length=3, generator=generator))
        assert kept.shape == (2, 3)
        np.testing.assert_array_equal(np.sort((kept > 0).sum(axis=1).numpy()), [2, 2])

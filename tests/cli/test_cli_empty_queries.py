"""``evaluate`` says how queries without a relevant document count, and can count them alike."""

import json

import numpy as np
import pytest

from sklearn_ltr.cli import main
from sklearn_ltr.datasets import dump_svmlight_ranking

# Three queries: q1 has a relevant document, q2 and q3 none (all labels 0).
Y = np.array([1, 0, 0, 0, 0, 0, 0])
QID = np.array([1, 1, 2, 2, 2, 3, 3])
SCORES = np.array([0.2, 0.9, 0.5, 0.4, 0.3, 0.2, 0.1])  # q1's relevant document ranks 2nd


@pytest.fixture
def files(tmp_path):
    data, scores = tmp_path / "test.txt", tmp_path / "scores.txt"
    dump_svmlight_ranking(np.ones((len(Y), 2)), Y, QID, data)
    np.savetxt(scores, SCORES)
    return str(data), str(scores)


def _evaluate(files, *options):
    data, scores = files
    return ["evaluate", "--data", data, "--scores", scores, "--metrics", "ndcg@10,map,mrr", *options]


def _json(capsys, files, *options):
    assert main([*_evaluate(files, *options), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_by_hand(files, capsys):
    ndcg_q1 = 1 / np.log2(3)  # the relevant document at rank 2; ideal DCG 1
    ap_q1, rr_q1 = 0.5, 0.5
    default = _json(capsys, files)
    assert default["empty_queries"] == 2 and default["queries"] == 3
    assert default["metrics"]["ndcg@10"] == pytest.approx((ndcg_q1 + 2) / 3)  # empty queries count 1
    assert default["metrics"]["map"] == pytest.approx((ap_q1 + 2) / 3)
    assert default["metrics"]["mrr"] == pytest.approx(rr_q1 / 3)  # ... but 0 in MRR
    zero = _json(capsys, files, "--empty-queries", "zero")["metrics"]
    assert zero == pytest.approx({"ndcg@10": ndcg_q1 / 3, "map": ap_q1 / 3, "mrr": rr_q1 / 3})
    dropped = _json(capsys, files, "--empty-queries", "drop")["metrics"]
    assert dropped == pytest.approx({"ndcg@10": ndcg_q1, "map": ap_q1, "mrr": rr_q1})


def test_the_table_names_the_convention(files, capsys):
    assert main(_evaluate(files)) == 0
    out = capsys.readouterr().out
    assert "2 of 3 queries have no relevant document" in out
    assert "NDCG@10, MAP count them as 1" in out and "MRR as 0" in out
    assert main(_evaluate(files, "--empty-queries", "drop")) == 0
    assert "left out of every metric" in capsys.readouterr().out


def test_no_footnote_without_empty_queries(files, tmp_path, capsys):
    data = tmp_path / "full.txt"
    dump_svmlight_ranking(np.ones((4, 2)), np.array([1, 0, 2, 0]), np.array([1, 1, 2, 2]), data)
    np.savetxt(tmp_path / "s.txt", [0.1, 0.2, 0.3, 0.4])
    assert main(["evaluate", "--data", str(data), "--scores", str(tmp_path / "s.txt")]) == 0
    assert "no relevant document" not in capsys.readouterr().out


def test_drop_with_only_empty_queries_is_an_error(tmp_path, capsys):
    data = tmp_path / "empty.txt"
    dump_svmlight_ranking(np.ones((2, 2)), np.zeros(2), np.array([1, 1]), data)
    np.savetxt(tmp_path / "s.txt", [0.1, 0.2])
    code = main(["evaluate", "--data", str(data), "--scores", str(tmp_path / "s.txt"), "--empty-queries", "drop"])
    assert code == 2 and "leaves none" in capsys.readouterr().err

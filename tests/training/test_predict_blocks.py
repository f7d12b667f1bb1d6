"""Prediction in blocks of whole queries: bounded memory, the same scores."""

import numpy as np
import pytest

from sklearn_ltr import DASALCRanker, RankNetRanker, SetRankRanker
from sklearn_ltr._blocks import query_blocks
from sklearn_ltr._groups import QueryGroups
from sklearn_ltr.datasets import make_ranking
from sklearn_ltr.rankers import _neural


@pytest.mark.parametrize("documents", [1, 5, 17, 10_000])
def test_blocks_hold_whole_queries_once(documents):
    rng = np.random.default_rng(0)
    groups = rng.integers(0, 40, size=600)
    query_groups = QueryGroups(groups)
    blocks = [rows for rows, _ in query_blocks(query_groups, documents)]
    for rows, sizes in query_blocks(query_groups, documents):  # each query's rows, in order
        assert np.array_equal(sizes, [np.count_nonzero(groups[rows] == q) for q in dict.fromkeys(groups[rows])])
    rows = np.concatenate(blocks)
    assert np.array_equal(np.sort(rows), np.arange(len(groups)))  # every row exactly once
    seen = set()
    for block in blocks:
        queries = set(groups[block].tolist())
        assert not queries & seen, "a query is split between blocks"
        seen |= queries
        # At most `documents` rows, plus the rest of the query that crosses the boundary.
        assert len(block) < documents + query_groups.max_size
    if documents >= len(groups):
        assert len(blocks) == 1


@pytest.mark.parametrize("make", [
    lambda: RankNetRanker(hidden_sizes=(8,), max_epochs=2),
    lambda: DASALCRanker(hidden_size=8, n_layers=1, n_attention_layers=1, n_heads=2, head_size=4, max_epochs=2),
    lambda: SetRankRanker(d_model=8, n_blocks=1, n_heads=2, max_epochs=2),
], ids=["RankNet", "DASALC", "SetRank"])
def test_small_blocks_give_the_same_scores(make, monkeypatch):
    X, y, qid = make_ranking(n_queries=25, n_features=5, shuffle=True, random_state=0)
    ranker = make().set_params(device="auto", random_state=0).fit(X, y, groups=qid)
    whole = ranker.predict(X, groups=qid)
    monkeypatch.setattr(_neural, "_PREDICT_DOCUMENTS", 13)  # many blocks, queries longer than a block
    assert len(query_blocks(QueryGroups(qid), 13)) > 5
    # Other blocks pad lists to other lengths: float32 sums may differ in the last bit, as with batch_size.
    np.testing.assert_allclose(ranker.predict(X, groups=qid), whole, rtol=1e-5, atol=1e-6)

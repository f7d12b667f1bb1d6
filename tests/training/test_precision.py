"""Precision (issue: the GPU path as exact as the CPU path): bf16 trains, scores stay float32.

CPU autocast supports bf16, so the bf16 path is exercised here without a GPU: a model trained
with ``precision="bf16-mixed"`` must predict float32 scores (not bf16-rounded ones, which tie
most documents of a list), equal to a float32 forward pass of the same weights.
"""

import numpy as np
import pytest
import torch

from sklearn_ltr import DASALCRanker, RankNetRanker, SetRankRanker
from sklearn_ltr.datasets import make_ranking
from sklearn_ltr.training import PRECISIONS
from sklearn_ltr.training._precision import training_autocast

SMALL = {
    "RankNetRanker": (RankNetRanker, {"hidden_sizes": (16, 8)}),
    "DASALCRanker": (DASALCRanker, {"hidden_size": 16, "n_layers": 1, "n_attention_layers": 1, "n_heads": 2,
                                    "head_size": 4}),
    "SetRankRanker": (SetRankRanker, {"d_model": 16, "n_blocks": 1, "n_heads": 2}),
}


@pytest.fixture(scope="module")
def data():
    return make_ranking(n_queries=60, n_features=10, random_state=0)


def distinct_share(scores):
    """Share of distinct values among the scores (bf16 rounding drives it far below 1)."""
    return len(np.unique(scores)) / len(scores)


def _float32_forward(ranker, X, qid):
    """Scores of the fitted module run by hand in float32, one padded batch of all queries."""
    from sklearn_ltr._groups import QueryGroups

    groups = QueryGroups(qid)
    padded, mask = groups.pad(X.astype(np.float32))
    module = ranker.net_.module_.eval()
    device = next(module.parameters()).device
    with torch.no_grad():
        out = module(torch.as_tensor(padded, device=device), torch.as_tensor(mask, device=device))
    return groups.unpad(out.float().cpu().numpy())


def test_precisions_are_declared():
    assert set(PRECISIONS) == {"32-true", "bf16-mixed"}
    with pytest.raises(ValueError, match="precision must be one of"):
        training_autocast("16-mixed", "cpu")
    with pytest.raises(ValueError, match="precision"):
        RankNetRanker(precision="bf16", max_epochs=1).fit(*make_ranking(n_queries=5, random_state=0)[:2])


def test_bf16_scores_would_tie_documents(data):
    """The failure the policy prevents: bf16-rounded scores leave few distinct values."""
    X, y, qid = data
    ranker = RankNetRanker(**SMALL["RankNetRanker"][1], max_epochs=2, random_state=0).fit(X, y, qid)
    exact = ranker.predict(X)
    rounded = torch.as_tensor(exact).to(torch.bfloat16).double().numpy()
    assert distinct_share(exact) > 0.98
    assert distinct_share(rounded) < 0.5 * distinct_share(exact)


@pytest.fixture(scope="module")
def bf16_models(data):
    X, y, qid = data
    models = {}
    for name, (cls, params) in SMALL.items():
        models[name] = (cls(**params, max_epochs=2, random_state=0, precision="bf16-mixed").fit(X, y, qid),
                        cls(**params, max_epochs=2, random_state=0).fit(X, y, qid))
    return models


@pytest.mark.parametrize("name", sorted(SMALL))
def test_bf16_training_scores_are_not_quantized(data, bf16_models, name):
    X, _, qid = data
    scores = bf16_models[name][0].predict(X, qid)
    assert scores.dtype == np.float64 and np.isfinite(scores).all()
    assert distinct_share(scores) > 0.98  # bf16-rounded scores keep far fewer (test above)


@pytest.mark.parametrize("name", sorted(SMALL))
def test_bf16_training_scores_equal_a_float32_pass_of_the_same_weights(data, bf16_models, name):
    X, _, qid = data
    bf16, fp32 = bf16_models[name]
    scores = bf16.predict(X, qid)
    # bf16 did train: the same seed gives other weights than float32 training ...
    assert np.abs(scores - fp32.predict(X, qid)).max() > 1e-4
    # ... and predict scores them in float32, as a hand-run float32 forward pass does.
    np.testing.assert_allclose(scores, _float32_forward(bf16, X, qid), rtol=1e-5, atol=1e-6)


def test_predict_is_float32_even_inside_a_callers_autocast(data):
    X, y, qid = data
    ranker = RankNetRanker(**SMALL["RankNetRanker"][1], max_epochs=2, random_state=0,
                           precision="bf16-mixed").fit(X, y, qid)
    expected = ranker.predict(X)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        inside = ranker.predict(X)
    np.testing.assert_array_equal(inside, expected)


def test_the_score_head_stays_float32_under_autocast():
    from sklearn_ltr.nn import MLPScorer

    module = MLPScorer(4, hidden_sizes=(8,))
    X, mask = torch.randn(2, 3, 4), torch.ones(2, 3, dtype=torch.bool)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        scores = module(X, mask)
        hidden = module.network[0](X)  # a plain Linear does go bf16 here
    assert scores.dtype == torch.float32 and hidden.dtype == torch.bfloat16

"""approx_t12n: any metric of the ranks made a loss on smooth ranks."""

import math
import pickle

import pytest
import torch

from sklearn_ltr.losses import approx_ndcg, approx_t12n, get_loss
from sklearn_ltr.losses._common import gains, ideal_dcg


def ndcg_of_ranks(ranks, labels, mask):
    gain = gains(labels, mask)
    idcg = ideal_dcg(gain, mask)
    dcg = (gain / torch.log2(1.0 + ranks)).sum(dim=1)
    return torch.where(idcg > 0, dcg / torch.where(idcg > 0, idcg, 1.0), 1.0)


def reciprocal_rank(ranks, labels, mask):
    return torch.where(mask & (labels > 0), 1.0 / ranks, 0.0).amax(dim=1)


def _batch():
    g = torch.Generator().manual_seed(0)
    scores = torch.randn(4, 7, generator=g, dtype=torch.float64)
    labels = torch.randint(0, 4, (4, 7), generator=g).double()
    labels[3] = 0.0  # no relevant document
    mask = torch.arange(7)[None, :] < torch.tensor([7, 5, 3, 4])[:, None]
    scores[~mask] = math.nan
    return scores, labels, mask


def test_minus_approx_ndcg_is_approx_ndcg_minus_1():
    scores, labels, mask = _batch()
    for temperature in (0.1, 1.0):
        a = scores.clone().requires_grad_(True)
        built = approx_t12n(ndcg_of_ranks, temperature=temperature)(a, labels, mask, reduction="none")
        (grad,) = torch.autograd.grad(built.sum(), a)
        b = scores.clone().requires_grad_(True)
        reference = approx_ndcg(b, labels, mask, temperature=temperature, reduction="none")
        (reference_grad,) = torch.autograd.grad(reference.sum(), b)
        # The query without a relevant document: NDCG 1 by ndcg_of_ranks's convention, approx_ndcg 0.
        torch.testing.assert_close(built + 1.0, reference, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(grad, reference_grad, rtol=1e-10, atol=1e-12)


def test_reciprocal_rank_on_sigmoid_ranks_by_hand():
    scores, labels, mask = _batch()
    values = approx_t12n(reciprocal_rank, temperature=0.5)(scores, labels, mask, reduction="none")
    for b in range(4):
        s = scores[b][mask[b]].tolist()
        y = labels[b][mask[b]].tolist()
        ranks = [1 + sum(1 / (1 + math.exp(-(s[j] - s[i]) / 0.5)) for j in range(len(s)) if j != i)
                 for i in range(len(s))]
        expected = max([1 / r for r, v in zip(ranks, y, strict=True) if v > 0], default=0.0)
        assert values[b].item() == pytest.approx(-expected, rel=1e-12)


def test_the_built_loss_pickles_and_binds_like_any_loss():
    loss = approx_t12n(ndcg_of_ranks, temperature=0.3)
    scores, labels, mask = _batch()
    restored = pickle.loads(pickle.dumps(loss))
    assert restored(scores, labels, mask).item() == loss(scores, labels, mask).item()
    weighted = get_loss(loss, reduction="sum", weights=torch.tensor([1.0, 2.0, 0.0, 1.0]))
    values = loss(scores, labels, mask, reduction="none")
    assert weighted(scores, labels, mask).item() == pytest.approx((values * torch.tensor([1, 2, 0, 1])).sum().item())


def test_bad_metric_or_temperature_raise():
    scores, labels, mask = _batch()
    with pytest.raises(ValueError, match="metric must be a callable"):
        approx_t12n("ndcg")
    with pytest.raises(ValueError, match="temperature must be a positive number"):
        approx_t12n(ndcg_of_ranks, temperature=0.0)
    with pytest.raises(ValueError, match=r"one value per query, shape \(4,\); got torch.Size\(\[4, 7\]\)"):
        approx_t12n(lambda ranks, labels, mask: ranks)(scores, labels, mask)

"""The dual learning algorithm of TwoTowerDebiasedRanker(combination="dla") and its loss."""

import math

import numpy as np
import pytest
import torch
from sklearn.preprocessing import StandardScaler

from sklearn_ltr import TwoTowerDebiasedRanker
from sklearn_ltr.datasets import make_ranking, simulate_clicks
from sklearn_ltr.metrics import ndcg_score
from sklearn_ltr.nn import TwoTowerClickLoss, TwoTowerOutput, dual_learning_loss


def test_dla_loss_by_hand():
    r = torch.tensor([[2.0, 0.0, -1.0]])
    o = torch.tensor([[0.0, -1.0, -0.5]])
    clicks = torch.tensor([[0.0, 1.0, 1.0]])
    mask = torch.ones(1, 3, dtype=torch.bool)
    log_r, log_o = torch.log_softmax(r, 1)[0], torch.log_softmax(o, 1)[0]
    # Relevance term: clicks weighted by exp(o_max - o_i) = e^1, e^0.5; observation term by exp(r_max - r_i) = e^2
    # and min(e^3, 20) = 20 (the clip).
    relevance_term = -(math.e * log_r[1] + math.exp(0.5) * log_r[2]) / 2
    observation_term = -(math.exp(2) * log_o[1] + 20.0 * log_o[2]) / 2
    value = dual_learning_loss(r, o, clicks, mask)
    assert value.item() == pytest.approx((relevance_term + observation_term).item(), rel=1e-6)
    # Through the two-tower loss, the same.
    output = TwoTowerOutput(r, o, None)
    assert TwoTowerClickLoss(combination="dla")(output, clicks, mask).item() == pytest.approx(value.item())


def test_dla_weights_are_clipped_and_constant_for_autograd():
    r = torch.tensor([[10.0, 0.0]], requires_grad=True)
    o = torch.tensor([[0.0, 0.0]], requires_grad=True)
    clicks, mask = torch.tensor([[0.0, 1.0]]), torch.ones(1, 2, dtype=torch.bool)
    dual_learning_loss(r, o, clicks, mask, max_weight=20.0).backward()
    # The observation term's weight is min(e^10, 20) = 20: its gradient on o is 20 * (softmax(o) - click).
    assert o.grad[0].tolist() == pytest.approx([10.0, -10.0])
    # The relevance term's weight exp(0) = 1; no gradient reaches r through the observation term's weights.
    expected = torch.softmax(torch.tensor([10.0, 0.0]), 0) - torch.tensor([0.0, 1.0])
    assert r.grad[0].tolist() == pytest.approx(expected.tolist(), abs=1e-6)


def test_lists_without_a_click_and_padding_do_not_count():
    r, o = torch.tensor([[1.0, 0.0, 9.0], [3.0, 2.0, 1.0]]), torch.tensor([[0.0, -1.0, 9.0], [0.0, 0.0, 0.0]])
    clicks = torch.tensor([[1.0, 0.0, 1.0], [0.0, 0.0, 0.0]])
    mask = torch.tensor([[True, True, False], [True, True, True]])
    alone = dual_learning_loss(r[:1, :2], o[:1, :2], clicks[:1, :2], mask[:1, :2])
    assert dual_learning_loss(r, o, clicks, mask).item() == pytest.approx(alone.item())
    weighted = dual_learning_loss(r, o, clicks, mask, weights=torch.tensor([3.0, 5.0]))
    assert weighted.item() == pytest.approx(alone.item())


def test_dla_ranker_learns_relevance_and_a_falling_curve():
    X, y, qid = make_ranking(n_queries=300, n_features=8, random_state=0)
    X = StandardScaler().fit_transform(X)
    train, test = qid < 200, qid >= 200
    rng = np.random.default_rng(0)
    logs = [simulate_clicks(y[train], qid[train], w=0.6, y_max=4, random_state=rng) for _ in range(3)]
    positions = np.concatenate([p for p, _ in logs])
    clicks = np.concatenate([c for _, c in logs])
    sessions = np.concatenate([qid[train] * 10 + s for s in range(3)])
    ranker = TwoTowerDebiasedRanker(hidden_sizes=(16,), combination="dla", max_position=10, lr=3e-3,
                                    observation_lr=3e-2, max_epochs=6, random_state=0)
    ranker.fit(np.tile(X[train], (3, 1)), clicks, sessions, positions=positions)
    chance = ndcg_score(y[test], np.random.default_rng(1).random(test.sum()), qid[test], k=5)
    assert ndcg_score(y[test], ranker.predict(X[test]), qid[test], k=5) > chance + 0.05
    curve = ranker.observation_curve_
    assert curve[0] == 1.0 and curve[1] < 0.8 and curve[4] < curve[1]


def test_lists_are_each_their_own_softmax_and_weighted_in_the_mean():
    r = torch.tensor([[1.0, 0.0, -1.0], [0.5, 2.0, 0.0]])
    o = torch.tensor([[0.0, -0.5, -1.0], [0.0, -1.0, -2.0]])
    clicks = torch.tensor([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]])
    mask = torch.ones(2, 3, dtype=torch.bool)
    first = dual_learning_loss(r[:1], o[:1], clicks[:1], mask[:1])
    second = dual_learning_loss(r[1:], o[1:], clicks[1:], mask[1:])
    both = dual_learning_loss(r, o, clicks, mask, weights=torch.tensor([1.0, 3.0]))
    assert both.item() == pytest.approx((first.item() + 3 * second.item()) / 4)
    assert dual_learning_loss(r, o, clicks, mask).item() == pytest.approx((first.item() + second.item()) / 2)

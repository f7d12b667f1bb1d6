"""Gradient reversal in TwoTowerDebiasedRanker: the adversary's reversed gradient reaches the observation tower."""

import os

import numpy as np
import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from sklearn_ltr.metrics import ndcg_score
from sklearn_ltr.nn._two_tower import TwoTowerScorer, gradient_reversal
from sklearn_ltr.nn._two_tower_loss import ADVERSARY_RIDGE, TwoTowerClickLoss, linear_adversary_loss
from sklearn_ltr.rankers._two_tower import TwoTowerDebiasedRanker

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _ridge_objective(o, t, row, ridge):
    """F(o) = min_b sum_i row_i (b (o_i - mean o) - t~_i)^2 + ridge b^2, in NumPy (float64)."""
    row = row / row.sum()
    t_std = (t - row @ t) / np.sqrt(row @ (t - row @ t) ** 2 + 1e-4)
    centred = o - row @ o
    cov, var = row @ (centred * t_std), row @ centred**2
    return row @ t_std**2 - cov**2 / (var + ridge), cov / (var + ridge), centred, t_std, row


def test_adversary_is_the_exact_ridge_line_and_its_gradient_that_of_its_optimum():
    rng = np.random.default_rng(0)
    mask = torch.tensor([[True] * 6 + [False] * 2, [True] * 8])
    weights = torch.tensor([1.0, 3.0], dtype=torch.float64)
    o = torch.tensor(rng.normal(size=(2, 8)), dtype=torch.float64, requires_grad=True)
    t = torch.tensor(rng.random(size=(2, 8)), dtype=torch.float64)
    loss = linear_adversary_loss(o, t, mask, weights)
    # Row weights of the loss: each query's weight spread over its documents.
    row = (weights[:, None] / mask.sum(1, keepdim=True) * mask).numpy()[mask.numpy()]
    o_rows, t_rows = o.detach().numpy()[mask.numpy()], t.numpy()[mask.numpy()]
    _, slope, centred, t_std, row_n = _ridge_objective(o_rows, t_rows, row, ADVERSARY_RIDGE)
    np.testing.assert_allclose(loss.item(), row_n @ (slope * centred - t_std) ** 2, rtol=1e-10)
    assert 0 < loss.item() <= 1
    # The gradient is that of the adversary's optimal objective F(o) (finite differences),
    # and shifting every logit alike changes nothing (the gradient sums to 0).
    loss.backward()
    grad = o.grad.numpy()[mask.numpy()]
    step = 1e-6
    numeric = [(_ridge_objective(o_rows + step * np.eye(len(o_rows))[i], t_rows, row, ADVERSARY_RIDGE)[0]
                - _ridge_objective(o_rows - step * np.eye(len(o_rows))[i], t_rows, row, ADVERSARY_RIDGE)[0])
               / (2 * step) for i in range(len(o_rows))]
    np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-9)
    assert abs(grad.sum()) < 1e-12
    assert (o.grad.numpy()[~mask.numpy()] == 0).all()


def test_adversary_loss_is_bounded_whatever_the_scale_of_the_logits():
    """A learned, unbounded linear head rewards blowing o up; this adversary's loss cannot exceed 1."""
    mask = torch.ones(1, 6, dtype=torch.bool)
    target = torch.tensor([[1.0, 1.0, 0.0, 0.0, 0.0, 0.0]])
    informative = torch.tensor([[3.0, 2.5, 0.0, -0.5, -1.0, -1.0]])
    losses = [linear_adversary_loss(scale * informative, target, mask).item() for scale in (0.0, 0.1, 1.0, 1e3, 1e6)]
    assert losses[0] == pytest.approx(1.0, abs=1e-3) and all(0 < value <= 1 for value in losses)
    assert losses[1] > losses[2] > losses[3]  # an informative o is easy to read; a flat one is not
    assert losses[3] == pytest.approx(losses[4], abs=1e-6)  # scale-free for a spread-out o


def _observation_gradient(model, X, mask, positions, clicks, weight):
    model.zero_grad()
    model.gradient_reversal = weight
    TwoTowerClickLoss()(model(X, mask, positions=positions), clicks, mask).backward()
    return model.observation[0].weight.grad.clone()


def test_reversed_gradient_reaches_the_observation_tower_and_raises_the_adversary_loss():
    torch.manual_seed(0)
    model = TwoTowerScorer(3, (4,), max_position=5, gradient_reversal=1.0)
    X = torch.randn(4, 5, 3)
    mask = torch.ones(4, 5, dtype=torch.bool)
    positions = torch.arange(1.0, 6.0).repeat(4, 1)
    clicks = (torch.rand(4, 5) < 1 / positions).float()
    with torch.no_grad():  # a confounded start: relevance falls with the position, as the logits do
        model.observation[0].weight.copy_(-torch.arange(5.0)[None])
        model.relevance.network[-1].bias.fill_(0.0)
    plain = _observation_gradient(model, X, mask, positions, clicks, 0.0)
    reversed_ = _observation_gradient(model, X, mask, positions, clicks, 1.0)
    twice = _observation_gradient(model, X, mask, positions, clicks, 2.0)
    adversary = reversed_ - plain  # -1 x the adversary's gradient
    assert adversary.abs().max() > 1e-3
    torch.testing.assert_close(twice - plain, 2 * adversary)

    def adversary_loss():
        with torch.no_grad():
            out = model(X, mask, positions=positions)
            return linear_adversary_loss(out.adversary, torch.sigmoid(out.relevance), mask).item()

    before = adversary_loss()
    with torch.no_grad():  # descend on the reversed term alone: the adversary does worse
        model.observation[0].weight.sub_(0.5 * adversary / adversary.abs().max())
    assert adversary_loss() > before + 1e-3
    # In evaluation mode (validation loss, prediction) there is no adversary.
    model.eval()
    assert model(X, mask, positions=positions).adversary is None


def _uneven_batch():
    """Five queries of uneven lengths and weights: observation logits, targets, mask, query weights."""
    gen = torch.Generator().manual_seed(0)
    mask = torch.arange(6)[None, :] < torch.tensor([6, 2, 5, 3, 4])[:, None]
    o = torch.randn(5, 6, generator=gen, dtype=torch.float64)
    t = (torch.rand(5, 6, generator=gen, dtype=torch.float64) < 0.4).double()
    return o, t, mask, torch.tensor([1.0, 2.0, 0.5, 1.0, 3.0], dtype=torch.float64)


def _sharded_adversary(rank, init_file, out_dir):
    from sklearn_ltr.training._distributed import all_reduce_sum

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=2)
    try:
        o, t, mask, weights = _uneven_batch()
        local = slice(rank, None, 2)  # the queries of this process, as ShardedQueryBatches deals them
        o_local = o[local].clone().requires_grad_()
        share = weights[local].sum() / weights.sum()
        # As during data-parallel training: the statistics of the global batch.
        loss = linear_adversary_loss(o_local, t[local], mask[local], weights[local], reduce_sum=all_reduce_sum) * share
        loss.backward()
        torch.save({"loss": loss.detach(), "grad": o_local.grad}, os.path.join(out_dir, f"rank{rank}.pt"))
    finally:
        dist.destroy_process_group()


def test_data_parallel_adversary_is_that_of_the_global_batch(tmp_path):
    """Each process fits the adversary on the global batch: losses add up, gradients match one process."""
    mp.spawn(_sharded_adversary, args=(str(tmp_path / "init"), str(tmp_path)), nprocs=2, join=True)
    shards = [torch.load(tmp_path / f"rank{rank}.pt") for rank in range(2)]
    o, t, mask, weights = _uneven_batch()
    o.requires_grad_()
    loss = linear_adversary_loss(o, t, mask, weights)
    loss.backward()
    torch.testing.assert_close(shards[0]["loss"] + shards[1]["loss"], loss.detach())
    for rank, shard in enumerate(shards):
        torch.testing.assert_close(shard["grad"], o.grad[rank::2])


def test_reversal_weight_is_the_scale_of_the_reversed_gradient():
    x = torch.tensor([1.0, -2.0], requires_grad=True)
    gradient_reversal(x, 0.0).sum().backward()
    assert (x.grad == 0).all()


@pytest.fixture(scope="module")
def confounded_log(three_page_click_log):
    """A logging ranker that sorts by relevance (w = 1), examination 1/position, three pages per query."""
    return three_page_click_log(w=1.0)


def _adversary_r2(ranker, X, positions):
    """Share of the relevance proxy sigma(r) that the best (ridge) line on o explains, over the whole log."""
    o = torch.tensor(ranker.observation_logit(positions))[None]
    target = torch.sigmoid(torch.tensor(ranker.predict(X)))[None]
    return 1 - linear_adversary_loss(o, target, torch.ones_like(o, dtype=torch.bool)).item()


@pytest.mark.parametrize("seed", [0, 1])
def test_reversal_flattens_the_curve_and_hides_relevance_from_the_adversary(confounded_log, seed):
    """The same fit with and without reversal (same seed): reversal must change what the observation tower learns.

    Measured (seeds 0, 1, 2): curve at position 10 (relative to position 1) 0.04-0.05 without
    reversal, 0.11-0.12 with weight 1 (truth 0.1); the adversary's R^2 0.038-0.054 -> 0.024-0.031;
    test NDCG@5 +0.018 to +0.040.
    """
    (X, clicks, sessions, positions), (X_test, y_test, q_test) = confounded_log
    params = {"hidden_sizes": (16,), "lr": 1e-2, "observation_lr": 3e-2, "max_epochs": 5, "max_position": 10,
              "random_state": seed}
    plain = TwoTowerDebiasedRanker(**params).fit(X, clicks, sessions, positions=positions)
    reversed_ = TwoTowerDebiasedRanker(**params, gradient_reversal=1.0).fit(X, clicks, sessions, positions=positions)
    # A flatter curve: the observation tower absorbs less of the relevance of the top positions.
    assert reversed_.observation_curve_[9] > 1.5 * plain.observation_curve_[9], (
        reversed_.observation_curve_, plain.observation_curve_)
    assert reversed_.observation_curve_[4] > 1.3 * plain.observation_curve_[4]
    # The adversary (the same closed-form line for both) reads less relevance from o.
    plain_r2, reversed_r2 = _adversary_r2(plain, X, positions), _adversary_r2(reversed_, X, positions)
    assert reversed_r2 < 0.75 * plain_r2, (reversed_r2, plain_r2)
    # And the relevance tower ranks the held-out queries better.
    plain_ndcg = ndcg_score(y_test, plain.predict(X_test), q_test, k=5)
    reversed_ndcg = ndcg_score(y_test, reversed_.predict(X_test), q_test, k=5)
    assert reversed_ndcg > plain_ndcg + 0.005, (reversed_ndcg, plain_ndcg)


def test_large_reversal_weight_stays_finite_and_bounded(confounded_log):
    (X, clicks, sessions, positions), _ = confounded_log
    ranker = TwoTowerDebiasedRanker(hidden_sizes=(16,), lr=1e-2, observation_lr=3e-2, max_epochs=5, max_position=10,
                                    random_state=0, gradient_reversal=100.0, reversal_target="clicks")
    ranker.fit(X, clicks, sessions, positions=positions)
    assert np.isfinite(ranker.predict(X)).all()
    assert np.abs(ranker.observation_logits_).max() < 20, ranker.observation_logits_
    assert np.isfinite([row["train_loss"] for row in ranker.history_]).all()

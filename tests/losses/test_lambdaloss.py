"""LambdaLoss, the pairwise hinge and the squared error against their papers' formulas, pair by pair in Python."""

import itertools
import math

import numpy as np
import pytest
import torch

from sklearn_ltr.losses import WEIGHING_SCHEMES, hinge, lambdaloss, lambdarank, mean_squared_error, ranknet

LN2 = math.log(2.0)
LOSS1 = ("ndcg_loss1", "arp_loss1")


def softplus(x):
    return max(x, 0.0) + math.log1p(math.exp(-abs(x)))


def sigmoid(x):
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


def t(rows):
    return torch.tensor(rows, dtype=torch.float64)


def brute_lambdaloss(s, y, scheme, k=None, sigma=1.0, mu=10.0, gain=lambda v: 2.0**v - 1.0):
    """Wang et al. (2018), one list: value and gradient, summing the pairs one by one.

    Ranks by decreasing score, ties by position; G_i = gain / IDCG@k; D_i = log2(1 + r_i);
    pairs y_i > y_j (Loss1 schemes: every ordered pair, j = i included), both in the top k.
    """
    n = len(s)
    order = sorted(range(n), key=lambda i: (-s[i], i))
    rank = [0] * n
    for r, i in enumerate(order, start=1):
        rank[i] = r
    ideal = sorted(y, reverse=True)
    idcg = sum(gain(ideal[r]) / math.log2(r + 2.0) for r in range(n if k is None else min(k, n)))
    big_g = [gain(v) / idcg if idcg > 0 else 0.0 for v in y]
    big_d = [math.log2(1.0 + rank[i]) for i in range(n)]

    def delta(i, j):
        d = abs(rank[i] - rank[j])
        return 1.0 / math.log2(1.0 + d) - 1.0 / math.log2(2.0 + d)

    def weight(i, j):
        gap = abs(big_g[i] - big_g[j])
        if scheme == "ndcg_loss1":
            return big_g[i] / big_d[i]
        if scheme == "arp_loss1":
            return max(y[i], 0.0)
        if scheme == "ndcg_loss2":
            return delta(i, j) * gap
        if scheme == "ndcg_loss2pp":
            return (mu * delta(i, j) + abs(1.0 / big_d[i] - 1.0 / big_d[j])) * gap
        if scheme == "lambdarank":
            return abs(1.0 / big_d[i] - 1.0 / big_d[j]) * gap
        if scheme == "arp_loss2":
            return abs(max(y[i], 0.0) - max(y[j], 0.0))
        assert scheme == "ranknet"
        return 1.0

    value, grad = 0.0, [0.0] * n
    for i, j in itertools.product(range(n), repeat=2):
        if k is not None and (rank[i] > k or rank[j] > k):
            continue
        if scheme not in LOSS1 and not y[i] > y[j]:
            continue
        w = weight(i, j)
        o = sigma * (s[i] - s[j])
        value += w * softplus(-o) / LN2  # -log2 sigmoid(o)
        pull = w * sigma * sigmoid(-o) / LN2
        if i != j:
            grad[i] -= pull
            grad[j] += pull
    return value, grad


def random_lists(seed, n_lists=5, max_length=8, labels=4):
    """Lists of random lengths (1 to max_length), distinct scores on a grid, labels with ties."""
    rng = np.random.default_rng(seed)
    lists = []
    for _ in range(n_lists):
        n = int(rng.integers(1, max_length + 1))
        s = (rng.permutation(np.arange(-40, 41))[:n] / 8.0).tolist()
        y = rng.integers(0, labels, n).astype(float).tolist()
        lists.append((s, y))
    return lists


def pad(lists, width=None, fill=float("nan")):
    width = width or max(len(s) for s, _ in lists)
    scores = torch.full((len(lists), width), fill, dtype=torch.float64)
    labels = torch.full((len(lists), width), -1.0, dtype=torch.float64)
    mask = torch.zeros(len(lists), width, dtype=torch.bool)
    for b, (s, y) in enumerate(lists):
        scores[b, : len(s)], labels[b, : len(s)], mask[b, : len(s)] = t(s), t(y), True
    return scores, labels, mask


def value_and_grad(loss, scores, labels, mask=None, **options):
    scores = scores.detach().clone().requires_grad_(True)
    value = loss(scores, labels, mask, **options)
    (grad,) = torch.autograd.grad(value.sum(), scores)
    return value.detach(), grad


# ---------------------------------------------------------------- LambdaLoss


@pytest.mark.parametrize("sigma", [1.0, 2.5])
@pytest.mark.parametrize("k", [None, 1, 3])
@pytest.mark.parametrize("scheme", WEIGHING_SCHEMES)
def test_every_scheme_is_the_paper_formula_pair_by_pair(scheme, k, sigma):
    for seed in range(4):
        lists = random_lists(seed)
        scores, labels, mask = pad(lists, width=10)
        values, grad = value_and_grad(
            lambdaloss, scores, labels, mask, weighing_scheme=scheme, k=k, sigma=sigma, mu=3.0, reduction="none"
        )
        for b, (s, y) in enumerate(lists):
            expected, expected_grad = brute_lambdaloss(s, y, scheme, k=k, sigma=sigma, mu=3.0)
            assert values[b].item() == pytest.approx(expected, rel=1e-10, abs=1e-12), (seed, b)
            torch.testing.assert_close(grad[b, : len(s)], t(expected_grad), rtol=1e-9, atol=1e-12)
            assert torch.all(grad[b, len(s) :] == 0)


@pytest.mark.parametrize("scheme", WEIGHING_SCHEMES)
def test_ties_in_score_are_ranked_by_position(scheme):
    s, y = [0.5, 0.5, 0.5, -1.0, 0.5], [0.0, 2.0, 1.0, 3.0, 2.0]
    for k in (None, 2):
        value = lambdaloss(t([s]), t([y]), weighing_scheme=scheme, k=k)
        assert value.item() == pytest.approx(brute_lambdaloss(s, y, scheme, k=k)[0], rel=1e-10, abs=1e-12)


@pytest.mark.parametrize("scheme", WEIGHING_SCHEMES)
def test_permuting_a_list_permutes_the_gradient(scheme):
    (s, y), = random_lists(11, n_lists=1, max_length=8)
    s, y = [*s, 2.5, -3.0], [*y, 3.0, 0.0]
    perm = np.random.default_rng(0).permutation(len(s)).tolist()
    for k in (None, 3):
        value, grad = value_and_grad(lambdaloss, t([s]), t([y]), weighing_scheme=scheme, k=k)
        p_value, p_grad = value_and_grad(
            lambdaloss, t([[s[i] for i in perm]]), t([[y[i] for i in perm]]), weighing_scheme=scheme, k=k
        )
        torch.testing.assert_close(p_value, value, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(p_grad[0], grad[0, perm], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("scheme", WEIGHING_SCHEMES)
def test_garbage_and_extra_padding_change_nothing(scheme):
    lists = random_lists(5)
    scores, labels, mask = pad(lists, width=8)
    value, grad = value_and_grad(lambdaloss, scores.nan_to_num(0.0), labels, mask, weighing_scheme=scheme, k=3)
    wide_scores, wide_labels, wide_mask = pad(lists, width=13, fill=float("inf"))
    wide_labels[~wide_mask] = 1e30  # a padded label above every real one: neither a gain nor an IDCG term
    wide_value, wide_grad = value_and_grad(lambdaloss, wide_scores, wide_labels, wide_mask, weighing_scheme=scheme, k=3)
    torch.testing.assert_close(wide_value, value, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(wide_grad[:, :8], grad, rtol=1e-12, atol=1e-12)
    assert torch.all(wide_grad[:, 8:] == 0)


@pytest.mark.parametrize("scheme", WEIGHING_SCHEMES)
def test_documents_below_k_get_no_gradient(scheme):
    s = [0.3, 2.0, -1.0, 1.2, -0.4, 0.9, -2.0]
    y = [1.0, 0.0, 3.0, 2.0, 4.0, 0.0, 1.0]
    _, grad = value_and_grad(lambdaloss, t([s]), t([y]), weighing_scheme=scheme, k=3)
    below = [i for i in range(7) if sorted(s, reverse=True).index(s[i]) >= 3]
    assert torch.all(grad[0, below] == 0)
    assert grad[0].abs().sum() > 0


def test_list_of_one_and_label_ties_give_the_loss1_constant_else_0():
    for scheme in WEIGHING_SCHEMES:
        value, grad = value_and_grad(lambdaloss, t([[0.7]]), t([[3.0]]), weighing_scheme=scheme)
        # j = i: log2(1 + e^0) = 1 bit, times G_1 / D_1 = 1 (NDCG-Loss1) or y_1 = 3 (ARP-Loss1).
        expected = {"ndcg_loss1": 1.0, "arp_loss1": 3.0}.get(scheme, 0.0)
        assert value.item() == pytest.approx(expected, abs=1e-12)
        assert grad.item() == 0.0
        tied = lambdaloss(t([[0.7, -0.2, 1.5]]), t([[2.0, 2.0, 2.0]]), weighing_scheme=scheme)
        if scheme not in LOSS1:
            assert tied.item() == 0.0


def test_arp_loss1_bounds_the_average_relevance_position():
    for seed in range(6):
        for s, y in random_lists(seed, n_lists=3):
            order = sorted(range(len(s)), key=lambda i: (-s[i], i))
            arp = sum(y[i] * (order.index(i) + 1) for i in range(len(s)))  # sum_i y_i rank_i
            for sigma in (0.5, 1.0, 4.0):
                value = lambdaloss(t([s]), t([y]), weighing_scheme="arp_loss1", sigma=sigma).item()
                assert value >= arp - 1e-12


def test_arp_schemes_read_the_labels_clipped_at_0():
    # ARP weighs positions by relevance; a negative label would make the loss unbounded below.
    scores = t([[0.3, -1.2, 0.8, 0.1]])
    for scheme in ("arp_loss1", "arp_loss2"):
        negative = lambdaloss(scores, t([[-2.0, 0.0, 1.0, -0.5]]), weighing_scheme=scheme)
        clipped = lambdaloss(scores, t([[0.0, 0.0, 1.0, 0.0]]), weighing_scheme=scheme)
        assert negative.item() == pytest.approx(clipped.item(), rel=1e-12) and negative.item() > 0


def test_lambdarank_and_ranknet_schemes_are_the_library_losses_in_bits():
    lists = random_lists(7, n_lists=6)
    scores, labels, mask = pad(lists)
    scores = scores.nan_to_num(0.0)
    value, grad = value_and_grad(lambdaloss, scores, labels, mask, weighing_scheme="lambdarank", sigma=1.5)
    expected, expected_grad = value_and_grad(lambdarank, scores, labels, mask, sigma=1.5)
    torch.testing.assert_close(value * LN2, expected, rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(grad * LN2, expected_grad, rtol=1e-10, atol=1e-14)
    # RankNet averages its pairs; the LambdaLoss RankNet scheme sums them.
    pairs = ((labels[:, :, None] > labels[:, None, :]) & mask[:, :, None] & mask[:, None, :]).sum(dim=(1, 2))
    per_query = lambdaloss(scores, labels, mask, weighing_scheme="ranknet", reduction="none")
    mean = ranknet(scores, labels, mask, include_ties=False, reduction="none")
    torch.testing.assert_close(per_query * LN2, mean * pairs, rtol=1e-12, atol=1e-14)


def test_ndcg_loss2pp_is_mu_ndcg_loss2_plus_lambdarank():
    scores, labels, mask = pad(random_lists(9))
    scores = scores.nan_to_num(0.0)
    for k in (None, 4):
        both = lambdaloss(scores, labels, mask, weighing_scheme="ndcg_loss2pp", mu=2.5, k=k, reduction="none")
        loss2 = lambdaloss(scores, labels, mask, weighing_scheme="ndcg_loss2", k=k, reduction="none")
        lambda_ = lambdaloss(scores, labels, mask, weighing_scheme="lambdarank", k=k, reduction="none")
        torch.testing.assert_close(both, 2.5 * loss2 + lambda_, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("scheme", ["ndcg_loss1", "ndcg_loss2", "ndcg_loss2pp", "lambdarank"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_huge_labels_give_the_formula_with_scaled_gains(scheme, dtype):
    s, y = [1.0, 0.0, -0.5, 0.25], [1000.0, 0.0, 999.0, 1000.5]

    top = max(y)

    def scaled(v):  # (2**v - 1) / 2**top, from logarithms
        return math.exp((v - top) * LN2 + math.log1p(-math.exp(-v * LN2))) if v > 0 else 0.0

    value, grad = value_and_grad(lambdaloss, t([s]).to(dtype), t([y]).to(dtype), weighing_scheme=scheme)
    expected, expected_grad = brute_lambdaloss(s, y, scheme, gain=scaled)
    rtol = 1e-9 if dtype == torch.float64 else 1e-5
    assert torch.isfinite(value) and torch.isfinite(grad).all()
    assert value.item() == pytest.approx(expected, rel=rtol)
    torch.testing.assert_close(grad[0].double(), t(expected_grad), rtol=rtol, atol=1e-6)


def test_bad_options_name_the_argument():
    scores, labels = torch.zeros(1, 3), torch.tensor([[1.0, 0.0, 2.0]])
    with pytest.raises(ValueError, match=r"weighing_scheme must be one of \['ndcg_loss1', 'ndcg_loss2', "):
        lambdaloss(scores, labels, weighing_scheme="NDCG-Loss2++")
    with pytest.raises(ValueError, match="mu must be a positive number; got 0"):
        lambdaloss(scores, labels, mu=0)
    with pytest.raises(ValueError, match=r"k must be None or a positive integer; got 2\.5"):
        lambdaloss(scores, labels, k=2.5)


# ---------------------------------------------------------------- hinge and squared error


def brute_hinge(s, y, margin=1.0, click_weights=None):
    pairs = [(i, j) for i, j in itertools.permutations(range(len(s)), 2) if y[i] > y[j]]
    if not pairs:
        return 0.0, [0.0] * len(s)
    value, grad = 0.0, [0.0] * len(s)
    for i, j in pairs:
        w = 1.0
        if click_weights is not None:  # the clicked document's weight, the larger of two
            w = max(click_weights[m] if y[m] > 0 else 1.0 for m in (i, j))
        slack = margin - (s[i] - s[j])
        if slack > 0:
            value += w * slack
            grad[i] -= w / len(pairs)
            grad[j] += w / len(pairs)
    return value / len(pairs), grad


@pytest.mark.parametrize("margin", [0.25, 1.0, 3.0])
def test_hinge_is_the_ranksvm_risk_pair_by_pair(margin):
    for seed in range(5):
        lists = random_lists(seed)
        scores, labels, mask = pad(lists)
        values, grad = value_and_grad(hinge, scores, labels, mask, margin=margin, reduction="none")
        for b, (s, y) in enumerate(lists):
            expected, expected_grad = brute_hinge(s, y, margin)
            assert values[b].item() == pytest.approx(expected, rel=1e-12, abs=1e-14)
            torch.testing.assert_close(grad[b, : len(s)], t(expected_grad), rtol=1e-12, atol=1e-14)


def test_hinge_with_click_weights_is_propensity_svm_rank():
    s, clicks = [0.4, 1.0, -0.3, 0.2, 0.9], [1.0, 0.0, 0.0, 1.0, 0.0]
    weights = [3.0, 7.0, 9.0, 1.5, 2.0]  # the non-clicks' weights are never read
    value, grad = value_and_grad(hinge, t([s]), t([clicks]), click_weights=t([weights]))
    expected, expected_grad = brute_hinge(s, clicks, click_weights=weights)
    assert value.item() == pytest.approx(expected, rel=1e-12)
    torch.testing.assert_close(grad[0], t(expected_grad), rtol=1e-12, atol=1e-14)
    ones = hinge(t([s]), t([clicks]), click_weights=torch.ones(1, 5, dtype=torch.float64))
    assert ones.item() == hinge(t([s]), t([clicks])).item()


def test_mse_is_the_mean_squared_error_of_each_query():
    lists = random_lists(3)
    scores, labels, mask = pad(lists)
    values, grad = value_and_grad(mean_squared_error, scores, labels, mask, reduction="none")
    for b, (s, y) in enumerate(lists):
        n = len(s)
        assert values[b].item() == pytest.approx(sum((a - c) ** 2 for a, c in zip(s, y, strict=True)) / n, rel=1e-12)
        expected_grad = [2 * (a - c) / n for a, c in zip(s, y, strict=True)]
        torch.testing.assert_close(grad[b, :n], t(expected_grad), rtol=1e-12, atol=1e-14)


# ---------------------------------------------------------------- in a ranker


def test_rankers_take_the_new_losses_by_name():
    from sklearn_ltr import RankNetRanker
    from sklearn_ltr.datasets import make_ranking

    X, y, qid = make_ranking(n_queries=12, n_features=4, random_state=0)
    for loss, params in [("lambdaloss", {"weighing_scheme": "ndcg_loss1", "k": 5}), ("RankSVM", {"margin": 0.5}),
                         ("mse", None)]:
        ranker = RankNetRanker(hidden_sizes=(4,), loss=loss, loss_params=params, max_epochs=1, random_state=0)
        scores = ranker.fit(X, y, groups=qid).predict(X)
        assert scores.shape == y.shape and np.isfinite(scores).all()
    with pytest.raises(ValueError, match="weighing_scheme must be one of"):
        RankNetRanker(loss="lambdaloss", loss_params={"weighing_scheme": "nope"}, max_epochs=1).fit(X, y, groups=qid)

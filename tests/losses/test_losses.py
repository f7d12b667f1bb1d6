"""Ranking losses: one contract suite over every registered loss, hand-computed values, properties."""

import functools
import inspect
import itertools
import math
import pickle

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn_ltr.losses import (
    ALIASES,
    LOSSES,
    approx_ndcg,
    attention_rank,
    get_loss,
    gumbel_approx_ndcg,
    gumbel_loss,
    gumbel_neuralsort_ndcg,
    hinge,
    lambdaloss,
    lambdarank,
    listmle,
    mean_squared_error,
    neuralsort_ndcg,
    ranknet,
    sigmoid_cross_entropy,
    softmax_cross_entropy,
)
from sklearn_ltr.losses._common import gains

ALL = sorted(LOSSES)
GUMBEL = {"gumbel_approx_ndcg", "gumbel_neuralsort_ndcg"}
#: Losses whose value does not move when every score of a list moves by the same amount.
SHIFT_INVARIANT = sorted(set(ALL) - {"sigmoid_ce", "mse"})
LN2 = math.log(2.0)


# ---------------------------------------------------------------- helpers


def call(name, scores, labels, mask=None, seed=0, **options):
    """Call a registered loss; stochastic ones get a generator seeded with ``seed``."""
    function = LOSSES[name]
    if "generator" in inspect.signature(function).parameters:
        options.setdefault("generator", torch.Generator(device=scores.device).manual_seed(seed))
    return function(scores, labels, mask, **options)


def value_and_grad(name, scores, labels, mask=None, **options):
    scores = scores.detach().clone().requires_grad_(True)
    value = call(name, scores, labels, mask, **options)
    (grad,) = torch.autograd.grad(value.sum(), scores)  # the sum of the values with reduction="none"
    return value.detach(), grad


def t(rows, dtype=torch.float64):
    return torch.tensor(rows, dtype=dtype)


def sigmoid(x):
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


def softplus(x):
    return max(x, 0.0) + math.log1p(math.exp(-abs(x)))


def gumbel_like(shape, seed, n_samples=1, dtype=torch.float64):
    """The noise the Gumbel losses draw: -log(-log(U)), U = torch.rand((n_samples, *shape)), as float64."""
    u = torch.rand((n_samples, *shape), generator=torch.Generator().manual_seed(seed), dtype=dtype)
    return -torch.log(-torch.log(u)).double()


def exp_gain(label):
    """The unscaled exponential gain 2**y - 1 (overflows from y = 1024)."""
    return 2.0**label - 1.0


def scaled_gain(label, top):
    """(2**y - 1) / 2**m, m = max(top, 0), in float64 from logarithms (no 2**y anywhere)."""
    m = max(top, 0.0)
    if label > 0:  # 2**(y - m) * (1 - 2**-y)
        return math.exp((label - m) * LN2 + math.log1p(-math.exp(-label * LN2)))
    return math.exp(-m * LN2) * math.expm1(label * LN2)  # 0 for y = 0


def dcg_at(labels_in_rank_order, k=None, gain=exp_gain):
    n = len(labels_in_rank_order) if k is None else min(k, len(labels_in_rank_order))
    return sum(gain(labels_in_rank_order[r]) / math.log2(r + 2.0) for r in range(n))


def ndcg(scores, labels, k=None):
    """Plain-Python NDCG@k: rank by decreasing score, ties by position; None when IDCG is 0."""
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
    ideal = dcg_at(sorted(labels, reverse=True), k)
    return dcg_at([labels[i] for i in order], k) / ideal if ideal > 0 else None


def hand_ranknet_pair(si, sj, yi, yj, sigma=1.0):
    """Burges' C_ij = (1 - S_ij) sigma (s_i - s_j) / 2 + log(1 + exp(-sigma (s_i - s_j)))."""
    s_ij = (yi > yj) - (yi < yj)
    d = si - sj
    return 0.5 * (1 - s_ij) * sigma * d + softplus(-sigma * d)


def hand_approx_loss(s, y, temperature, gain=exp_gain):
    n = len(s)
    ranks = [1 + sum(sigmoid((s[j] - s[i]) / temperature) for j in range(n) if j != i) for i in range(n)]
    idcg = dcg_at(sorted(y, reverse=True), gain=gain)
    dcg = sum(gain(y[i]) / math.log2(1.0 + ranks[i]) for i in range(n))
    return 1.0 - dcg / idcg if idcg > 0 else 0.0


def hand_neural_loss(s, y, tau, sinkhorn_rounds, k=None, gain=exp_gain):
    n = len(s)
    spread = [sum(abs(s[j] - s[m]) for m in range(n)) for j in range(n)]
    p = []
    for r in range(1, n + 1):
        logits = [((n + 1 - 2 * r) * s[j] - spread[j]) / tau for j in range(n)]
        top = max(logits)
        weights = [math.exp(v - top) for v in logits]
        p.append([w / sum(weights) for w in weights])
    for _ in range(sinkhorn_rounds):
        columns = [sum(p[r][j] for r in range(n)) for j in range(n)]
        p = [[p[r][j] / columns[j] for j in range(n)] for r in range(n)]
        p = [[v / sum(row) for v in row] for row in p]
    gains = [gain(v) for v in y]
    sorted_gains = [sum(p[r][j] * gains[j] for j in range(n)) for r in range(n)]
    top_k = n if k is None else min(k, n)
    dcg = sum(sorted_gains[r] / math.log2(r + 2.0) for r in range(top_k))
    idcg = dcg_at(sorted(y, reverse=True), k, gain=gain)
    return 1.0 - dcg / idcg if idcg > 0 else 0.0


# ---------------------------------------------------------------- hand-computed values

S3, Y3 = [1.0, 0.0, -0.5], [2.0, 0.0, 1.0]


def _hand_values():
    s, y = S3, Y3
    lse = math.log(sum(math.exp(v) for v in s))
    idcg = 3.0 + 1.0 / math.log2(3.0)
    pairs = [(0, 1), (0, 2), (1, 2)]
    ranknet_costs = [hand_ranknet_pair(s[i], s[j], y[i], y[j]) for i, j in pairs]
    # Current ranks are 1, 2, 3 (scores already decreasing); discounts 1, 1/log2(3), 1/2.
    disc = [1.0, 1.0 / math.log2(3.0), 0.5]
    gain = [2.0**v - 1.0 for v in y]
    delta = [abs(gain[i] - gain[j]) * abs(disc[i] - disc[j]) / idcg for i, j in pairs]
    # ListMLE: label order 0 (y=2), 2 (y=1), 1 (y=0).
    ordered = [s[0], s[2], s[1]]
    listmle_value = sum(math.log(sum(math.exp(v) for v in ordered[r:])) - ordered[r] for r in range(3))
    psi = [math.exp(v) if v > 0 else 0.0 for v in y]
    a_y = [v / sum(psi) for v in psi]
    a_s = [math.exp(v - lse) for v in s]
    # LambdaLoss, NDCG-Loss2++ (mu = 10): the pairs (0, 1), (0, 2), (2, 1) by decreasing label, ranks
    # 1, 2, 3 in the order 0, 1, 2; delta(|r_i - r_j|) = 1 / log2(1 + d) - 1 / log2(2 + d); costs in bits.
    g = [v / idcg for v in gain]
    ll_pairs = [(0, 1), (0, 2), (2, 1)]
    ll_delta = {1: 1.0 - 1.0 / math.log2(3.0), 2: 1.0 / math.log2(3.0) - 0.5}
    ll_ranks = [1, 2, 3]
    ll_value = sum(
        (10 * ll_delta[abs(ll_ranks[i] - ll_ranks[j])] + abs(disc[i] - disc[j])) * abs(g[i] - g[j])
        * softplus(-(s[i] - s[j])) / LN2
        for i, j in ll_pairs
    )
    return {
        "lambdaloss": ({}, ll_value),
        "lambdaloss_lambdarank": (
            {"weighing_scheme": "lambdarank"},
            sum(w * c for w, c in zip(delta, ranknet_costs, strict=True)) / LN2,
        ),
        # hinge, margin 1: s_0 - s_1 = 1 (0), s_0 - s_2 = 1.5 (0), s_2 - s_1 = -0.5 (1.5); margin 2: 1, 0.5, 2.5.
        "hinge": ({}, 1.5 / 3),
        "hinge_margin": ({"margin": 2.0}, (1.0 + 0.5 + 2.5) / 3),
        "mse": ({}, ((1.0 - 2.0) ** 2 + 0.0 + (-0.5 - 1.0) ** 2) / 3),
        "sigmoid_ce": ({}, (softplus(-1.0) + softplus(0.0) + softplus(0.5)) / 3),
        "sigmoid_ce_graded": (
            {"max_label": 4},
            sum(softplus(v) - t_ * v for v, t_ in zip(s, [0.5, 0.0, 0.25], strict=True)) / 3,
        ),
        "ranknet": ({}, sum(ranknet_costs) / 3),
        "ranknet_sigma": (
            {"sigma": 2.0},
            sum(hand_ranknet_pair(s[i], s[j], y[i], y[j], sigma=2.0) for i, j in pairs) / 3,
        ),
        "lambdarank": ({}, sum(w * c for w, c in zip(delta, ranknet_costs, strict=True))),
        # k=1: only the top discount survives; IDCG@1 = 3.
        "lambdarank_k1": ({"k": 1}, (3.0 * ranknet_costs[0] + 2.0 * ranknet_costs[1]) / 3.0),
        "softmax": ({}, -(2 / 3 * (s[0] - lse) + 1 / 3 * (s[2] - lse))),
        "softmax_listnet": (
            {"target": "softmax"},
            -sum(math.exp(y[i]) / sum(math.exp(v) for v in y) * (s[i] - lse) for i in range(3)),
        ),
        "listmle": ({}, listmle_value),
        "approx_ndcg": ({"temperature": 0.5}, hand_approx_loss(s, y, 0.5)),
        "neuralsort_ndcg": ({"sinkhorn_iters": 500, "tol": 1e-13}, hand_neural_loss(s, y, 1.0, 500)),
        "neuralsort_ndcg_raw": ({"sinkhorn_iters": 0, "temperature": 0.5}, hand_neural_loss(s, y, 0.5, 0)),
        "neuralsort_ndcg_k2": (
            {"sinkhorn_iters": 500, "tol": 1e-13, "k": 2},
            hand_neural_loss(s, y, 1.0, 500, k=2),
        ),
        "attention_rank": (
            {},
            -sum(a_y[i] * math.log(a_s[i]) + (1 - a_y[i]) * math.log(1 - a_s[i]) for i in range(3)),
        ),
        "attention_rank_released": ({"complement": False}, -sum(a_y[i] * math.log(a_s[i]) for i in range(3))),
    }


HAND = _hand_values()


@pytest.mark.parametrize("case", sorted(HAND))
def test_hand_computed_value(case):
    options, expected = HAND[case]
    name = case if case in LOSSES else next(n for n in sorted(LOSSES, key=len, reverse=True) if case.startswith(n))
    value = call(name, t([S3]), t([Y3]), **options)
    assert value.item() == pytest.approx(expected, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("name", sorted(GUMBEL))
def test_gumbel_losses_are_their_base_loss_on_perturbed_scores(name):
    # Hand value: the base formula on s + g, g the Gumbel noise of the same generator.
    scores, labels = t([S3]), t([Y3])
    noise = gumbel_like(scores.shape, seed=7, n_samples=3)
    perturbed = (scores + noise).tolist()
    if name == "gumbel_approx_ndcg":
        expected = sum(hand_approx_loss(p[0], Y3, 0.5) for p in perturbed) / 3
        options = {"temperature": 0.5}
    else:
        expected = sum(hand_neural_loss(p[0], Y3, 1.0, 500) for p in perturbed) / 3
        options = {"sinkhorn_iters": 500, "tol": 1e-13}
    value = call(name, scores, labels, seed=7, n_samples=3, **options)
    assert value.item() == pytest.approx(expected, rel=1e-9)


#: The Gumbel losses' values before they were defined through :func:`gumbel_loss`, on
#: ``_random_batch(12)`` with a generator seeded with 5: (name, dtype, options, value, sum of the
#: gradient times 1, 2, 3, ... in row-major order).
GUMBEL_PINNED = [
    ("gumbel_approx_ndcg", torch.float64, {}, 0.272997838163631, 0.07034137629255008),
    (
        "gumbel_approx_ndcg",
        torch.float64,
        {"n_samples": 4, "temperature": 0.5},
        0.2854904109325779,
        -0.04601156239189973,
    ),
    ("gumbel_approx_ndcg", torch.float32, {"n_samples": 3}, 0.1381651759147644, -0.06615699827671051),
    ("gumbel_neuralsort_ndcg", torch.float64, {}, 0.24269016945686672, -0.029721954174916854),
    (
        "gumbel_neuralsort_ndcg",
        torch.float64,
        {"n_samples": 4, "k": 3, "temperature": 0.5},
        0.40562565757025715,
        -0.07026384146533832,
    ),
    ("gumbel_neuralsort_ndcg", torch.float32, {"n_samples": 3}, 0.13879729807376862, -0.013352282345294952),
]


@pytest.mark.parametrize(("name", "dtype", "options", "value", "weighted_grad"), GUMBEL_PINNED)
def test_gumbel_losses_keep_their_pinned_values(name, dtype, options, value, weighted_grad):
    scores, labels, mask = _random_batch(12, dtype=dtype)
    got, grad = value_and_grad(name, scores, labels, mask, seed=5, **options)
    position = torch.arange(1, grad.numel() + 1, dtype=dtype).reshape(grad.shape)
    # Pinned to the last few bits only: BLAS/SIMD paths differ across CPUs (and GPUs) by an ulp or two.
    rel = 1e-12 if dtype == torch.float64 else 1e-6
    assert got.item() == pytest.approx(value, rel=rel, abs=0)
    # The weighted sum cancels (gradients of both signs): its rounding error scales with the sum of
    # the terms' magnitudes, not with the result (measured 2.8e-6 relative to the result on one CPU).
    eps = torch.finfo(dtype).eps
    magnitude = (grad * position).abs().sum().item()
    assert (grad * position).sum().item() == pytest.approx(weighted_grad, rel=0, abs=64 * eps * magnitude)


def test_ranknet_ties_count_as_zero_target():
    s, y = t([[0.3, -0.2]]), t([[1.0, 1.0]])
    assert ranknet(s, y).item() == pytest.approx(0.25 + softplus(-0.5), rel=1e-12)
    assert ranknet(s, y).item() == pytest.approx(math.log(2 * math.cosh(0.25)), rel=1e-12)
    assert ranknet(s, y, include_ties=False).item() == 0.0


# ---------------------------------------------------------------- the contract suite


def _random_batch(seed, batch=4, length=7, dtype=torch.float64):
    """Scores, graded labels (with ties) and a mask: lists of length, length - 2, 3 and 1."""
    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(batch, length, generator=g, dtype=dtype)
    labels = torch.randint(0, 5, (batch, length), generator=g).to(dtype)
    lengths = torch.tensor([length, length - 2, 3, 1][:batch])
    mask = torch.arange(length)[None, :] < lengths[:, None]
    return scores, labels, mask


#: Options that make a loss deterministic and independent of the batch's shape.
DETERMINISTIC = {"listmle": {"shuffle_ties": False}}


@pytest.mark.parametrize("name", ALL)
def test_garbage_in_padding_changes_neither_value_nor_gradient(name):
    scores, labels, mask = _random_batch(0)
    value, grad = value_and_grad(name, scores, labels, mask)
    garbage = torch.tensor([math.nan, math.inf, -math.inf, 1e30, -7.0], dtype=scores.dtype)
    dirty_scores, dirty_labels = scores.clone(), labels.clone()
    padded = (~mask).nonzero(as_tuple=True)
    dirty_scores[padded] = garbage[torch.arange(len(padded[0])) % len(garbage)]
    dirty_labels[padded] = garbage[(torch.arange(len(padded[0])) + 2) % len(garbage)]
    dirty_value, dirty_grad = value_and_grad(name, dirty_scores, dirty_labels, mask)
    assert torch.isfinite(dirty_value)
    torch.testing.assert_close(dirty_value, value, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(dirty_grad[mask], grad[mask], rtol=1e-10, atol=1e-12)
    assert torch.all(dirty_grad[~mask] == 0)


@pytest.mark.parametrize("name", sorted(set(ALL) - GUMBEL))
def test_appended_padding_changes_neither_value_nor_gradient(name):
    # Gumbel losses draw noise for every slot, so extra slots change the draw; they are
    # covered by the same-shape test above.
    options = DETERMINISTIC.get(name, {})
    scores, labels, mask = _random_batch(1)
    value, grad = value_and_grad(name, scores, labels, mask, **options)
    extra = 5
    wide_scores = torch.cat([scores, torch.full((4, extra), math.nan, dtype=scores.dtype)], dim=1)
    wide_scores[:, -1] = math.inf
    wide_labels = torch.cat([labels, torch.full((4, extra), -math.inf, dtype=labels.dtype)], dim=1)
    wide_mask = torch.cat([mask, torch.zeros(4, extra, dtype=torch.bool)], dim=1)
    wide_value, wide_grad = value_and_grad(name, wide_scores, wide_labels, wide_mask, **options)
    torch.testing.assert_close(wide_value, value, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(wide_grad[:, : scores.shape[1]], grad, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("name", ALL)
def test_extreme_scores_give_finite_values_and_gradients(name, dtype):
    g = torch.Generator().manual_seed(2)
    signs = torch.randint(0, 2, (3, 6), generator=g) * 2 - 1
    scores = (signs * 1e4).to(dtype)
    scores[1] = torch.tensor([1e4, 1e4, -1e4, 3.0, -1e4, 0.0], dtype=dtype)  # ties at the extremes
    labels = torch.randint(0, 5, (3, 6), generator=g).to(dtype)
    labels[2] = torch.tensor([0, 4, 0, 0, 1, 0], dtype=dtype)
    value, grad = value_and_grad(name, scores, labels)
    assert torch.isfinite(value) and torch.isfinite(grad).all()


@pytest.mark.parametrize("name", ALL)
def test_all_zero_labels_give_finite_values_and_gradients(name):
    scores, _, mask = _random_batch(3)
    labels = torch.zeros_like(scores)
    value, grad = value_and_grad(name, scores, labels, mask)
    assert torch.isfinite(value) and torch.isfinite(grad).all()
    if name in {
        "hinge",
        "lambdaloss",
        "lambdarank",
        "softmax",
        "approx_ndcg",
        "gumbel_approx_ndcg",
        "neuralsort_ndcg",
        "gumbel_neuralsort_ndcg",
        "attention_rank",
    }:
        # Documented: no relevant document, nothing to learn: the query contributes 0.
        assert value.item() == 0.0 and torch.all(grad == 0)


@pytest.mark.parametrize("label", [0.0, 3.0])
@pytest.mark.parametrize("name", ALL)
def test_single_document_list(name, label):
    scores, labels = t([[0.7]]), t([[label]])
    value, grad = value_and_grad(name, scores, labels)
    assert torch.isfinite(value) and torch.isfinite(grad).all()
    if name == "sigmoid_ce":  # the document's own cross-entropy, target 1 if relevant
        expected = softplus(-0.7) if label > 0 else softplus(0.7)
        assert value.item() == pytest.approx(expected, rel=1e-12)
    elif name == "mse":  # the document's own squared error
        assert value.item() == pytest.approx((0.7 - label) ** 2, rel=1e-12)
        assert grad.item() == pytest.approx(2 * (0.7 - label), rel=1e-12)
    else:  # no pair, no order, nothing to rank: 0
        assert value.item() == pytest.approx(0.0, abs=1e-12)
        assert torch.all(grad.abs() < 1e-12)


@pytest.mark.parametrize("name", ALL)
def test_batch_value_is_the_mean_of_its_queries(name):
    options = DETERMINISTIC.get(name, {})
    scores, labels, mask = _random_batch(4)
    if name in GUMBEL:
        # Each query alone, on the scores perturbed by the batch's noise, through the base loss.
        base = "approx_ndcg" if name == "gumbel_approx_ndcg" else "neuralsort_ndcg"
        perturbed = scores + gumbel_like(scores.shape, seed=0)[0]
        singles = [call(base, perturbed[b : b + 1], labels[b : b + 1], mask[b : b + 1]) for b in range(4)]
    else:
        singles = [call(name, scores[b : b + 1], labels[b : b + 1], mask[b : b + 1], **options) for b in range(4)]
    batch_value = call(name, scores, labels, mask, **options)
    torch.testing.assert_close(batch_value, torch.stack(singles).mean(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ALL)
def test_rows_without_documents_are_ignored(name):
    options = DETERMINISTIC.get(name, {})
    scores, labels, mask = _random_batch(5, batch=3)
    with_empty = call(
        name,
        torch.cat([scores, scores[:1]]),
        torch.cat([labels, labels[:1]]),
        torch.cat([mask, torch.zeros_like(mask[:1])]),
        **options,
    )
    if name not in GUMBEL:  # the extra row changes the noise shape
        torch.testing.assert_close(with_empty, call(name, scores, labels, mask, **options), rtol=1e-12, atol=1e-12)
    value, grad = value_and_grad(name, scores, labels, torch.zeros_like(mask))
    assert value.item() == 0.0 and torch.all(grad == 0)


@pytest.mark.parametrize("name", ALL)
def test_gradient_step_reduces_loss_and_fixes_a_misordered_pair(name):
    options = {"n_samples": 4} if name in GUMBEL else {}
    # Four documents, the relevant doc 1 below the irrelevant doc 0.
    scores, labels = t([[1.0, 0.0, -0.5, -1.0]]), t([[0.0, 2.0, 1.0, 0.0]])
    value, grad = value_and_grad(name, scores, labels, **options)
    assert grad[0, 1] < grad[0, 0]  # descent lifts the relevant document over the irrelevant one
    stepped = scores - 1e-3 * grad / grad.abs().max()
    assert call(name, stepped, labels, **options) < value
    # Two documents, mis-ordered: a step along -grad long enough to swap them raises NDCG to 1.
    scores, labels = t([[0.5, -0.5]]), t([[0.0, 1.0]])
    _, grad = value_and_grad(name, scores, labels, **options)
    gap = (grad[0, 0] - grad[0, 1]).item()
    assert gap > 0
    stepped = (scores - (1.0 + 0.1) / gap * grad)[0].tolist()
    assert ndcg(scores[0].tolist(), [0.0, 1.0]) < ndcg(stepped, [0.0, 1.0]) == 1.0


def test_half_precision_scores_are_upcast():
    scores, labels, mask = _random_batch(6, dtype=torch.float32)
    for name in ALL:
        low = call(name, scores.to(torch.bfloat16), labels, mask)
        assert low.dtype == torch.float32 and torch.isfinite(low)


def test_mask_none_means_every_slot_is_real():
    scores, labels, _ = _random_batch(7)
    for name in ALL:
        full = torch.ones_like(scores, dtype=torch.bool)
        torch.testing.assert_close(call(name, scores, labels), call(name, scores, labels, full))


# ---------------------------------------------------------------- RankNet and LambdaRank


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.floats(-5, 5), st.integers(0, 3)), min_size=1, max_size=9),
    st.sampled_from([0.5, 1.0, 2.0]),
    st.booleans(),
)
def test_ranknet_equals_the_pair_formula_pair_by_pair(docs, sigma, include_ties):
    s = [d[0] for d in docs]
    y = [float(d[1]) for d in docs]
    costs = [
        hand_ranknet_pair(s[i], s[j], y[i], y[j], sigma)
        for i in range(len(s))
        for j in range(i + 1, len(s))
        if include_ties or y[i] != y[j]
    ]
    expected = sum(costs) / len(costs) if costs else 0.0
    value = ranknet(t([s]), t([y]), sigma=sigma, include_ties=include_ties)
    assert value.item() == pytest.approx(expected, rel=1e-10, abs=1e-12)


@pytest.mark.parametrize("k", [None, 1, 3])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_lambdarank_gradient_is_delta_ndcg_times_ranknet_gradient(seed, k):
    g = torch.Generator().manual_seed(seed)
    n = 7
    s = torch.randn(n, generator=g, dtype=torch.float64).tolist()
    y = torch.randint(0, 4, (n,), generator=g).double().tolist()
    y[0], y[1] = 3.0, 0.0  # at least one relevant document and one pair
    _, grad = value_and_grad("lambdarank", t([s]), t([y]), sigma=1.5, k=k)
    base = ndcg(s, y, k)
    expected = torch.zeros(n, dtype=torch.float64)
    for i in range(n):
        for j in range(i + 1, n):
            if y[i] == y[j]:
                continue
            swapped = list(s)
            swapped[i], swapped[j] = s[j], s[i]  # swaps the two documents' ranks
            delta = abs(ndcg(swapped, y, k) - base)
            _, pair_grad = value_and_grad("ranknet", t([[s[i], s[j]]]), t([[y[i], y[j]]]), sigma=1.5)
            expected[i] += delta * pair_grad[0, 0]
            expected[j] += delta * pair_grad[0, 1]
    torch.testing.assert_close(grad[0], expected, rtol=1e-10, atol=1e-13)


# ---------------------------------------------------------------- ApproxNDCG and NeuralNDCG


@pytest.mark.parametrize("seed", range(4))
def test_approx_ndcg_tends_to_ndcg_within_the_bruch_bound(seed):
    g = torch.Generator().manual_seed(seed)
    n = 12
    s = torch.randn(n, generator=g, dtype=torch.float64).tolist()
    y = torch.randint(0, 5, (n,), generator=g).double().tolist()
    y[0] = 4.0
    true_ndcg = ndcg(s, y)
    true_ranks = [1 + sum(other > mine for other in s) for mine in s]
    gaps, bounds = [], []
    for temperature in [1.0, 0.3, 0.1, 0.03, 0.01, 0.003]:
        approx_ranks = [1 + sum(sigmoid((s[j] - s[i]) / temperature) for j in range(n) if j != i) for i in range(n)]
        eps = max(abs(a - b) for a, b in zip(approx_ranks, true_ranks, strict=True))
        approx = 1.0 - approx_ndcg(t([s]), t([y]), temperature=temperature).item()
        gap = abs(approx - true_ndcg)
        assert gap <= eps / (2 * LN2) + 1e-12  # Bruch et al. (SIGIR 2019)
        gaps.append(gap)
        bounds.append(eps / (2 * LN2))
    # The bound falls with the temperature (the gap itself may wobble as errors cancel) and
    # squeezes the gap to 0.
    assert all(later < earlier for earlier, later in itertools.pairwise(bounds))
    assert gaps[-1] < 1e-4 and gaps[-1] < gaps[0] / 100


def test_neuralsort_ndcg_tends_to_ndcg_as_temperature_falls():
    g = torch.Generator().manual_seed(0)
    s = torch.randn(10, generator=g, dtype=torch.float64)
    y = torch.randint(0, 5, (10,), generator=g).double()
    y[0] = 4.0
    true_ndcg = ndcg(s.tolist(), y.tolist(), k=5)
    gaps = [
        abs(1.0 - neuralsort_ndcg(s[None], y[None], temperature=tau, k=5).item() - true_ndcg)
        for tau in [3.0, 1.0, 0.1, 0.01, 0.001]
    ]
    assert all(later < earlier for earlier, later in itertools.pairwise(gaps))
    assert gaps[-1] < 1e-6


def test_neuralsort_ndcg_gradient_matches_finite_differences():
    # The Sinkhorn scaling has a hand-written backward pass.
    scores, labels, mask = _random_batch(8, batch=3, length=5)
    scores.requires_grad_(True)
    for iters in (0, 3, 50):
        assert torch.autograd.gradcheck(
            lambda s, iters=iters: neuralsort_ndcg(s, labels, mask, sinkhorn_iters=iters, tol=1e-12), (scores,)
        )


def test_neuralsort_sinkhorn_makes_the_matrix_doubly_stochastic():
    from sklearn_ltr.losses._neuralsort import _Sinkhorn, neural_sort

    scores, _, mask = _random_batch(9, batch=3, length=6)
    kernel = neural_sort(scores, mask, 0.5)
    n = mask.sum(dim=1, keepdim=True)
    rows = (torch.arange(1, 7)[None, :] <= n).double()
    u, v = _Sinkhorn.apply(kernel, rows, mask.double(), 2000, 1e-12)
    matrix = u[:, :, None] * kernel * v[:, None, :]
    torch.testing.assert_close(matrix.sum(dim=2), rows)
    torch.testing.assert_close(matrix.sum(dim=1), mask.double())


# ---------------------------------------------------------------- gains that cannot overflow

#: The losses built on NDCG, with options under which the hand formulas above give their values.
NDCG_TYPE = {
    "lambdarank": {},
    "approx_ndcg": {"temperature": 0.5},
    # No Sinkhorn scaling: its gradient is that of the rounds run until the columns sum to 1
    # within tol, which can differ from the converged one (the formula's, by finite differences)
    # by 1e-4, relatively. The tests below check the scaled values with Sinkhorn apart.
    "neuralsort_ndcg": {"sinkhorn_iters": 0},
    "gumbel_approx_ndcg": {"temperature": 0.5, "n_samples": 2},
    "gumbel_neuralsort_ndcg": {"sinkhorn_iters": 0, "n_samples": 2},
}
#: Sinkhorn run to convergence, to compare values with the formula's 500 rounds.
SINKHORN = {"sinkhorn_iters": 500, "tol": 1e-13}
#: Labels whose gains 2**y - 1 overflow float32 (from 128) or float64 (from 1024).
HUGE_LABELS = [[0.0, 200.0, 0.0], [1000.0, 0.0, 1100.5], [999.0, 1000.0, 1000.5]]


def hand_lambdarank(s, y, gain=exp_gain, sigma=1.0):
    """LambdaRank's value and its gradient, Burges' lambdas, on one list, from the formulas."""
    n = len(s)
    order = sorted(range(n), key=lambda i: (-s[i], i))
    disc = [0.0] * n
    for rank, i in enumerate(order, start=1):
        disc[i] = 1.0 / math.log2(1.0 + rank)
    idcg = dcg_at(sorted(y, reverse=True), gain=gain)
    value, grad = 0.0, [0.0] * n
    for i, j in itertools.permutations(range(n), 2):
        if y[i] > y[j] and idcg > 0:  # i is the more relevant one
            weight = abs(gain(y[i]) - gain(y[j])) * abs(disc[i] - disc[j]) / idcg
            value += weight * softplus(-sigma * (s[i] - s[j]))
            lambda_ij = weight * sigma * sigmoid(-sigma * (s[i] - s[j]))
            grad[i] -= lambda_ij
            grad[j] += lambda_ij
    return value, grad


def reference_value_and_grad(name, s, y, gain, noise=()):
    """float64 value and gradient of an NDCG-type loss on one list: the formulas, central differences.

    ``noise``: the Gumbel draws added to the scores, one list per sample.
    """
    if name == "lambdarank":
        return hand_lambdarank(s, y, gain)
    options = NDCG_TYPE[name]

    def base(v):
        if "approx" in name:
            return hand_approx_loss(v, y, options["temperature"], gain)
        return hand_neural_loss(v, y, 1.0, options["sinkhorn_iters"], gain=gain)

    draws = [list(g) for g in noise] or [[0.0] * len(s)]

    def mean_loss(v):
        return sum(base([a + b for a, b in zip(v, g, strict=True)]) for g in draws) / len(draws)

    h = 1e-6
    steps = [[h if m == i else 0.0 for m in range(len(s))] for i in range(len(s))]
    grad = [
        (mean_loss([a + b for a, b in zip(s, e, strict=True)]) - mean_loss([a - b for a, b in zip(s, e, strict=True)]))
        / (2 * h)
        for e in steps
    ]
    return mean_loss(s), grad


def _tolerance(dtype):
    return {"rtol": 1e-9, "atol": 1e-8} if dtype == torch.float64 else {"rtol": 1e-4, "atol": 1e-5}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_gains_are_scaled_by_the_top_label_of_each_query_and_never_overflow(dtype):
    rows = [[0.0, 1.0, 4.0, 3.5, 0.25], [0.0, 200.0, 1.0, 0.0, 5000.0], [1000.0, 0.0, 1100.5, -1.0, 999.0]]
    mask = torch.ones(3, 5, dtype=torch.bool)
    mask[1, 4] = False  # a padded label above the row's top: ignored
    expected = [
        [
            scaled_gain(v, max(r for r, real in zip(row, keep, strict=True) if real)) if real else 0.0
            for v, real in zip(row, keep, strict=True)
        ]
        for row, keep in zip(rows, mask.tolist(), strict=True)
    ]
    got = gains(t(rows, dtype), mask)
    assert torch.isfinite(got).all()
    tiny = torch.finfo(dtype).tiny  # gains below it may be flushed to 0, which no ratio notices
    torch.testing.assert_close(got.double(), t(expected), rtol=1e-6 if dtype == torch.float32 else 1e-13, atol=tiny)
    # Integer labels: the exact gains times a power of 2, here 2**-4.
    assert (got[0, :3] * 16).tolist() == [0.0, 1.0, 15.0]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("y", HUGE_LABELS, ids=["0-200", "0-1000-1100.5", "999-1000.5"])
@pytest.mark.parametrize("name", sorted(NDCG_TYPE))
def test_ndcg_losses_with_huge_labels_match_a_float64_reference(name, y, dtype):
    value, grad = value_and_grad(name, t([S3], dtype), t([y], dtype), seed=7, **NDCG_TYPE[name])
    assert torch.isfinite(value) and torch.isfinite(grad).all()
    noise = gumbel_like((1, 3), seed=7, n_samples=2, dtype=dtype)[:, 0].tolist() if name in GUMBEL else ()
    expected, expected_grad = reference_value_and_grad(name, S3, y, functools.partial(scaled_gain, top=max(y)), noise)
    torch.testing.assert_close(value.double(), torch.tensor(expected, dtype=torch.float64), **_tolerance(dtype))
    torch.testing.assert_close(grad[0].double(), t(expected_grad), **_tolerance(dtype))
    if name == "neuralsort_ndcg":  # and the value through the Sinkhorn scaling
        value = call(name, t([S3], dtype), t([y], dtype), **SINKHORN)
        expected = hand_neural_loss(S3, y, 1.0, 500, gain=functools.partial(scaled_gain, top=max(y)))
        assert value.item() == pytest.approx(expected, rel=_tolerance(dtype)["rtol"])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("name", sorted(NDCG_TYPE))
def test_gains_are_scaled_query_by_query(name, dtype):
    # The second query's gains scaled by the first query's top label, 2**-1100.5, would all be 0.
    ys = [[1000.0, 0.0, 1100.5], [2.0, 0.0, 1.0]]
    values = call(name, t([S3, S3], dtype), t(ys, dtype), reduction="none", seed=7, **NDCG_TYPE[name])
    noise = gumbel_like((2, 3), seed=7, n_samples=2, dtype=dtype).tolist() if name in GUMBEL else None
    for b, y in enumerate(ys):
        draws = [sample[b] for sample in noise] if name in GUMBEL else ()
        expected, _ = reference_value_and_grad(name, S3, y, functools.partial(scaled_gain, top=max(y)), draws)
        assert values[b].item() == pytest.approx(expected, rel=_tolerance(dtype)["rtol"])


@pytest.mark.parametrize("name", sorted(NDCG_TYPE))
@settings(max_examples=25, deadline=None)
@given(
    y=st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.0, 3.7, 4.0]), min_size=2, max_size=6),
    data=st.data(),
)
def test_scaled_gains_give_the_values_of_the_unscaled_formula(name, y, data):
    # Small labels, float64: the unscaled gains 2**y - 1 of the formulas, to float precision.
    s = data.draw(st.lists(st.integers(-40, 40), min_size=len(y), max_size=len(y), unique=True))
    s = [v / 8 for v in s]
    value, grad = value_and_grad(name, t([s]), t([y]), seed=3, **NDCG_TYPE[name])
    noise = gumbel_like((1, len(s)), seed=3, n_samples=2)[:, 0].tolist() if name in GUMBEL else ()
    expected, expected_grad = reference_value_and_grad(name, s, y, exp_gain, noise)
    torch.testing.assert_close(value, torch.tensor(expected, dtype=torch.float64), rtol=1e-9, atol=1e-12)
    torch.testing.assert_close(grad[0], t(expected_grad), rtol=1e-7, atol=1e-9)
    if name == "neuralsort_ndcg":  # and the value through the Sinkhorn scaling
        expected = hand_neural_loss(s, y, 1.0, 500)
        assert call(name, t([s]), t([y]), **SINKHORN).item() == pytest.approx(expected, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("name", ALL)
def test_huge_labels_give_finite_values_and_gradients(name):
    scores, _, mask = _random_batch(18, dtype=torch.float32)
    labels = t([[0, 200, 1000, 1100.5, 3, 1e6, 0]] * 4, torch.float32)
    value, grad = value_and_grad(name, scores, labels, mask)
    assert torch.isfinite(value) and torch.isfinite(grad).all()


# ---------------------------------------------------------------- properties


scores_and_labels = st.integers(1, 8).flatmap(
    lambda n: st.tuples(
        # Distinct scores on a grid, so rankings (and LambdaRank's weights) have no score ties.
        st.lists(st.integers(-40, 40), min_size=n, max_size=n, unique=True).map(lambda v: [x / 8 for x in v]),
        st.lists(st.integers(0, 4), min_size=n, max_size=n).map(lambda v: [float(x) for x in v]),
        st.permutations(list(range(n))),
    )
)


@pytest.mark.parametrize("name", sorted(set(ALL) - GUMBEL))
@settings(max_examples=25, deadline=None)
@given(data=scores_and_labels)
def test_permuting_documents_permutes_gradients_and_keeps_the_value(name, data):
    # Gumbel losses draw noise per position, so they are not permutation-equivariant for a fixed
    # generator; ListMLE's tie order is random: unique labels here.
    s, y, perm = data
    options = {}
    if name == "listmle":
        y = [float(i) for i in range(len(s))]
    value, grad = value_and_grad(name, t([s]), t([y]), **options)
    p_value, p_grad = value_and_grad(name, t([[s[i] for i in perm]]), t([[y[i] for i in perm]]), **options)
    torch.testing.assert_close(p_value, value, rtol=1e-9, atol=1e-12)
    torch.testing.assert_close(p_grad[0], grad[0, perm], rtol=1e-8, atol=1e-11)


@pytest.mark.parametrize("name", SHIFT_INVARIANT)
@settings(max_examples=15, deadline=None)
@given(data=scores_and_labels, shift=st.sampled_from([-3.0, 0.5, 10.0]))
def test_shifting_all_scores_of_a_list_changes_nothing(name, data, shift):
    s, y, _ = data
    value, grad = value_and_grad(name, t([s]), t([y]))
    s_value, s_grad = value_and_grad(name, t([s]) + shift, t([y]))
    torch.testing.assert_close(s_value, value, rtol=1e-9, atol=1e-11)
    torch.testing.assert_close(s_grad, grad, rtol=1e-7, atol=1e-10)


def test_listmle_tie_order_is_reproducible_and_stable_option_is_deterministic():
    scores, labels = t([[0.5, 0.1, -0.3, 0.9]]), t([[1.0, 1.0, 1.0, 0.0]])
    draws = {round(listmle(scores, labels, generator=torch.Generator().manual_seed(i)).item(), 12) for i in range(20)}
    assert len(draws) > 1  # ties ordered at random
    again = listmle(scores, labels, generator=torch.Generator().manual_seed(3))
    assert again == listmle(scores, labels, generator=torch.Generator().manual_seed(3))
    # shuffle_ties=False: input order among ties.
    ordered = [0.5, 0.1, -0.3, 0.9]
    expected = sum(math.log(sum(math.exp(v) for v in ordered[r:])) - ordered[r] for r in range(4))
    assert listmle(scores, labels, shuffle_ties=False).item() == pytest.approx(expected, rel=1e-12)


# ---------------------------------------------------------------- reduction and weights


def _batch_with_an_empty_row(seed):
    """``_random_batch`` and a fifth row with no real document, full of garbage."""
    scores, labels, mask = _random_batch(seed)
    scores = torch.cat([scores, torch.full_like(scores[:1], math.nan)])
    labels = torch.cat([labels, torch.full_like(labels[:1], math.inf)])
    return scores, labels, torch.cat([mask, torch.zeros_like(mask[:1])])


def _base_of(name):
    return {"gumbel_approx_ndcg": "approx_ndcg", "gumbel_neuralsort_ndcg": "neuralsort_ndcg"}.get(name, name)


@pytest.mark.parametrize("name", ALL)
def test_reduction_none_gives_the_value_of_each_query_alone(name):
    options = DETERMINISTIC.get(name, {})
    scores, labels, mask = _batch_with_an_empty_row(13)
    values, grad = value_and_grad(name, scores, labels, mask, reduction="none", **options)
    assert values.shape == (5,) and values.dtype == scores.dtype
    if name in GUMBEL:  # each query alone through the base loss, on the scores the batch's noise perturbs
        scores = scores + gumbel_like(scores.shape, seed=0)[0]
    alone = [call(_base_of(name), scores[b : b + 1], labels[b : b + 1], mask[b : b + 1], **options) for b in range(4)]
    torch.testing.assert_close(values[:4], torch.stack(alone), rtol=1e-10, atol=1e-12)
    assert values[4].item() == 0.0
    assert torch.isfinite(grad[:4]).all() and torch.all(grad[4] == 0)


@pytest.mark.parametrize("name", ALL)
def test_sum_mean_and_weights_reduce_the_per_query_values(name):
    options = DETERMINISTIC.get(name, {})
    scores, labels, mask = _batch_with_an_empty_row(14)
    weights = t([0.5, 2.0, 0.0, 1.5, 3.0])  # the empty row's weight must not count

    def reduce(**kwargs):
        return call(name, scores, labels, mask, **options, **kwargs)

    values = reduce(reduction="none")
    close = functools.partial(torch.testing.assert_close, rtol=1e-12, atol=1e-12)
    close(reduce(reduction="sum"), values.sum())
    close(reduce(), values[:4].mean())
    close(reduce(reduction="mean", weights=weights), (weights[:4] * values[:4]).sum() / weights[:4].sum())
    close(reduce(reduction="sum", weights=weights), (weights * values).sum())
    close(reduce(reduction="none", weights=weights), weights * values)
    # Weights that sum to 0 over the real queries: 0, with a zero gradient.
    value, grad = value_and_grad(name, scores, labels, mask, weights=t([0.0, 0.0, 0.0, 0.0, 1.0]), **options)
    assert value.item() == 0.0 and torch.all(grad == 0)


@pytest.mark.parametrize("name", ALL)
def test_integer_weights_count_a_query_that_many_times(name):
    options = DETERMINISTIC.get(name, {})
    scores, labels, mask = _random_batch(15)
    if name in GUMBEL:
        # Lists scored 1000 apart: the noise (|g| < 40) changes neither the order nor, with the
        # sigmoids and softmaxes saturated, the value, so the repeated rows' own draws do not matter.
        scores = 1000.0 * torch.argsort(torch.rand(scores.shape, generator=torch.Generator().manual_seed(0)))
        scores = scores.to(torch.float64)
    counts = [2, 0, 1, 3]
    rows = [b for b, count in enumerate(counts) for _ in range(count)]
    for reduction in ("sum", "mean"):
        weighted, grad = value_and_grad(
            name, scores, labels, mask, reduction=reduction, weights=torch.tensor(counts), **options
        )
        repeated, repeated_grad = value_and_grad(
            name, scores[rows], labels[rows], mask[rows], reduction=reduction, **options
        )
        torch.testing.assert_close(weighted, repeated, rtol=1e-12, atol=1e-12)
        summed = torch.zeros_like(grad).index_add_(0, torch.tensor(rows), repeated_grad)
        torch.testing.assert_close(grad, summed, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("name", ALL)
def test_weight_zero_takes_a_query_out(name, reduction):
    options = DETERMINISTIC.get(name, {})
    scores, labels, mask = _random_batch(16)
    value, grad = value_and_grad(name, scores, labels, mask, reduction=reduction, weights=t([1, 0, 1, 1]), **options)
    emptied = mask.clone()
    emptied[1] = False  # same shape, so the Gumbel losses draw the same noise
    expected, expected_grad = value_and_grad(name, scores, labels, emptied, reduction=reduction, **options)
    torch.testing.assert_close(value, expected, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(grad, expected_grad, rtol=1e-12, atol=1e-12)
    assert torch.all(grad[1] == 0)
    if name not in GUMBEL and reduction != "none":
        kept = [0, 2, 3]
        without = call(name, scores[kept], labels[kept], mask[kept], reduction=reduction, **options)
        torch.testing.assert_close(value, without, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({"reduction": "avg"}, ValueError, "reduction must be one of"),
        ({"reduction": "MEAN"}, ValueError, "reduction must be one of"),
        ({"reduction": None}, ValueError, "reduction must be one of"),
        ({"weights": torch.ones(5)}, ValueError, r"weights must have one value per query, shape \(4,\)"),
        ({"weights": torch.ones(4, 1)}, ValueError, "weights must have one value per query"),
        ({"weights": torch.ones(())}, ValueError, "weights must have one value per query"),
        ({"weights": t([1.0, math.nan, 1.0, 1.0])}, ValueError, "weights must be finite and >= 0"),
        ({"weights": t([1.0, 1.0, math.inf, 1.0])}, ValueError, "weights must be finite and >= 0"),
        ({"weights": t([1.0, 1.0, 1.0, -0.5])}, ValueError, r"weights must be finite and >= 0; got -0.5 for query 3"),
        ({"weights": "heavy"}, TypeError, "weights"),
        ({"weights": torch.ones(4, dtype=torch.complex64)}, TypeError, "weights must be real"),
    ],
    ids=["unknown", "case", "None", "long", "2-D", "0-D", "nan", "inf", "negative", "str", "complex"],
)
@pytest.mark.parametrize("name", ALL)
def test_bad_reduction_or_weights_raise(name, options, error, match):
    scores, labels, mask = _random_batch(11)
    with pytest.raises(error, match=match):
        call(name, scores, labels, mask, **options)


# ---------------------------------------------------------------- the Gumbel wrapper


def test_gumbel_loss_averages_any_loss_over_perturbed_scores():
    scores, labels, mask = _random_batch(17)
    stochastic = functools.partial(gumbel_loss, ranknet, n_samples=3)
    values = stochastic(scores, labels, mask, generator=torch.Generator().manual_seed(4), reduction="none", sigma=2.0)
    noise = gumbel_like(scores.shape, seed=4, n_samples=3)
    per_sample = [ranknet(scores + g, labels, mask, reduction="none", sigma=2.0) for g in noise]
    torch.testing.assert_close(values, torch.stack(per_sample).mean(dim=0), rtol=1e-12, atol=1e-12)
    # A bound wrapper is a loss like any other: picklable, and get_loss binds its options.
    bound = get_loss(pickle.loads(pickle.dumps(stochastic)), sigma=2.0)
    again = bound(scores, labels, mask, generator=torch.Generator().manual_seed(4), weights=t([1, 1, 0, 2]))
    torch.testing.assert_close(again, (values[0] + values[1] + 2 * values[3]) / 4, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", sorted(GUMBEL))
def test_gumbel_losses_are_the_wrapper_around_their_base_loss(name):
    base = LOSSES[_base_of(name)]
    scores, labels, mask = _random_batch(19)
    options = {"n_samples": 2, "reduction": "none", "temperature": 0.3}
    value = call(name, scores, labels, mask, seed=2, **options)
    wrapped = gumbel_loss(base, scores, labels, mask, generator=torch.Generator().manual_seed(2), **options)
    assert torch.equal(value, wrapped)
    assert pickle.loads(pickle.dumps(LOSSES[name])) is LOSSES[name]
    bound = pickle.loads(pickle.dumps(get_loss(name, n_samples=2, temperature=0.3)))
    assert bound.keywords == {"n_samples": 2, "temperature": 0.3}


def test_gumbel_loss_needs_a_base_loss_with_per_query_values():
    scores, labels, mask = _random_batch(20)
    with pytest.raises(TypeError, match="base_loss must be a callable"):
        gumbel_loss("ranknet", scores, labels, mask)

    def scalar_only(scores, labels, mask=None, **options):
        return scores.sum()

    with pytest.raises(ValueError, match=r"one value per row with reduction='none', shape \(8,\); got \(\)"):
        gumbel_loss(scalar_only, scores, labels, mask, n_samples=2)
    with pytest.raises(ValueError, match="n_samples"):
        gumbel_loss(ranknet, scores, labels, mask, n_samples=0)


# ---------------------------------------------------------------- registry and bad input


def test_registry_names_aliases_and_callables():
    assert len(LOSSES) == 13
    assert get_loss("softmax") is softmax_cross_entropy
    assert get_loss("ListNet") is softmax_cross_entropy
    assert get_loss("pointwise") is sigmoid_cross_entropy
    assert get_loss("sigmoid-ce") is sigmoid_cross_entropy
    assert get_loss("dlcm") is attention_rank
    assert get_loss("gumbel_approx_ndcg") is gumbel_approx_ndcg
    assert get_loss("gumbel_neuralsort_ndcg") is gumbel_neuralsort_ndcg
    assert get_loss("lambdarank") is lambdarank and get_loss("listmle") is listmle
    assert get_loss("LambdaLoss") is lambdaloss and get_loss("lambda-loss") is lambdaloss
    assert get_loss("hinge") is hinge and get_loss("RankSVM") is hinge and get_loss("pairwise_hinge") is hinge
    assert get_loss("mse") is mean_squared_error and get_loss("mean_squared_error") is mean_squared_error
    for alias, target in ALIASES.items():
        assert get_loss(alias) is LOSSES[target]

    def custom(scores, labels, mask=None, *, power=1.0):
        return scores.sum() * power

    assert get_loss(custom) is custom
    assert get_loss(custom, power=2.0).keywords == {"power": 2.0}


def test_registry_binds_options_as_picklable_partials():
    bound = get_loss("ranknet", sigma=2.0, include_ties=False)
    scores, labels, mask = _random_batch(10)
    expected = ranknet(scores, labels, mask, sigma=2.0, include_ties=False)
    torch.testing.assert_close(bound(scores, labels, mask), expected)
    restored = pickle.loads(pickle.dumps(bound))
    torch.testing.assert_close(restored(scores, labels, mask), bound(scores, labels, mask))


def test_unknown_loss_name_lists_the_known_ones():
    with pytest.raises(ValueError, match=r"Unknown loss 'nope'.*approx_ndcg.*ranknet"):
        get_loss("nope")
    with pytest.raises(TypeError, match="name or a callable"):
        get_loss(3)
    with pytest.raises(TypeError, match=r"unexpected option.*'temprature'"):
        get_loss("approx_ndcg", temprature=0.1)


@pytest.mark.parametrize(
    ("name", "options", "match"),
    [
        ("ranknet", {"sigma": 0.0}, "sigma"),
        ("lambdarank", {"k": 0}, "k must be"),
        ("approx_ndcg", {"temperature": -1.0}, "temperature"),
        ("neuralsort_ndcg", {"sinkhorn_iters": -1}, "sinkhorn_iters"),
        ("gumbel_approx_ndcg", {"n_samples": 0}, "n_samples"),
        ("softmax", {"target": "nope"}, "target"),
        ("sigmoid_ce", {"max_label": 0}, "max_label"),
        ("lambdaloss", {"weighing_scheme": "ndcgLoss2PP_scheme"}, r"weighing_scheme must be one of \['ndcg_loss1'"),
        ("lambdaloss", {"weighing_scheme": None}, "weighing_scheme must be one of"),
        ("lambdaloss", {"k": 0}, "k must be None or a positive integer"),
        ("lambdaloss", {"mu": -1.0}, "mu must be a positive number"),
        ("lambdaloss", {"sigma": 0.0}, "sigma must be a positive number"),
        ("hinge", {"margin": 0.0}, "margin must be a positive number"),
        ("hinge", {"margin": "1"}, "margin must be a positive number"),
    ],
)
def test_bad_options_raise(name, options, match):
    scores, labels, mask = _random_batch(11)
    with pytest.raises(ValueError, match=match):
        LOSSES[name](scores, labels, mask, **options)


@pytest.mark.parametrize("name", ALL)
def test_bad_shapes_raise(name):
    scores = torch.zeros(2, 3)
    with pytest.raises(ValueError, match="2-D"):
        LOSSES[name](scores[0], scores[0])
    with pytest.raises(ValueError, match="labels"):
        LOSSES[name](scores, torch.zeros(2, 4))
    with pytest.raises(ValueError, match="mask"):
        LOSSES[name](scores, torch.zeros(2, 3), torch.ones(3, 3, dtype=torch.bool))
    with pytest.raises(TypeError, match="floating"):
        LOSSES[name](torch.zeros(2, 3, dtype=torch.long), torch.zeros(2, 3))


@pytest.mark.parametrize("name", ALL)
def test_every_loss_documents_its_formula_and_reference(name):
    doc = inspect.getdoc(LOSSES[name])
    for section in (".. math::", "Parameters\n----------", "Returns\n-------", "References\n----------"):
        assert section in doc, f"{name} docstring lacks {section!r}"
    parameters = list(inspect.signature(LOSSES[name]).parameters.values())
    assert [p.name for p in parameters[:3]] == ["scores", "labels", "mask"]
    assert all(p.kind is p.KEYWORD_ONLY for p in parameters[3:])
    # The reduction options, the same default for every loss, each documented.
    defaults = {p.name: p.default for p in parameters[3:]}
    assert defaults["reduction"] == "mean" and defaults["weights"] is None
    assert 'reduction : {"mean", "sum", "none"}, default="mean"' in doc
    assert "weights : torch.Tensor of shape (batch,), default=None" in doc

"""Swap interventions (``estimate_propensity_swap``) and the pivot-one / adjacent-chain harvesting estimators."""

import numpy as np
import pytest

from sklearn_ltr.clicks import estimate_propensity_harvesting, estimate_propensity_swap


def _swap_log(n_queries, n_docs, sessions, curve, *, pivot=True, seed=0):
    """Pages ranked by relevance (relevant first), one randomised swap per page.

    ``pivot``: swap-k (position 1 with a uniform k in 2..n_docs); else RandPair (a uniform pair).
    Returns ``clicks, positions, queries, pairs`` with pairs -1 outside the swapped two.
    """
    rng = np.random.default_rng(seed)
    relevance = np.sort(rng.choice([0.05, 0.3, 0.9], size=(n_queries, n_docs), p=[0.6, 0.3, 0.1]), axis=1)[:, ::-1]
    clicks, positions, pairs = [], [], []
    for session in range(sessions):
        order = np.tile(np.arange(n_docs), (n_queries, 1))  # document at each position, relevant first
        rows = np.arange(n_queries)
        if pivot:
            a, b = np.zeros(n_queries, dtype=int), rng.integers(1, n_docs, n_queries)
        else:
            a, b = np.sort(np.array([rng.choice(n_docs, 2, replace=False) for _ in rows]), axis=1).T
        flip = rng.random(n_queries) < 0.5
        doc_a, doc_b = order[rows, a].copy(), order[rows, b].copy()
        order[rows, a] = np.where(flip, doc_b, doc_a)
        order[rows, b] = np.where(flip, doc_a, doc_b)
        position = np.argsort(order, axis=1) + 1  # position of each document
        click = rng.random(relevance.shape) < curve(position) * relevance
        pair = np.full(relevance.shape, -1)
        pair[rows, order[rows, a]] = pair[rows, order[rows, b]] = session * n_queries + rows
        clicks.append(click.ravel().astype(int))
        positions.append(position.ravel())
        pairs.append(pair.ravel())
    queries = np.tile(np.repeat(np.arange(n_queries), n_docs), sessions)
    return np.concatenate(clicks), np.concatenate(positions), queries, np.concatenate(pairs)


def test_swap_k_ratio_by_hand():
    # Interventions on (1, 2): 4 clicks at 1, 2 at 2; on (1, 3): 3 at 1, 1 at 3. Row outside: ignored.
    clicks = [1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 0, 1, 0, 1, 1]
    positions = [1, 2, 1, 2, 1, 2, 1, 2, 1, 3, 1, 3, 1, 3, 2, 3]
    pairs = [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, -1, -1]
    estimate = estimate_propensity_swap(clicks, positions, [0] * 16, pairs, max_position=3, n_bootstrap=0)
    np.testing.assert_allclose(estimate.propensity, [1.0, 0.5, 1 / 3], rtol=1e-12)
    assert estimate.method == "swap_interventions"
    assert estimate.details["n_interventions"][0, 1] == 4 and estimate.details["n_interventions"][0, 2] == 3


def test_randpair_chains_and_weighs_the_pairs_by_hand():
    # (1, 2): 2 and 1 clicks; (2, 3): 2 and 2; (1, 3): 4 and 1. Least squares on the logs with weights
    # w = 1 / (1 / C + 1 / C'): (1,2) 2/3, (2,3) 1, (1,3) 4/5.
    clicks, positions, pairs = [], [], []
    pid = 0
    for (k, kk, c_k, c_kk, n) in [(1, 2, 2, 1, 2), (2, 3, 2, 2, 2), (1, 3, 4, 1, 4)]:
        for i in range(n):
            clicks += [int(i < c_k), int(i < c_kk)]
            positions += [k, kk]
            pairs += [pid, pid]
            pid += 1
    estimate = estimate_propensity_swap(clicks, positions, np.zeros(len(clicks)), pairs, max_position=3,
                                        n_bootstrap=0)
    design = np.array([[1.0, 0.0], [-1.0, 1.0], [0.0, 1.0]])  # log t2, log t3
    target = np.log([1 / 2, 2 / 2, 1 / 4])
    root = np.sqrt([2 / 3, 1.0, 4 / 5])
    expected = np.linalg.lstsq(design * root[:, None], target * root, rcond=None)[0]
    np.testing.assert_allclose(np.log(estimate.propensity[1:]), expected, rtol=1e-10)


@pytest.mark.parametrize("pivot", [True, False], ids=["swap-k", "randpair"])
def test_swap_recovers_a_curve_despite_a_relevance_sorted_logger(pivot):
    curve = lambda p: 1.0 / p  # noqa: E731
    clicks, positions, queries, pairs = _swap_log(3000, 6, 4, curve, pivot=pivot, seed=1)
    estimate = estimate_propensity_swap(clicks, positions, queries, pairs, max_position=6, n_bootstrap=100,
                                        random_state=0)
    truth = 1.0 / np.arange(1, 7)
    assert np.max(np.abs(estimate.propensity - truth) / truth) < (0.15 if pivot else 0.25)  # RandPair: 15 pairs
    assert ((estimate.lower <= truth + 1e-9) & (truth <= estimate.upper + 1e-9)).sum() >= 5
    # The naive click-rate ratio of the same log is far off: the logger puts relevant documents first.
    ctr = np.bincount(positions, clicks)[1:] / np.bincount(positions)[1:]
    assert np.max(np.abs(ctr / ctr[0] - truth) / truth) > 0.5


@pytest.mark.parametrize(("change", "message"), [
    ({"pairs": [0, 0, 0, 1]}, "pairs: intervention 0 has 3 rows"),
    ({"pairs": [0, 0, 1, 1], "positions": [1, 1, 1, 2], "clicks": [1, 1, 1, 1]}, "at the same position"),
    ({"pairs": [-1, -1, -1, -1]}, "marks no intervention"),
    ({"pairs": [0, 0, 1]}, "pairs has 3 entries but clicks has 4"),
    ({"positions": [1, 3, 1, 3], "max_position": 3}, "positions 2 of 1..3 were never shown"),
])
def test_swap_errors_name_the_argument(change, message):
    args = {"clicks": [1, 1, 1, 0], "positions": [1, 2, 1, 2], "groups": [0, 0, 0, 0], "pairs": [0, 0, 1, 1],
            "max_position": 2, "n_bootstrap": 0}
    args.update(change)
    with pytest.raises(ValueError, match=message):
        estimate_propensity_swap(args.pop("clicks"), args.pop("positions"), args.pop("groups"), args.pop("pairs"),
                                 **args)


def test_swap_names_positions_no_intervention_ties_to_position_one():
    clicks = [1, 1, 1, 1, 1, 1]
    positions = [1, 2, 3, 4, 3, 4]
    with pytest.raises(ValueError, match=r"positions 3, 4 are linked to position 1 by no .*swap interventions"):
        estimate_propensity_swap(clicks, positions, [0] * 6, [0, 0, 1, 1, 2, 2], max_position=4)


def _rows(cells):
    clicks, positions, documents = [], [], []
    for document, position, shows, clicked in cells:
        clicks += [1] * clicked + [0] * (shows - clicked)
        positions += [position] * shows
        documents += [document] * shows
    return np.array(clicks), np.array(positions), np.array(documents)


def test_pivot_one_and_adjacent_chain_by_hand():
    # One document at 1, 2, 3 (rates 4/8, 2/8, 2/8) and another at 2, 3 only (rates 4/8, 1/8).
    # pivot_one: theta_2 = 2/4, theta_3 = 2/4 (the first document alone).
    # adjacent: r_12 = 2/4; r_23 pooled over both documents (u = 4 each): (2/8 + 1/8) / (2/8 + 4/8) = 1/2,
    # so theta_3 = 1/2 * 1/2 = 1/4. all: the least squares of the three pairs.
    clicks, positions, documents = _rows([("a", 1, 8, 4), ("a", 2, 8, 2), ("a", 3, 8, 2), ("b", 2, 8, 4),
                                          ("b", 3, 8, 1)])
    kwargs = {"max_position": 3, "n_bootstrap": 0}
    pivot = estimate_propensity_harvesting(clicks, positions, np.zeros(40), documents, pairs="pivot_one", **kwargs)
    np.testing.assert_allclose(pivot.propensity, [1, 0.5, 0.5], rtol=1e-12)
    chain = estimate_propensity_harvesting(clicks, positions, np.zeros(40), documents, pairs="adjacent", **kwargs)
    np.testing.assert_allclose(chain.propensity, [1, 0.5, 0.25], rtol=1e-12)
    every = estimate_propensity_harvesting(clicks, positions, np.zeros(40), documents, **kwargs)
    assert 0.25 < every.propensity[2] < 0.5
    with pytest.raises(ValueError, match="pairs must be one of 'all', 'pivot_one', 'adjacent'"):
        estimate_propensity_harvesting(clicks, positions, np.zeros(40), documents, pairs="pivot", **kwargs)


@pytest.mark.parametrize("pairs", ["pivot_one", "adjacent"])
def test_pivot_one_and_adjacent_recover_a_curve(pairs):
    rng = np.random.default_rng(2)
    n_queries, n_docs, sessions = 400, 6, 12
    relevance = rng.choice([0.05, 0.3, 0.9], size=(n_queries, n_docs), p=[0.6, 0.3, 0.1])
    parts = []
    for _ in range(sessions):
        position = np.argsort(np.argsort(-(relevance + rng.random(relevance.shape)), axis=1), axis=1) + 1
        parts.append((position.ravel(), (rng.random(relevance.shape) < relevance / position).ravel().astype(int)))
    positions = np.concatenate([p for p, _ in parts])
    clicks = np.concatenate([c for _, c in parts])
    queries = np.tile(np.repeat(np.arange(n_queries), n_docs), sessions)
    documents = np.tile(np.tile(np.arange(n_docs), n_queries), sessions)
    estimate = estimate_propensity_harvesting(clicks, positions, queries, documents, max_position=6, pairs=pairs,
                                              n_bootstrap=100, random_state=0)
    truth = 1.0 / np.arange(1, 7)
    assert np.max(np.abs(estimate.propensity - truth) / truth) < 0.35  # few documents reach positions 5-6 from 1
    assert ((estimate.lower <= truth + 1e-9) & (truth <= estimate.upper + 1e-9)).sum() >= 5

"""Pairwise debiasing of LambdaMART: the Unbiased LambdaMART objective and its use by LambdaMARTRanker."""

import math
import pickle

import lightgbm
import numpy as np
import pytest
import sklearn
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, GroupKFold
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_ltr import ndcg_scorer
from sklearn_ltr.datasets import make_ranking, simulate_clicks
from sklearn_ltr.metrics import ndcg_score
from sklearn_ltr.rankers import LambdaMARTRanker
from sklearn_ltr.rankers._unbiased_lambdarank import UnbiasedLambdaRankObjective
from sklearn_ltr.utils._sklearn_compat import InvalidParameterError

SMALL = {"n_estimators": 15, "num_leaves": 7, "min_child_samples": 5, "n_jobs": 1, "random_state": 0}


# --------------------------------------------------------------------------------------------
# The objective against a brute-force loop over the pairs
# --------------------------------------------------------------------------------------------


def brute_force(labels, sizes, scores, *, mode, positions=None, row_weights=None, query_weights=None, sigma=1.0,
                truncation=30, bias_clicked=None, bias_unclicked=None, label_gain=None):
    """grad, hess and the bias update's position costs, one pair at a time."""
    n = len(labels)
    grad, hess = np.zeros(n), np.zeros(n)
    n_pos = 1 if positions is None else int(max(positions))
    cost_plus, cost_minus = np.zeros(n_pos), np.zeros(n_pos)
    start = 0
    for size in sizes:
        rows = list(range(start, start + size))
        start += size
        gain = {r: (2.0 ** labels[r] - 1) if label_gain is None else label_gain[labels[r]] for r in rows}
        ranking = sorted(rows, key=lambda r: -scores[r])  # Python's sort is stable: ties in row order
        rank = {r: k for k, r in enumerate(ranking)}
        ideal = sorted(gain.values(), reverse=True)[:truncation]
        max_dcg = sum(g / math.log2(k + 2) for k, g in enumerate(ideal))
        for i in rows:
            for j in rows:
                if not labels[i] > labels[j] or min(rank[i], rank[j]) >= truncation:
                    continue
                delta = abs(gain[i] - gain[j]) * abs(1 / math.log2(rank[i] + 2) - 1 / math.log2(rank[j] + 2))
                delta /= max_dcg
                if query_weights is not None:
                    delta *= query_weights[i]
                if mode == "unbiased_lambdamart":
                    w = 1.0 / (bias_clicked[positions[i] - 1] * bias_unclicked[positions[j] - 1])
                elif mode == "propensity":
                    w = row_weights[i]  # the clicked document's inverse propensity
                else:
                    w = 1.0
                rho = 1.0 / (1.0 + math.exp(sigma * (scores[i] - scores[j])))
                grad[i] -= sigma * delta * w * rho
                grad[j] += sigma * delta * w * rho
                hess[i] += sigma**2 * delta * w * rho * (1 - rho)
                hess[j] += sigma**2 * delta * w * rho * (1 - rho)
                if mode == "unbiased_lambdamart":
                    cost = delta * math.log1p(math.exp(-sigma * (scores[i] - scores[j])))
                    cost_plus[positions[i] - 1] += cost / bias_unclicked[positions[j] - 1]
                    cost_minus[positions[j] - 1] += cost / bias_clicked[positions[i] - 1]
    return grad, hess, cost_plus, cost_minus


def random_lists(seed, *, graded=False):
    """Lists of 1 to 13 documents (padding), some without clicks or all clicked, tied scores."""
    rng = np.random.default_rng(seed)
    sizes = np.array([1, 2, 5, 13, 7, 3, 1, 9, 4, 6, 2, 11])
    n = sizes.sum()
    labels = rng.integers(0, 3, n) if graded else (rng.random(n) < 0.3).astype(int)
    labels[sizes[0]:sizes[:2].sum()] = 0  # the 2-document list: no click
    labels[sizes[:5].sum():sizes[:6].sum()] = 1  # the 3-document list: all clicked
    scores = np.round(rng.normal(size=n) * 2) / 2  # many ties
    positions = np.concatenate([rng.permutation(size) + 1 for size in sizes])
    propensity = rng.uniform(0.01, 1.0, n)
    query_weights = np.repeat(rng.uniform(0.5, 2.0, len(sizes)), sizes)
    return labels, sizes, scores, positions, propensity, query_weights


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("truncation", [30, 3])
def test_unbiased_gradients_equal_the_brute_force_loop(seed, truncation):
    labels, sizes, scores, positions, _, query_weights = random_lists(seed)
    objective = UnbiasedLambdaRankObjective(labels, sizes, "unbiased_lambdamart", positions=positions,
                                            query_weights=query_weights, sigma=1.5, truncation_level=truncation)
    rng = np.random.default_rng(seed + 10)
    objective.bias_clicked_[:] = rng.uniform(0.2, 1.0, len(objective.bias_clicked_))
    objective.bias_unclicked_[:] = rng.uniform(0.2, 1.0, len(objective.bias_unclicked_))
    grad, hess, plus, minus = objective.gradients(scores)
    expected = brute_force(labels, sizes, scores, mode="unbiased_lambdamart", positions=positions,
                           query_weights=query_weights, sigma=1.5, truncation=truncation,
                           bias_clicked=objective.bias_clicked_, bias_unclicked=objective.bias_unclicked_)
    for got, want in zip((grad, hess, plus, minus), expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    # The one-document list, the list without clicks and the rows outside every pair: no gradient.
    assert grad[0] == hess[0] == 0 and not grad[1:3].any()
    assert (hess > 0).sum() > len(labels) // 2


@pytest.mark.parametrize("seed", [0, 1])
def test_propensity_gradients_weigh_pairs_by_the_clicked_document(seed):
    labels, sizes, scores, _, propensity, _ = random_lists(seed)
    weights = 1 / np.maximum(propensity, 0.05)
    objective = UnbiasedLambdaRankObjective(labels, sizes, "propensity", row_weights=weights)
    grad, hess, _, _ = objective.gradients(scores)
    want_grad, want_hess, _, _ = brute_force(labels, sizes, scores, mode="propensity", row_weights=weights)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(hess, want_hess, rtol=1e-10, atol=1e-12)


def test_graded_labels_and_label_gain_equal_the_brute_force_loop():
    labels, sizes, scores, _, _, _ = random_lists(3, graded=True)
    objective = UnbiasedLambdaRankObjective(labels, sizes, "none", label_gain=[0.0, 1.0, 5.0])
    grad, hess, _, _ = objective.gradients(scores)
    want_grad, want_hess, _, _ = brute_force(labels, sizes, scores, mode="none", label_gain=[0.0, 1.0, 5.0])
    np.testing.assert_allclose(grad, want_grad, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(hess, want_hess, rtol=1e-10, atol=1e-12)


def test_gradients_are_the_derivatives_of_the_pair_loss():
    """Finite differences of sum_ij w_ij |dNDCG_ij| log(1 + exp(-(s_i - s_j))) at fixed |dNDCG| (no ties)."""
    labels, sizes, _, positions, _, _ = random_lists(4)
    scores = np.random.default_rng(4).normal(size=len(labels))
    objective = UnbiasedLambdaRankObjective(labels, sizes, "unbiased_lambdamart", positions=positions)
    objective.bias_clicked_[:] = np.linspace(1, 0.3, len(objective.bias_clicked_))
    objective.bias_unclicked_[:] = np.linspace(1, 0.6, len(objective.bias_unclicked_))
    grad, _, _, _ = objective.gradients(scores)

    def loss(s):  # the costs weighted by 1 / (t+ t-), at the ranking of `scores`
        _, _, plus, _ = brute_force(labels, sizes, s, mode="unbiased_lambdamart", positions=positions,
                                    bias_clicked=objective.bias_clicked_, bias_unclicked=objective.bias_unclicked_)
        return (plus / objective.bias_clicked_).sum()

    eps = 1e-6
    for row in np.flatnonzero(grad)[:8]:
        up, down = scores.copy(), scores.copy()
        up[row] += eps
        down[row] -= eps
        assert (loss(up) - loss(down)) / (2 * eps) == pytest.approx(grad[row], rel=1e-4)


def test_bias_update_is_hu_et_al_closed_form():
    labels, sizes, scores, positions, _, _ = random_lists(5)
    start = sizes[:3].sum()  # the 13-document list: a click at position 1, and a non-click
    labels[start:start + 2] = [1, 0]
    top = start + np.flatnonzero(positions[start:start + 13] == 1)[0]
    positions[[start, top]] = positions[[top, start]]
    objective = UnbiasedLambdaRankObjective(labels, sizes, "unbiased_lambdamart", positions=positions,
                                            regularization=1.0)
    _, _, plus, minus = brute_force(labels, sizes, scores, mode="unbiased_lambdamart", positions=positions,
                                    bias_clicked=np.ones(13), bias_unclicked=np.ones(13))
    objective(labels, scores)
    seen = plus > 0
    np.testing.assert_allclose(objective.bias_clicked_[seen], np.sqrt(plus[seen] / plus[0]))
    np.testing.assert_allclose(objective.bias_unclicked_[minus > 0], np.sqrt(minus[minus > 0] / minus[0]))
    assert objective.bias_clicked_[0] == objective.bias_unclicked_[0] == 1.0
    assert (objective.bias_clicked_[~seen] == 1.0).all()  # no pair there: kept
    # warm_up delays the first update.
    waiting = UnbiasedLambdaRankObjective(labels, sizes, "unbiased_lambdamart", positions=positions, warm_up=2)
    waiting(labels, scores)
    waiting(labels, scores)
    assert (waiting.bias_clicked_ == 1).all()
    waiting(labels, scores)
    assert not (waiting.bias_clicked_ == 1).all()


def test_long_lists_are_chunked_alike():
    labels, sizes, scores, positions, _, _ = (np.tile(a, 2) for a in random_lists(6))  # lists of equal length
    whole = UnbiasedLambdaRankObjective(labels, sizes, "unbiased_lambdamart", positions=positions)
    import sklearn_ltr.rankers._unbiased_lambdarank as module

    cells, module._MAX_PAIR_CELLS = module._MAX_PAIR_CELLS, 1
    try:
        chunked = UnbiasedLambdaRankObjective(labels, sizes, "unbiased_lambdamart", positions=positions)
    finally:
        module._MAX_PAIR_CELLS = cells
    assert len(chunked._blocks) > len(whole._blocks)
    for a, b in zip(whole.gradients(scores), chunked.gradients(scores), strict=True):
        np.testing.assert_allclose(a, b)


# --------------------------------------------------------------------------------------------
# LambdaMARTRanker(position_bias="unbiased_lambdamart") and fit(..., propensity=...)
# --------------------------------------------------------------------------------------------


def _sessions(X, y, qid, *, w, n_sessions, seed):
    rng = np.random.default_rng(seed)
    pages = [simulate_clicks(y, qid, w=w, y_max=4, random_state=rng) for _ in range(n_sessions)]
    positions = np.concatenate([p for p, _ in pages])
    clicks = np.concatenate([c for _, c in pages])
    sessions = np.concatenate([qid * n_sessions + s for s in range(n_sessions)])
    return np.tile(X, (n_sessions, 1)), clicks, positions, sessions


@pytest.fixture(scope="module")
def click_log():
    X, y, qid = make_ranking(n_queries=80, n_features=8, shuffle=True, random_state=0)
    X_log, clicks, positions, sessions = _sessions(X, y, qid, w=0.0, n_sessions=3, seed=0)
    return X_log, clicks, sessions, positions


def test_unbiased_lambdamart_estimates_decreasing_biases_and_predicts(click_log):
    X, clicks, sessions, positions = click_log
    ranker = LambdaMARTRanker(**SMALL, position_bias="unbiased_lambdamart").fit(
        X, clicks, groups=sessions, positions=positions)
    t_plus, t_minus = ranker.position_bias_clicked_, ranker.position_bias_unclicked_
    assert t_plus.shape == t_minus.shape == (positions.max(),)
    assert t_plus[0] == t_minus[0] == 1.0
    # Displayed at random and examined with probability 1/p: clicks fall with the position.
    assert t_plus[4:10].mean() < 0.7 * t_plus[0]
    scores = ranker.predict(X)
    assert scores.shape == clicks.shape and np.isfinite(scores).all()
    # Other trees than LightGBM's own position correction and than no correction.
    lightgbm_bias = LambdaMARTRanker(**SMALL).fit(X, clicks, groups=sessions, positions=positions)
    assert np.abs(lightgbm_bias.predict(X) - scores).max() > 1e-3
    assert not hasattr(lightgbm_bias, "position_bias_clicked_")
    # The booster is an ordinary one: saved and loaded, it predicts the same raw scores.
    restored = lightgbm.Booster(model_str=ranker.booster_.model_to_string())
    np.testing.assert_allclose(restored.predict(X), scores, rtol=1e-12)
    again = pickle.loads(pickle.dumps(ranker))
    np.testing.assert_array_equal(again.predict(X), scores)
    np.testing.assert_array_equal(clone(ranker).fit(X, clicks, groups=sessions, positions=positions).predict(X),
                                  scores)
    # The fitted model keeps no training rows.
    assert ranker.model_.objective._blocks == []


def test_regularization_shrinks_the_biases_towards_one(click_log):
    X, clicks, sessions, positions = click_log
    free = LambdaMARTRanker(**SMALL, position_bias="unbiased_lambdamart").fit(
        X, clicks, groups=sessions, positions=positions)
    shrunk = LambdaMARTRanker(**SMALL, position_bias="unbiased_lambdamart",
                              lambdarank_position_bias_regularization=3.0).fit(
        X, clicks, groups=sessions, positions=positions)
    assert np.abs(np.log(shrunk.position_bias_clicked_)).sum() < 0.5 * np.abs(np.log(free.position_bias_clicked_)).sum()


def test_propensity_trains_pairwise_ips(click_log):
    X, clicks, sessions, positions = click_log
    ranker = LambdaMARTRanker(**SMALL).fit(X, clicks, groups=sessions, propensity=1.0 / positions)
    scores = ranker.predict(X)
    assert np.isfinite(scores).all() and not hasattr(ranker, "position_bias_clicked_")
    # All propensities 1: the pairs are unweighted; propensities below the clip weigh like the clip.
    flat = LambdaMARTRanker(**SMALL).fit(X, clicks, groups=sessions, propensity=np.ones(len(X)))
    assert np.abs(flat.predict(X) - scores).max() > 1e-3
    clipped = LambdaMARTRanker(**SMALL).fit(X, clicks, groups=sessions,
                                            propensity=np.maximum(1.0 / positions, 0.05) * np.where(
                                                positions > 20, 0.5, 1.0))
    np.testing.assert_array_equal(clipped.predict(X), scores)


def test_early_stopping_with_the_custom_objective(click_log):
    X, clicks, sessions, positions = click_log
    train, valid = sessions % 4 != 0, sessions % 4 == 0
    ranker = LambdaMARTRanker(**{**SMALL, "n_estimators": 300}, early_stopping_rounds=3,
                              position_bias="unbiased_lambdamart")
    ranker.fit(X[train], clicks[train], groups=sessions[train], positions=positions[train],
               eval_set=[(X[valid], clicks[valid], sessions[valid])])
    rounds = len(ranker.evals_result_["valid_0"]["ndcg@5"])
    assert ranker.best_iteration_ is not None and ranker.n_estimators_ == ranker.best_iteration_ < rounds < 300
    assert ranker.model_.objective.n_calls_ == rounds


def test_unbiased_lambdamart_beats_clicks_alone_from_a_random_logging_ranker():
    """Displayed at random (w = 0), ten pages per query, examination 1/position; NDCG@10 on the labels.

    Measured: 0.507 on the clicks alone, 0.547 with LightGBM's position biases, 0.570 with Unbiased
    LambdaMART (p = 1; 0.526 with p = 0, 0.555 with p = 2).
    """
    X, y, qid = make_ranking(n_queries=300, n_features=20, random_state=0)
    train = qid < 200
    X_log, clicks, positions, sessions = _sessions(X[train], y[train], qid[train], w=0.0, n_sessions=10, seed=0)
    params = {"n_estimators": 60, "learning_rate": 0.05, "n_jobs": 1, "random_state": 0}
    plain = LambdaMARTRanker(**params).fit(X_log, clicks, groups=sessions)
    unbiased = LambdaMARTRanker(**params, position_bias="unbiased_lambdamart",
                                lambdarank_position_bias_regularization=1.0).fit(
        X_log, clicks, groups=sessions, positions=positions)
    test = ~train
    plain_ndcg = ndcg_score(y[test], plain.predict(X[test]), qid[test], k=10)
    unbiased_ndcg = ndcg_score(y[test], unbiased.predict(X[test]), qid[test], k=10)
    assert unbiased_ndcg > plain_ndcg + 0.03, (unbiased_ndcg, plain_ndcg)


class PropensitySpy(LambdaMARTRanker):
    """Records the query ids and propensities each fit receives."""

    seen = []  # noqa: RUF012

    def fit(self, X, y, groups=None, *, propensity=None, **kwargs):
        PropensitySpy.seen.append((np.asarray(groups), None if propensity is None else np.asarray(propensity)))
        return super().fit(X, y, groups, propensity=propensity, **kwargs)


def test_propensity_is_routed_through_pipeline_and_grid_search(click_log):
    X, clicks, sessions, positions = click_log
    propensity = 1.0 / positions
    PropensitySpy.seen.clear()
    with sklearn.config_context(enable_metadata_routing=True):
        # Not requested by default (propensities routed to an IPS scorer leave the training alone) ...
        PropensitySpy(**SMALL).fit(X, clicks, groups=sessions)
        assert PropensitySpy.seen.pop()[1] is None
        with pytest.raises(TypeError, match="propensity"):
            Pipeline([("rank", PropensitySpy(**SMALL))]).fit(X, clicks, groups=sessions, propensity=propensity)
        # ... and set_fit_request(propensity=True) routes them to fit.
        pipe = Pipeline([("scale", StandardScaler()),
                         ("rank", PropensitySpy(**SMALL).set_fit_request(propensity=True))])
        search = GridSearchCV(pipe, {"rank__num_leaves": [3, 7]}, cv=GroupKFold(2), scoring=ndcg_scorer)
        search.fit(X, clicks, groups=sessions, propensity=propensity)
        unrequested = Pipeline([("rank", PropensitySpy(**SMALL).set_fit_request(propensity=False))])
        with pytest.raises(TypeError, match="propensity"):
            unrequested.fit(X, clicks, groups=sessions, propensity=propensity)
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()
    assert len(PropensitySpy.seen) == 4 + 1
    for groups, seen in PropensitySpy.seen:
        np.testing.assert_array_equal(seen, propensity[np.isin(sessions, groups)])
    assert len(PropensitySpy.seen[0][1]) < len(propensity)


def test_position_bias_is_searchable(click_log):
    X, clicks, sessions, positions = click_log
    with sklearn.config_context(enable_metadata_routing=True):
        search = GridSearchCV(LambdaMARTRanker(**SMALL), {"position_bias": ["lightgbm", "unbiased_lambdamart"]},
                              cv=GroupKFold(2), scoring=ndcg_scorer)
        search.fit(X, clicks, groups=sessions, positions=positions)
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()


@pytest.mark.parametrize(("params", "fit_args", "error", "match"), [
    ({"position_bias": "xgboost"}, {"positions": True}, InvalidParameterError, "'position_bias' parameter"),
    ({"position_bias": "unbiased_lambdamart"}, {}, ValueError,
     r"estimates the bias .*: pass fit\(\.\.\., positions=pos\)"),
    ({}, {"positions": True, "propensity": True}, ValueError, "either positions .* or propensity"),
    ({}, {"propensity": "zero"}, ValueError, r"propensity must hold examination probabilities in \(0, 1\]"),
    ({}, {"propensity": "short"}, ValueError, "propensity has 5 values but X has"),
    ({}, {"propensity": True, "graded": True}, ValueError,
     r"y must hold only 0 \(not clicked\) and 1 \(clicked\); got values such as .*graded relevance"),
    ({"position_bias": "unbiased_lambdamart"}, {"positions": True, "graded": True}, ValueError,
     r"y must hold only 0 \(not clicked\) and 1"),
])
def test_bad_input(click_log, params, fit_args, error, match):
    X, clicks, sessions, positions = click_log
    kwargs = {}
    if fit_args.get("positions"):
        kwargs["positions"] = positions
    propensity = fit_args.get("propensity")
    if propensity is True:
        kwargs["propensity"] = 1.0 / positions
    elif propensity == "zero":
        kwargs["propensity"] = np.where(np.arange(len(X)) == 3, 0.0, 0.5)
    elif propensity == "short":
        kwargs["propensity"] = np.full(5, 0.5)
    y = clicks * 2 if fit_args.get("graded") else clicks
    with pytest.raises(error, match=match):
        LambdaMARTRanker(**SMALL, **params).fit(X, y, groups=sessions, **kwargs)


def test_propensity_on_dask_input_is_refused(click_log):
    da = pytest.importorskip("dask.array")
    X, clicks, sessions, positions = click_log
    with pytest.raises(ValueError, match="propensity is not supported on Dask input"):
        LambdaMARTRanker(**SMALL).fit(da.from_array(X), da.from_array(clicks), groups=da.from_array(sessions),
                                      propensity=1.0 / positions)


def test_onnx_export_of_a_debiased_model(click_log):
    pytest.importorskip("onnxruntime")
    from sklearn_ltr.export import OnnxScorer, to_onnx

    X, clicks, sessions, positions = click_log
    ranker = LambdaMARTRanker(**SMALL, position_bias="unbiased_lambdamart").fit(
        X, clicks, groups=sessions, positions=positions)
    rows = X[:200].astype(np.float32)
    np.testing.assert_allclose(OnnxScorer(to_onnx(ranker)).predict(rows), ranker.predict(rows), rtol=0, atol=1e-5)

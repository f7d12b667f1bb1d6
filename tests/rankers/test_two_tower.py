"""TwoTowerDebiasedRanker: relevance from position-biased clicks, routing of positions, bad input."""

import warnings

import numpy as np
import pytest
import sklearn
import torch
from scipy.stats import spearmanr
from sklearn.model_selection import GridSearchCV, GroupKFold
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_ltr import RankNetRanker, ndcg_scorer
from sklearn_ltr.datasets import make_ranking, simulate_clicks
from sklearn_ltr.metrics import ndcg_score
from sklearn_ltr.nn._two_tower import TwoTowerScorer, gradient_reversal
from sklearn_ltr.nn._two_tower_loss import TwoTowerClickLoss, click_log_likelihood
from sklearn_ltr.rankers._two_tower import MissingPositionsWarning, TwoTowerDebiasedRanker

FAST = {"hidden_sizes": (8,), "max_epochs": 2, "random_state": 0}


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def clicks_data():
    """One simulated result page per query of small make_ranking data: X, clicks, qid, positions."""
    X, y, qid = make_ranking(n_queries=60, n_features=8, random_state=0)
    positions, clicks = simulate_clicks(y, qid, w=0.6, y_max=4, random_state=0)
    return X, clicks, qid, positions


@pytest.fixture(scope="module")
def biased_study(three_page_click_log):
    """Strong position bias (examination 1/position) on 250 training queries shown 3 times each.

    Returns the click log (X, clicks, sessions, positions) and held-out queries with true labels.
    """
    return three_page_click_log(w=0.6)


def test_two_tower_beats_single_tower_and_learns_a_falling_curve(biased_study):
    (X, clicks, sessions, positions), (X_test, y_test, q_test) = biased_study
    net = {"hidden_sizes": (16,), "lr": 1e-2, "max_epochs": 5, "random_state": 0}
    single = RankNetRanker(loss="sigmoid_ce", **net).fit(X, clicks, sessions)
    two = TwoTowerDebiasedRanker(combination="multiplicative", max_position=20, **net)
    two.fit(X, clicks, sessions, positions=positions)
    single_ndcg = ndcg_score(y_test, single.predict(X_test), q_test, k=5)
    two_ndcg = ndcg_score(y_test, two.predict(X_test), q_test, k=5)
    assert two_ndcg > single_ndcg + 0.01, (two_ndcg, single_ndcg)
    curve = two.observation_curve_
    assert curve.shape == (20,) and np.all((curve > 0) & (curve < 1))
    assert spearmanr(np.arange(10), curve[:10])[0] < -0.8, curve
    assert curve[9] < 0.6 * curve[0]  # truth: 1/10 (flatter here: few clicks, confounded positions)
    np.testing.assert_allclose(two.observation_logits_, two.observation_logit(np.arange(1, 21)), rtol=1e-6)


@pytest.mark.parametrize("params", [
    {"combination": "additive"},
    {"combination": "additive", "observation_dropout": 0.3},
    {"combination": "additive", "gradient_reversal": 1.0, "reversal_target": "relevance"},
    {"combination": "multiplicative", "gradient_reversal": 0.5, "reversal_target": "clicks"},
])
def test_every_variant_trains_and_the_curve_falls(biased_study, params):
    (X, clicks, sessions, positions), _ = biased_study
    ranker = TwoTowerDebiasedRanker(hidden_sizes=(16,), lr=1e-2, observation_lr=3e-2, max_epochs=2, max_position=10,
                                    random_state=0, **params).fit(X, clicks, sessions, positions=positions)
    assert np.isfinite(ranker.predict(X)).all()
    assert ranker.observation_curve_.shape == (10,)
    if params["combination"] == "additive":
        assert ranker.observation_curve_[0] == 1.0  # relative to position 1
    # The adversary pushes the observation logit to carry no relevance (clicks: not even the position
    # effect), which flattens the curve; it still falls.
    threshold = -0.5 if "gradient_reversal" in params else -0.8
    assert spearmanr(np.arange(10), ranker.observation_curve_)[0] < threshold, ranker.observation_curve_
    assert ranker.net_.module_.gradient_reversal == params.get("gradient_reversal", 0.0)


def test_predict_ignores_positions_and_uses_only_the_relevance_tower(clicks_data):
    X, clicks, qid, positions = clicks_data
    ranker = TwoTowerDebiasedRanker(**FAST).fit(X, clicks, qid, positions=positions)
    scores = ranker.predict(X)
    np.testing.assert_array_equal(ranker.predict(X, groups=qid, positions=positions), scores)
    np.testing.assert_array_equal(ranker.predict(X, positions=np.full(len(X), 7)), scores)
    relevance = ranker.net_.module_.relevance
    device = next(relevance.parameters()).device  # the test's --device: feed the module where it lives
    with torch.no_grad():
        direct = relevance.network(torch.as_tensor(X, dtype=torch.float32, device=device)).squeeze(-1).cpu().numpy()
    np.testing.assert_allclose(scores, direct, rtol=1e-5, atol=1e-6)


def test_bias_features_in_two_dimensions(clicks_data):
    X, clicks, qid, positions = clicks_data
    device = np.random.default_rng(0).integers(0, 2, len(X))
    bias = np.column_stack([1.0 / positions, device])
    ranker = TwoTowerDebiasedRanker(**FAST, observation_hidden_sizes=(4,)).fit(X, clicks, qid, positions=bias)
    assert ranker.n_bias_features_ == 2 and not hasattr(ranker, "observation_curve_")
    assert ranker.observation_logit(bias[:5]).shape == (5,)
    with pytest.raises(ValueError, match="fitted with 2"):
        ranker.observation_logit(positions[:5])


def test_missing_positions_warns_and_fits_a_single_tower(clicks_data):
    X, clicks, qid, positions = clicks_data
    with pytest.warns(MissingPositionsWarning, match="positions=None"):
        ranker = TwoTowerDebiasedRanker(**FAST).fit(X, clicks, qid)
    # None means "every row at position 1" ...
    at_top = TwoTowerDebiasedRanker(**FAST).fit(X, clicks, qid, positions=np.ones(len(qid)))
    np.testing.assert_array_equal(ranker.predict(X), at_top.predict(X))
    # ... so the observation tower is one constant: besides the shared bias, only position 1's
    # weight ever moves (the gaps between unseen positions stay as initialised).
    with pytest.warns(MissingPositionsWarning):
        shorter = TwoTowerDebiasedRanker(**{**FAST, "max_epochs": 1}).fit(X, clicks, qid)
    longer, short = ranker.observation_logits_, shorter.observation_logits_
    np.testing.assert_allclose(np.diff(longer[1:]), np.diff(short[1:]), atol=1e-6)
    assert abs((longer[0] - longer[1]) - (short[0] - short[1])) > 1e-3
    debiased = TwoTowerDebiasedRanker(**FAST).fit(X, clicks, qid, positions=positions)
    assert not np.allclose(debiased.predict(X), ranker.predict(X))


def test_sample_weight_of_zero_removes_a_session(clicks_data):
    X, clicks, qid, positions = clicks_data
    weights = np.where(qid < 10, 0.0, 1.0)
    flipped = clicks.copy()
    flipped[qid < 10] = 1 - flipped[qid < 10]
    first = TwoTowerDebiasedRanker(**FAST).fit(X, clicks, qid, positions=positions, sample_weight=weights)
    second = TwoTowerDebiasedRanker(**FAST).fit(X, flipped, qid, positions=positions, sample_weight=weights)
    np.testing.assert_array_equal(first.predict(X), second.predict(X))


def test_validation_history_and_early_stopping(clicks_data):
    X, clicks, qid, positions = clicks_data
    ranker = TwoTowerDebiasedRanker(**{**FAST, "max_epochs": 30}, early_stopping=True, n_iter_no_change=2,
                                    validation_fraction=0.25, lr=1e-12).fit(X, clicks, qid, positions=positions)
    assert ranker.n_iter_ == 3
    assert all(np.isfinite(ranker.history_[:, key]).all() for key in ("train_loss", "valid_loss", "valid_ndcg@10"))


class PositionsSpy(TwoTowerDebiasedRanker):
    """Records the positions and groups each fit receives (n_jobs=1: same process)."""

    seen = []  # noqa: RUF012

    def fit(self, X, y, groups=None, positions=None):
        PositionsSpy.seen.append((np.asarray(groups), None if positions is None else np.asarray(positions)))
        return super().fit(X, y, groups, positions=positions)


def test_positions_are_routed_through_pipeline_and_grid_search(clicks_data):
    X, clicks, qid, positions = clicks_data
    PositionsSpy.seen.clear()
    with sklearn.config_context(enable_metadata_routing=True), warnings.catch_warnings():
        warnings.simplefilter("error", MissingPositionsWarning)
        pipe = Pipeline([("scale", StandardScaler()), ("rank", PositionsSpy(**FAST))])
        pipe.fit(X, clicks, groups=qid, positions=positions)
        search = GridSearchCV(pipe, {"rank__observation_dropout": [0.0, 0.3]}, cv=GroupKFold(2),
                              scoring=ndcg_scorer).fit(X, clicks, groups=qid, positions=positions)
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()
    assert len(PositionsSpy.seen) == 1 + 4 + 1  # the pipeline, 2 candidates x 2 folds, the refit
    for groups, seen_positions in PositionsSpy.seen:
        np.testing.assert_array_equal(seen_positions, positions[np.isin(qid, groups)])
    assert len(PositionsSpy.seen[1][1]) < len(positions)  # a fold's fit saw its own rows only
    assert search.best_estimator_[-1].observation_curve_.std() > 0


@pytest.mark.parametrize(("change", "match"), [
    ({"clicks": 2}, r"y \(clicks\) must hold only 0"),
    ({"clicks": 0.5}, r"y \(clicks\) must hold only 0"),
    ({"clicks": -1}, "y contains negative labels"),
    ({"positions": 0}, "1-based display ranks"),
    ({"positions": np.nan}, "missing positions"),
    ({"positions": 1.5}, "whole-number display ranks"),
    ({"positions_length": 5}, "positions has 5 rows but X"),
    ({"groups_length": 5}, "groups has 5 entries"),
])
def test_bad_input(clicks_data, change, match):
    X, clicks, qid, positions = clicks_data
    clicks, positions = clicks.astype(float), positions.astype(float)
    if "clicks" in change:
        clicks[3] = change["clicks"]
    if "positions" in change:
        positions[3] = change["positions"]
    if "positions_length" in change:
        positions = positions[: change["positions_length"]]
    if "groups_length" in change:
        qid = qid[: change["groups_length"]]
    with pytest.raises(ValueError, match=match):
        TwoTowerDebiasedRanker(**FAST).fit(X, clicks, qid, positions=positions)


def test_bad_positions_type(clicks_data):
    X, clicks, qid, _ = clicks_data
    with pytest.raises(ValueError, match="positions must be a numeric"):
        TwoTowerDebiasedRanker(**FAST).fit(X, clicks, qid, positions=np.array(["top"] * len(X)))


@pytest.mark.parametrize(("params", "match"), [
    ({"combination": "max"}, "'combination' parameter"),
    ({"reversal_target": "labels"}, "'reversal_target' parameter"),
    ({"observation_dropout": 1.0}, "'observation_dropout' parameter"),
    ({"gradient_reversal": -1.0}, "'gradient_reversal' parameter"),
    ({"max_position": 0}, "'max_position' parameter"),
    ({"observation_hidden_sizes": (0,)}, "'observation_hidden_sizes' parameter"),
    ({"lr": 0}, "'lr' parameter"),
])
def test_bad_parameters(clicks_data, params, match):
    X, clicks, qid, positions = clicks_data
    with pytest.raises(ValueError, match=match):
        TwoTowerDebiasedRanker(**{**FAST, **params}).fit(X, clicks, qid, positions=positions)


def test_multiplicative_likelihood_is_exact_and_stable():
    r = torch.tensor([-30.0, -2.0, 0.0, 1.5, 40.0, 40.0], dtype=torch.float64)
    o = torch.tensor([3.0, -1.0, 0.0, 2.0, 40.0, -40.0], dtype=torch.float64)
    p = torch.sigmoid(r) * torch.sigmoid(o)
    for c in (0.0, 1.0):
        clicks = torch.full_like(r, c)
        expected = torch.log(p) if c else torch.log1p(-p)
        got = click_log_likelihood(r, o, clicks, "multiplicative")
        finite = torch.isfinite(expected)
        torch.testing.assert_close(got[finite], expected[finite])
    # float32, both logits large: log(1 - p) is finite (about -40) where the naive form gives -inf.
    r32 = torch.tensor([40.0], requires_grad=True)
    value = click_log_likelihood(r32, torch.tensor([40.0]), torch.tensor([0.0]), "multiplicative")
    value.backward()
    assert torch.isfinite(value).all() and torch.isfinite(r32.grad).all()
    assert value.item() == pytest.approx(-40 + np.log(2), abs=1e-3)
    additive = click_log_likelihood(r[:3], o[:3], torch.ones(3, dtype=torch.float64), "additive")
    torch.testing.assert_close(additive, torch.nn.functional.logsigmoid(r[:3] + o[:3]))


def test_gradient_reversal_layer_flips_and_scales_the_gradient():
    x = torch.tensor([1.0, -2.0], requires_grad=True)
    y = gradient_reversal(x, 0.5)
    torch.testing.assert_close(y, x.detach())
    (3 * y).sum().backward()
    torch.testing.assert_close(x.grad, torch.tensor([-1.5, -1.5]))


def test_module_contract_padding_and_observation_dropout():
    torch.manual_seed(0)
    module = TwoTowerScorer(3, (4,), max_position=5, observation_dropout=0.5)
    X = torch.randn(2, 4, 3)
    mask = torch.tensor([[True, True, True, False], [True, True, False, False]])
    positions = torch.tensor([[1.0, 2.0, 9.0, 0.0], [1.0, 2.0, 0.0, 0.0]])
    module.eval()
    relevance = module(X, mask)
    out = module(X, mask, positions=positions)
    torch.testing.assert_close(out.relevance, relevance)
    assert (out.observation[~mask] == 0).all() and out.adversary is None
    assert out.observation[0, 2] == module.observation_logits(torch.tensor([5.0]))[0]  # 9 clipped to 5
    module.train()
    dropped = torch.stack([module(X, mask, positions=positions).observation[mask] for _ in range(200)])
    assert 0.35 < (dropped == 0).float().mean() < 0.65
    # A plain tensor output is scored as a single tower: the sigmoid cross-entropy of the scores.
    from sklearn_ltr.losses import sigmoid_cross_entropy

    clicks = torch.tensor([[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0]])
    torch.testing.assert_close(TwoTowerClickLoss()(relevance, clicks, mask),
                               sigmoid_cross_entropy(relevance, clicks, mask))

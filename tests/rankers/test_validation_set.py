"""A separate validation set as routed fit parameters (``X_val``, ``y_val``, ``groups_val``) on every ranker.

The validation value must be computed on the validation set as the model sees it: the same as
scoring it by hand after training, the same through ``Pipeline(transform_input=["X_val"])`` as
on features transformed by hand, and refused (never a NaN history) when the features cannot be
scored.
"""

import numpy as np
import pytest
import sklearn
from sklearn.impute import SimpleImputer
from sklearn.model_selection import GridSearchCV, GroupKFold
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_ltr import (
    DASALCRanker,
    LambdaMARTRanker,
    RankingEnsemble,
    RankNetRanker,
    SetRankRanker,
    TwoTowerDebiasedRanker,
    ndcg_scorer,
)
from sklearn_ltr.datasets import make_ranking, observation_propensity, simulate_clicks
from sklearn_ltr.metrics import ips_dcg_score, ndcg_score
from sklearn_ltr.rankers import RANKERS
from sklearn_ltr.training import ValidationNDCG

pytestmark = pytest.mark.usefixtures("one_torch_thread")

NEURAL = {"RankNetRanker": {"hidden_sizes": (8,)},
          "DASALCRanker": {"hidden_size": 8, "n_layers": 1, "n_attention_layers": 1, "n_heads": 1, "head_size": 4},
          "SetRankRanker": {"d_model": 8, "n_blocks": 1, "n_heads": 2},
          "TwoTowerDebiasedRanker": {"hidden_sizes": (8,)}}


@pytest.fixture(scope="module")
def data():
    X, y, qid = make_ranking(n_queries=60, n_features=5, random_state=0)
    train, val = qid < 40, qid >= 40
    return X[train], y[train], qid[train], X[val], y[val], qid[val]


@pytest.fixture(autouse=True)
def _routing():
    with sklearn.config_context(enable_metadata_routing=False):
        yield


def _neural(name, **params):
    return RANKERS[name].cls(**{**NEURAL[name], "max_epochs": 3, "random_state": 0, **params})


def _training(name, X, y, qid):
    """``(X, y, qid)`` and fit's other inputs: clicks with positions for the click model."""
    if name != "TwoTowerDebiasedRanker":
        return (X, y, qid), {}
    positions, clicks = simulate_clicks(y, qid, w=0.5, random_state=0)
    return (X, clicks, qid), {"positions": positions}


@pytest.mark.parametrize("name", sorted(NEURAL))
def test_neural_history_is_the_ndcg_of_the_validation_set(name, data):
    X, y, qid, X_val, y_val, qid_val = data
    training, extras = _training(name, X, y, qid)
    ranker = _neural(name).fit(*training, **extras, X_val=X_val, y_val=y_val, groups_val=qid_val)
    history = ranker.history_[:, "valid_ndcg@10"]
    assert len(history) == ranker.n_iter_ == 3
    # The last epoch's value is the NDCG of the fitted model's scores of the validation rows.
    expected = ndcg_score(y_val, ranker.predict(X_val, groups=qid_val), qid_val, k=10)
    assert history[-1] == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize("name", sorted(NEURAL))
def test_early_stopping_monitors_the_validation_set(name, data):
    X, y, qid, X_val, y_val, qid_val = data
    training, extras = _training(name, X, y, qid)
    given = _neural(name, early_stopping=True, max_epochs=6, n_iter_no_change=2)
    given.fit(*training, **extras, X_val=X_val, y_val=y_val, groups_val=qid_val)
    # The same set as a callback of the documented recipe: the same history and the same model.
    callback = ValidationNDCG(k=10, X=X_val, y=y_val, groups=qid_val)
    recipe = _neural(name, early_stopping=True, max_epochs=6, n_iter_no_change=2, callbacks=[callback])
    recipe.fit(*training, **extras)
    history = given.history_[:, "valid_ndcg@10"]
    np.testing.assert_array_equal(history, recipe.history_[:, "valid_ndcg@10"])
    assert given.best_iteration_ == recipe.best_iteration_ == int(np.argmax(history)) + 1
    np.testing.assert_array_equal(given.predict(X_val, groups=qid_val), recipe.predict(X_val, groups=qid_val))
    # Nothing of the training queries was held out: every training query is in the training batches.
    assert "valid_loss" not in given.history_[-1]


def test_pipeline_transforms_the_validation_features(data):
    X, y, qid, X_val, y_val, qid_val = data
    X, X_val = X.copy(), X_val.copy()
    X[::5, 1] = np.nan
    X_val[::4, 2] = np.nan
    steps = [("impute", SimpleImputer(add_indicator=True)), ("scale", StandardScaler())]
    with sklearn.config_context(enable_metadata_routing=True):
        pipe = Pipeline([*steps, ("rank", RankNetRanker(hidden_sizes=(8,), max_epochs=3, random_state=0))],
                        transform_input=["X_val"])
        pipe.fit(X, y, groups=qid, X_val=X_val, y_val=y_val, groups_val=qid_val)
    assert pipe[-1].n_features_in_ == 6  # the indicator of the one feature missing in training
    by_hand = RankNetRanker(hidden_sizes=(8,), max_epochs=3, random_state=0)
    by_hand.fit(pipe[:-1].transform(X), y, qid, X_val=pipe[:-1].transform(X_val), y_val=y_val, groups_val=qid_val)
    np.testing.assert_array_equal(pipe[-1].history_[:, "valid_ndcg@10"], by_hand.history_[:, "valid_ndcg@10"])
    assert np.isfinite(pipe[-1].history_[:, "valid_ndcg@10"]).all()


def test_grid_search_hands_every_candidate_the_validation_set(data):
    X, y, qid, X_val, y_val, qid_val = data
    with sklearn.config_context(enable_metadata_routing=True):
        pipe = Pipeline([("scale", StandardScaler()),
                         ("rank", RankNetRanker(hidden_sizes=(8,), max_epochs=3, early_stopping=True,
                                                random_state=0))], transform_input=["X_val"])
        search = GridSearchCV(pipe, {"rank__lr": [1e-3, 1e-2]}, cv=GroupKFold(2), scoring=ndcg_scorer)
        search.fit(X, y, groups=qid, X_val=X_val, y_val=y_val, groups_val=qid_val)
    best = search.best_estimator_[-1]
    assert len(best.history_[:, "valid_ndcg@10"]) == best.n_iter_
    scaled = search.best_estimator_[:-1].transform(X_val)
    expected = ndcg_score(y_val, best.predict(scaled, groups=qid_val), qid_val, k=10)
    assert max(best.history_[:, "valid_ndcg@10"]) == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize("width", [4, 10])
def test_validation_features_of_another_width_are_refused(data, width):
    X, y, qid, X_val, y_val, qid_val = data
    wrong = np.resize(X_val, (X_val.shape[0], width))
    with pytest.raises(ValueError, match=rf"X_val has {width} features but RankNetRanker is fitted on 5.*"
                                         r"transform_input=\['X_val'\]"):
        RankNetRanker(max_epochs=1).fit(X, y, qid, X_val=wrong, y_val=y_val, groups_val=qid_val)
    callback = ValidationNDCG(X=wrong, y=y_val, groups=qid_val)
    with pytest.raises(ValueError, match=rf"features X of ValidationNDCG has {width} features.*transform_input"):
        RankNetRanker(max_epochs=1, callbacks=[callback]).fit(X, y, qid)


def test_the_callback_itself_refuses_another_width(data):
    X, y, qid, X_val, y_val, qid_val = data
    from sklearn_ltr.base import resolve_groups
    from sklearn_ltr.training._net import build_dataset

    ranker = RankNetRanker(max_epochs=1, random_state=0).fit(X, y, qid)
    net = ranker._build_net(5, ValidationNDCG(X=X_val[:, :4], y=y_val, groups=qid_val))
    with pytest.raises(ValueError, match=r"separate validation set has 4 features but the network trains on 5"):
        net.fit(build_dataset(resolve_groups(qid, len(qid)), X, y))


@pytest.mark.parametrize("how", ["fit", "callback"])
def test_validation_features_with_nan_are_refused(data, how):
    X, y, qid, X_val, y_val, qid_val = data
    X_val = X_val.copy()
    X_val[3, 2] = np.nan
    if how == "fit":
        with pytest.raises(ValueError, match=r"X_val contains NaN \(1 value.*transform_input"):
            RankNetRanker(max_epochs=1).fit(X, y, qid, X_val=X_val, y_val=y_val, groups_val=qid_val)
    else:
        callback = ValidationNDCG(X=X_val, y=y_val, groups=qid_val)
        with pytest.raises(ValueError, match=r"contains NaN|non-finite"):
            RankNetRanker(max_epochs=1, early_stopping=True, callbacks=[callback]).fit(X, y, qid)
        with pytest.raises(ValueError, match=r"1 non-finite value\(s\) \(1 NaN\), the first in row 3, feature 2"):
            callback.initialize()


def test_lambdamart_validation_set_is_an_eval_set_named_valid(data):
    X, y, qid, X_val, y_val, qid_val = data
    given = LambdaMARTRanker(n_estimators=30, early_stopping_rounds=3, random_state=0)
    given.fit(X, y, qid, X_val=X_val, y_val=y_val, groups_val=qid_val)
    evals = LambdaMARTRanker(n_estimators=30, early_stopping_rounds=3, random_state=0)
    evals.fit(X, y, qid, eval_set=[(X_val, y_val, qid_val)], eval_names=["valid"])
    assert list(given.evals_result_) == ["valid"]
    assert given.evals_result_ == evals.evals_result_
    assert given.best_iteration_ == evals.best_iteration_ is not None
    # With an eval_set too, X_val comes last under its name; the others keep LightGBM's names.
    both = LambdaMARTRanker(n_estimators=5, random_state=0)
    both.fit(X, y, qid, eval_set=[(X, y, qid)], X_val=X_val, y_val=y_val, groups_val=qid_val)
    assert list(both.evals_result_) == ["valid_0", "valid"]
    with pytest.raises(ValueError, match="eval_names already holds 'valid'"):
        both.fit(X, y, qid, eval_set=[(X, y, qid)], eval_names=["valid"], X_val=X_val, y_val=y_val,
                 groups_val=qid_val)


def test_lambdamart_pipeline_with_nan_validation_features(data):
    X, y, qid, X_val, y_val, qid_val = data
    X_val = X_val.copy()
    X_val[::3, 0] = np.nan
    with sklearn.config_context(enable_metadata_routing=True):
        pipe = Pipeline([("impute", SimpleImputer(add_indicator=True)),
                         ("rank", LambdaMARTRanker(n_estimators=5, random_state=0))], transform_input=["X_val"])
        pipe.fit(X, y, groups=qid, X_val=X_val, y_val=y_val, groups_val=qid_val)
    by_hand = LambdaMARTRanker(n_estimators=5, random_state=0)
    by_hand.fit(pipe[0].transform(X), y, qid, X_val=pipe[0].transform(X_val), y_val=y_val, groups_val=qid_val)
    assert pipe[-1].evals_result_ == by_hand.evals_result_
    raw = LambdaMARTRanker(n_estimators=5, random_state=0).fit(X, y, qid, X_val=X_val, y_val=y_val, groups_val=qid_val)
    assert raw.evals_result_ != by_hand.evals_result_  # the imputed validation features are not the raw ones


def test_ensemble_passes_the_validation_set_to_its_members(data):
    X, y, qid, X_val, y_val, qid_val = data
    ensemble = RankingEnsemble(LambdaMARTRanker(n_estimators=5), n_estimators=2, random_state=0)
    ensemble.fit(X, y, qid, X_val=X_val, y_val=y_val, groups_val=qid_val)
    assert all(list(member.evals_result_) == ["valid"] for member in ensemble.estimators_)


@pytest.mark.parametrize("given, message", [
    ({"X_val": "X"}, r"fit got X_val without y_val and groups_val"),
    ({"X_val": "X", "y_val": "y"}, r"fit got X_val without groups_val"),
    ({"y_val": "y", "groups_val": "qid"}, r"fit got y_val, groups_val without X_val"),
    ({"X_val": "X", "y_val": "y", "groups_val": "short"}, r"groups_val has 19 entries but X_val has \d+ rows"),
    ({"X_val": "X", "y_val": "negative", "groups_val": "qid"}, r"y_val contains negative labels"),
])
@pytest.mark.parametrize("cls", [RankNetRanker, LambdaMARTRanker])
def test_incomplete_or_inconsistent_validation_sets_are_refused(data, given, message, cls):
    X, y, qid, X_val, y_val, qid_val = data
    values = {"X": X_val, "y": y_val, "qid": qid_val, "short": qid_val[:19], "negative": y_val - 1}
    with pytest.raises(ValueError, match=message):
        cls().fit(X, y, qid, **{key: values[value] for key, value in given.items()})


def test_validation_fraction_and_a_validation_set_are_refused_together(data):
    X, y, qid, X_val, y_val, qid_val = data
    with pytest.raises(ValueError, match=r"validation_fraction=0\.2: early stopping monitors one of them"):
        RankNetRanker(validation_fraction=0.2).fit(X, y, qid, X_val=X_val, y_val=y_val, groups_val=qid_val)


def test_setrank_needs_initial_ranks_of_the_validation_rows_when_trained_with_them(data):
    X, y, qid, X_val, y_val, qid_val = data
    ranks, ranks_val = np.ones(len(y)), np.ones(len(y_val))
    with pytest.raises(ValueError, match="initial_rank_val with X_val if and only if initial_rank"):
        _neural("SetRankRanker").fit(X, y, qid, initial_rank=ranks, X_val=X_val, y_val=y_val, groups_val=qid_val)
    with pytest.raises(ValueError, match="initial_rank_val with X_val if and only if initial_rank"):
        _neural("SetRankRanker").fit(X, y, qid, X_val=X_val, y_val=y_val, groups_val=qid_val,
                                     initial_rank_val=ranks_val)
    ranker = _neural("SetRankRanker").fit(X, y, qid, initial_rank=ranks, X_val=X_val, y_val=y_val,
                                          groups_val=qid_val, initial_rank_val=ranks_val)
    expected = ndcg_score(y_val, ranker.predict(X_val, qid_val, initial_rank=ranks_val), qid_val, k=10)
    assert ranker.history_[-1, "valid_ndcg@10"] == pytest.approx(expected, abs=1e-6)


def test_a_validation_click_log_with_propensities_records_the_ips_estimate(data):
    X, y, qid, X_val, y_val, qid_val = data
    positions, clicks = simulate_clicks(y, qid, w=0.5, random_state=0)
    positions_val, clicks_val = simulate_clicks(y_val, qid_val, w=0.5, random_state=1)
    propensity_val = observation_propensity(positions_val)
    ranker = TwoTowerDebiasedRanker(hidden_sizes=(8,), max_epochs=2, random_state=0)
    ranker.fit(X, clicks, qid, positions=positions, X_val=X_val, y_val=clicks_val, groups_val=qid_val,
               propensity_val=propensity_val)
    expected = ips_dcg_score(clicks_val, ranker.predict(X_val), qid_val, propensity_val, k=10)
    assert ranker.history_[-1, "valid_ips_dcg@10"] == pytest.approx(expected, abs=1e-6)
    assert "valid_ndcg@10" not in ranker.history_[-1]
    ranknet = RankNetRanker(loss="sigmoid_ce", hidden_sizes=(8,), max_epochs=2, random_state=0)
    ranknet.fit(X, clicks, qid, propensity=observation_propensity(positions), X_val=X_val, y_val=clicks_val,
                groups_val=qid_val, propensity_val=propensity_val)
    expected = ips_dcg_score(clicks_val, ranknet.predict(X_val), qid_val, propensity_val, k=10)
    assert ranknet.history_[-1, "valid_ips_dcg@10"] == pytest.approx(expected, abs=1e-6)
    with pytest.raises(ValueError, match="y_val of TwoTowerDebiasedRanker holds clicks"):
        ranker.fit(X, clicks, qid, positions=positions, X_val=X_val, y_val=y_val, groups_val=qid_val,
                   propensity_val=propensity_val)


def test_a_validation_click_log_with_affine_parameters_records_the_affine_estimate(data):
    X, y, qid, X_val, y_val, qid_val = data
    positions, clicks = simulate_clicks(y, qid, w=0.5, random_state=0)
    positions_val, clicks_val = simulate_clicks(y_val, qid_val, w=0.5, random_state=1)
    theta_val = observation_propensity(positions_val)
    affine_val = np.column_stack([0.9 * theta_val, 0.1 * theta_val])  # alpha, beta of click noise 0.1
    ranker = RankNetRanker(loss="sigmoid_ce", hidden_sizes=(8,), max_epochs=2, random_state=0)
    ranker.fit(X, clicks, qid, propensity=observation_propensity(positions), X_val=X_val, y_val=clicks_val,
               groups_val=qid_val, propensity_val=affine_val)
    expected = ips_dcg_score(clicks_val, ranker.predict(X_val), qid_val, affine_val, k=10)
    assert expected != pytest.approx(ips_dcg_score(clicks_val, ranker.predict(X_val), qid_val, theta_val, k=10))
    assert ranker.history_[-1, "valid_ips_dcg@10"] == pytest.approx(expected, abs=1e-6)
    with pytest.raises(ValueError, match="propensity_val"):
        ranker.fit(X, clicks, qid, X_val=X_val, y_val=clicks_val, groups_val=qid_val,
                   propensity_val=affine_val[:5])


def test_every_ranker_requests_the_validation_set():
    for name, entry in RANKERS.items():
        if name == "RankingEnsemble":
            continue
        requests = entry.cls().get_metadata_routing().consumes("fit", ["X_val", "y_val", "groups_val"])
        assert requests == {"X_val", "y_val", "groups_val"}, name
    for cls in (RankNetRanker, DASALCRanker, SetRankRanker, TwoTowerDebiasedRanker):
        assert cls().get_metadata_routing().consumes("fit", ["propensity_val"]) == {"propensity_val"}
    assert SetRankRanker().get_metadata_routing().consumes("fit", ["initial_rank_val"]) == {"initial_rank_val"}


@pytest.mark.parametrize("cls", [RankNetRanker, LambdaMARTRanker])
def test_validation_labels_are_checked_like_the_training_labels(data, cls):
    X, y, qid, X_val, y_val, qid_val = data
    nan = np.where(np.arange(len(y_val)) == 2, np.nan, y_val)
    with pytest.raises(ValueError, match=r"y_val has 19 entries but X has \d+ rows; pass one label per row of X_val"):
        cls().fit(X, y, qid, X_val=X_val, y_val=y_val[:19], groups_val=qid_val)
    with pytest.raises(ValueError, match=r"y_val contains NaN or infinite labels"):
        cls().fit(X, y, qid, X_val=X_val, y_val=nan, groups_val=qid_val)


def test_lambdamart_validation_labels_are_whole_grades(data):
    X, y, qid, X_val, y_val, qid_val = data
    with pytest.raises(ValueError, match=r"y_val must hold whole-number relevance grades"):
        LambdaMARTRanker().fit(X, y, qid, X_val=X_val, y_val=y_val + 0.5, groups_val=qid_val)


@pytest.mark.parametrize("propensity, message", [
    (np.ones(5), r"propensity_val has 5 entries but X_val has \d+ rows"),
    (0.0, r"propensity_val must hold examination probabilities in \(0, 1\]"),
    (1.5, r"propensity_val must hold examination probabilities in \(0, 1\]"),
    (np.nan, r"propensity_val must hold examination probabilities in \(0, 1\]"),
])
def test_validation_propensities_are_probabilities(data, propensity, message):
    X, y, qid, X_val, y_val, qid_val = data
    clicks_val = (y_val > 1).astype(float)
    propensity = np.full(len(y_val), propensity) if np.ndim(propensity) == 0 else propensity
    with pytest.raises(ValueError, match=message):
        RankNetRanker(loss="sigmoid_ce").fit(X, (y > 1).astype(float), qid, X_val=X_val, y_val=clicks_val,
                                             groups_val=qid_val, propensity_val=propensity)
    with pytest.raises(ValueError, match=r"holds clicks: 1 \(clicked\) and 0 \(shown, not clicked\); got values "
                                         r"such as \[2\. 3\. 4\.\]"):
        RankNetRanker(loss="sigmoid_ce").fit(X, (y > 1).astype(float), qid, X_val=X_val, y_val=y_val,
                                             groups_val=qid_val, propensity_val=np.ones(len(y_val)))

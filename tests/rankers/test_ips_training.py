"""Inverse propensity weighting in training: the click losses, fit(..., propensity=...), and IPS validation."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn_ltr import DASALCRanker, RankNetRanker, SetRankRanker
from sklearn_ltr.clicks import inverse_propensity_weights
from sklearn_ltr.datasets import make_ranking, observation_propensity, simulate_clicks
from sklearn_ltr.losses import ranknet, sigmoid_cross_entropy, softmax_cross_entropy
from sklearn_ltr.metrics import ndcg_score
from sklearn_ltr.training import ValidationNDCG
from sklearn_ltr.training._batches import CLICK_PROPENSITY, CLICK_WEIGHTS

CLICK_LOSSES = [sigmoid_cross_entropy, softmax_cross_entropy, ranknet]


@pytest.fixture(scope="module")
def click_log():
    X, y, qid = make_ranking(n_queries=40, n_features=5, random_state=0)
    positions, clicks = simulate_clicks(y, qid, w=0.5, random_state=0)
    return X, clicks, qid, observation_propensity(positions)


# ------------------------------------------------------------------------------------------ losses


def test_click_weights_by_hand():
    scores = torch.tensor([[1.0, -0.5, 0.25]])
    clicks = torch.tensor([[1.0, 0.0, 0.0]])
    weights = torch.tensor([[4.0, 7.0, 9.0]])  # the non-clicks' weights are never read
    softplus = torch.nn.functional.softplus
    # Pointwise: the clicked document's relevance term times 4, the non-clicks' terms as they were.
    expected = (4 * softplus(-scores[0, 0]) + softplus(scores[0, 1]) + softplus(scores[0, 2])) / 3
    assert sigmoid_cross_entropy(scores, clicks, click_weights=weights).item() == pytest.approx(expected.item())
    # Softmax: -4 log softmax(s)_0 (the target 4 * 1 / 1 click).
    expected = -4 * torch.log_softmax(scores, dim=1)[0, 0]
    assert softmax_cross_entropy(scores, clicks, click_weights=weights).item() == pytest.approx(expected.item())
    # RankNet: the two click/non-click pairs weigh 4, the non-click tie 1; mean over the 3 pairs.
    tie = math.log(2 * math.cosh((-0.5 - 0.25) / 2))
    expected = (4 * softplus(-(scores[0, 0] - scores[0, 1])) + 4 * softplus(-(scores[0, 0] - scores[0, 2])) + tie) / 3
    assert ranknet(scores, clicks, click_weights=weights).item() == pytest.approx(expected.item(), rel=1e-6)


def test_two_clicked_documents_pair_at_the_larger_weight():
    scores, clicks = torch.tensor([[0.3, 0.1]]), torch.tensor([[1.0, 1.0]])
    weighted = ranknet(scores, clicks, click_weights=torch.tensor([[2.0, 5.0]]))
    assert weighted.item() == pytest.approx(5 * ranknet(scores, clicks).item())


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from(CLICK_LOSSES))
def test_unit_weights_are_the_unweighted_loss(seed, loss):
    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(3, 6, generator=g)
    clicks = (torch.rand(3, 6, generator=g) < 0.3).float()
    mask = torch.rand(3, 6, generator=g) < 0.8
    ones = torch.ones(3, 6)
    assert torch.equal(loss(scores, clicks, mask, click_weights=ones), loss(scores, clicks, mask))


@pytest.mark.parametrize("loss", CLICK_LOSSES)
def test_padding_weights_are_never_read(loss):
    scores, clicks = torch.tensor([[1.0, 0.0, 5.0]]), torch.tensor([[1.0, 0.0, 1.0]])
    mask = torch.tensor([[True, True, False]])
    a = loss(scores, clicks, mask, click_weights=torch.tensor([[3.0, 1.0, float("nan")]]))
    b = loss(scores, clicks, mask, click_weights=torch.tensor([[3.0, 1.0, 1e9]]))
    assert torch.isfinite(a) and a.item() == b.item()


@pytest.mark.parametrize("loss", CLICK_LOSSES)
def test_bad_click_weights_are_refused(loss):
    scores, clicks = torch.zeros(1, 2), torch.tensor([[1.0, 0.0]])
    with pytest.raises(ValueError, match="click_weights must have the shape"):
        loss(scores, clicks, click_weights=torch.ones(1, 3))
    for bad in (-1.0, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="click_weights must be finite and >= 0"):
            loss(scores, clicks, click_weights=torch.tensor([[bad, 1.0]]))


def test_softmax_target_refuses_click_weights():
    with pytest.raises(ValueError, match="target='linear'"):
        softmax_cross_entropy(torch.zeros(1, 2), torch.tensor([[1.0, 0.0]]), target="softmax",
                              click_weights=torch.ones(1, 2))


# ------------------------------------------------------------------------------------------ fit


def _recording_loss(seen):
    def loss(scores, labels, mask, *, weights=None, click_weights=None):
        seen.append((labels[mask].numpy().copy(), click_weights[mask].numpy().copy()))
        return sigmoid_cross_entropy(scores, labels, mask, click_weights=click_weights)
    return loss


def test_the_loss_receives_clipped_inverse_propensities_of_the_rows(click_log):
    X, clicks, qid, _ = click_log
    propensity = np.random.default_rng(0).choice([1.0, 0.5, 0.2, 0.01], size=len(clicks))
    seen = []
    RankNetRanker(hidden_sizes=(4,), loss=_recording_loss(seen), max_epochs=1, batch_size=len(np.unique(qid)),
                  random_state=0).fit(X, clicks, qid, propensity=propensity)
    labels, weights = seen[0]
    # Every row reaches the loss once, with 1 / max(p, 0.05): inverted (a propensity of 0.5 weighs 2) and
    # clipped (0.01 weighs 20, not 100).
    assert sorted(np.unique(weights).tolist()) == [1.0, 2.0, 5.0, 20.0]
    assert np.bincount(np.searchsorted([1.0, 2.0, 5.0, 20.0], weights), minlength=4).tolist() == [
        int(np.sum(propensity == p)) for p in (1.0, 0.5, 0.2, 0.01)]
    assert labels.sum() == clicks.sum()


@pytest.mark.parametrize(("ranker", "loss"), [(RankNetRanker, "sigmoid_ce"), (RankNetRanker, "ranknet"),
                                              (DASALCRanker, "softmax"), (SetRankRanker, "softmax")])
def test_unit_propensities_train_the_unweighted_model(click_log, ranker, loss):
    X, clicks, qid, propensity = click_log
    params = {"max_epochs": 2, "random_state": 0, "loss": loss}
    plain = ranker(**params).fit(X, clicks, qid).predict(X, qid)
    ones = ranker(**params).fit(X, clicks, qid, propensity=np.ones(len(clicks))).predict(X, qid)
    weighted = ranker(**params).fit(X, clicks, qid, propensity=propensity).predict(X, qid)
    np.testing.assert_array_equal(ones, plain)
    assert np.abs(weighted - plain).max() > 1e-3


def test_propensities_below_the_clip_train_one_model(click_log):
    X, clicks, qid, propensity = click_log
    params = {"hidden_sizes": (8,), "max_epochs": 2, "random_state": 0, "loss": "sigmoid_ce"}
    at_clip = RankNetRanker(**params).fit(X, clicks, qid, propensity=np.maximum(propensity, 0.05))
    below = RankNetRanker(**params).fit(X, clicks, qid, propensity=np.minimum(propensity, 0.05) * 0 + np.where(
        propensity < 0.05, 1e-4, propensity))
    np.testing.assert_array_equal(at_clip.predict(X), below.predict(X))


def test_propensity_errors_name_the_fix(click_log):
    X, clicks, qid, propensity = click_log
    with pytest.raises(ValueError, match="takes no click weights: use loss='sigmoid_ce'"):
        RankNetRanker(loss="lambdarank", max_epochs=1).fit(X, clicks, qid, propensity=propensity)
    with pytest.raises(ValueError, match=r"y must hold only 0 \(not clicked\) and 1 \(clicked\); got values such as "
                                         r"2\. propensity=\.\.\. weighs clicks: fit graded relevance labels without"):
        RankNetRanker(loss="sigmoid_ce", max_epochs=1).fit(X, clicks * 2, qid, propensity=propensity)
    with pytest.raises(ValueError, match="look like inverse-propensity weights"):
        RankNetRanker(loss="sigmoid_ce", max_epochs=1).fit(X, clicks, qid, propensity=1 / propensity)
    with pytest.raises(ValueError, match="has 3 values but X has"):
        RankNetRanker(loss="sigmoid_ce", max_epochs=1).fit(X, clicks, qid, propensity=propensity[:3])


def test_propensity_is_routed_like_groups(click_log):
    import sklearn
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, clicks, qid, propensity = click_log
    params = {"hidden_sizes": (8,), "max_epochs": 2, "random_state": 0, "loss": "sigmoid_ce"}
    direct = RankNetRanker(**params).fit(StandardScaler().fit_transform(X), clicks, qid, propensity=propensity)
    with sklearn.config_context(enable_metadata_routing=True):
        pipe = make_pipeline(StandardScaler(), RankNetRanker(**params).set_fit_request(
            groups=True, propensity=True)).fit(X, clicks, groups=qid, propensity=propensity)
    np.testing.assert_array_equal(pipe.predict(X), direct.predict(StandardScaler().fit_transform(X)))


# ------------------------------------------------------------------------------------------ validation


def test_held_out_validation_is_the_ips_estimate():
    callback = ValidationNDCG(k=2).initialize()
    callback.on_epoch_begin(None)
    mask = torch.tensor([[True, True, True], [True, True, False]])
    labels = torch.tensor([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]])
    scores = torch.tensor([[3.0, 2.0, 1.0], [0.5, 0.2, 9.0]])
    propensity = torch.tensor([[1.0, 1.0, 0.25], [1.0, 0.5, 1.0]], dtype=torch.float64)
    # The propensities are read, not the click weights (these would give other values).
    weights = torch.full((2, 3), 7.0)
    batch = ({"mask": mask, CLICK_WEIGHTS: weights, CLICK_PROPENSITY: propensity}, labels)
    callback.on_batch_end(None, batch=batch, training=False, y_pred=scores)
    total, n, bad = callback._held_out_totals().tolist()
    # The IPS estimate of DCG@2. Query 1: weighted clicks 1 (rank 1) and 4 (rank 3, past k=2): 1. Query 2: the
    # weighted click 2 at rank 2: 2 / log2(3). Not the self-normalised NDCG, where query 2's only click would
    # weigh nothing (2 / log2(3) over its ideal 2).
    assert (n, bad) == (2, 0) and total == pytest.approx(1 + 2 / math.log2(3))
    unweighted = ndcg_score(labels[mask].numpy(), scores[mask].numpy(), np.repeat([0, 1], [3, 2]), k=2)
    assert total / n != pytest.approx(unweighted)


def test_early_stopping_reads_the_ips_estimate(click_log):
    X, clicks, qid, propensity = click_log
    params = {"hidden_sizes": (8,), "max_epochs": 2, "random_state": 0, "loss": "sigmoid_ce",
              "early_stopping": True, "validation_fraction": 0.5}
    fitted = RankNetRanker(**params).fit(X, clicks, qid, propensity=propensity)
    plain = RankNetRanker(**params).fit(X, clicks, qid, propensity=np.ones(len(clicks)))
    clicks_as_labels = RankNetRanker(**params).fit(X, clicks, qid)
    # With the log's propensities the estimate differs from unit propensities' (the clicks' DCG), which
    # differs from the NDCG of the clicks recorded without propensities.
    ips, unit = fitted.history_[:, "valid_ips_dcg@10"], plain.history_[:, "valid_ips_dcg@10"]
    assert "valid_ndcg@10" not in fitted.history_[-1] and "valid_ips_dcg@10" not in clicks_as_labels.history_[-1]
    assert np.abs(np.subtract(ips, unit)).max() > 1e-3
    assert np.abs(np.subtract(unit, clicks_as_labels.history_[:, "valid_ndcg@10"])).max() > 1e-3
    assert inverse_propensity_weights(propensity).max() > 1


def _held_out(ranker, qid, fraction):
    """Rows of the queries that ``ranker``'s fit held out: ``QuerySplit`` with the ranker's split seed."""
    ids = np.unique(qid)  # the training dataset's queries, in the order the split numbers them
    _, split_seed = ranker._seeds()
    held = np.random.default_rng(split_seed).permutation(len(ids))[:round(fraction * len(ids))]
    return np.isin(qid, ids[held])


@pytest.mark.parametrize("kind", ["ips", "affine", "affine, alpha + beta = 1"])
def test_held_out_value_is_the_ips_dcg_of_predict_on_the_held_out_queries(click_log, kind):
    """The held-out clicks record their IPS estimate under its own name, from the propensities fit was given.

    The propensities themselves, not propensities rebuilt from float32 click weights: (0.6, 0.4) would come
    back with alpha + beta above 1, which the metric refuses.
    """
    from sklearn_ltr.metrics import ips_dcg_score

    X, clicks, qid, propensity = click_log
    assert propensity.min() < 0.05  # the clip applies
    if kind == "affine":
        propensity = np.column_stack([0.7 * propensity, 0.3 * propensity])
    elif kind == "affine, alpha + beta = 1":
        propensity = np.column_stack([np.full(len(clicks), 0.6), np.full(len(clicks), 0.4)])
    # A held-out callback of the user's, without a name, records under the estimate's name too.
    ranker = RankNetRanker(hidden_sizes=(8,), loss="sigmoid_ce", max_epochs=2, validation_fraction=0.3,
                           callbacks=[("at5", ValidationNDCG(k=5))], random_state=0)
    ranker.fit(X, clicks, qid, propensity=propensity)
    history = ranker.history_
    assert {"valid_ips_dcg@10", "valid_ips_dcg@5"} <= set(history[-1])
    assert not {"valid_ndcg@10", "valid_ndcg@5"} & set(history[-1])
    held = _held_out(ranker, qid, 0.3)
    expected = ips_dcg_score(clicks[held], ranker.predict(X[held]), qid[held], propensity[held], k=10)
    assert history[-1, "valid_ips_dcg@10"] == pytest.approx(expected, rel=1e-6)
    assert expected != pytest.approx(ndcg_score(clicks[held], ranker.predict(X[held]), qid[held], k=10))


def test_the_ips_key_is_the_estimates_own():
    assert ValidationNDCG(k=5, X=np.zeros((1, 1)), y=[1], groups=[0], propensity=[1.0]).history_key == \
        "valid_ips_dcg@5"
    assert ValidationNDCG(k=5, X=np.zeros((1, 1)), y=[1], groups=[0]).history_key == "valid_ndcg@5"
    assert ValidationNDCG(k=5, propensity=[1.0], name="clicks@5").history_key == "clicks@5"


def _separate_click_log(seed):
    """A simulated click log split into 60 training and 30 validation queries, and the validation's monitor."""
    X, y, qid = make_ranking(n_queries=90, n_features=5, random_state=seed)
    positions, clicks = simulate_clicks(y, qid, w=0.5, random_state=seed)
    propensity = observation_propensity(positions)
    train, val = qid < 60, qid >= 60
    valid = ValidationNDCG(k=5, X=X[val], y=clicks[val], groups=qid[val], propensity=propensity[val])
    return X, clicks, qid, propensity, train, val, valid


def test_early_stopping_monitors_a_separate_validation_click_log():
    X, clicks, qid, propensity, train, val, valid = _separate_click_log(1)
    ranker = RankNetRanker(hidden_sizes=(8,), loss="sigmoid_ce", early_stopping=True, n_iter_no_change=2,
                           max_epochs=8, callbacks=[("clicks", valid)], random_state=0)
    ranker.fit(X[train], clicks[train], qid[train])
    history = ranker.history_
    # Nothing of the training log is held out, and the kept epoch is the best of the separate log's IPS-DCG@5.
    assert valid.history_key == "valid_ips_dcg@5"
    assert not {"valid_ndcg@10", "valid_ips_dcg@10", "valid_ndcg@5", "valid_loss"} & set(history[-1])
    values = history[:, "valid_ips_dcg@5"]
    assert ranker.best_iteration_ == int(np.argmax(values)) + 1
    from sklearn_ltr.metrics import ips_dcg_score

    expected = ips_dcg_score(clicks[val], ranker.predict(X[val]), qid[val], propensity[val], k=5)
    assert values[ranker.best_iteration_ - 1] == pytest.approx(expected, rel=1e-6)
    # The user's callback object is untouched (fit works on copies).
    assert not hasattr(valid, "dataset_")


def test_validation_estimate_is_the_metric_librarys_ips_dcg():
    from sklearn_ltr.metrics import ips_dcg_score

    X, clicks, qid, propensity, train, val, valid = _separate_click_log(2)
    ranker = RankNetRanker(hidden_sizes=(8,), loss="sigmoid_ce", max_epochs=1, callbacks=[valid], random_state=0)
    ranker.fit(X[train], clicks[train], qid[train])
    expected = ips_dcg_score(clicks[val], ranker.predict(X[val]), qid[val], propensity[val], k=5)
    assert ranker.history_[-1, "valid_ips_dcg@5"] == pytest.approx(expected, rel=1e-6)


# ------------------------------------------------------------------------------------------ trust bias


def test_the_loss_receives_the_affine_pairs_of_the_rows(click_log):
    X, clicks, qid, _ = click_log
    rng = np.random.default_rng(0)
    alpha = rng.choice([0.8, 0.4, 0.01], size=len(clicks))
    affine = np.column_stack([alpha, np.minimum(0.5 * alpha, 0.15)])
    seen = []
    RankNetRanker(hidden_sizes=(4,), loss=_recording_loss(seen), max_epochs=1, batch_size=len(np.unique(qid)),
                  random_state=0).fit(X, clicks, qid, propensity=affine)
    labels, weights = seen[0]
    # One (1 / max(alpha, 0.05), beta / max(alpha, 0.05)) pair per row: alpha 0.01 is clipped to 0.05.
    assert weights.shape == (len(clicks), 2) and labels.sum() == clicks.sum()
    expected = np.array([(1 / 0.8, 0.15 / 0.8), (1 / 0.4, 0.15 / 0.4), (20.0, 0.005 * 20)])
    np.testing.assert_allclose(np.unique(weights, axis=0), expected[np.argsort(expected[:, 0])], rtol=1e-6)


def test_affine_propensity_trains_another_model_than_ips(click_log):
    X, clicks, qid, propensity = click_log
    params = {"hidden_sizes": (8,), "max_epochs": 2, "random_state": 0, "loss": "softmax"}
    ips = RankNetRanker(**params).fit(X, clicks, qid, propensity=propensity).predict(X)
    beta_zero = RankNetRanker(**params).fit(X, clicks, qid, propensity=np.column_stack(
        [propensity, np.zeros(len(clicks))])).predict(X)
    trust = RankNetRanker(**params).fit(X, clicks, qid, propensity=np.column_stack(
        [0.8 * propensity, 0.2 * propensity])).predict(X)
    # (p, 0) is the affine estimate c / p, in the loss's unnormalised form; beta changes the model further.
    assert np.abs(beta_zero - ips).max() > 1e-4 and np.abs(trust - beta_zero).max() > 1e-4


def test_affine_propensity_errors_name_the_fix(click_log):
    X, clicks, qid, propensity = click_log
    affine = np.column_stack([propensity, np.zeros(len(clicks))])
    with pytest.raises(ValueError, match=r"takes no click weights.*\[batch, list, 2\]"):
        RankNetRanker(loss="lambdarank", max_epochs=1).fit(X, clicks, qid, propensity=affine)
    with pytest.raises(ValueError, match=r"alpha \+ beta > 1"):
        RankNetRanker(loss="sigmoid_ce", max_epochs=1).fit(X, clicks, qid, propensity=affine + np.array([0.0, 0.9]))
    with pytest.raises(ValueError, match="has 3 rows but X has"):
        RankNetRanker(loss="sigmoid_ce", max_epochs=1).fit(X, clicks, qid, propensity=affine[:3])


def test_held_out_validation_is_the_affine_estimate():
    callback = ValidationNDCG(k=2).initialize()
    callback.on_epoch_begin(None)
    mask = torch.tensor([[True, True, True], [True, True, False]])
    labels = torch.tensor([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]])
    scores = torch.tensor([[3.0, 2.0, 1.0], [0.5, 0.2, 9.0]])
    # (alpha, beta): alpha 0.5 and beta 0.25 everywhere, but alpha 0.25 and beta 0.5 for one row.
    affine = torch.tensor([[[0.5, 0.25], [0.5, 0.25], [0.5, 0.25]], [[0.5, 0.25], [0.25, 0.5], [0.5, 0.25]]],
                          dtype=torch.float64)
    callback.on_batch_end(None, batch=({"mask": mask, CLICK_PROPENSITY: affine}, labels), training=False, y_pred=scores)
    total, n, bad = callback._held_out_totals().tolist()
    # Affine DCG@2. Query 1: click 1.5 at rank 1, non-click -0.5 at rank 2. Query 2: non-click -0.5 at rank 1,
    # click (1 - 0.5) / 0.25 = 2 at rank 2.
    expected = (1.5 - 0.5 / math.log2(3)) + (-0.5 + 2 / math.log2(3))
    assert (n, bad) == (2, 0) and total == pytest.approx(expected)


def test_separate_validation_click_log_takes_affine_propensities():
    from sklearn_ltr.metrics import ips_dcg_score

    X, clicks, qid, propensity, train, val, _ = _separate_click_log(2)
    affine = np.column_stack([0.7 * propensity, 0.3 * propensity])
    valid = ValidationNDCG(k=5, X=X[val], y=clicks[val], groups=qid[val], propensity=affine[val])
    ranker = RankNetRanker(hidden_sizes=(8,), loss="sigmoid_ce", max_epochs=1, callbacks=[valid], random_state=0)
    ranker.fit(X[train], clicks[train], qid[train], propensity=affine[train])
    expected = ips_dcg_score(clicks[val], ranker.predict(X[val]), qid[val], affine[val], k=5)
    assert ranker.history_[-1, "valid_ips_dcg@5"] == pytest.approx(expected, rel=1e-6)
    assert expected != pytest.approx(ips_dcg_score(clicks[val], ranker.predict(X[val]), qid[val], propensity[val],
                                                   k=5))


def test_the_loss_receives_the_query_weights_beside_the_click_weights(click_log):
    """sample_weight still weighs the queries of a click log: the loss gets both kinds of weight."""
    X, clicks, qid, propensity = click_log
    queries = np.unique(qid)
    query_weight = dict(zip(queries, np.arange(1, len(queries) + 1, dtype=float), strict=True))
    seen = []

    def loss(scores, labels, mask, *, weights=None, click_weights=None):
        seen.append(None if weights is None else weights.numpy().copy())
        return sigmoid_cross_entropy(scores, labels, mask, weights=weights, click_weights=click_weights)

    RankNetRanker(hidden_sizes=(4,), loss=loss, max_epochs=1, batch_size=len(queries), random_state=0).fit(
        X, clicks, qid, propensity=propensity, sample_weight=np.array([query_weight[q] for q in qid]))
    assert seen[0] is not None
    np.testing.assert_allclose(np.sort(seen[0]), np.sort(list(query_weight.values())), rtol=1e-6)

r"""
From a click log to a ranker, without a single label
====================================================

A user with only click logs has three questions: how much does each position
get examined, how to train a ranker that learns relevance rather than the old
ranking's positions, and how to choose between models when no relevance label
exists. This example answers all three on a simulated log, end to end, and
then checks the answers against the true labels that the simulation kept
aside:

1. estimate the examination propensity of each position from the log
   (:mod:`sklearn_ltr.clicks`);
2. train with inverse propensity weighting (``fit(..., propensity=...)``), or
   with the dual learning algorithm, and stop early on a validation log of
   other queries;
3. evaluate every model counterfactually
   (:func:`~sklearn_ltr.metrics.ips_dcg_score`) and pick one.

The data are tiny and the networks train for seconds: read the numbers as an
illustration. See :ref:`click-logs` for the recipe and the study behind it.
"""

# %%
# A simulated click log
# ---------------------
# Each query is shown in several sessions (four for training, eight for
# validation) by a logging ranker of quality ``w=0.6``
# (:func:`~sklearn_ltr.clicks.simulate_click_log`): position :math:`p` is
# examined with probability :math:`1/p`, and an examined document is clicked
# with a probability that grows with its (hidden) label. Training, validation
# and test queries are disjoint; only the test queries' labels are used, and
# only to check the answers at the end.
import matplotlib.pyplot as plt
import numpy as np
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_ltr import Log1pTransformer, RankNetRanker, TwoTowerDebiasedRanker
from sklearn_ltr.clicks import (
    estimate_propensity_em,
    estimate_propensity_harvesting,
    simulate_click_log,
)
from sklearn_ltr.datasets import make_ranking, observation_propensity
from sklearn_ltr.metrics import ips_dcg_score, ndcg_score
from sklearn_ltr.training import ValidationNDCG

X, y, qid = make_ranking(n_queries=400, n_features=10, random_state=0)
part = np.where(qid < 250, "train", np.where(qid < 325, "valid", "test"))
# The feature transform learns from the training queries only.
scale = make_pipeline(Log1pTransformer(), StandardScaler())
X = scale.fit(X[part == "train"]).transform(X)
rng = np.random.default_rng(0)


def click_log(mask, n_sessions):
    """Features, clicks, positions, session ids: n_sessions pages a query."""
    log = simulate_click_log(y[mask], qid[mask], w=0.6, sessions=n_sessions,
                             y_max=4, random_state=rng)
    return X[mask][log.rows], log.clicks, log.positions, log.sessions


X_train, clicks, positions, sessions = click_log(part == "train", 4)
X_valid, clicks_valid, positions_valid, sessions_valid = click_log(
    part == "valid", 8
)
print(f"training log: {len(clicks):,} impressions, {clicks.sum():,} clicks")
print(f"validation log: {len(clicks_valid):,} impressions, "
      f"{clicks_valid.sum():,} clicks")

# %%
# 1. Estimating the propensities
# ------------------------------
# Two estimators, neither of which sees the :math:`1/p` of the simulation.
# Intervention harvesting (Agarwal et al., 2019) compares the click rates of
# the *same* document of the same query shown at different positions in
# different sessions: here the logging ranker's noise moves documents between
# sessions. Regression EM (Wang et al., 2018) fits the position-based model
# :math:`P(c=1) = \theta_p\,\gamma(x)` with :math:`\gamma` a regression on the
# features, and needs no repeated documents; where the features explain
# relevance poorly, the relevance they miss, which the logging ranker put on
# top, is read as examination, and its curve falls too fast. Both return
# :math:`\theta_p / \theta_1` with a bootstrap band.
documents = np.tile(np.flatnonzero(part == "train"), 4)  # row of X = document
queries = np.tile(qid[part == "train"], 4)
estimates = {
    "intervention harvesting": estimate_propensity_harvesting(
        clicks, positions, queries, documents, max_position=10,
        n_bootstrap=10, random_state=0,
    ),
    "regression EM": estimate_propensity_em(
        X_train, clicks, positions, sessions, max_position=10,
        n_bootstrap=10, random_state=0,
    ),
}
p = np.arange(1, 11)
fig, ax = plt.subplots(figsize=(7, 4))
ax.plot(p, observation_propensity(p), "k--", label="truth 1/p (hidden)")
colours = ("C0", "C1")
for (name, estimate), colour in zip(estimates.items(), colours, strict=True):
    ax.plot(estimate.positions, estimate.propensity, "o-", color=colour,
            label=name)
    ax.fill_between(estimate.positions, estimate.lower, estimate.upper,
                    color=colour, alpha=0.2)
    truth = observation_propensity(estimate.positions)
    error = np.abs(estimate.propensity / truth - 1).max()
    print(f"{name}: largest relative error, positions 1-10: {error:.0%}")
ax.set(xlabel="display position", yscale="log",
       ylabel="examination, relative to position 1")
ax.legend()
plt.show()
estimate = estimates["intervention harvesting"]

# %%
# 2. Training
# -----------
# Four models share one relevance network. The naive one trains on the clicks
# for a fixed number of epochs. The others stop early on the *validation log*
# (a :class:`~sklearn_ltr.training.ValidationNDCG` of a separate set in
# ``callbacks``: with ``early_stopping=True`` the ranker monitors it). With
# ``propensity=``, each click weighs :math:`1/\max(p, 0.05)` in the loss, and
# the validation value is the IPS estimate of DCG@5. DLA, the dual learning
# algorithm, learns the propensities and the relevance together.
net = {"hidden_sizes": (32,), "lr": 3e-3, "random_state": 0}
stop = {"max_epochs": 30, "early_stopping": True, "n_iter_no_change": 8}
train_propensity = estimate.propensity_of(positions)
valid_propensity = estimate.propensity_of(positions_valid)


def validation(propensity=None):
    """The early-stopping monitor: NDCG@5 of the validation log."""
    return [ValidationNDCG(k=5, X=X_valid, y=clicks_valid,
                           groups=sessions_valid, propensity=propensity)]


naive = RankNetRanker(loss="sigmoid_ce", max_epochs=20, **net)
stopped = RankNetRanker(loss="sigmoid_ce", callbacks=validation(),
                        **stop, **net)
ips = RankNetRanker(loss="sigmoid_ce",
                    callbacks=validation(valid_propensity), **stop, **net)
dla = TwoTowerDebiasedRanker(combination="dla", max_position=10,
                             observation_lr=1e-2,
                             callbacks=validation(valid_propensity),
                             **stop, **net)
models = {
    "naive (20 epochs)": naive.fit(X_train, clicks, sessions),
    "early stopping": stopped.fit(X_train, clicks, sessions),
    "IPS, estimated propensities": ips.fit(
        X_train, clicks, sessions, propensity=train_propensity),
    "DLA": dla.fit(X_train, clicks, sessions, positions=positions),
}

# %%
# 3. Choosing a model without labels
# ----------------------------------
# The IPS estimate of DCG@5 on the validation log weighs each click by its
# inverse propensity: it estimates what the model would score on the true
# relevance. NDCG@5 of the raw clicks rewards the old ranking instead (and so
# does the self-normalised IPS-NDCG on result pages with a single click, whose
# weight cancels in the ratio). Only now do we look at the test queries' true
# labels, to see whether the estimate picked well.
test = part == "test"
print(f"{'model':28s} {'IPS-DCG@5':>9s} {'clicks':>7s} {'truth':>6s}")
rows = []
for name, model in models.items():
    valid_scores = model.predict(X_valid)
    estimated = ips_dcg_score(clicks_valid, valid_scores, sessions_valid,
                              valid_propensity, k=5)
    raw = ndcg_score(clicks_valid, valid_scores, sessions_valid, k=5)
    true = ndcg_score(y[test], model.predict(X[test]), qid[test], k=5)
    rows.append((name, estimated, true))
    print(f"{name:28s} {estimated:9.3f} {raw:7.3f} {true:6.3f}")
chosen = max(rows, key=lambda row: row[1])
best = max(rows, key=lambda row: row[2])
print(f"IPS selects {chosen[0]!r} (true NDCG@5 {chosen[2]:.3f}); "
      f"the best is {best[0]!r} ({best[2]:.3f})")

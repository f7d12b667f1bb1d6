r"""
From a click log to a ranker, without a single label
====================================================

A user with only click logs has three questions: how much does each position
get examined, how to train a ranker that learns relevance rather than the old
ranking's positions, and how to choose between models when no relevance labels
exist. This example answers all three on a simulated log, end to end, and then
checks the answers against the true labels that the simulation kept aside:

1. estimate the examination propensity of each position from the log
   (:func:`~sklearn_ltr.clicks.estimate_propensity_em`);
2. train with inverse propensity weighting (``fit(..., propensity=...)``) and
   early stopping on a validation log of other queries;
3. evaluate every model counterfactually (:func:`~sklearn_ltr.metrics.ips_ndcg_score`)
   and pick one.

See :ref:`click-logs` for the recipe and the evidence behind it.
"""

# %%
# A simulated click log
# ---------------------
# Each query is shown in four sessions by a logging ranker of quality ``w=0.6``
# (:func:`~sklearn_ltr.datasets.simulate_clicks`): position :math:`p` is
# examined with probability :math:`1/p`, and an examined document is clicked
# with a probability that grows with its (hidden) label. Training queries,
# validation queries and test queries are disjoint; only the test queries'
# labels are used, and only to check the answers at the end.
import matplotlib.pyplot as plt
import numpy as np
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_ltr import Log1pTransformer, RankNetRanker, TwoTowerDebiasedRanker
from sklearn_ltr.clicks import estimate_propensity_em
from sklearn_ltr.datasets import make_ranking, observation_propensity, simulate_clicks
from sklearn_ltr.metrics import ips_ndcg_score, ndcg_score
from sklearn_ltr.training import ValidationNDCG

X, y, qid = make_ranking(n_queries=400, n_features=10, random_state=0)
part = np.where(qid < 250, "train", np.where(qid < 325, "valid", "test"))
# The feature transform learns from the training queries only.
X = make_pipeline(Log1pTransformer(), StandardScaler()).fit(X[part == "train"]).transform(X)
rng = np.random.default_rng(0)


def click_log(mask, n_sessions=4):
    """Features, clicks, positions and session ids of n_sessions pages a query."""
    pages = [simulate_clicks(y[mask], qid[mask], w=0.6, y_max=4, random_state=rng)
             for _ in range(n_sessions)]
    sessions = np.concatenate([qid[mask] * n_sessions + s for s in range(n_sessions)])
    return (np.tile(X[mask], (n_sessions, 1)), np.concatenate([c for _, c in pages]),
            np.concatenate([p for p, _ in pages]), sessions)


X_train, clicks, positions, sessions = click_log(part == "train")
X_valid, clicks_valid, positions_valid, sessions_valid = click_log(part == "valid")
print(f"training log: {len(clicks):,} impressions, {clicks.sum():,} clicks; "
      f"validation log: {len(clicks_valid):,} impressions, {clicks_valid.sum():,} clicks")

# %%
# 1. Estimating the propensities
# ------------------------------
# Regression EM (Wang et al., 2018) fits the position-based model
# :math:`P(c=1) = \theta_p\,\gamma(x)`, with :math:`\gamma` a regression on the
# features, and returns :math:`\theta_p / \theta_1` with a bootstrap band. It
# never sees the :math:`1/p` of the simulation.
estimate = estimate_propensity_em(X_train, clicks, positions, sessions, max_position=10,
                                  n_bootstrap=10, random_state=0)
p = estimate.positions
fig, ax = plt.subplots(figsize=(7, 4))
ax.plot(p, observation_propensity(p), "k--", label="truth 1/p (hidden)")
ax.plot(p, estimate.propensity, "C0o-", label="regression EM")
ax.fill_between(p, estimate.lower, estimate.upper, color="C0", alpha=0.2, label="95% bootstrap band")
ax.set(xlabel="display position", ylabel="examination, relative to position 1", yscale="log")
ax.legend()
plt.show()
error = np.abs(estimate.propensity / observation_propensity(p) - 1).max()
print(f"largest relative error over positions 1-10: {error:.0%}")

# %%
# 2. Training
# -----------
# Four models share one relevance network. The naive one trains on the clicks
# for a fixed number of epochs. The others stop early on the *validation log*
# (a :class:`~sklearn_ltr.training.ValidationNDCG` of a separate set in
# ``callbacks``: with ``early_stopping=True`` the ranker monitors it): without
# it, a network fitted to clicks learns their position bias and noise. With
# ``propensity=``, each click weighs :math:`1/\max(p, 0.05)` in the loss and the
# validation value is the IPS estimate. DLA (the dual learning algorithm) learns
# the propensities and the relevance together.
net = {"hidden_sizes": (32,), "lr": 1e-3, "random_state": 0}
train_propensity = estimate.propensity_of(positions)
valid_propensity = estimate.propensity_of(positions_valid)


def validation(propensity=None):
    return [ValidationNDCG(k=5, X=X_valid, y=clicks_valid, groups=sessions_valid, propensity=propensity)]


models = {
    "naive (20 epochs)": RankNetRanker(loss="sigmoid_ce", max_epochs=20, **net).fit(
        X_train, clicks, sessions),
    "early stopping": RankNetRanker(loss="sigmoid_ce", max_epochs=30, early_stopping=True,
                                    callbacks=validation(), **net).fit(X_train, clicks, sessions),
    "IPS, estimated propensities": RankNetRanker(
        loss="sigmoid_ce", max_epochs=30, early_stopping=True, callbacks=validation(valid_propensity), **net,
    ).fit(X_train, clicks, sessions, propensity=train_propensity),
    "DLA": TwoTowerDebiasedRanker(
        combination="dla", max_position=10, observation_lr=1e-2, max_epochs=30, early_stopping=True,
        callbacks=validation(valid_propensity), **net,
    ).fit(X_train, clicks, sessions, positions=positions),
}

# %%
# 3. Choosing a model without labels
# ----------------------------------
# The IPS estimate of NDCG@5 on the validation log weighs each click by its
# inverse propensity: it estimates what the model would score on the true
# relevance. NDCG@5 of the raw clicks rewards the old ranking instead. Only now
# do we look at the test queries' true labels, to see which estimate picks
# the better model.
X_test, y_test, qid_test = X[part == "test"], y[part == "test"], qid[part == "test"]
print(f"{'model':30s} {'IPS-NDCG@5':>11s} {'click NDCG@5':>13s} {'true NDCG@5':>12s}")
rows = []
for name, model in models.items():
    valid_scores = model.predict(X_valid)
    ips = ips_ndcg_score(clicks_valid, valid_scores, sessions_valid, valid_propensity, k=5)
    naive_value = ndcg_score(clicks_valid, valid_scores, sessions_valid, k=5)
    true = ndcg_score(y_test, model.predict(X_test), qid_test, k=5)
    rows.append((name, ips, naive_value, true))
    print(f"{name:30s} {ips:11.3f} {naive_value:13.3f} {true:12.3f}")
chosen = max(rows, key=lambda row: row[1])
best = max(rows, key=lambda row: row[3])
print(f"IPS selects {chosen[0]!r} (true NDCG@5 {chosen[3]:.3f}); the best is {best[0]!r} ({best[3]:.3f})")

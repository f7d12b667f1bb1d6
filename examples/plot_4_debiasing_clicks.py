r"""
Learning from position-biased clicks
====================================

Users click the top of a result page much more than the bottom, whatever the
documents' relevance. A ranker trained to predict clicks learns the logging
ranker's positions along with relevance.
:class:`~sklearn_ltr.TwoTowerDebiasedRanker` separates the two: a relevance
tower on the features and an observation tower on the display position, here
combined as in PAL, :math:`P(c = 1) = \sigma(r(x))\,\sigma(o(p))`. At serving
time the relevance tower alone ranks. The fitted model exposes the examination
curve it learned, ``observation_curve_``, which we compare with the curve that
generated the clicks, :math:`1 / p`. See :ref:`debiasing` for the method.
"""

# %%
# Simulated clicks
# ----------------
# :func:`~sklearn_ltr.clicks.simulate_click_log` shows each query's documents
# ranked by a logging ranker of quality ``w`` (``w=1`` sorts by relevance,
# ``w=0`` shuffles); its default click model,
# :class:`~sklearn_ltr.clicks.PositionBasedModel`, examines position :math:`p`
# with probability :math:`1/p` and clicks an examined document with a
# probability that grows with its label.
# Every training query is shown in four sessions, each its own list. Training
# sees only the clicks and positions; the true labels are kept to evaluate
# held-out queries, which training (the feature transform included) never
# sees.
import matplotlib.pyplot as plt
import numpy as np
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_ltr import (
    Log1pTransformer,
    RankNetRanker,
    TwoTowerDebiasedRanker,
)
from sklearn_ltr.clicks import simulate_click_log
from sklearn_ltr.datasets import make_ranking, observation_propensity
from sklearn_ltr.metrics import ndcg_score

X, y, qid = make_ranking(n_queries=400, n_features=10, random_state=0)
is_train = qid < 300  # 300 training queries, 100 held-out queries
y_train, qid_train = y[is_train], qid[is_train]
y_test, qid_test = y[~is_train], qid[~is_train]
# The feature transform learns its statistics from the training queries only;
# the held-out queries are transformed with them, as new queries would be.
preprocess = make_pipeline(Log1pTransformer(), StandardScaler())
X_train = preprocess.fit_transform(X[is_train])
X_test = preprocess.transform(X[~is_train])


def click_log(w, n_sessions=4, seed=0):
    """Rows, clicks, positions and session ids of n_sessions pages a query."""
    log = simulate_click_log(y_train, qid_train, w=w, sessions=n_sessions,
                             y_max=4, random_state=seed)
    return X_train[log.rows], log.clicks, log.positions, log.sessions


X_clicks, clicks, positions, sessions = click_log(w=0.5)
print(f"{len(np.unique(sessions))} sessions, {len(clicks)} impressions, "
      f"{clicks.sum()} clicks")

# %%
# The click-through rate falls with the position much faster than :math:`1/p`:
# the logging ranker put the better documents on top, so the rate mixes
# examination with relevance.
max_position = 20
shown = np.minimum(positions, max_position)
ctr = np.bincount(shown, weights=clicks)[1:] / np.bincount(shown)[1:]
print("CTR at positions 1-5:   ", np.round(ctr[:5], 3))
print("relative to position 1:", np.round(ctr[:5] / ctr[0], 3))

# %%
# Training
# --------
# The same relevance tower in every model: a click model that ignores positions
# (:class:`~sklearn_ltr.RankNetRanker` with the pointwise sigmoid
# cross-entropy), the two-tower model on clicks and positions, the same with
# observation dropout (Zhang et al., 2023: the observation logit is dropped for
# 30% of the rows while training, so the relevance tower must explain their
# clicks alone), and, as the ceiling, the network trained on the true labels,
# which a click log does not have (the sigmoid cross-entropy reads a label
# above 0 as relevant).
tower = {"hidden_sizes": (32,), "lr": 3e-3, "max_epochs": 10,
         "random_state": 0}
two_tower = {"combination": "multiplicative", "max_position": max_position,
             "observation_lr": 3e-2, **tower}

naive = RankNetRanker(loss="sigmoid_ce", **tower)
naive.fit(X_clicks, clicks, groups=sessions)
pal = TwoTowerDebiasedRanker(**two_tower)
pal.fit(X_clicks, clicks, groups=sessions, positions=positions)
dropout = TwoTowerDebiasedRanker(observation_dropout=0.3, **two_tower)
dropout.fit(X_clicks, clicks, groups=sessions, positions=positions)
oracle = RankNetRanker(loss="sigmoid_ce", **tower)
oracle.fit(X_train, y_train, groups=qid_train)

# %%
# For comparison, the two-tower model on the clicks of a logging ranker that
# shuffles (``w=0``): there the position carries no relevance.
X_shuf, clicks_shuf, positions_shuf, sessions_shuf = click_log(w=0.0)
pal_shuffled = TwoTowerDebiasedRanker(**two_tower)
pal_shuffled.fit(X_shuf, clicks_shuf, groups=sessions_shuf,
                 positions=positions_shuf)

# %%
# The learned examination curve
# -----------------------------
# ``observation_curve_`` holds :math:`\sigma(o_p)` for the positions 1 to
# ``max_position``. The model can trade a constant factor between its two
# towers, so compare shapes: divide by the value at position 1.
#
# Under the shuffling logger the learned curve follows :math:`1/p`. Under the
# ``w=0.5`` logger it falls faster: position and relevance are confounded, and
# the observation tower takes over part of what the relevance tower should
# explain (the problem Zhang et al. describe). Observation dropout pushes the
# curve up, here past :math:`1/p`.
p = np.arange(1, max_position + 1)
curves = [  # (label, fitted model, colour and marker)
    ("two-tower, w=0.5", pal, "C0o-"),
    ("two-tower + observation dropout, w=0.5", dropout, "C1^-"),
    ("two-tower, shuffling logger (w=0)", pal_shuffled, "C2s-"),
]
fig, ax = plt.subplots(figsize=(7, 4))
ax.plot(p, observation_propensity(p), "k--", label="true examination 1/p")
for name, model, style in curves:
    curve = model.observation_curve_
    ax.plot(p, curve / curve[0], style, ms=4, label=name)
ax.set(xlabel="display position p", ylabel="learned / value at position 1",
       xticks=p[::2], ylim=(0, 1.05), title="Learned examination curve")
ax.legend()
fig.tight_layout()
plt.show()

# %%
# Ranking held-out queries
# ------------------------
# NDCG@10 on the *true labels* of queries not used in training (never on
# clicks). ``predict`` of the two-tower model uses the relevance tower alone:
# no position needed.
models = {
    "clicks, no positions": naive,
    "two-tower": pal,
    "two-tower + dropout": dropout,
    "true labels (ceiling)": oracle,
}
ndcg = {name: ndcg_score(y_test, model.predict(X_test), qid_test, k=10)
        for name, model in models.items()}
for name, value in ndcg.items():
    print(f"{name:>22}: NDCG@10 = {value:.4f}")

fig, ax = plt.subplots(figsize=(7, 3))
colors = ["C3", "C0", "C1", "C7"]
bars = ax.barh(list(ndcg), list(ndcg.values()), color=colors)
ax.bar_label(bars, fmt="%.3f", padding=3)
ax.set(xlim=(0, 1), xlabel="NDCG@10 on held-out queries (true labels)")
ax.invert_yaxis()
fig.tight_layout()
plt.show()

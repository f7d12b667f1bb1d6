"""
Quick start: rank documents with LambdaMART
===========================================

Fit :class:`~sklearn_ltr.LambdaMARTRanker` on synthetic web-search data,
predict the documents of held-out queries and score the ranking with NDCG@k
(:func:`~sklearn_ltr.metrics.ndcg_score`).
"""

# %%
# Data: one query id per row
# --------------------------
# :func:`~sklearn_ltr.datasets.make_ranking` draws queries of uneven length
# with graded labels 0-4 and heavy-tailed features. ``qid`` holds the query of
# every row: it is the ``groups`` argument of every ranker, metric and scorer
# of sklearn_ltr. Rows may come in any order.
import matplotlib.pyplot as plt
import numpy as np
from sklearn.model_selection import GroupShuffleSplit

from sklearn_ltr import LambdaMARTRanker
from sklearn_ltr.datasets import make_ranking
from sklearn_ltr.metrics import ndcg_per_query, ndcg_score

X, y, qid = make_ranking(n_queries=300, n_features=20, random_state=0)
print(f"{len(np.unique(qid))} queries, {X.shape[0]} documents, "
      f"{X.shape[1]} features")
print("documents per label 0-4:", np.bincount(y).tolist())

# %%
# Hold out whole queries: a query is never split between training and test
# rows.
splitter = GroupShuffleSplit(n_splits=1, test_size=0.25, random_state=0)
train, test = next(splitter.split(X, y, groups=qid))

# %%
# Fit and predict
# ---------------
# ``fit`` takes the query ids of the training rows; ``predict`` returns one
# score per row, in the input row order. Only the order of the scores within a
# query matters.
ranker = LambdaMARTRanker(n_estimators=100, learning_rate=0.05, num_leaves=15,
                          random_state=0)
ranker.fit(X[train], y[train], groups=qid[train])
scores = ranker.predict(X[test], groups=qid[test])

for k in (1, 5, 10):
    print(f"NDCG@{k}: {ndcg_score(y[test], scores, qid[test], k=k):.4f}")

# %%
# ``score`` is NDCG@10 on the given queries, like
# :data:`~sklearn_ltr.ndcg_scorer`:
print(f"ranker.score: {ranker.score(X[test], y[test], groups=qid[test]):.4f}")

# %%
# NDCG at every cut-off
# ---------------------
# The ranker against two references on the same test queries: random scores,
# and the best single feature (the column whose own values rank the training
# queries best).
rng = np.random.default_rng(0)
train_ndcg = [ndcg_score(y[train], X[train, j], qid[train], k=10)
              for j in range(X.shape[1])]
best_column = int(np.argmax(train_ndcg))
curves = {
    "LambdaMARTRanker": scores,
    f"best single feature (column {best_column})": X[test, best_column],
    "random scores": rng.random(len(test)),
}
cutoffs = np.arange(1, 21)
fig, ax = plt.subplots(figsize=(7, 4))
for name, values in curves.items():
    ndcg_at = [ndcg_score(y[test], values, qid[test], k=k) for k in cutoffs]
    ax.plot(cutoffs, ndcg_at, marker="o", ms=3, label=name)
ax.set(xlabel="cut-off k", ylabel="mean NDCG@k over the test queries",
       title="NDCG@k", xticks=cutoffs[1::2], ylim=(0, 1))
ax.legend(loc="lower right")
fig.tight_layout()

# %%
# :func:`~sklearn_ltr.metrics.ndcg_per_query` gives one value per query: the
# mean hides a wide spread between easy and hard queries.
_, per_query = ndcg_per_query(y[test], scores, qid[test], k=10)
fig, ax = plt.subplots(figsize=(7, 3.5))
ax.hist(per_query, bins=20, range=(0, 1), color="C0", edgecolor="white")
mean = per_query.mean()
ax.axvline(mean, color="k", ls="--", label=f"mean {mean:.3f}")
ax.set(xlabel="NDCG@10 of one test query", ylabel="queries",
       title="NDCG@10 per query")
ax.legend(loc="upper left")
fig.tight_layout()
plt.show()

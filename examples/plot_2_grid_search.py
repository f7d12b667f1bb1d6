"""
Tuning a ranker with GridSearchCV and GroupKFold
================================================

Model selection for a ranker needs the query ids in four places: the splitter
(``GroupKFold``, so that no query is split between training and validation
folds), every ``fit``, every ``predict`` of a validation fold, and the scorer,
which averages NDCG over the fold's queries. scikit-learn's metadata routing
hands the same ``groups`` array to all of them: every ranker and scorer of
sklearn_ltr requests it, so enabling routing is all it takes (see
:ref:`query_groups`).
"""

# %%
# Data and a held-out test set of whole queries
# ---------------------------------------------
import textwrap

import matplotlib.pyplot as plt
import numpy as np
import sklearn
from sklearn.model_selection import (
    GridSearchCV,
    GroupKFold,
    GroupShuffleSplit,
    cross_val_score,
)
from sklearn.pipeline import Pipeline

from sklearn_ltr import LambdaMARTRanker, Log1pTransformer, ndcg_scorer
from sklearn_ltr.datasets import make_ranking

X, y, qid = make_ranking(n_queries=240, n_features=20, shuffle=True,
                         random_state=0)
splitter = GroupShuffleSplit(n_splits=1, test_size=0.25, random_state=0)
train, test = next(splitter.split(X, y, groups=qid))
X_train, y_train, qid_train = X[train], y[train], qid[train]
X_test, y_test, qid_test = X[test], y[test], qid[test]

# %%
# The search
# ----------
# A pipeline (the ``log1p`` step sees no ``groups``; the ranker gets them in
# ``fit`` and ``predict``), a grid over two LightGBM parameters, three
# query-wise folds and :data:`~sklearn_ltr.ndcg_scorer` (NDCG@10).
# ``groups=qid_train`` goes to the outermost ``fit`` only.
# :func:`sklearn.config_context` enables routing for this block; a script can
# call ``sklearn.set_config(enable_metadata_routing=True)`` once instead.
pipe = Pipeline([
    ("log1p", Log1pTransformer()),
    ("rank", LambdaMARTRanker(n_estimators=40, random_state=0)),
])
leaves, rates = [3, 7, 15, 31], [0.03, 0.1, 0.3]
param_grid = {"rank__num_leaves": leaves, "rank__learning_rate": rates}
search = GridSearchCV(pipe, param_grid, cv=GroupKFold(n_splits=3),
                      scoring=ndcg_scorer)
with sklearn.config_context(enable_metadata_routing=True):
    search.fit(X_train, y_train, groups=qid_train)

print("best parameters:", search.best_params_)
print(f"best mean validation NDCG@10: {search.best_score_:.4f}")

# %%
# The validation NDCG@10 of every candidate, averaged over the three folds:
results = search.cv_results_
grid = np.empty((len(leaves), len(rates)))
pairs = zip(results["params"], results["mean_test_score"], strict=True)
for params, value in pairs:
    i = leaves.index(params["rank__num_leaves"])
    j = rates.index(params["rank__learning_rate"])
    grid[i, j] = value

fig, ax = plt.subplots(figsize=(5.5, 4))
image = ax.imshow(grid, cmap="viridis", origin="lower")
ax.set(xticks=range(len(rates)), xticklabels=rates, xlabel="learning_rate",
       yticks=range(len(leaves)), yticklabels=leaves, ylabel="num_leaves",
       title="GroupKFold(3) validation NDCG@10")
for i in range(len(leaves)):
    for j in range(len(rates)):
        color = "white" if grid[i, j] < grid.mean() else "black"
        ax.text(j, i, f"{grid[i, j]:.3f}", ha="center", va="center",
                color=color)
fig.colorbar(image, ax=ax)
fig.tight_layout()
plt.show()

# %%
# Predicting with the best model
# ------------------------------
# ``GridSearchCV.predict`` takes no ``groups``; the refitted best pipeline does
# (a list-context ranker such as :class:`~sklearn_ltr.DASALCRanker` needs
# them). ``search.score`` routes ``groups`` to the scorer.
# One score per test row, in row order:
scores = search.best_estimator_.predict(X_test, groups=qid_test)
print(f"{scores.shape[0]} scores for {X_test.shape[0]} test rows")
with sklearn.config_context(enable_metadata_routing=True):
    test_score = search.score(X_test, y_test, groups=qid_test)
print(f"test NDCG@10: {test_score:.4f}")

# %%
# Without the query ids a scorer refuses to guess: it never scores a fold as if
# it were one query, and it names the fix.
try:
    ndcg_scorer(search.best_estimator_, X_test, y_test)
except ValueError as error:
    print(textwrap.fill(f"ValueError: {error}", 79))

# %%
# cross_val_score
# ---------------
# Functions take the routed metadata in ``params``:
with sklearn.config_context(enable_metadata_routing=True):
    fold_scores = cross_val_score(
        search.best_estimator_, X_train, y_train, cv=GroupKFold(n_splits=3),
        scoring=ndcg_scorer, params={"groups": qid_train},
    )
print("NDCG@10 per fold:", np.round(fold_scores, 4))

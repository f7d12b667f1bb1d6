"""
DASALC against LambdaMART
=========================

:class:`~sklearn_ltr.DASALCRanker` (Qin et al., ICLR 2021) is a neural ranker
built to match gradient-boosted trees: a ``log1p`` transform of the features,
Gaussian noise while training, a feed-forward tower, self-attention over the
documents of a list and a latent cross between the two. It scores a document
*in the context of its list*, so it needs the query ids at predict time. Here
it is compared with :class:`~sklearn_ltr.LambdaMARTRanker` on the same small
synthetic data, whose labels depend in part on a document's rank within its
query.

The data and the training budgets are tiny, so that the page builds in seconds:
which method wins on it says little. :doc:`/benchmarks` compares them on real
and MSLR-shaped data.
"""

# %%
# Data
# ----
import time

import matplotlib.pyplot as plt
import numpy as np
from sklearn.model_selection import GroupShuffleSplit

from sklearn_ltr import DASALCRanker, LambdaMARTRanker
from sklearn_ltr.datasets import make_ranking
from sklearn_ltr.metrics import ndcg_score

X, y, qid = make_ranking(n_queries=400, n_features=20, random_state=0)
splitter = GroupShuffleSplit(n_splits=1, test_size=0.25, random_state=0)
train, test = next(splitter.split(X, y, groups=qid))

# %%
# Training
# --------
# LambdaMART on the raw features (trees do not care about their scale). DASALC
# applies ``log1p`` itself. ``max_epochs`` is small here; on real data, early
# stopping on the NDCG of held-out training queries is the usual choice.
rankers = {
    "LambdaMART": LambdaMARTRanker(n_estimators=150, learning_rate=0.05,
                                   num_leaves=15, random_state=0),
    "DASALC": DASALCRanker(hidden_size=64, n_attention_layers=1, n_heads=2,
                           head_size=16, max_epochs=25, device="cpu",
                           random_state=0),
}
scores = {}
for name, ranker in rankers.items():
    start = time.perf_counter()
    ranker.fit(X[train], y[train], groups=qid[train])
    # DASALC needs the query ids here: it scores each list as a whole.
    scores[name] = ranker.predict(X[test], groups=qid[test])
    print(f"{name}: fitted in {time.perf_counter() - start:.1f} s")

# %%
# NDCG@k on the held-out queries
# ------------------------------
cutoffs = (1, 3, 5, 10)
ndcg = {name: [ndcg_score(y[test], s, qid[test], k=k) for k in cutoffs]
        for name, s in scores.items()}
for name, values in ndcg.items():
    cells = (f"NDCG@{k}={v:.4f}" for k, v in zip(cutoffs, values, strict=True))
    print(f"{name:>10}:", "  ".join(cells))

fig, ax = plt.subplots(figsize=(7, 4))
width = 0.38
x = np.arange(len(cutoffs))
for i, (name, values) in enumerate(ndcg.items()):
    bars = ax.bar(x + (i - 0.5) * width, values, width, label=name)
    ax.bar_label(bars, fmt="%.3f", fontsize=8, padding=2)
ax.set(xticks=x, xticklabels=[f"NDCG@{k}" for k in cutoffs], ylim=(0, 1),
       ylabel="mean over the test queries",
       title="DASALC vs LambdaMART, test queries")
ax.legend(loc="upper left")
fig.tight_layout()
plt.show()

"""
Is one ranker really better? Significance tests and the comparison report
=========================================================================

A higher mean NDCG on a test set is worth reporting only when the difference
is larger than what the choice of test queries alone would give. Here three
rankers, :class:`~sklearn_ltr.LambdaMARTRanker`,
:class:`~sklearn_ltr.DASALCRanker` and :class:`~sklearn_ltr.RankNetRanker`,
are trained on the same small synthetic data and compared query by query
with :func:`~sklearn_ltr.metrics.compare_rankings`: paired t-test,
randomization test and bootstrap confidence interval of the mean difference,
with Holm's correction for the two comparisons with the baseline.
:func:`~sklearn_ltr.metrics.plot_comparison` draws the per-query
differences, and :func:`~sklearn_ltr.metrics.write_comparison_report` writes
everything as one HTML page. From the command line, ``sklearn-ltr compare``
does the same with saved models or scores files (see :doc:`/metrics`).

The data and budgets are tiny, so that the page builds in seconds: which
ranker wins here says little about real data.
"""

# %%
# Data and rankers
# ----------------
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
from sklearn.model_selection import GroupShuffleSplit

from sklearn_ltr import DASALCRanker, LambdaMARTRanker, RankNetRanker
from sklearn_ltr.datasets import make_ranking
from sklearn_ltr.metrics import (
    compare_rankings,
    plot_comparison,
    write_comparison_report,
)

X, y, qid = make_ranking(n_queries=300, n_features=20, random_state=0)
splitter = GroupShuffleSplit(n_splits=1, test_size=0.4, random_state=0)
train, test = next(splitter.split(X, y, groups=qid))

rankers = {
    "LambdaMART": LambdaMARTRanker(n_estimators=100, learning_rate=0.05,
                                   num_leaves=15, random_state=0),
    "DASALC": DASALCRanker(hidden_size=32, n_attention_layers=1, n_heads=2,
                           head_size=8, max_epochs=10, device="cpu",
                           random_state=0),
    "RankNet": RankNetRanker(hidden_sizes=(32,), max_epochs=10, device="cpu",
                             random_state=0),
}
scores = {}
for name, ranker in rankers.items():
    ranker.fit(X[train], y[train], groups=qid[train])
    # DASALC needs the query ids here: it scores each list as a whole.
    scores[name] = ranker.predict(X[test], groups=qid[test])

# %%
# Paired tests against LambdaMART
# -------------------------------
# One table per metric; each row compares a system with the baseline on the
# same test queries (differences are *system minus baseline*). The same
# ``random_state`` gives the same randomization and bootstrap draws for every
# metric.
baseline = "LambdaMART"
others = {name: s for name, s in scores.items() if name != baseline}
tables = [
    compare_rankings(y[test], scores[baseline], others, qid[test],
                     metric=metric, k=k, correction="holm", random_state=0)
    for metric, k in (("ndcg", 10), ("map", None))
]
for table in tables:
    print(table, end="\n\n")

# %%
# Per-query differences
# ---------------------
# As IR papers show them: one bar per query, sorted from the largest gain to
# the largest loss. A mean difference carried by a few queries looks very
# different from one spread over many.
figures = plot_comparison(tables, baseline_name=baseline)

# %%
# The HTML report
# ---------------
# The tables and the same figures in one page that loads nothing from the
# network (inline style, PNG figures embedded), to attach to a pull request or
# an e-mail. ``SignificanceTable.to_html`` does the same for one metric.
with tempfile.TemporaryDirectory() as folder:
    path = Path(folder, "comparison.html")
    write_comparison_report(tables, path, baseline_name=baseline,
                            title="Three rankers on synthetic data")
    print(f"{path.name}: {path.stat().st_size / 1024:.0f} KiB")

plt.show()

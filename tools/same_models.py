"""Fingerprints of each neural ranker's predictions on MQ2008 Fold 1: run at two commits to show they train alike.

A change that must not move label-trained models (a new option that defaults off, a refactor of the training
layer) is checked by running this script in a work tree of each commit and comparing the lines: equal
fingerprints mean bit-identical predictions (CPU, one thread, fixed seeds, 3 epochs)::

    git worktree add /tmp/old <commit>
    (cd /tmp/old && OMP_NUM_THREADS=1 PYTHONPATH=. python /path/to/tools/same_models.py) > old.txt
    OMP_NUM_THREADS=1 PYTHONPATH=. python tools/same_models.py > new.txt
    diff old.txt new.txt && echo identical
"""

import hashlib
import os

import numpy as np

from sklearn_ltr import DASALCRanker, RankNetRanker, SetRankRanker, TwoTowerDebiasedRanker
from sklearn_ltr.datasets import load_svmlight_ranking, simulate_clicks

DATA = os.environ.get("SKLEARN_LTR_DATA", os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data"))
X, y, q = load_svmlight_ranking(os.path.join(DATA, "mq2008/Fold1/train.txt"))
X = np.asarray(X.toarray() if hasattr(X, "toarray") else X)

# (ranker, constructor parameters, whether fit gets per-query sample weights)
CASES = [(RankNetRanker, {}, False), (DASALCRanker, {}, False), (SetRankRanker, {}, False),
         (RankNetRanker, {"early_stopping": True}, False), (DASALCRanker, {}, True)]
for ranker, params, weighted in CASES:
    fit = {"sample_weight": (np.unique(q, return_inverse=True)[1] % 3 + 1).astype(float)} if weighted else {}
    model = ranker(max_epochs=3, random_state=0, device="cpu", **params).fit(X, y, q, **fit)
    print(ranker.__name__, params, sorted(fit), hashlib.sha1(model.predict(X, q).tobytes()).hexdigest()[:16])
positions, clicks = simulate_clicks(y, q, random_state=0)
model = TwoTowerDebiasedRanker(max_epochs=3, random_state=0, device="cpu").fit(X, clicks, q, positions=positions)
print("TwoTowerDebiasedRanker", hashlib.sha1(model.predict(X).tobytes()).hexdigest()[:16])

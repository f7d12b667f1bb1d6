"""What the ONNX export tests share: the score tolerance, the score difference and SetRank's initial ranks."""

import numpy as np

#: Max abs difference allowed between onnxruntime's scores and ``predict``'s.
TOLERANCE = 1e-5


def max_diff(a, b):
    """Largest absolute difference between two score arrays, in float64."""
    return float(np.max(np.abs(np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64))))


def ranks_by_first_feature(X, qid):
    """1-based initial ranks within each query, by feature 0 descending (ties in row order)."""
    ranks = np.empty(len(qid), dtype=np.int64)
    for query in np.unique(qid):
        members = np.flatnonzero(qid == query)
        ranks[members[np.argsort(-X[members, 0], kind="stable")]] = np.arange(1, len(members) + 1)
    return ranks

"""What the tests of the search-engine exports share: data, models, rows on the thresholds, ranking agreement."""

import numpy as np

from sklearn_ltr import LambdaMARTRanker
from sklearn_ltr.datasets import load_svmlight_ranking


def fit_lambdamart(X, y, qid, **params):
    settings = {"n_estimators": 60, "num_leaves": 15, "random_state": 0, "n_jobs": 1, **params}
    return LambdaMARTRanker(**settings).fit(X, y, groups=qid)


def mq2008(data_dir):
    fold = data_dir / "mq2008" / "Fold1"
    return load_svmlight_ranking(fold / "train.txt"), load_svmlight_ranking(fold / "test.txt")


def mq2007_agg(data_dir):
    """Train on S1-S3, test on S5 (NaN for LETOR's NULL)."""
    parts = [load_svmlight_ranking(data_dir / "mq2007-agg" / f"S{i}.txt") for i in (1, 2, 3)]
    train = tuple(np.concatenate([part[k] for part in parts]) for k in range(3))
    return train, load_svmlight_ranking(data_dir / "mq2007-agg" / "S5.txt")


def split_thresholds(booster):
    """``(feature, threshold)`` of every numerical split of a LightGBM model, from ``dump_model()``."""
    splits = []

    def walk(node):
        if "split_feature" in node:
            splits.append((node["split_feature"], float(node["threshold"])))
            walk(node["left_child"])
            walk(node["right_child"])

    for tree in booster.dump_model()["tree_info"]:
        walk(tree["tree_structure"])
    return splits


def rows_around(X, values_by_feature, rng):
    """Rows of ``X`` (drawn at random) with one feature set to each given float32 value and its two neighbours."""
    rows = []
    for feature, value in values_by_feature:
        value = np.float32(value)
        for v in (value, np.nextafter(value, np.float32(-np.inf)), np.nextafter(value, np.float32(np.inf))):
            row = np.asarray(X[rng.integers(len(X))], dtype=np.float32).copy()
            row[feature] = v
            rows.append(row)
    return np.array(rows, dtype=np.float32)


def rows_on_thresholds(X, booster, rng):
    """Rows on each threshold's nearest float32 and on the float32 values either side of it."""
    return rows_around(X, [(feature, np.float32(t)) for feature, t in sorted(set(split_thresholds(booster)))], rng)


def integer_model():
    """A model on integer features with zeros: thresholds one float64 ulp above k + 0.5, and LightGBM's 1e-35."""
    rng = np.random.default_rng(0)
    X = rng.integers(0, 12, size=(3000, 3)).astype(np.float32)
    y = (X[:, 0] > 5).astype(int) + (X[:, 1] % 3 == 0) + (X[:, 2] > 8)
    qid = np.repeat(np.arange(150), 20)
    return X, fit_lambdamart(X, y, qid, n_estimators=40, min_child_samples=5)


def adjacent_float32_model():
    """Feature 0 takes 200 adjacent float32 values: every threshold lies between two of them."""
    rng = np.random.default_rng(0)
    step = rng.integers(0, 200, 3000)
    X = np.column_stack([np.float32(1) + step.astype(np.float32) * np.spacing(np.float32(1)),
                         rng.normal(size=3000)]).astype(np.float32)
    y = (step % 7 > 3).astype(int) + (step > 100)
    qid = np.repeat(np.arange(150), 20)
    return X, fit_lambdamart(X, y, qid, n_estimators=30, min_child_samples=5)


def nan_model():
    """Feature 0 has NaN in training (a learned side for NaN); features 1 and 2 none (NaN read as 0)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 3))
    X[rng.random(2000) < 0.2, 0] = np.nan
    y = (np.nan_to_num(X[:, 0], nan=1.0) + X[:, 1] > 0).astype(int) + (X[:, 2] > 1)
    ranker = fit_lambdamart(X, y, np.repeat(np.arange(100), 20), n_estimators=30, num_leaves=31)
    X_test = rng.normal(size=(300, 3)).astype(np.float32)
    X_test[::3, 0] = X_test[1::3, 1] = X_test[2::5, 2] = np.nan
    return ranker, X_test


def same_order_fraction(scores, expected, qid):
    """Fraction of queries whose documents the two scores order identically (ties kept in row order)."""
    same = []
    for query in np.unique(qid):
        rows = np.flatnonzero(qid == query)
        same.append(np.array_equal(np.argsort(-np.asarray(scores)[rows], kind="stable"),
                                   np.argsort(-np.asarray(expected)[rows], kind="stable")))
    return float(np.mean(same))


def max_diff(a, b):
    return float(np.max(np.abs(np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64))))


def pairs_swapped_beyond(scores, expected, qid, gap):
    """Pairs of a query that ``expected`` orders by more than ``gap`` and ``scores`` orders the other way (or ties)."""
    swapped = 0
    for query in np.unique(qid):
        rows = np.flatnonzero(qid == query)
        e, s = np.asarray(expected, dtype=np.float64)[rows], np.asarray(scores, dtype=np.float64)[rows]
        swapped += int(np.sum((e[:, None] - e[None, :] > gap) & (s[:, None] <= s[None, :])))
    return swapped

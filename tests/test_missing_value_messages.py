"""The exact wording of the drift warning's counts and names, the sparse statistics' unstored zeros, and the
writer's refusals of NaN (planted-bug survivors of the feature profile's and the missing-value writer's mutants)."""

import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from sklearn_ltr import LambdaMARTRanker
from sklearn_ltr._feature_profile import FeatureProfile, column_stats, feature_drift
from sklearn_ltr.datasets import dump_svmlight_ranking, load_svmlight_ranking, make_ranking
from sklearn_ltr.exceptions import FeatureDriftWarning


def _profile(n_rows=30):
    X = np.arange(3.0 * n_rows).reshape(n_rows, 3)
    return FeatureProfile.of(X), X


def test_one_row_and_several_rows_are_counted_in_words():
    profile, X = _profile()
    one, two = X.copy(), X.copy()
    one[4, 1] = np.nan
    two[[4, 5], 1] = np.nan
    assert feature_drift(profile, one) == [(1, "NaN in 1 row (3.3%), where training had none")]
    assert feature_drift(profile, two) == [(1, "NaN in 2 rows (6.7%), where training had none")]


def test_named_features_are_named_with_their_index():
    X, y, qid = make_ranking(n_queries=30, n_features=3, random_state=0)
    frame = pd.DataFrame(X, columns=["bm25", "pagerank", "length"])
    ranker = LambdaMARTRanker(n_estimators=2).fit(frame, y, qid)
    drifted = frame.copy()
    drifted.loc[:5, "pagerank"] = np.nan
    with pytest.warns(FeatureDriftWarning, match=r"feature 'pagerank' \(index 1\): NaN in 6 rows"):
        ranker.predict(drifted)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FeatureDriftWarning)
        ranker.predict(frame)


def test_sparse_statistics_count_the_unstored_zeros():
    X = sp.csr_matrix(np.array([[-3.0, 0.0], [-1.0, 0.0], [0.0, 2.0], [-2.0, 0.0]]))
    X.eliminate_zeros()
    missing, minimum, maximum = column_stats(X)
    np.testing.assert_array_equal(missing, [0.0, 0.0])
    np.testing.assert_array_equal(minimum, [-3.0, 0.0])
    np.testing.assert_array_equal(maximum, [0.0, 2.0])  # the unstored zero of column 0 is its maximum
    np.testing.assert_array_equal(column_stats(X.toarray()), (missing, minimum, maximum))


@pytest.mark.parametrize("count, words", [(1, "1 value"), (2, "2 values")])
def test_the_writer_refusing_nan_counts_them(tmp_path, count, words):
    X = np.ones((3, 2))
    X[:count, 0] = np.nan
    with pytest.raises(ValueError, match=rf"X contains NaN \({words}\), and dump_svmlight_ranking was given "
                                         r"missing_value=None"):
        dump_svmlight_ranking(X, [0, 1, 0], [1, 1, 2], tmp_path / "f.txt", missing_value=None)


def test_the_writer_takes_one_token(tmp_path):
    X = np.array([[np.nan, 1.0], [0.5, 2.0]])
    with pytest.raises(ValueError, match=r"missing_value is the one token written for NaN; got \('NULL', 'NA'\)"):
        dump_svmlight_ranking(X, [0, 1], [1, 1], tmp_path / "f.txt", missing_value=("NULL", "NA"))
    with pytest.raises(ValueError, match=r"missing_value holds '1.5', a number"):
        dump_svmlight_ranking(X, [0, 1], [1, 1], tmp_path / "f.txt", missing_value="1.5")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nan_written_and_read_back_beside_the_sentinels_values(tmp_path, dtype):
    # Values at the writer's candidate sentinels (powers of two) do not become NaN when read back.
    X = np.array([[np.nan, 2.0**100, -(2.0**100)], [1.0, 2.0**-100, np.nan]], dtype=dtype)
    for token in ("NULL", "nan"):
        path = tmp_path / f"{token}.txt"
        dump_svmlight_ranking(X, [0, 1], [1, 1], path, missing_value=token)
        if token == "NULL":
            assert ":NULL" in path.read_text()
        read, _, _ = load_svmlight_ranking(path, dtype=dtype)
        np.testing.assert_array_equal(np.isnan(read), np.isnan(X))
        # scikit-learn's writer keeps 16 significant digits of a float64
        np.testing.assert_allclose(read, X, rtol=1e-15, equal_nan=True)

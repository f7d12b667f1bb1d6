"""feature_profile_ and FeatureDriftWarning: predict, evaluate and compare warn on rows that break a feature in kind."""

import pickle
import re
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from cli_helpers import run  # tests/cli_helpers.py
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_ltr import LambdaMARTRanker, RankingEnsemble, RankNetRanker, ndcg_scorer
from sklearn_ltr._feature_profile import (
    FEW_MISSING,
    MANY_MISSING,
    MIN_ROWS,
    OUT_OF_RANGE,
    FeatureProfile,
    feature_drift,
)
from sklearn_ltr.datasets import dump_svmlight_ranking, load_svmlight_ranking, make_ranking
from sklearn_ltr.exceptions import FeatureDriftWarning

FAST = {"n_estimators": 5, "num_leaves": 4, "min_child_samples": 2, "n_jobs": 1, "random_state": 0}


def _drift(predict):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        predict()
    return [w for w in caught if issubclass(w.category, FeatureDriftWarning)]


@pytest.fixture(scope="module")
def data():
    """Features in [0, 1), feature 2 missing in 40% of the rows, ids of 40 queries."""
    X, y, qid = make_ranking(n_queries=40, n_features=5, shuffle=True, random_state=0)
    X = (X - X.min(axis=0)) / (X.max(axis=0) - X.min(axis=0) + 1.0)
    X[np.random.default_rng(0).random(len(y)) < 0.4, 2] = np.nan
    return X, y, qid


def test_the_profile_is_nan_aware_dense_or_sparse():
    X = np.array([[0.0, np.nan, 3.0], [2.0, 5.0, np.nan], [1.0, np.nan, np.nan], [4.0, 7.0, np.nan]])
    profile = FeatureProfile.of(X)
    assert profile.n_samples == 4 and profile.n_features == 3
    np.testing.assert_array_equal(profile.missing, [0.0, 0.5, 0.75])
    np.testing.assert_array_equal(profile.minimum, [0.0, 5.0, 3.0])
    np.testing.assert_array_equal(profile.maximum, [4.0, 7.0, 3.0])
    always = FeatureProfile.of(np.array([[np.nan, 1.0], [np.nan, 2.0]], dtype=np.float32))
    assert np.isnan(always.minimum[0]) and np.isnan(always.maximum[0]) and always.missing[0] == 1.0
    # Sparse: the values not stored are zeros.
    matrix = sp.csr_matrix(np.array([[0.0, 3.0, np.nan], [2.0, 4.0, 0.0], [0.0, 5.0, 1.0]]))
    sparse = FeatureProfile.of(matrix)
    np.testing.assert_array_equal(sparse.missing, [0.0, 0.0, 1 / 3])
    np.testing.assert_array_equal(sparse.minimum, [0.0, 3.0, 0.0])
    np.testing.assert_array_equal(sparse.maximum, [2.0, 5.0, 1.0])
    dense = FeatureProfile.of(matrix.toarray())
    for name in ("missing", "minimum", "maximum"):
        np.testing.assert_array_equal(getattr(sparse, name), getattr(dense, name))


def test_every_ranker_records_it(data):
    X, y, qid = data
    ranker = LambdaMARTRanker(**FAST).fit(X, y, qid)
    assert ranker.feature_profile_.missing[2] == pytest.approx(np.isnan(X[:, 2]).mean())
    np.testing.assert_array_equal(ranker.feature_profile_.maximum, np.nanmax(X, axis=0))
    dense = np.nan_to_num(X)
    neural = RankNetRanker(hidden_sizes=(4,), max_epochs=1, device="cpu", random_state=0).fit(dense, y, qid)
    np.testing.assert_array_equal(neural.feature_profile_.minimum, dense.min(axis=0))


def test_nan_filled_with_a_number_warns_naming_the_feature(data):
    X, y, qid = data
    ranker = LambdaMARTRanker(**FAST).fit(X, y, qid)
    assert not _drift(lambda: ranker.predict(X))
    filled = np.where(np.isnan(X), 1000.0, X)
    caught = _drift(lambda: ranker.predict(filled))
    assert len(caught) == 1 and caught[0].filename == __file__
    message = str(caught[0].message)
    assert re.search(r"feature 2: no NaN, where \d+% of the training rows had NaN", message)
    assert "written as a number" in message
    assert "feature 0" not in message and "feature 1" not in message
    assert _drift(lambda: ranker.score(filled, y, qid)) and _drift(lambda: ndcg_scorer(ranker, filled, y, qid))


def test_nan_where_training_had_none_and_values_out_of_range(data):
    X, y, qid = data
    ranker = LambdaMARTRanker(**FAST).fit(X, y, qid)
    holes = X.copy()
    holes[::10, 0] = np.nan
    (caught,) = _drift(lambda: ranker.predict(holes))
    assert "feature 0: NaN in " in str(caught.message) and "where training had none" in str(caught.message)
    scaled = X.copy()
    scaled[:, 3] += 10  # every value beyond the training maximum
    scaled[:, 4] += 0.2  # a few beyond it: no warning
    (caught,) = _drift(lambda: ranker.predict(scaled))
    assert "feature 3: " in str(caught.message) and "outside the training range" in str(caught.message)
    assert "feature 4" not in str(caught.message)


def test_thresholds(data):
    X, _, _ = data
    profile = FeatureProfile.of(X)
    assert 0 < FEW_MISSING < MANY_MISSING < 1 and 0 < OUT_OF_RANGE < 1
    n = 200
    rows = X[:n].copy()
    rows[:, 2] = 0.5
    rows[: int(FEW_MISSING * n) + 1, 2] = np.nan  # missing at the threshold: still plausible
    assert feature_drift(profile, rows) == []
    rows[:, 2] = 0.5
    assert [j for j, _ in feature_drift(profile, rows)] == [2]
    shifted = X[:n].copy()
    low, high = np.nanmin(X[:, 1]), np.nanmax(X[:, 1])
    outside = int(OUT_OF_RANGE * n)
    shifted[:, 1] = (low + high) / 2
    shifted[:outside, 1] = high + 1.0  # exactly the threshold's share: not more than it
    assert feature_drift(profile, shifted) == []
    shifted[outside, 1] = high + 1.0
    assert [j for j, _ in feature_drift(profile, shifted)] == [1]


def test_small_batches_are_not_judged(data):
    X, y, qid = data
    ranker = LambdaMARTRanker(**FAST).fit(X, y, qid)
    filled = np.where(np.isnan(X), 1000.0, X)
    assert not _drift(lambda: ranker.predict(filled[: MIN_ROWS - 1]))
    assert _drift(lambda: ranker.predict(filled[:MIN_ROWS]))
    assert not _drift(lambda: ranker.predict(X[:MIN_ROWS]))  # training rows themselves never warn


def test_a_model_pickled_before_profiles_predicts_without_one(data):
    X, y, qid = data
    ranker = LambdaMARTRanker(**FAST).fit(X, y, qid)
    del ranker.feature_profile_  # as a model saved before the attribute existed
    old = pickle.loads(pickle.dumps(ranker))
    filled = np.where(np.isnan(X), 1000.0, X)
    assert not _drift(lambda: old.predict(filled))
    np.testing.assert_array_equal(old.predict(X), ranker.predict(X))


def test_ensemble_pipeline_and_neural_rankers_warn(data):
    X, y, qid = data
    filled = np.where(np.isnan(X), 1000.0, X)
    ensemble = RankingEnsemble(LambdaMARTRanker(**FAST), n_estimators=2, random_state=0).fit(X, y, qid)
    caught = _drift(lambda: ensemble.predict(filled))
    assert caught and all("feature 2" in str(w.message) and w.filename == __file__ for w in caught)
    dense = np.nan_to_num(X)
    # In a Pipeline the ranker judges the features it receives: here standardised ones.
    pipeline = make_pipeline(StandardScaler(), LambdaMARTRanker(**FAST)).fit(dense, y, lambdamartranker__groups=qid)
    shifted = dense.copy()
    shifted[:, 0] += 10.0
    (caught,) = _drift(lambda: pipeline.predict(shifted))
    assert "feature 0" in str(caught.message)
    neural = RankNetRanker(hidden_sizes=(4,), max_epochs=1, device="cpu", random_state=0).fit(dense, y, qid)
    (caught,) = _drift(lambda: neural.predict(shifted, groups=qid))
    assert "RankNetRanker" in str(caught.message) and "feature 0" in str(caught.message)


def test_sparse_rows_are_judged_like_dense_ones(data):
    X, y, qid = data
    dense = np.where(np.isnan(X) | (X < 0.5), 0.0, X)
    ranker = LambdaMARTRanker(**FAST).fit(sp.csr_matrix(dense), y, qid)
    shifted = dense.copy()
    shifted[:, 1] = 7.0
    assert [j for j, _ in feature_drift(ranker.feature_profile_, sp.csr_matrix(shifted))] == [1]
    assert feature_drift(ranker.feature_profile_, sp.csr_matrix(shifted)) == feature_drift(
        ranker.feature_profile_, shifted)
    assert not _drift(lambda: ranker.predict(sp.csr_matrix(dense)))


def test_mq2007_agg_scored_with_nan_filled_by_1000_warns(data_dir, capsys, tmp_path):
    """The real case: MQ2007-agg's missing values (NULL, read as NaN) written as 1000 in the scored file."""
    part = data_dir / "mq2007-agg" / "S1.txt"
    X, y, qid = load_svmlight_ranking(part)
    assert np.isnan(X).mean() > 0.2
    ranker = LambdaMARTRanker(n_estimators=20, n_jobs=1, random_state=0).fit(X, y, qid)
    X_other, _, _ = load_svmlight_ranking(data_dir / "mq2007-agg" / "S2.txt")
    assert not _drift(lambda: ranker.predict(X_other))  # other queries, the same encoding: no false alarm
    filled = np.where(np.isnan(X), 1000.0, X)
    caught = _drift(lambda: ranker.predict(filled))
    assert len(caught) == 1
    many = np.flatnonzero(np.isnan(X).mean(axis=0) > MANY_MISSING)
    assert many.size and all(f"feature {j}: no NaN" in str(caught[0].message) for j in many[:5])
    # The command line: trained on the file, evaluated on a copy that writes 1000 for NULL.
    model, copy = tmp_path / "model.joblib", tmp_path / "S1-filled.txt"
    dump_svmlight_ranking(filled, y, qid, copy)
    status, _, err = run(capsys, "train", "--model", "lambdamart", "--train", part, "--out", model, "--threads", "1",
                         "--param", "n_estimators=20")
    assert status == 0, err
    status, _, err = run(capsys, "evaluate", "--model", model, "--data", copy)
    assert status == 0, err
    (line,) = [line for line in err.splitlines() if line.startswith("sklearn-ltr: warning:")]
    assert str(copy) in line and "feature 0: no NaN, where" in line and "and 16 more" in line
    status, _, err = run(capsys, "evaluate", "--model", model, "--data", data_dir / "mq2007-agg" / "S2.txt")
    assert status == 0 and "sklearn-ltr: warning:" not in err


def test_evaluate_and_compare_show_the_warning_on_stderr(capsys, data, tmp_path):
    X, y, qid = data
    X = np.nan_to_num(X)
    train, test = tmp_path / "train.txt", tmp_path / "test.txt"
    dump_svmlight_ranking(X, y, qid, train)
    scaled = X.copy()
    scaled[:, 3] *= 1000  # a feature in other units
    dump_svmlight_ranking(scaled, y, qid, test)
    model = tmp_path / "model.joblib"
    status, _, err = run(capsys, "train", "--model", "lambdamart", "--train", train, "--out", model, "--threads", "1",
                         "--param", "n_estimators=5", "--param", "min_child_samples=2")
    assert status == 0, err
    for args in (("evaluate", "--model", model, "--data", test), ("compare", "--data", test, "--model", model,
                                                                   "--model", model, "--resamples", "100")):
        status, _, err = run(capsys, *args)
        assert status == 0, err
        lines = [line for line in err.splitlines() if line.startswith("sklearn-ltr: warning:")]
        assert len(lines) >= 1 and all(str(test) in line and "feature 3: " in line for line in lines), err
        assert "outside the training range" in lines[0] and "feature j + 1 of the file" in lines[0]
    status, _, err = run(capsys, "evaluate", "--model", model, "--data", train)
    assert status == 0 and "sklearn-ltr: warning:" not in err


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float32_rounding_of_the_training_values_is_not_drift(dtype):
    X, y, qid = make_ranking(n_queries=40, n_features=4, random_state=3)
    X = X.astype(np.float64 if dtype is np.float32 else np.float32)
    X[:, 1] = 0.1  # float32(0.1) > 0.1: every value of the float32 copy is above the float64 maximum
    X[:, 2] = np.where(np.arange(len(X)) % 2, 0.3, 0.7)
    ranker = LambdaMARTRanker(n_estimators=2).fit(X, y, qid)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FeatureDriftWarning)
        ranker.predict(X.astype(dtype))
    with pytest.warns(FeatureDriftWarning, match="feature 1: 100% of the values outside"):
        ranker.predict(np.c_[X[:, :1], X[:, 1:2] * 1.001, X[:, 2:]].astype(dtype))


def test_out_of_range_share_counts_only_present_values():
    """The share outside the training range is of the non-missing values: NaN rows count for neither side."""
    from sklearn_ltr._feature_profile import FeatureProfile, feature_drift

    train = np.column_stack([np.linspace(0, 1, 50), np.linspace(0, 1, 50)])
    column = np.full(100, np.nan)
    column[:30] = 5.0  # 30 values outside [0, 1] ...
    column[30:40] = 0.5  # ... of 40 present: 75%; of all 100 rows it would be 30%, under the 50% threshold
    X = np.column_stack([np.linspace(0, 1, 100), column])
    findings = dict(feature_drift(FeatureProfile.of(train), X))
    assert list(findings) == [1]
    assert "75% of the values outside the training range [0, 1]" in findings[1]


@pytest.mark.parametrize("screen_rows", [None, 64])
def test_screened_columns_give_the_findings_of_the_full_count(monkeypatch, screen_rows):
    """Screening the columns past the range on random rows changes no finding: the shares reported are exact."""
    from sklearn_ltr import _feature_profile
    from sklearn_ltr._feature_profile import FeatureProfile, feature_drift

    rng = np.random.default_rng(0)
    n = 20_000 if screen_rows is None else 1_000
    train = rng.uniform(0, 1, size=(500, 4))
    X = rng.uniform(0, 1, size=(n, 4))
    X[: n * 6 // 10, 0] += 2.0  # 60% outside: reported
    X[: n // 100, 1] += 2.0  # 1% outside: screened out, not reported
    X[: n * 52 // 100, 2] -= 3.0  # 52% outside, below the range: reported
    if screen_rows is not None:
        monkeypatch.setattr(_feature_profile, "_SCREEN_ROWS", screen_rows)
    screened = dict(feature_drift(FeatureProfile.of(train), X))
    monkeypatch.setattr(_feature_profile, "_SCREEN_ROWS", n)  # no screening: every column counted
    assert dict(feature_drift(FeatureProfile.of(train), X)) == screened
    assert sorted(screened) == [0, 2]
    assert "60% of the values outside" in screened[0] and "52% of the values outside" in screened[2]

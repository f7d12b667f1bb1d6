"""The newcomer's path on real data with missing values (docs/real_data.rst), on part of LETOR 4.0 MQ2007-agg.

The raw partition files (``NULL`` for missing values) load; a Pipeline of per-query preprocessing, an
imputer with indicators and a neural ranker, with the validation partition routed through it, tunes
in GridSearchCV with GroupKFold; the validation value is the one of the transformed validation rows.
"""

import numpy as np
import pytest
import sklearn
from sklearn.impute import SimpleImputer
from sklearn.model_selection import GridSearchCV, GroupKFold
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_ltr import LambdaMARTRanker, RankNetRanker, ndcg_scorer
from sklearn_ltr.datasets import load_svmlight_ranking
from sklearn_ltr.metrics import ndcg_score
from sklearn_ltr.preprocessing import QueryNormalizer

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _queries(path, n_queries):
    X, y, qid = load_svmlight_ranking(path)
    keep = np.isin(qid, np.unique(qid)[:n_queries])
    return X[keep], y[keep], qid[keep]


@pytest.fixture(scope="module")
def agg(data_dir):
    """60 training queries of S1, 30 validation queries of S4 and 30 test queries of S5."""
    parts = data_dir / "mq2007-agg"
    return _queries(parts / "S1.txt", 60), _queries(parts / "S4.txt", 30), _queries(parts / "S5.txt", 30)


@pytest.mark.parametrize("normalizer", [QueryNormalizer("reciprocal"), QueryNormalizer("zscore")])
def test_tuned_pipeline_with_a_routed_validation_set(agg, normalizer):
    (X, y, qid), (X_vali, y_vali, qid_vali), (X_test, y_test, qid_test) = agg
    assert np.isnan(X).any() and np.isnan(X_vali).any()
    with sklearn.config_context(enable_metadata_routing=True):
        pipe = Pipeline([
            ("normalize", normalizer),
            ("impute", SimpleImputer(strategy="constant", fill_value=0.0, add_indicator=True)),
            ("scale", StandardScaler()),
            ("rank", RankNetRanker(hidden_sizes=(8,), early_stopping=True, max_epochs=3, random_state=0)),
        ], transform_input=["X_val"])
        search = GridSearchCV(pipe, {"rank__lr": [1e-3, 1e-2]}, cv=GroupKFold(2), scoring=ndcg_scorer)
        search.fit(X, y, groups=qid, X_val=X_vali, y_val=y_vali, groups_val=qid_vali)
        best = search.best_estimator_
        test_ndcg = best.score(X_test, y_test, groups=qid_test)
        # The validation rows went through the fitted steps with their own query ids.
        transformed = best[:-1].transform(X_vali, groups=qid_vali)
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()
    ranker = best[-1]
    assert ranker.n_features_in_ > X.shape[1]  # the indicator columns
    history = ranker.history_[:, "valid_ndcg@10"]
    expected = ndcg_score(y_vali, ranker.predict(transformed), qid_vali, k=10)
    assert history[ranker.best_iteration_ - 1] == pytest.approx(expected, abs=1e-6)
    assert 0.0 < test_ndcg <= 1.0


def test_lambdamart_on_the_raw_files_with_nan(agg):
    (X, y, qid), (X_vali, y_vali, qid_vali), (X_test, _, _) = agg
    ranker = LambdaMARTRanker(n_estimators=20, early_stopping_rounds=5, random_state=0)
    ranker.fit(X, y, qid, X_val=X_vali, y_val=y_vali, groups_val=qid_vali)
    assert list(ranker.evals_result_) == ["valid"]
    assert np.isfinite(ranker.predict(X_test)).all()

"""QueryNormalizer inside Pipeline(transform_input=["X_val"]): a validation set is normalised with its own ids."""

import numpy as np
import pytest
import sklearn
from sklearn.pipeline import Pipeline

from sklearn_ltr import LambdaMARTRanker
from sklearn_ltr.datasets import make_ranking
from sklearn_ltr.preprocessing import QueryNormalizer


@pytest.fixture(scope="module")
def data():
    X, y, qid = make_ranking(n_queries=30, n_features=4, random_state=1)
    train, val = qid < 20, qid >= 20
    return X[train], y[train], qid[train], X[val], y[val], qid[val]


@pytest.mark.parametrize("method", ["zscore", "minmax", "rank"])
def test_the_ids_with_one_entry_per_row_are_used(data, method):
    X, _, qid, X_val, _, qid_val = data
    normalizer = QueryNormalizer(method).fit(X, groups=qid)
    expected = normalizer.transform(X_val, groups=qid_val)
    np.testing.assert_array_equal(normalizer.transform(X_val, groups=qid, groups_val=qid_val), expected)
    np.testing.assert_array_equal(normalizer.transform(X_val, groups_val=qid_val), expected)
    np.testing.assert_array_equal(normalizer.transform(X, groups=qid, groups_val=qid_val),
                                  normalizer.transform(X, groups=qid))
    np.testing.assert_array_equal(QueryNormalizer(method).fit_transform(X, groups=qid, groups_val=qid_val),
                                  normalizer.transform(X, groups=qid))


def test_ids_that_cannot_be_told_apart_are_refused(data):
    X, _, qid, _, _, _ = data
    normalizer = QueryNormalizer("zscore").fit(X, groups=qid)
    other = np.roll(qid, 1)
    with pytest.raises(ValueError, match=r"groups and groups_val of .* query ids each, one per row of X, and they "
                                         "differ"):
        normalizer.transform(X, groups=qid, groups_val=other)
    # The same ids twice are no ambiguity.
    np.testing.assert_array_equal(normalizer.transform(X, groups=qid, groups_val=qid),
                                  normalizer.transform(X, groups=qid))
    with pytest.raises(ValueError, match=r"groups_val has 3 entries but X has \d+ rows, and groups is None"):
        normalizer.transform(X, groups_val=qid[:3])
    with pytest.raises(ValueError, match=r"groups has \d+ entries but X has \d+ rows"):
        normalizer.transform(X[:5], groups=qid, groups_val=qid[:3])


def test_a_pipeline_normalises_the_validation_set_per_query(data):
    X, y, qid, X_val, y_val, qid_val = data
    with sklearn.config_context(enable_metadata_routing=True):
        pipe = Pipeline([("normalize", QueryNormalizer("zscore")),
                         ("rank", LambdaMARTRanker(n_estimators=5, random_state=0))], transform_input=["X_val"])
        pipe.fit(X, y, groups=qid, X_val=X_val, y_val=y_val, groups_val=qid_val)
    normalizer = QueryNormalizer("zscore")
    by_hand = LambdaMARTRanker(n_estimators=5, random_state=0)
    by_hand.fit(normalizer.fit_transform(X, groups=qid), y, qid, X_val=normalizer.transform(X_val, groups=qid_val),
                y_val=y_val, groups_val=qid_val)
    assert pipe[-1].evals_result_ == by_hand.evals_result_
    # Normalised as one query instead, the validation curve is another.
    one_query = LambdaMARTRanker(n_estimators=5, random_state=0)
    one_query.fit(normalizer.fit_transform(X, groups=qid), y, qid,
                  X_val=normalizer.transform(X_val, groups=np.zeros_like(qid_val)), y_val=y_val, groups_val=qid_val)
    assert one_query.evals_result_ != by_hand.evals_result_

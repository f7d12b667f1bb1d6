"""Tests for sklearn_ltr.preprocessing.Log1pTransformer."""

import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LinearRegression
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.utils import get_tags
from sklearn.utils.estimator_checks import check_estimator

from sklearn_ltr.preprocessing import Log1pTransformer

E = np.e


def _reference(X):
    return np.sign(X) * np.log1p(np.abs(X))


def test_public_names():
    import sklearn_ltr
    import sklearn_ltr.preprocessing

    assert sklearn_ltr.Log1pTransformer is Log1pTransformer
    assert "Log1pTransformer" in sklearn_ltr.preprocessing.__all__


def test_values_by_hand():
    X = np.array([[-(E - 1), 0.0, E - 1], [-(E**2 - 1), -0.0, E**2 - 1]])
    expected = np.array([[-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0]])
    Xt = Log1pTransformer().fit_transform(X)
    assert_allclose(Xt, expected, rtol=1e-12, atol=0)
    assert_allclose(Xt, _reference(X), rtol=1e-12)


def test_odd_symmetry_and_monotonic():
    x = np.linspace(-1e6, 1e6, 20001)
    X = x.reshape(-1, 1)
    t = Log1pTransformer().fit(X)
    assert_allclose(t.transform(-X), -t.transform(X), rtol=0, atol=0)
    y = t.transform(X).ravel()
    assert np.all(np.diff(y) > 0)
    # Close to the identity near 0.
    small = np.array([[1e-10, -1e-10]])
    assert_allclose(Log1pTransformer().fit_transform(small), small, rtol=1e-9)


@settings(max_examples=100, deadline=None)
@given(
    hnp.arrays(
        np.float64,
        hnp.array_shapes(min_dims=2, max_dims=2, min_side=1, max_side=8),
        elements=st.floats(-1e12, 1e12, allow_nan=False, allow_infinity=False),
    )
)
def test_inverse_round_trip(X):
    t = Log1pTransformer().fit(X)
    Xt = t.transform(X)
    assert_allclose(Xt, _reference(X), rtol=1e-12, atol=0)
    assert_allclose(t.inverse_transform(Xt), X, rtol=1e-10, atol=1e-300)


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo", "lil"])
def test_sparse_stays_sparse(fmt):
    rng = np.random.default_rng(0)
    dense = rng.standard_normal((20, 5)) * 100
    dense[rng.random(dense.shape) < 0.7] = 0.0
    X = sp.random(20, 5, density=0.0, format=fmt) + sp.csr_matrix(dense)
    X = X.asformat(fmt)
    t = Log1pTransformer()
    Xt = t.fit_transform(X)
    assert sp.issparse(Xt)
    assert Xt.format == ("csc" if fmt == "csc" else "csr")
    assert Xt.nnz == sp.csr_matrix(dense).nnz
    assert_allclose(Xt.toarray(), _reference(dense))
    Xi = t.inverse_transform(Xt)
    assert sp.issparse(Xi)
    assert_allclose(Xi.toarray(), dense, rtol=1e-12)
    # Input untouched.
    assert_allclose(X.toarray(), dense)


def test_sparse_array_and_duplicates():
    # A COO array with the duplicate entries (0, 0) = 1 + 1: the value is 2, so the result is log1p(2).
    X = sp.coo_array((np.array([1.0, 1.0, -3.0]), (np.array([0, 0, 1]), np.array([0, 0, 1]))), shape=(2, 2))
    Xt = Log1pTransformer().fit_transform(X)
    assert isinstance(Xt, sp.sparray)
    assert_allclose(Xt.toarray(), [[np.log1p(2.0), 0.0], [0.0, -np.log1p(3.0)]])
    # A non-canonical CSR matrix, and the original is left as it was.
    X = sp.csr_matrix((np.array([1.0, 1.0]), np.array([0, 0]), np.array([0, 2])), shape=(1, 2))
    Xt = Log1pTransformer().fit_transform(X)
    assert_allclose(Xt.toarray(), [[np.log1p(2.0), 0.0]])
    assert X.nnz == 2


def test_nan_passes_through_and_inf_is_rejected():
    X = np.array([[np.nan, 1.0], [-1.0, np.nan]])
    t = Log1pTransformer().fit(X)
    Xt = t.transform(X)
    assert_array_equal(np.isnan(Xt), np.isnan(X))
    assert_allclose(Xt[~np.isnan(X)], [np.log1p(1.0), -np.log1p(1.0)])
    assert_array_equal(np.isnan(t.inverse_transform(Xt)), np.isnan(X))
    Xs = sp.csr_matrix(X)
    assert_array_equal(np.isnan(t.transform(Xs).toarray()), np.isnan(X))
    for bad in (np.inf, -np.inf):
        with pytest.raises(ValueError, match="infinity"):
            t.transform(np.array([[bad, 0.0]]))
        with pytest.raises(ValueError, match="infinity"):
            Log1pTransformer().fit(np.array([[bad, 0.0]]))


@pytest.mark.parametrize(
    ("dtype", "expected"),
    [
        (np.float32, np.float32),
        (np.float64, np.float64),
        (np.int64, np.float64),
        (np.int32, np.float64),
        (np.uint8, np.float64),
        (np.float16, np.float64),
        (bool, np.float64),
    ],
)
def test_dtypes(dtype, expected):
    X = np.array([[0, 1], [1, 0]], dtype=dtype)
    t = Log1pTransformer().fit(X)
    Xt = t.transform(X)
    assert Xt.dtype == expected
    assert t.inverse_transform(Xt).dtype == expected
    if dtype is not np.float16:  # scipy.sparse has no float16
        assert t.transform(sp.csr_matrix(X)).dtype == expected
    assert_allclose(Xt, _reference(X.astype(np.float64)), rtol=1e-6)


def test_float32_values():
    X = np.array([[-(E - 1), 1e30]], dtype=np.float32)
    Xt = Log1pTransformer().fit_transform(X)
    assert Xt.dtype == np.float32
    assert_allclose(Xt, [[-1.0, np.log1p(1e30)]], rtol=1e-6)


def test_copy_parameter():
    X = np.array([[E - 1, -(E - 1)]])
    X_orig = X.copy()
    Log1pTransformer().fit_transform(X)
    assert_array_equal(X, X_orig)

    out = Log1pTransformer(copy=False).fit_transform(X)
    assert out is X
    assert_allclose(X, [[1.0, -1.0]])

    # Read-only input is copied, never modified or rejected.
    X = X_orig.copy()
    X.flags.writeable = False
    out = Log1pTransformer(copy=False).fit_transform(X)
    assert_allclose(out, [[1.0, -1.0]])
    assert_array_equal(X, X_orig)

    Xs = sp.csr_matrix(X_orig)
    out = Log1pTransformer(copy=False).inverse_transform(Xs)
    assert out is Xs


def test_dataframe_set_output():
    df = pd.DataFrame(
        {"bm25": [0.0, E - 1, 10.0], "pagerank": [1e6, -(E - 1), 0.5]},
        index=pd.Index(["d3", "d1", "d2"], name="doc"),
    )
    t = Log1pTransformer().set_output(transform="pandas")
    out = t.fit_transform(df)
    assert isinstance(out, pd.DataFrame)
    assert list(out.columns) == ["bm25", "pagerank"]
    pd.testing.assert_index_equal(out.index, df.index)
    assert_allclose(out.to_numpy(), _reference(df.to_numpy()))
    assert_array_equal(t.feature_names_in_, ["bm25", "pagerank"])
    assert_array_equal(t.get_feature_names_out(), ["bm25", "pagerank"])

    out = t.transform(df.iloc[::-1])
    pd.testing.assert_index_equal(out.index, df.index[::-1])

    # Default output is an ndarray; inverse_transform accepts the DataFrame output without warnings.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        back = t.inverse_transform(t.transform(df))
    assert_allclose(back, df.to_numpy())
    assert isinstance(Log1pTransformer().fit_transform(df), np.ndarray)


def test_dataframe_feature_name_checks():
    df = pd.DataFrame({"a": [1.0, 2.0], "b": [3.0, 4.0]})
    t = Log1pTransformer().fit(df)
    with pytest.raises(ValueError, match="feature names"):
        t.transform(df[["b", "a"]])
    with pytest.warns(UserWarning, match="does not have valid feature names"):
        t.transform(df.to_numpy())
    assert_array_equal(Log1pTransformer().fit(df.to_numpy()).get_feature_names_out(), ["x0", "x1"])


def test_unfitted_transform_is_stateless():
    X = np.array([[E - 1, 0.0]])
    t = Log1pTransformer()
    assert get_tags(t).requires_fit is False
    assert_allclose(t.transform(X), [[1.0, 0.0]])
    assert_allclose(t.inverse_transform([[1.0, 0.0]]), X)
    # A DataFrame on an unfitted instance gives no "fitted without feature names" warning.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        t.transform(pd.DataFrame(X, columns=["a", "b"]))
    assert not hasattr(t, "n_features_in_")
    with pytest.raises(NotFittedError):
        t.get_feature_names_out()


def test_tags():
    tags = get_tags(Log1pTransformer())
    assert tags.requires_fit is False
    assert tags.input_tags.sparse is True
    assert tags.input_tags.allow_nan is True
    assert set(tags.transformer_tags.preserves_dtype) == {"float64", "float32"}


def test_pipeline_with_linear_regression():
    rng = np.random.default_rng(0)
    X = rng.lognormal(mean=2.0, sigma=2.0, size=(200, 3)) * rng.choice([-1, 1], size=(200, 3))
    y = _reference(X) @ np.array([1.0, -2.0, 0.5]) + 3.0
    pipe = make_pipeline(Log1pTransformer(), LinearRegression()).fit(X, y)
    assert_allclose(pipe.predict(X), y, atol=1e-8)
    assert_allclose(pipe[-1].coef_, [1.0, -2.0, 0.5], atol=1e-8)
    assert pipe.score(X, y) > 0.999999

    # With pandas output all the way through, the regressor sees the column names.
    df = pd.DataFrame(X, columns=["f0", "f1", "f2"])
    pipe = Pipeline([("log1p", Log1pTransformer()), ("lr", LinearRegression())]).set_output(
        transform="pandas"
    )
    pipe.fit(df, y)
    assert_array_equal(pipe["lr"].feature_names_in_, ["f0", "f1", "f2"])
    assert_array_equal(pipe[:-1].get_feature_names_out(), ["f0", "f1", "f2"])
    assert isinstance(pipe[:-1].transform(df), pd.DataFrame)
    assert_allclose(pipe.predict(df), y, atol=1e-8)


def test_clone_and_pickle():
    X = np.array([[1.0, -2.0], [3.0, 0.0]])
    t = Log1pTransformer(copy=False)
    c = clone(t)
    assert c is not t and c.get_params() == {"copy": False}
    fitted = Log1pTransformer().fit(pd.DataFrame(X, columns=["a", "b"]))
    loaded = pickle.loads(pickle.dumps(fitted))
    assert loaded.n_features_in_ == 2
    assert_array_equal(loaded.feature_names_in_, ["a", "b"])
    assert_allclose(loaded.transform(pd.DataFrame(X, columns=["a", "b"])), _reference(X))
    assert not hasattr(clone(fitted), "n_features_in_")


def test_wrong_number_of_features():
    t = Log1pTransformer().fit(np.zeros((3, 4)))
    with pytest.raises(ValueError, match="X has 3 features, but Log1pTransformer is expecting 4 features"):
        t.transform(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="X has 5 features, but Log1pTransformer is expecting 4 features"):
        t.inverse_transform(np.zeros((2, 5)))
    with pytest.raises(ValueError, match="X has 3 features, but Log1pTransformer is expecting 4 features"):
        t.transform(sp.csr_matrix(np.zeros((2, 3))))


@pytest.mark.parametrize("bad", [np.zeros(3), np.zeros((0, 2)), [["a", "b"]]])
def test_invalid_input(bad):
    with pytest.raises(ValueError):
        Log1pTransformer().fit(bad)


def test_check_estimator():
    check_estimator(Log1pTransformer())


@pytest.mark.parametrize("method", ["fit", "transform", "fit_transform", "inverse_transform"])
def test_copy_must_be_a_boolean(method):
    # copy="yes" would otherwise count as true; "" as false (and transform in place).
    from sklearn_ltr.utils._sklearn_compat import InvalidParameterError

    with pytest.raises(InvalidParameterError, match="The 'copy' parameter of Log1pTransformer must be"):
        getattr(Log1pTransformer(copy="yes"), method)(np.ones((2, 2)))

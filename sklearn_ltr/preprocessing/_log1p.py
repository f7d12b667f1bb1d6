"""The symmetric log transform ``sign(x) * log1p(|x|)`` of DASALC."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
from sklearn.utils.validation import check_array, check_is_fitted, validate_data

from sklearn_ltr.utils._sklearn_compat import validate_estimator_params

__all__ = ["Log1pTransformer"]

_CHECK_KWARGS = {
    "accept_sparse": ("csr", "csc"),
    "dtype": (np.float64, np.float32),
    "ensure_all_finite": "allow-nan",
}


def _signed(func, X, *, copy):
    """Return ``sign(X) * func(|X|)``; ``X`` is a validated float array or CSR/CSC matrix.

    ``func`` is a NumPy ufunc with ``func(0) == 0`` (``np.log1p`` or ``np.expm1``), so a
    sparse matrix keeps its sparsity pattern and only its stored values are mapped.
    With ``copy=False`` the result is written into ``X``.
    """
    if sp.issparse(X):
        X = X.copy() if copy else X
        # Stored duplicates are summed by scipy: f(a) + f(b) != f(a + b), so merge them first.
        X.sum_duplicates()
        _signed(func, X.data, copy=False)
        return X
    magnitude = np.abs(X)
    func(magnitude, out=magnitude)
    # copysign keeps NaN and the sign of every value (including -0.0) in one pass.
    return np.copysign(magnitude, X, out=magnitude if copy else X)


class Log1pTransformer(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    r"""Symmetric log transform of every feature: ``sign(x) * log1p(|x|)``.

    Each value :math:`x` is mapped to

    .. math::

        f(x) = \operatorname{sign}(x) \, \log(1 + |x|),

    an odd, strictly increasing, invertible function that is close to the identity
    near 0 and grows logarithmically for large :math:`|x|`. DASALC (Qin et al., 2021)
    applies it to every input feature of a neural ranker so that heavy-tailed
    learning-to-rank features (counts, BM25 scores, PageRank, ...) get a scale the
    network can learn from, without per-feature statistics.

    The transformer is stateless: ``fit`` only records ``n_features_in_`` (and
    ``feature_names_in_`` for a DataFrame), which later calls check. ``transform``
    also works on an unfitted instance, like scikit-learn's
    :class:`~sklearn.preprocessing.Normalizer`; ``get_feature_names_out`` and
    ``set_output(transform="pandas")`` need a fitted one, as in a
    :class:`~sklearn.pipeline.Pipeline`.

    Parameters
    ----------
    copy : bool, default=True
        If False, transform a float64 or float32 NumPy array or CSR/CSC matrix
        in place where possible. Other inputs (lists, DataFrames, integer
        arrays, read-only arrays) are always copied.

    Attributes
    ----------
    n_features_in_ : int
        Number of features seen during ``fit``.

    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during ``fit``. Defined only when `X`
        has feature names that are all strings.

    See Also
    --------
    sklearn.preprocessing.FunctionTransformer : Build a transformer from any callable.
    sklearn.preprocessing.QuantileTransformer : Map features to a uniform or normal distribution.

    Notes
    -----
    - The inverse is :math:`f^{-1}(y) = \operatorname{sign}(y) \, (e^{|y|} - 1)`,
      computed with ``expm1`` (see ``inverse_transform``).
    - Sparse input (CSR or CSC; other formats are converted to CSR) stays sparse:
      :math:`f(0) = 0`, so only the stored values are transformed.
    - ``NaN`` passes through unchanged. Infinite values are rejected with a
      ``ValueError``, as by scikit-learn's other transformers: a feature that is
      infinite is almost always a data error, and it would only turn into ``NaN``
      later in a neural ranker.
    - float32 input stays float32; every other input dtype becomes float64.

    References
    ----------
    .. [1] Z. Qin, L. Yan, H. Zhuang, Y. Tay, R. K. Pasumarthi, X. Wang, M. Bendersky
       and M. Najork, "Are Neural Rankers still Outperformed by Gradient Boosted
       Decision Trees?", International Conference on Learning Representations
       (ICLR), 2021.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ltr.preprocessing import Log1pTransformer
    >>> X = np.array([[1 - np.e, 0.0], [np.e - 1, 99.0]])
    >>> transformer = Log1pTransformer().fit(X)
    >>> transformer.transform(X).round(4)
    array([[-1.    ,  0.    ],
           [ 1.    ,  4.6052]])
    >>> np.allclose(transformer.inverse_transform(transformer.transform(X)), X)
    True

    Sparse input stays sparse, with the same stored entries:

    >>> import scipy.sparse as sp
    >>> X_sparse = sp.csr_matrix(X)
    >>> X_new = transformer.transform(X_sparse)
    >>> X_new.format, X_new.nnz == X_sparse.nnz
    ('csr', True)
    """

    _parameter_constraints = {"copy": ["boolean"]}  # noqa: RUF012

    def __init__(self, *, copy=True):
        self.copy = copy

    def _check_input(self, X, *, reset, force_writeable=False):
        """Validate ``X``; check feature count and names only against a fitted instance."""
        if reset or hasattr(self, "n_features_in_"):
            return validate_data(self, X, reset=reset, force_writeable=force_writeable, **_CHECK_KWARGS)
        # Unfitted (stateless use): no names to compare with, so no "fitted without feature names" warning.
        return check_array(X, force_writeable=force_writeable, **_CHECK_KWARGS)

    def fit(self, X, y=None):
        """Check `X` and record its number of features (and names).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Input data; finite or NaN.

        y : None
            Ignored.

        Returns
        -------
        self : object
            Fitted transformer.
        """
        validate_estimator_params(self)
        self._check_input(X, reset=True)
        return self

    def transform(self, X):
        """Apply ``sign(x) * log1p(|x|)`` to every value of `X`.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Input data; finite or NaN. If fitted, it must have the features seen in `fit`.

        Returns
        -------
        X_new : {ndarray, sparse matrix} of shape (n_samples, n_features)
            Transformed data: float32 for float32 input, float64 otherwise; CSR or
            CSC for sparse input.
        """
        check_is_fitted(self)  # a no-op: the transformer is stateless (requires_fit=False)
        validate_estimator_params(self)  # transform may run without fit
        # With copy=True, _signed writes into fresh memory, so validation need not copy;
        # with copy=False it writes into X, which must then be writeable.
        X = self._check_input(X, reset=False, force_writeable=not self.copy)
        return _signed(np.log1p, X, copy=self.copy)

    def inverse_transform(self, X):
        """Map transformed data back: ``sign(y) * expm1(|y|)``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Transformed data; finite or NaN. Values beyond ``log(max float)``
            (about 709.8 in float64, 88.7 in float32) overflow to infinity.

        Returns
        -------
        X_original : {ndarray, sparse matrix} of shape (n_samples, n_features)
            Data in the original feature space.
        """
        validate_estimator_params(self)
        X = check_array(X, force_writeable=not self.copy, **_CHECK_KWARGS)
        n_features_in = getattr(self, "n_features_in_", None)
        if n_features_in is not None and X.shape[1] != n_features_in:
            raise ValueError(
                f"X has {X.shape[1]} features, but {type(self).__name__} is expecting "
                f"{n_features_in} features as input."
            )
        return _signed(np.expm1, X, copy=self.copy)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.requires_fit = False
        tags.input_tags.sparse = True
        tags.input_tags.allow_nan = True
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags

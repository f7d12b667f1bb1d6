"""Warnings and errors that the library raises, in one public module.

Examples
--------
>>> from sklearn_ltr.exceptions import NonFiniteLossError, TrainingInterruptedWarning
>>> issubclass(NonFiniteLossError, FloatingPointError), issubclass(NonFiniteLossError, ValueError)
(True, True)
>>> issubclass(TrainingInterruptedWarning, UserWarning)
True
"""

from __future__ import annotations

import os
import sys
import warnings

__all__ = ["FeatureDriftWarning", "NonFiniteLossError", "QueryIdFeatureWarning", "TrainingInterruptedWarning"]

#: The package's directory: a warning is attributed to the first caller outside it.
_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


class NonFiniteLossError(FloatingPointError, ValueError):
    """The training loss of a neural ranker became NaN or infinite.

    Training stops at once (the weights are no longer usable) and ``fit`` raises this
    error, naming the epoch and batch, instead of returning a model that predicts NaN.
    It is both a :class:`FloatingPointError` and a :class:`ValueError`, so
    scikit-learn's searches record ``error_score`` for that candidate.

    Examples
    --------
    >>> from sklearn_ltr.exceptions import NonFiniteLossError
    >>> isinstance(NonFiniteLossError("loss is nan at epoch 3"), ValueError)
    True
    """


class TrainingInterruptedWarning(UserWarning):
    """``fit`` of a neural ranker was interrupted (Ctrl-C) and kept a partly trained model.

    The estimator is fitted with the weights of the last completed batch; the message
    names the epochs completed. To refuse such a model, turn the warning into an error::

        with warnings.catch_warnings():
            warnings.simplefilter("error", TrainingInterruptedWarning)
            ranker.fit(X, y, groups=qid)

    The command line does so: an interrupted ``sklearn-ltr train`` exits with status
    130 and writes nothing.

    Examples
    --------
    >>> from sklearn_ltr.exceptions import TrainingInterruptedWarning
    >>> issubclass(TrainingInterruptedWarning, UserWarning)
    True
    """


class QueryIdFeatureWarning(UserWarning):
    """A feature column of ``X`` in ``fit`` holds the query ids: the model would train on them.

    Raised when a column equals ``groups``, or relabels the query ids one to one (a whole
    number, the same on every row of a query and different for every query, with at least
    20 queries: ``MIN_QUERIES_RELABELLED`` of ``sklearn_ltr._feature_profile``). The usual cause: a
    DataFrame with a ``qid`` column passed whole as ``X`` with ``groups=df.qid``. The model
    then splits on arbitrary id values, which mean nothing for new queries. The message names
    the column and the fix: drop it from ``X``, or construct the ranker with
    ``query_column=<the column>``, which reads the ids from it and leaves it out of the features.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from sklearn_ltr import LambdaMARTRanker
    >>> from sklearn_ltr.exceptions import QueryIdFeatureWarning
    >>> qid = np.repeat(np.arange(30), 4)
    >>> X = np.column_stack([np.random.default_rng(0).random(120), qid])
    >>> y = np.tile([0, 1, 0, 2], 30)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     _ = LambdaMARTRanker(n_estimators=2, n_jobs=1).fit(X, y, groups=qid)
    >>> [w.category.__name__ for w in caught]
    ['QueryIdFeatureWarning']
    >>> print(caught[0].message)
    X column 1 holds the query ids (it equals groups): ...
    """


class FeatureDriftWarning(UserWarning):
    """The rows given to ``predict`` break what the model saw of a feature in ``fit``.

    A fitted ranker keeps a profile of each training feature (``feature_profile_``: its
    share of missing values, its minimum and maximum); ``predict`` (and so ``score``, the
    scorers and the command line's ``evaluate`` and ``compare``) warns, naming the features,
    when a batch of at least 20 rows (``MIN_ROWS``) has

    - NaN in a feature that had none in training;
    - no NaN (under 1% of the rows, ``FEW_MISSING``) in a feature that training had missing in
      more than 20% of its rows (``MANY_MISSING``): a file that writes missing values as a
      number (0, -1, 1000) instead of NaN;
    - more than half of its values (``OUT_OF_RANGE``) outside the training range
      ``[min, max]``: another scale, another encoding, shifted columns.

    The thresholds are constants of ``sklearn_ltr._feature_profile``.

    The scores are still returned: the warning says they are extrapolations. To refuse such
    data, turn it into an error (``warnings.simplefilter("error", FeatureDriftWarning)``); to
    silence it, ``warnings.filterwarnings("ignore", category=FeatureDriftWarning)``.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from sklearn_ltr import LambdaMARTRanker
    >>> from sklearn_ltr.exceptions import FeatureDriftWarning
    >>> rng = np.random.default_rng(0)
    >>> X, y, qid = rng.random((200, 3)), rng.integers(0, 3, 200), np.repeat(np.arange(20), 10)
    >>> X[::3, 1] = np.nan  # a third of feature 1 missing
    >>> ranker = LambdaMARTRanker(n_estimators=2, n_jobs=1).fit(X, y, qid)
    >>> filled = np.where(np.isnan(X), 1000.0, X)  # missing written as 1000
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     _ = ranker.predict(filled)
    >>> print(caught[0].message)
    X (200 rows) breaks what LambdaMARTRanker saw of 1 feature in fit: feature 1: no NaN, where 34% of ...
    """


def warn_outside_library(message, category):
    """``warnings.warn`` attributed to the first caller outside the package (the user's line).

    A warning raised deep in a ranker, or in the members of an ensemble, then points at the
    call that the user wrote, and Python's default filter shows it once for that line.
    """
    frame, level = sys._getframe(1), 2
    while frame is not None and _in_package(frame.f_code.co_filename):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level - 1 if frame is None else level)


def _in_package(filename):
    return filename.startswith(_PACKAGE) or os.path.abspath(filename).startswith(_PACKAGE)

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

__all__ = ["NonFiniteLossError", "TrainingInterruptedWarning"]


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

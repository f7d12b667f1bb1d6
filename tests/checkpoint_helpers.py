"""What the tests of resumable training share: tiny data, a crash in the middle of an epoch, exact comparison of fits.

A fit with ``checkpoint_dir`` is crashed by :class:`CrashAt` in the middle of an epoch, then fitted
again with the same parameters: :func:`assert_same_fit` checks that it is the uninterrupted fit
bit for bit (predictions, weights, optimiser state, every history row but the timings).
"""

import numpy as np
import pytest
import torch
from skorch.callbacks import Callback

from sklearn_ltr.datasets import make_ranking
from sklearn_ltr.training._checkpoint import CHECKPOINT_FILE


def tiny_data(n_queries=24, random_state=1):
    """``(X, y, qid)``: rows of ``n_queries`` queries in shuffled order (lists of 7 to 120 rows), features log1p-ed."""
    X, y, qid = make_ranking(n_queries=n_queries, n_features=5, shuffle=True, random_state=random_state)
    return np.sign(X) * np.log1p(np.abs(X)), y, qid


class Crash(RuntimeError):
    """The simulated crash of :class:`CrashAt`."""


class CrashAt(Callback):
    """Raise in training batch ``batch`` of epoch ``epoch`` while armed.

    ``armed`` is a class flag, so that the crashing fit and the resumed one have equal parameters.
    """

    armed = False

    def __init__(self, epoch, batch=2):
        self.epoch = epoch
        self.batch = batch

    def on_epoch_begin(self, net, **kwargs):
        self.seen_ = 0

    def on_batch_end(self, net, training=False, **kwargs):
        self.seen_ += training
        if CrashAt.armed and len(net.history) == self.epoch and self.seen_ == self.batch:
            raise Crash("simulated crash")


def fit(cls, params, data=None, fit_params=None, **more):
    """``cls(**params, **more)`` fitted on ``data`` (:func:`tiny_data` by default) on one torch thread.

    Float32 sums split across threads round differently: every fit of a comparison uses one thread.
    The training state is kept, so that the optimiser's state can be compared.
    """
    X, y, qid = tiny_data() if data is None else data
    estimator = cls(**{"keep_training_state": True, **params, **more})
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return estimator.fit(X, y, groups=qid, **(fit_params or {}))
    finally:
        torch.set_num_threads(threads)


def crash_then_resume(cls, params, directory, *, epoch, batch=2, data=None, fit_params=None, resume_data=None):
    """The fit resumed from the checkpoint of a fit crashed in batch ``batch`` of epoch ``epoch``.

    The crashed fit trains on ``data``; the resumed one on ``resume_data`` (the same rows in another
    order, say), by default ``data`` too.
    """
    params = {**params, "callbacks": [*params.get("callbacks", []), ("crash", CrashAt(epoch, batch))]}
    CrashAt.armed = True
    try:
        with pytest.raises(Crash):
            fit(cls, params, data, fit_params, checkpoint_dir=directory)
    finally:
        CrashAt.armed = False
    assert (directory / CHECKPOINT_FILE).exists()
    return fit(cls, params, data if resume_data is None else resume_data, fit_params, checkpoint_dir=directory)


def uninterrupted(cls, params, *, epoch, batch=2, data=None, fit_params=None):
    """The reference of :func:`crash_then_resume`: the same parameters (the crash callback unarmed), no checkpoint."""
    params = {**params, "callbacks": [*params.get("callbacks", []), ("crash", CrashAt(epoch, batch))]}
    return fit(cls, params, data, fit_params)


def history_rows(estimator):
    """Every epoch's history row without its timings (``dur``), per-batch rows included."""
    def plain(row):
        return {key: [plain(batch) for batch in value] if key == "batches" else value
                for key, value in row.items() if key != "dur"}

    return [plain(row) for row in estimator.history_]


def assert_equal_state(actual, expected, where="state"):
    """Nested state dicts equal exactly: tensors bit for bit, every other value by ``==``."""
    if torch.is_tensor(expected):
        torch.testing.assert_close(actual, expected, rtol=0, atol=0, msg=where)
    elif isinstance(expected, np.ndarray):
        np.testing.assert_array_equal(actual, expected, err_msg=where)
    elif isinstance(expected, dict):
        assert set(actual) == set(expected), where
        for key in expected:
            assert_equal_state(actual[key], expected[key], f"{where}[{key!r}]")
    elif isinstance(expected, (list, tuple)):
        assert len(actual) == len(expected), where
        for index, (left, right) in enumerate(zip(actual, expected, strict=True)):
            assert_equal_state(left, right, f"{where}[{index}]")
    else:
        assert actual == expected, f"{where}: {actual!r} != {expected!r}"


def assert_same_fit(resumed, reference, *, resumed_from, data=None, predict_params=None):
    """``resumed`` is the fit ``reference`` is: predictions, weights, optimiser state, history, stopping epoch."""
    X, _, qid = tiny_data() if data is None else data
    predict_params = predict_params or {}
    np.testing.assert_array_equal(resumed.predict(X, groups=qid, **predict_params),
                                  reference.predict(X, groups=qid, **predict_params))
    assert_equal_state(resumed.net_.module_.state_dict(), reference.net_.module_.state_dict(), "module")
    assert_equal_state(resumed.net_.optimizer_.state_dict(), reference.net_.optimizer_.state_dict(), "optimizer")
    assert history_rows(resumed) == history_rows(reference)
    assert (resumed.n_iter_, resumed.best_iteration_) == (reference.n_iter_, reference.best_iteration_)
    assert (resumed.resumed_from_epoch_, reference.resumed_from_epoch_) == (resumed_from, None)

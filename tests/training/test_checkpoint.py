"""Resumable training (checkpoint_dir): a fit interrupted and resumed is the fit that would have been."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
import torch
from checkpoint_helpers import Crash, CrashAt, tiny_data  # tests/checkpoint_helpers.py
from skorch.callbacks import Callback, LRScheduler

from sklearn_ltr import DASALCRanker, RankNetRanker
from sklearn_ltr.training._checkpoint import CHECKPOINT_FILE

# Dropout, noise augmentation, early stopping with best weights, a learning-rate schedule and
# Adam: every kind of state a checkpoint must hold changes the model when it is lost.
_DASALC = {"hidden_size": 8, "n_layers": 1, "n_attention_layers": 1, "n_heads": 2, "head_size": 4, "dropout": 0.2,
           "attention_dropout": 0.1, "noise_std": 0.1, "batch_size": 4, "lr": 0.1, "max_epochs": 7,
           "early_stopping": True, "validation_fraction": 0.3, "n_iter_no_change": 3, "device": "cpu",
           "random_state": 10}  # a seed whose fit stops early (epoch 6 of 7, best epoch 3)
_RANKNET = {"hidden_sizes": (8,), "batch_size": 4, "lr": 0.01, "max_epochs": 5, "max_list_length": 20,
            "device": "cpu", "random_state": 0}


def _single_thread(function, *args, **kwargs):
    # Float32 sums split across threads round differently: every run of a comparison uses one thread.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return function(*args, **kwargs)
    finally:
        torch.set_num_threads(threads)


def _fit(cls, params, **more):
    X, y, qid = tiny_data()
    return _single_thread(cls(**{**params, **more}).fit, X, y, groups=qid)


def _assert_same_fit(resumed, reference):
    X, _, qid = tiny_data()
    np.testing.assert_array_equal(resumed.predict(X, groups=qid), reference.predict(X, groups=qid))
    for name, tensor in reference.net_.module_.state_dict().items():
        torch.testing.assert_close(resumed.net_.module_.state_dict()[name], tensor, rtol=0, atol=0, msg=name)
    assert [row["epoch"] for row in resumed.history_] == list(range(1, len(reference.history_) + 1))
    for key in ("train_loss", "valid_ndcg@10"):
        assert resumed.history_[:, key] == reference.history_[:, key] if key in reference.history_[0] else True
    assert resumed.best_iteration_ == reference.best_iteration_
    assert resumed.n_iter_ == reference.n_iter_


_CASES = {
    "dasalc_early_stopping": (DASALCRanker, _DASALC, 4),
    "ranknet_schedule_subsampling": (RankNetRanker, {**_RANKNET, "callbacks": [
        ("schedule", LRScheduler(torch.optim.lr_scheduler.StepLR, step_size=1, gamma=0.5))]}, 3),
}


@pytest.mark.parametrize("case", list(_CASES))
def test_a_crashed_fit_resumes_to_the_uninterrupted_model(tmp_path, case):
    cls, params, epoch = _CASES[case]
    crash = ("crash", CrashAt(epoch=epoch, batch=2))
    params = {**params, "callbacks": [*params.get("callbacks", []), crash]}
    reference = _fit(cls, params)
    CrashAt.armed = True
    try:
        with pytest.raises(Crash):
            _fit(cls, params, checkpoint_dir=tmp_path)
    finally:
        CrashAt.armed = False
    assert (tmp_path / CHECKPOINT_FILE).exists()
    resumed = _fit(cls, params, checkpoint_dir=tmp_path)
    _assert_same_fit(resumed, reference)
    # It says so: the checkpoint held the epochs before the one that crashed; a fresh fit says None.
    assert (resumed.resumed_from_epoch_, reference.resumed_from_epoch_) == (epoch - 1, None)
    if cls is DASALCRanker:  # the state restored includes early stopping's: it stopped at the same epoch
        assert resumed.n_iter_ < params["max_epochs"], "early stopping never triggered: weak test"
        assert resumed.best_iteration_ < epoch, "the best weights were not those of an epoch before the crash"


class _CountEpochs(Callback):
    epochs = 0

    def on_epoch_begin(self, net, **kwargs):
        _CountEpochs.epochs += 1


def test_a_finished_fit_is_restored_without_training(tmp_path):
    # Early stopping ends it before max_epochs: the epochs it did not run are not run by a refit either.
    params = {**_DASALC, "callbacks": [_CountEpochs()]}
    first = _fit(DASALCRanker, params, checkpoint_dir=tmp_path)
    assert first.n_iter_ < params["max_epochs"]
    _CountEpochs.epochs = 0
    again = _fit(DASALCRanker, params, checkpoint_dir=tmp_path)
    assert _CountEpochs.epochs == 0
    _assert_same_fit(again, first)
    assert (first.resumed_from_epoch_, again.resumed_from_epoch_) == (None, first.n_iter_)


def _refused(tmp_path, match, **changes):
    X, y, qid = tiny_data()
    before = (tmp_path / CHECKPOINT_FILE).read_bytes()
    data = changes.pop("data", (X, y, qid))
    with pytest.raises(ValueError, match=match):
        RankNetRanker(**{**_RANKNET, "checkpoint_dir": tmp_path, **changes}).fit(data[0], data[1], groups=data[2])
    assert (tmp_path / CHECKPOINT_FILE).read_bytes() == before, "a refused checkpoint was overwritten"


def test_a_checkpoint_of_other_parameters_or_data_is_refused(tmp_path):
    _fit(RankNetRanker, _RANKNET, checkpoint_dir=tmp_path, max_epochs=2)
    _refused(tmp_path, r"other parameters \(max_epochs=2 there, 5 here\)")
    _refused(tmp_path, r"other parameters \(lr=0.01 there, 0.02 here; max_epochs", lr=0.02)
    X, y, qid = tiny_data()
    _refused(tmp_path, "other training data", max_epochs=2, data=(X, np.roll(y, 1), qid))
    other = X.copy()
    other[5, 2] += 1e-3
    _refused(tmp_path, "other training data", max_epochs=2, data=(other, y, qid))
    # Settings that change neither the model nor the data order are not compared.
    _fit(RankNetRanker, _RANKNET, checkpoint_dir=tmp_path, max_epochs=2, verbose=0, keep_training_state=True)


def test_a_truncated_checkpoint_is_refused(tmp_path):
    _fit(RankNetRanker, _RANKNET, checkpoint_dir=tmp_path)
    path = tmp_path / CHECKPOINT_FILE
    path.write_bytes(path.read_bytes()[:len(path.read_bytes()) // 2])
    _refused(tmp_path, r"cannot be read \(truncated or not a checkpoint")
    path.write_bytes(b"not a checkpoint")
    _refused(tmp_path, r"cannot be read \(truncated or not a checkpoint")


def test_a_crash_while_writing_leaves_the_previous_checkpoint(tmp_path, monkeypatch):
    reference = _fit(RankNetRanker, _RANKNET)
    save = torch.save
    calls = []

    def save_then_crash(state, file):
        calls.append(state["history"][-1]["epoch"])
        if len(calls) == 3:  # the third epoch's write dies half-way
            file.write(b"PK\x03\x04 half a checkpoint")
            raise Crash("killed while writing")
        return save(state, file)

    monkeypatch.setattr(torch, "save", save_then_crash)
    with pytest.raises(Crash):
        _fit(RankNetRanker, _RANKNET, checkpoint_dir=tmp_path)
    monkeypatch.setattr(torch, "save", save)
    assert os.listdir(tmp_path) == [CHECKPOINT_FILE], "the temporary file of the failed write was left behind"
    state = torch.load(tmp_path / CHECKPOINT_FILE, weights_only=True)
    assert len(state["history"]) == 2
    _assert_same_fit(_fit(RankNetRanker, _RANKNET, checkpoint_dir=tmp_path), reference)


_SCRIPT = """
import os, sys, time
import numpy as np, torch
from skorch.callbacks import Callback
from sklearn_ltr import DASALCRanker
from sklearn_ltr.datasets import make_ranking

torch.set_num_threads(1)


class PauseAt(Callback):
    # With PAUSE set: tell the test, then wait in the middle of an epoch for its SIGKILL.
    def __init__(self, epoch, batch):
        self.epoch, self.batch = epoch, batch

    def on_epoch_begin(self, net, **kwargs):
        self.seen_ = 0

    def on_batch_end(self, net, training=False, **kwargs):
        self.seen_ += training
        if os.environ.get("PAUSE") and len(net.history) == self.epoch and self.seen_ == self.batch:
            open(os.environ["PAUSE"], "w").close()
            time.sleep(300)


X, y, qid = make_ranking(n_queries=24, n_features=5, shuffle=True, random_state=1)
X = np.sign(X) * np.log1p(np.abs(X))
params = {params}
ranker = DASALCRanker(**params, callbacks=[PauseAt(4, 2)], checkpoint_dir=sys.argv[1]).fit(X, y, groups=qid)
np.save(sys.argv[2], ranker.predict(X, groups=qid))
np.save(sys.argv[3], np.array([row["epoch"] for row in ranker.history_]))
"""


def test_a_fit_killed_with_sigkill_mid_epoch_resumes_to_the_uninterrupted_model(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(_SCRIPT.format(params=repr(_DASALC))))
    checkpoints, paused = tmp_path / "checkpoints", tmp_path / "paused"
    outputs = [str(tmp_path / "scores.npy"), str(tmp_path / "epochs.npy")]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join(sys.path)}
    process = subprocess.Popen([sys.executable, str(script), str(checkpoints), *outputs],
                               env={**env, "PAUSE": str(paused)}, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while not paused.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert paused.exists(), process.communicate()[1].decode()[-2000:]
    process.send_signal(signal.SIGKILL)
    process.communicate()
    assert process.returncode == -signal.SIGKILL
    assert not os.path.exists(outputs[0])
    saved = torch.load(checkpoints / CHECKPOINT_FILE, weights_only=True)
    assert len(saved["history"]) == 3 and not saved["finished"]  # killed in epoch 4, after three checkpoints
    result = subprocess.run([sys.executable, str(script), str(checkpoints), *outputs], env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    X, _, qid = tiny_data()
    reference = _fit(DASALCRanker, _DASALC)
    np.testing.assert_array_equal(np.load(outputs[0]), reference.predict(X, groups=qid))
    assert np.load(outputs[1]).tolist() == list(range(1, reference.n_iter_ + 1))


# Callback state: saved by state_dict()/load_state_dict(), or by the callback's attributes, or refused.


class NoisyWeights(Callback):
    """Add noise drawn from a NumPy Generator to the weights at the start of each epoch (and record the draw)."""

    def __init__(self, seed):
        self.seed = seed

    def initialize(self):
        self.rng_ = np.random.default_rng(self.seed)
        return self

    def on_epoch_begin(self, net, **kwargs):
        with torch.no_grad():
            for parameter in net.module_.parameters():
                noise = self.rng_.normal(scale=0.05, size=tuple(parameter.shape))
                parameter.add_(torch.as_tensor(noise, dtype=parameter.dtype))
        net.history.record("noise", float(noise.ravel()[0]))


class NoisyWeightsWithState(NoisyWeights):
    def state_dict(self):
        return {"rng": self.rng_.bit_generator.state}

    def load_state_dict(self, state):
        self.rng_.bit_generator.state = state["rng"]


@pytest.mark.parametrize("noisy", [NoisyWeightsWithState, NoisyWeights])
def test_a_callback_drawing_from_a_numpy_generator_resumes_to_the_uninterrupted_fit(tmp_path, noisy):
    # With state_dict/load_state_dict, and without them (its rng_ attribute is saved by its bit generator's state).
    params = {**_RANKNET, "callbacks": [("noisy", noisy(seed=3)), ("crash", CrashAt(epoch=3, batch=2))]}
    reference = _fit(RankNetRanker, params)
    CrashAt.armed = True
    try:
        with pytest.raises(Crash):
            _fit(RankNetRanker, params, checkpoint_dir=tmp_path)
    finally:
        CrashAt.armed = False
    resumed = _fit(RankNetRanker, params, checkpoint_dir=tmp_path)
    assert resumed.resumed_from_epoch_ == 2
    assert resumed.history_[:, "noise"] == reference.history_[:, "noise"]  # the callback drew the same numbers
    _assert_same_fit(resumed, reference)


class HoldsLock(Callback):
    def on_train_begin(self, net, **kwargs):
        import threading

        self.count_ = 0
        self.lock_ = threading.Lock()


class BadStateDict(Callback):
    def state_dict(self):
        return {"schedule": [1, 2, lambda epoch: epoch]}

    def load_state_dict(self, state):
        pass


class DefaultDictState(Callback):
    def state_dict(self):
        import collections

        return {"seen": collections.defaultdict(int, {"a": 1})}

    def load_state_dict(self, state):
        pass


def test_a_callback_state_a_checkpoint_cannot_hold_is_refused_naming_it(tmp_path):
    X, y, qid = tiny_data()
    with pytest.raises(TypeError, match=r"callback 'guard' \(HoldsLock\): lock_ is a lock, .*load_state_dict"):
        RankNetRanker(**_RANKNET, callbacks=[("guard", HoldsLock())], checkpoint_dir=tmp_path).fit(X, y, groups=qid)
    assert not (tmp_path / CHECKPOINT_FILE).exists()  # refused before the first epoch
    with pytest.raises(TypeError, match=r"callback 'BadStateDict' \(BadStateDict\): "
                                        r"state_dict\(\)\['schedule'\]\[2\] is a function"):
        RankNetRanker(**_RANKNET, callbacks=[BadStateDict()], checkpoint_dir=tmp_path).fit(X, y, groups=qid)
    with pytest.raises(TypeError, match=r"callback 'DefaultDictState' \(DefaultDictState\): "
                                        r"state_dict\(\)\['seen'\] is a defaultdict"):
        RankNetRanker(**_RANKNET, callbacks=[DefaultDictState()], checkpoint_dir=tmp_path).fit(X, y, groups=qid)
    # Without a checkpoint nothing needs saving.
    RankNetRanker(**{**_RANKNET, "max_epochs": 1}, callbacks=[HoldsLock(), BadStateDict()]).fit(X, y, groups=qid)


class Everything(Callback):
    def __init__(self):
        self.saved = None

    def state_dict(self):
        return {"pcg": np.random.default_rng(5), "mt": np.random.Generator(np.random.MT19937(6)),
                "legacy": np.random.RandomState(7), "torch": torch.Generator().manual_seed(8),
                "array": np.arange(6, dtype=np.uint32).reshape(2, 3), "weights": torch.ones(2),
                "nested": {"count": np.int64(3), "best": (np.float32(0.5), float("inf")), "name": "x", "raw": b"\x00"}}

    def load_state_dict(self, state):
        self.saved = state


def test_a_callback_state_round_trips_through_the_checkpoint_file(tmp_path):
    import io

    from sklearn_ltr.training._checkpoint import _callback_state, _restore_callback

    source, target = Everything(), Everything()
    buffer = io.BytesIO()
    torch.save(_callback_state("everything", source), buffer)
    _restore_callback(target, torch.load(io.BytesIO(buffer.getvalue()), weights_only=True))
    state, expected = target.saved, source.state_dict()
    for name in ("pcg", "mt"):  # the same stream: the next draws are equal
        assert type(state[name].bit_generator) is type(expected[name].bit_generator)
        np.testing.assert_array_equal(state[name].integers(1 << 30, size=5), expected[name].integers(1 << 30, size=5))
    np.testing.assert_array_equal(state["legacy"].randint(1 << 30, size=5), expected["legacy"].randint(1 << 30, size=5))
    assert torch.equal(torch.rand(3, generator=state["torch"]), torch.rand(3, generator=expected["torch"]))
    assert state["array"].dtype == np.uint32 and state["array"].tolist() == expected["array"].tolist()
    assert torch.equal(state["weights"], expected["weights"])
    assert state["nested"] == {"count": 3, "best": (0.5, float("inf")), "name": "x", "raw": b"\x00"}


def test_validation_ndcg_keeps_its_name_parameter_as_given():
    from sklearn.base import clone

    from sklearn_ltr.training import ValidationNDCG

    default, named = ValidationNDCG(k=5), ValidationNDCG(k=5, name="vali@5")
    assert (default.name, default.history_key) == (None, "valid_ndcg@5")
    assert named.history_key == "vali@5" and clone(named).history_key == "vali@5"
    assert named.get_params()["name"] == "vali@5"
    default.set_params(name="other")
    assert default.history_key == "other"
    assert not [name for name in vars(named) if name.endswith("_")]

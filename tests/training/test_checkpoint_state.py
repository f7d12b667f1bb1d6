"""Every piece of training state a checkpoint carries, each resumed after a crash to the uninterrupted fit exactly.

A fit with ``checkpoint_dir`` crashes in the middle of an epoch and is fitted again: the resumed fit
must be the uninterrupted one bit for bit (predictions, weights, optimiser state, every history row),
for each kind of state that changes the model when it is lost:

- each torch learning-rate scheduler that has state, through skorch's ``LRScheduler`` callback
  (stepped per epoch or per batch), and skorch's own ``WarmRestartLR``;
- early stopping's counters and best weights (the resumed fit stops at the same epoch);
- a user callback saved by its ``state_dict``/``load_state_dict``;
- the optimiser's state (Adam's moments, SGD's momentum);
- the random streams: dropout, the shuffling of the queries and the subsampling of long lists,
  and the dropout and noise of a list-context model.
"""

import pytest
import torch
from checkpoint_helpers import assert_equal_state, assert_same_fit, crash_then_resume, uninterrupted
from skorch.callbacks import Callback, LRScheduler, WarmRestartLR
from torch.optim import lr_scheduler

from sklearn_ltr import DASALCRanker, RankNetRanker

pytestmark = pytest.mark.usefixtures("one_torch_thread")

# 24 queries in batches of 4: 6 training batches an epoch, 30 in the 5 epochs (OneCycleLR's total_steps).
_RANKNET = {"hidden_sizes": (8,), "batch_size": 4, "lr": 0.01, "max_epochs": 5, "device": "cpu", "random_state": 0}
_BATCHES = 6 * _RANKNET["max_epochs"]


def _shrink(epoch):
    """MultiplicativeLR's factor: a function of the epoch, so that a schedule restarted at epoch 0 differs."""
    return 0.5 if epoch % 2 else 0.9


def _warmup(epoch):
    """LambdaLR's factor of the initial learning rate: a warm-up then a decay."""
    return (epoch + 1) / 3 if epoch < 2 else 0.5 ** (epoch - 1)


# Each schedule changes the learning rate over the crash (epoch 3), from state a restart would lose: its
# step count, its position in a cycle, its best value and patience counter (ReduceLROnPlateau).
_SCHEDULES = {
    "cosine": (lr_scheduler.CosineAnnealingLR, {"T_max": 4}),
    "cosine_warm_restarts": (lr_scheduler.CosineAnnealingWarmRestarts, {"T_0": 2, "T_mult": 2, "eta_min": 1e-4}),
    "one_cycle_per_batch": (lr_scheduler.OneCycleLR, {"max_lr": 0.05, "total_steps": _BATCHES,
                                                       "step_every": "batch"}),
    "cyclic_per_batch": (lr_scheduler.CyclicLR, {"base_lr": 0.001, "max_lr": 0.05, "step_size_up": 4,
                                                  "mode": "triangular2", "step_every": "batch"}),
    "reduce_on_plateau": (lr_scheduler.ReduceLROnPlateau, {"monitor": "train_loss", "factor": 0.5, "patience": 0,
                                                           "threshold": 0.1}),
    "exponential": (lr_scheduler.ExponentialLR, {"gamma": 0.6}),
    "multi_step": (lr_scheduler.MultiStepLR, {"milestones": [1, 3], "gamma": 0.3}),
    "step_of_2": (lr_scheduler.StepLR, {"step_size": 2, "gamma": 0.3}),
    "linear": (lr_scheduler.LinearLR, {"start_factor": 0.2, "total_iters": 4}),
    "polynomial": (lr_scheduler.PolynomialLR, {"total_iters": 4, "power": 2.0}),
    "multiplicative": (lr_scheduler.MultiplicativeLR, {"lr_lambda": _shrink}),
    "lambda": (lr_scheduler.LambdaLR, {"lr_lambda": _warmup}),
    "skorch_warm_restart": (WarmRestartLR, {"min_lr": 1e-4, "max_lr": 0.05, "base_period": 2, "period_mult": 2}),
}


@pytest.mark.parametrize("schedule", list(_SCHEDULES))
def test_a_learning_rate_schedule_resumes_where_it_was(tmp_path, schedule):
    policy, options = _SCHEDULES[schedule]
    params = {**_RANKNET, "callbacks": [("schedule", LRScheduler(policy=policy, **options))]}
    reference = uninterrupted(RankNetRanker, params, epoch=3)
    resumed = crash_then_resume(RankNetRanker, params, tmp_path, epoch=3)
    # The history's event_lr holds the rate of every epoch (or batch): the schedule went on where it was.
    assert_same_fit(resumed, reference, resumed_from=2)
    rows = reference.history_
    rates = ([batch["event_lr"] for row in rows for batch in row["batches"]] if options.get("step_every") == "batch"
             else [row["event_lr"] for row in rows])
    assert len(set(rates)) > 2, f"{schedule}: the learning rate hardly changes, a weak test"
    # And the resumed scheduler ends where the uninterrupted one did (step count, cycle, plateau counters).
    assert_equal_state(dict(resumed.net_.callbacks_)["schedule"].lr_scheduler_.state_dict(),
                       dict(reference.net_.callbacks_)["schedule"].lr_scheduler_.state_dict(), "scheduler")


# Early stopping on held-out queries: this seed's fit improves until epoch 3, then misses at epochs 4,
# 5 and 6 and stops there (of 8), restoring epoch 3's weights. It crashes in epoch 6, two misses counted.
_EARLY_STOPPING = {**_RANKNET, "lr": 0.02, "max_epochs": 8, "random_state": 2, "early_stopping": True,
                   "validation_fraction": 0.3, "n_iter_no_change": 3}


def test_early_stopping_resumes_its_counters_and_best_weights(tmp_path):
    reference = uninterrupted(RankNetRanker, _EARLY_STOPPING, epoch=6)
    assert (reference.n_iter_, reference.best_iteration_) == (6, 3), "the seed no longer stops early: a weak test"
    resumed = crash_then_resume(RankNetRanker, _EARLY_STOPPING, tmp_path, epoch=6)
    assert_same_fit(resumed, reference, resumed_from=5)
    stopper = dict(resumed.net_.callbacks_)["early_stopping"]
    assert (stopper.misses_, stopper.best_epoch_) == (3, 3)


class WeightAverage(Callback):
    """Average the module's weights over the epochs (as stochastic weight averaging does), and train on with them.

    Its state (the running average and its count) lives only in the callback: a checkpoint holds it
    by :meth:`state_dict` and :meth:`load_state_dict`.
    """

    def on_train_begin(self, net, **kwargs):
        self.count_ = 0
        self.average_ = {name: torch.zeros_like(value) for name, value in net.module_.state_dict().items()}

    def on_epoch_end(self, net, **kwargs):
        self.count_ += 1
        with torch.no_grad():
            for name, value in net.module_.state_dict().items():
                self.average_[name] += (value - self.average_[name]) / self.count_
                value.copy_(self.average_[name])  # the next epoch starts from the average
        net.history.record("averaged_epochs", self.count_)

    def state_dict(self):
        return {"count": self.count_, "average": {name: value.clone() for name, value in self.average_.items()}}

    def load_state_dict(self, state):
        self.count_ = state["count"]
        self.average_ = {name: value.clone() for name, value in state["average"].items()}


def test_a_user_callback_resumes_from_its_state_dict(tmp_path):
    params = {**_RANKNET, "callbacks": [("average", WeightAverage())]}
    reference = uninterrupted(RankNetRanker, params, epoch=3)
    resumed = crash_then_resume(RankNetRanker, params, tmp_path, epoch=3)
    assert_same_fit(resumed, reference, resumed_from=2)
    assert [row["averaged_epochs"] for row in resumed.history_] == [1, 2, 3, 4, 5]


class MomentumSGD(torch.optim.SGD):
    """SGD with heavy momentum: its momentum buffers are the optimiser's state."""

    def __init__(self, params, lr, weight_decay=0.0):
        super().__init__(params, lr=lr, momentum=0.9, weight_decay=weight_decay)


_OPTIMIZERS = {
    "adam_moments": {"optimizer": "adam"},
    "sgd_momentum": {"optimizer": MomentumSGD, "lr": 0.05},
}


@pytest.mark.parametrize("optimizer", list(_OPTIMIZERS))
def test_the_optimizer_state_resumes(tmp_path, optimizer):
    params = {**_RANKNET, **_OPTIMIZERS[optimizer]}
    reference = uninterrupted(RankNetRanker, params, epoch=3)
    resumed = crash_then_resume(RankNetRanker, params, tmp_path, epoch=3)
    assert_same_fit(resumed, reference, resumed_from=2)  # the optimizer's state compared tensor by tensor
    state = resumed.net_.optimizer_.state_dict()["state"]
    assert state, "the optimiser kept no state: a weak test"
    if optimizer == "sgd_momentum":
        assert all("momentum_buffer" in entry for entry in state.values())
    else:
        assert {int(entry["step"]) for entry in state.values()} == {_BATCHES}


# Random streams: dropout draws from torch's global generator, the shuffling of the queries and the
# subsampling of lists longer than max_list_length from the net's own generator. (options, crash batch)
_STREAMS = {
    "dropout": ({"dropout": 0.3}, 2),
    "shuffling": ({}, 2),
    # One batch an epoch holding every query, lists of more than 12 rows subsampled: 17 of the 24 are.
    "subsampling": ({"max_list_length": 12, "batch_size": 24}, 1),
}


@pytest.mark.parametrize("stream", list(_STREAMS))
def test_the_random_streams_resume(tmp_path, stream):
    options, batch = _STREAMS[stream]
    params = {**_RANKNET, **options}
    reference = uninterrupted(RankNetRanker, params, epoch=3, batch=batch)
    resumed = crash_then_resume(RankNetRanker, params, tmp_path, epoch=3, batch=batch)
    assert_same_fit(resumed, reference, resumed_from=2)


# A list-context model: attention over the list, dropout, attention dropout and noise augmentation.
_DASALC = {"hidden_size": 8, "n_layers": 1, "n_attention_layers": 1, "n_heads": 2, "head_size": 4, "dropout": 0.2,
           "attention_dropout": 0.1, "noise_std": 0.1, "batch_size": 6, "lr": 0.05, "max_epochs": 4,
           "max_list_length": 30, "device": "cpu", "random_state": 4}


def test_a_list_context_model_with_dropout_and_noise_resumes(tmp_path):
    reference = uninterrupted(DASALCRanker, _DASALC, epoch=3)
    resumed = crash_then_resume(DASALCRanker, _DASALC, tmp_path, epoch=3)
    assert_same_fit(resumed, reference, resumed_from=2)

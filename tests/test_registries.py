"""Adding a ranker or a loss is one module plus one registry line (docs/contributing.rst).

This file is the "one module": a toy torch scorer, a toy pairwise loss and a toy ranker. The
tests register them with one line each and check that everything that lists rankers or
losses picks them up: the package's exports, the skops trusted types, the command line's
``--model`` choices, the contract suite, and the memory estimate.
"""

from numbers import Real

import numpy as np
import pytest
import torch
from torch import nn

import sklearn_ltr
from sklearn_ltr.losses import LOSSES, register_loss, unregister_loss
from sklearn_ltr.nn import ModuleCost, scatter_scores
from sklearn_ltr.rankers import RANKERS, RankerEntry, register_ranker, unregister_ranker
from sklearn_ltr.rankers._neural import NeuralRanker
from sklearn_ltr.rankers._neural_params import LOSS_CONSTRAINTS, TRAINING_CONSTRAINTS
from sklearn_ltr.rankers._registry import PER_QUERY_WEIGHTS
from sklearn_ltr.utils._sklearn_compat import Interval
from sklearn_ltr.utils.estimator_checks import check_estimator


class ToyScorer(nn.Module):
    """A linear scorer, scaled: the smallest module a ranker can train."""

    @classmethod
    def memory_cost(cls, n_features, scale=1.0):
        return ModuleCost(activation_width=1)

    def __init__(self, n_features, scale=1.0):
        super().__init__()
        self.linear = nn.Linear(n_features, 1)
        self.scale = scale

    def forward(self, X, mask, **unused):
        return scatter_scores(self.scale * self.linear(X[mask]).squeeze(-1), mask)


def toy_pairwise(scores, labels, mask=None, *, reduction="mean", weights=None):
    """Hinge on every ordered pair of a list: mean of ``max(0, 1 - (s_i - s_j))`` where ``y_i > y_j``."""
    if mask is None:
        mask = torch.ones_like(scores, dtype=torch.bool)
    diff = scores[:, :, None] - scores[:, None, :]
    pairs = (labels[:, :, None] > labels[:, None, :]) & mask[:, :, None] & mask[:, None, :]
    per_pair = torch.where(pairs, torch.relu(1 - diff), 0.0)
    per_query = per_pair.sum((1, 2)) / pairs.sum((1, 2)).clamp(min=1)
    if weights is not None:
        return (per_query * weights).sum() / weights.sum().clamp(min=1e-12)
    return per_query.mean() if reduction == "mean" else per_query.sum() if reduction == "sum" else per_query


class ToyRanker(NeuralRanker):
    """A linear neural ranker.

    Parameters
    ----------
    scale : float, default=1.0
        Factor of the scores.
    """

    def __init__(
        self, scale=1.0, *, loss="toy_pairwise", loss_params=None, lr=1e-2, optimizer="adam", weight_decay=0.0,
        max_epochs=20, batch_size=32, max_list_length=None, validation_fraction=None, early_stopping=False,
        n_iter_no_change=5, device="auto", precision="32-true", random_state=None, callbacks=None, verbose=0,
        query_column=None, keep_training_state=False, distributed=False, checkpoint_dir=None,
    ):
        self.scale = scale
        self.loss = loss
        self.loss_params = loss_params
        self.lr = lr
        self.optimizer = optimizer
        self.weight_decay = weight_decay
        self.max_epochs = max_epochs
        self.batch_size = batch_size
        self.max_list_length = max_list_length
        self.validation_fraction = validation_fraction
        self.early_stopping = early_stopping
        self.n_iter_no_change = n_iter_no_change
        self.device = device
        self.precision = precision
        self.random_state = random_state
        self.callbacks = callbacks
        self.verbose = verbose
        self.query_column = query_column
        self.keep_training_state = keep_training_state
        self.distributed = distributed
        self.checkpoint_dir = checkpoint_dir

    _parameter_constraints = {  # noqa: RUF012
        "scale": [Interval(Real, 0, None, closed="neither")],
        **LOSS_CONSTRAINTS,
        **TRAINING_CONSTRAINTS,
    }

    def _module_spec(self, n_features):
        return ToyScorer, {"n_features": n_features, "scale": float(self.scale)}


TOY_TRUSTED = f"{__name__}.ToyScorer"


@pytest.fixture
def registered():
    """The two registry lines a contributor writes, undone after the test."""
    register_loss("toy_pairwise", toy_pairwise, pairwise_tensors=3)
    register_ranker(RankerEntry("ToyRanker", __name__, {"max_epochs": 2, "random_state": 0}, cli_name="toy",
                                neural=True, trusted_types=(TOY_TRUSTED,), expected_failed_checks=PER_QUERY_WEIGHTS))
    yield
    unregister_ranker("ToyRanker")
    unregister_loss("toy_pairwise")


def test_the_registries_list_the_toys(registered):
    assert sklearn_ltr.ToyRanker is ToyRanker and "ToyRanker" in dir(sklearn_ltr)
    assert sklearn_ltr.rankers.ToyRanker is ToyRanker
    from sklearn_ltr.utils.persistence import trusted_types

    assert {f"{__name__}.ToyRanker", TOY_TRUSTED} <= set(trusted_types())
    from sklearn_ltr.cli._models import MODELS, settable_params

    assert "toy" in MODELS and MODELS["toy"].cls is ToyRanker and MODELS["toy"].neural
    assert settable_params(MODELS["toy"])["scale"] == 1.0


def test_the_command_line_offers_the_toy(registered, capsys):
    from sklearn_ltr.cli import main

    assert main(["train", "--help"]) == 0
    assert "{lambdamart,ranknet,dasalc,setrank,two-tower,toy}" in capsys.readouterr().out


def test_unregistering_removes_the_toys():
    register_ranker(RankerEntry("ToyRanker", __name__))
    unregister_ranker("ToyRanker")
    assert "ToyRanker" not in RANKERS and "ToyRanker" not in dir(sklearn_ltr)
    with pytest.raises(AttributeError):
        sklearn_ltr.ToyRanker  # noqa: B018
    assert "toy_pairwise" not in LOSSES


def test_the_memory_estimate_reads_both_declarations(registered):
    estimate = ToyRanker()._memory_estimate(5, "cpu")
    assert estimate.training_quadratic == 3  # the loss's pairwise tensors; the module has no attention
    # Features and their gradients, the module's one activation (5 a unit on CPU).
    assert estimate.training_linear == 2 * 5 + 5 * 1
    assert ToyRanker(loss="softmax")._memory_estimate(5).training_quadratic == 0


def test_the_toy_trains_through_the_registered_loss(registered):
    X, y, qid = sklearn_ltr.datasets.make_ranking(n_queries=30, n_features=5, random_state=0)
    ranker = RANKERS["ToyRanker"].make_fast().fit(X, y, qid)
    assert ranker.n_iter_ == 2 and np.isfinite(ranker.predict(X)).all()
    assert ranker.score(X, y, groups=qid) > 0


def test_the_contract_suite_passes_on_the_toy(registered):
    entry = RANKERS["ToyRanker"]
    names = check_estimator(entry.make_fast(), expected_failed_checks=entry.expected_failed_checks)
    assert "check_routing_reaches_fit_and_predict" in names and "check_pickle_round_trip" in names

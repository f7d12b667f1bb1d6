"""Every kind of non-finite value (NaN, +inf, -inf) wherever scores or losses are checked.

A check written ``np.isnan`` where ``np.isfinite`` is meant passes NaN tests and lets
infinities through, so each check here is fed all three kinds: ``predict``'s scores, the
training and validation losses, the validation NDCG callback and the metrics' score check.
"""

import numpy as np
import pytest
import torch

from sklearn_ltr import RankNetRanker
from sklearn_ltr.datasets import make_ranking
from sklearn_ltr.exceptions import NonFiniteLossError
from sklearn_ltr.losses import ranknet
from sklearn_ltr.metrics import ndcg_score
from sklearn_ltr.training import ValidationNDCG

KINDS = {"nan": np.nan, "+inf": np.inf, "-inf": -np.inf}


@pytest.fixture(scope="module")
def data():
    X, y, qid = make_ranking(n_queries=12, n_features=4, random_state=0)
    return X.astype(np.float32), y, qid


@pytest.fixture(scope="module")
def linear(data):
    X, y, qid = data
    return RankNetRanker(hidden_sizes=(), max_epochs=1, device="cpu", random_state=0).fit(X, y, groups=qid)


@pytest.mark.parametrize("kind", list(KINDS))
def test_predict_refuses_every_non_finite_score(linear, data, kind):
    """A model whose output is NaN, +inf or -inf on finite features: predict raises, never returns them."""
    import copy

    X, _, qid = data
    ranker = copy.deepcopy(linear)
    biases = [p for name, p in ranker.net_.module_.named_parameters() if name.endswith("bias")]
    with torch.no_grad():
        biases[-1].fill_(KINDS[kind])  # every score is bias + finite terms
    with pytest.raises(ValueError, match=rf"^RankNetRanker produced {len(X)} non-finite scores of {len(X)}: "):
        ranker.predict(X, groups=qid)


def _loss_becoming(value, *, when):
    """RankNet's loss, except ``value`` in training (``when="training"``) or in validation (no gradient)."""
    def loss(scores, labels, mask=None, **options):
        finite = ranknet(scores, labels, mask, **options)
        in_training = scores.requires_grad
        if in_training == (when == "training"):
            return finite * 0 + value
        return finite
    return loss


@pytest.mark.parametrize("when", ["training", "validation"])
@pytest.mark.parametrize("kind", list(KINDS))
def test_every_non_finite_loss_stops_training(data, kind, when):
    X, y, qid = data
    ranker = RankNetRanker(hidden_sizes=(4,), max_epochs=2, batch_size=4, validation_fraction=0.5, device="cpu",
                           random_state=0, loss=_loss_becoming(KINDS[kind], when=when))
    expected = {"nan": "nan", "+inf": "inf", "-inf": "-inf"}[kind]
    with pytest.raises(NonFiniteLossError, match=rf"^The {when} loss became {expected} at epoch 1, batch 1:"):
        ranker.fit(X, y, groups=qid)


class _Net:
    """What the callback reads of a net: its process reduction (one process) and its history."""

    def __init__(self):
        self.recorded = {}
        self.history = self

    def reduce_sum(self, tensor):
        return tensor

    def record(self, name, value):
        self.recorded[name] = value


def _validate(batches):
    """ValidationNDCG over ``batches`` of ``(scores [B, L], labels [B, L], mask [B, L])`` in one epoch."""
    callback = ValidationNDCG(k=3).initialize()
    net = _Net()
    callback.on_epoch_begin(net)
    for scores, labels, mask in batches:
        inputs = {"mask": torch.as_tensor(mask)}
        callback.on_batch_end(net, batch=(inputs, torch.as_tensor(labels)), training=False,
                              y_pred=torch.as_tensor(scores))
    callback.on_epoch_end(net)
    return net.recorded["valid_ndcg@3"]


# Two batches of two queries each (the second query of the second batch is padded): every batch
# numbers its lists from 0, so the callback must tell batch 1's query 0 from batch 2's query 0.
_SCORES = [np.array([[3.0, 2.0, 1.0], [0.1, 0.9, 0.5]], dtype=np.float32),
           np.array([[1.0, 2.0, 3.0], [0.4, 0.2, 0.0]], dtype=np.float32)]
_LABELS = [np.array([[2.0, 0.0, 1.0], [0.0, 1.0, 3.0]], dtype=np.float32),
           np.array([[0.0, 1.0, 2.0], [1.0, 0.0, 0.0]], dtype=np.float32)]
_MASKS = [np.ones((2, 3), dtype=bool), np.array([[True, True, True], [True, True, False]])]


def test_validation_ndcg_is_the_mean_over_queries_of_every_batch():
    value = _validate(zip(_SCORES, _LABELS, _MASKS, strict=True))
    scores = np.concatenate([s[m] for s, m in zip(_SCORES, _MASKS, strict=True)])
    labels = np.concatenate([y[m] for y, m in zip(_LABELS, _MASKS, strict=True)])
    groups = np.repeat([0, 1, 2, 3], [3, 3, 3, 2])
    assert value == pytest.approx(ndcg_score(labels, scores, groups, k=3), rel=1e-12)
    # The reference is not the NDCG of one query per batch position (lists of two batches merged).
    merged = np.repeat([0, 1, 0, 1], [3, 3, 3, 2])
    assert value != pytest.approx(ndcg_score(labels, scores, merged, k=3))


@pytest.mark.parametrize("kind", list(KINDS))
def test_validation_ndcg_is_nan_for_every_non_finite_score(kind):
    scores = [s.copy() for s in _SCORES]
    scores[1][1, 0] = KINDS[kind]  # one score of the last batch
    assert np.isnan(_validate(zip(scores, _LABELS, _MASKS, strict=True)))


@pytest.mark.parametrize("kind", list(KINDS))
def test_validation_ndcg_of_a_separate_set_is_nan_for_every_non_finite_score(linear, data, kind):
    """The callback's other source: a separate validation set scored with the net after each epoch."""
    import copy

    X, y, qid = data
    ranker = copy.deepcopy(linear)
    callback = ValidationNDCG(k=3, X=X, y=y, groups=qid).initialize()
    net = _Net()
    net.score_rows = ranker.net_.score_rows
    callback.on_epoch_end(net)
    assert net.recorded["valid_ndcg@3"] == pytest.approx(ndcg_score(y, ranker.predict(X, groups=qid), qid, k=3),
                                                         rel=1e-6)
    with torch.no_grad():
        [p for name, p in ranker.net_.module_.named_parameters() if name.endswith("bias")][-1].fill_(KINDS[kind])
    callback.on_epoch_end(net)
    assert np.isnan(net.recorded["valid_ndcg@3"])


@pytest.mark.parametrize("kind", list(KINDS))
def test_metrics_refuse_every_non_finite_score(kind):
    with pytest.raises(ValueError, match=r"^y_score contains NaN or infinite values; rank only finite scores"):
        ndcg_score([1, 0, 2], [0.5, KINDS[kind], 0.1], [0, 0, 0])


class _Gradient(torch.autograd.Function):
    """A finite loss (0) whose gradient is ``value`` for every score: one step makes the weights non-finite."""

    @staticmethod
    def forward(ctx, scores, value):
        ctx.shape, ctx.value = scores.shape, value
        return scores.sum() * 0.0

    @staticmethod
    def backward(ctx, grad):
        return torch.full(ctx.shape, ctx.value), None


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_non_finite_weight_after_training_is_an_error(kind):
    """The last step leaves NaN, -inf or +inf weights while every loss was finite: fit raises, not predict later."""
    X, y, qid = make_ranking(n_queries=4, n_features=3, random_state=0)
    X = np.abs(X).astype(np.float32) + 1.0  # positive features: the weights' gradients keep the sign of ``value``
    ranker = RankNetRanker(hidden_sizes=(), optimizer="sgd", lr=0.1, max_epochs=1, batch_size=4, device="cpu",
                           random_state=0, loss=lambda scores, labels, mask=None, **options: _Gradient.apply(
                               scores, KINDS[kind]))
    with pytest.raises(NonFiniteLossError, match=r"^Training ended with non-finite weights \(NaN or inf\)"):
        ranker.fit(X, y, groups=qid)

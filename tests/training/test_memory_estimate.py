"""The memory estimate of a neural ranker's batches (``MemoryEstimate``), by hand on tiny cases.

The free memory is stubbed (``_memory.available_memory``), so that each case is exact on any
machine; the estimate counts float32 values (4 bytes).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from sklearn_ltr import RankNetRanker
from sklearn_ltr.datasets import make_ranking
from sklearn_ltr.losses import register_loss, softmax_cross_entropy, unregister_loss
from sklearn_ltr.nn import ModuleCost
from sklearn_ltr.training import _memory
from sklearn_ltr.training._memory import MemoryEstimate

#: Two attention layers of three heads 4 wide (attention dropout 0.1: the math kernel in CPU
#: training, the fused flash kernel in CPU prediction) and 10 activations per document.
COST = ModuleCost(attention_layers=2, attention_heads=3, activation_width=10, attention_head_size=4,
                  attention_dropout=0.1)
ALL_BACKENDS = {"flash": True, "efficient": True, "cudnn": True, "math": True}


@pytest.fixture
def backends(monkeypatch):
    """Every attention backend enabled, whatever this process's torch flags say."""
    from sklearn_ltr.nn import _cost

    monkeypatch.setattr(_cost, "enabled_sdp_backends", lambda: dict(ALL_BACKENDS))


def test_declared_terms_and_bytes_by_hand(backends):
    estimate = MemoryEstimate.declared("R", COST, 5, device="cpu", loss="ranknet")
    assert (estimate.training_kernel, estimate.prediction_kernel) == ("math", "flash")
    # Training: ranknet's 8 [L, L] tensors, 4 per head and layer of math attention plus 2; the
    # features and their gradients, 5 values per unit of activation width on CPU.
    assert (estimate.training_quadratic, estimate.training_linear) == (8 + 4 * 2 * 3 + 2, 2 * 5 + 5 * 10)
    # Prediction: no loss and fused attention (output and log-sum-exp per head): linear only.
    assert (estimate.prediction_quadratic, estimate.prediction_linear) == (0, 5 + 2 * 10 + 2 * 3 * (4 + 1))
    assert estimate.training_bytes(2, 100) == 4 * (2 * 100 * 60 + 2 * 100**2 * 34) == 2_768_000
    assert estimate.prediction_bytes(3, 50) == 4 * 3 * 50 * 55 == 33_000
    assert estimate.holders == ("the loss 'ranknet' (pairwise terms) and self-attention (2 layers x 3 heads, math "
                                "attention: [L, L] weights per head)")
    assert estimate.undeclared_loss is None


def test_declared_loss_costs(backends):
    no_attention = ModuleCost(activation_width=10)
    assert MemoryEstimate.declared("R", no_attention, 5, device="cpu", loss="softmax").training_quadratic == 0
    assert MemoryEstimate.declared("R", no_attention, 5, device="cpu").holders == "the activations"
    sampled = MemoryEstimate.declared("R", no_attention, 5, device="cpu", loss="gumbel_approx_ndcg",
                                      loss_params={"n_samples": 4})
    assert sampled.training_quadratic == 5 * 4  # the declared tensors once per sample

    def custom(scores, labels, mask=None):
        return scores.sum()

    undeclared = MemoryEstimate.declared("R", no_attention, 5, device="cpu", loss=custom)
    assert undeclared.undeclared_loss == "custom" and undeclared.training_quadratic == 0


def test_the_check_and_its_message_by_hand(monkeypatch):
    # 3 lists of 300 documents, 8 [L, L] tensors and 10 values per document: 4 * (3 * 300 * 10 +
    # 3 * 300**2 * 8) = 8,676,000 bytes; one list 2,892,000.
    estimate = MemoryEstimate("R", "cpu", training_quadratic=8, training_linear=10, holders="the loss")
    sizes = np.array([300, 300, 300, 40])
    assert estimate.training_bytes(3, 300) == 8_676_000
    monkeypatch.setattr(_memory, "available_memory", lambda device: 10**7)  # budget 8,000,000
    with pytest.raises(MemoryError) as error:
        estimate.check_training(sizes, 3)
    # 288 documents: 4 * (3 * 288 * 10 + 3 * 288**2 * 8) = 7,997,184 fits; 289 would need 8,052,696.
    assert str(error.value) == (
        "R: the largest training batch (3 lists padded to 300 documents; the longest query has 300) needs about "
        "9 MB for the loss, which grows with the square of the list length, but only 10 MB is available on cpu. "
        "Set max_list_length=288 (training lists are then subsampled; prediction still scores whole lists) or "
        "batch_size=2.")
    estimate.check_training(sizes, 2)  # 5,784,000 bytes fit
    # At the boundary: a batch needing exactly the budget fits, one byte less refuses it.
    monkeypatch.setattr(_memory, "available_memory", lambda device: 8_676_000 / _memory.MEMORY_FRACTION)
    estimate.check_training(sizes, 3)
    monkeypatch.setattr(_memory, "available_memory", lambda device: 8_675_999 / _memory.MEMORY_FRACTION)
    with pytest.raises(MemoryError, match=r"3 lists padded to 300 documents"):
        estimate.check_training(sizes, 3)
    # The cap counts: lists cut to 250 documents need 4 * (3 * 250 * 10 + 3 * 250**2 * 8) = 6,030,000.
    MemoryEstimate("R", "cpu", 8, 10, max_list_length=250).check_training(sizes, 3)
    monkeypatch.setattr(_memory, "available_memory", lambda device: None)  # unknown: never refused
    estimate.check_training(np.array([10**6]), 1)


def test_auto_batch_size_at_the_boundary(monkeypatch):
    # 100 lists of 50 documents, 2 [L, L] tensors and 10 values per document: 4 * (50 * 10 + 50**2 * 2)
    # = 22,000 bytes a list; at most 100 // 2 = 50 queries a batch.
    estimate = MemoryEstimate("R", "cpu", training_quadratic=2, training_linear=10)
    sizes = np.full(100, 50)
    assert estimate.training_bytes(1, 50) == 22_000
    monkeypatch.setattr(_memory, "available_memory", lambda device: 7 * 22_000 / _memory.MEMORY_FRACTION)
    assert estimate.auto_batch_size(sizes) == 7  # 7 fit exactly: 15 batches of at most ceil(100 / 15) = 7
    monkeypatch.setattr(_memory, "available_memory", lambda device: (7 * 22_000 - 1) / _memory.MEMORY_FRACTION)
    assert estimate.auto_batch_size(sizes) == 6  # 6 fit: 17 batches of at most ceil(100 / 17) = 6
    monkeypatch.setattr(_memory, "available_memory", lambda device: 34 * 22_000 / _memory.MEMORY_FRACTION)
    assert estimate.auto_batch_size(sizes) == 34  # 34 fit: 3 batches of 34, 34 and 32
    monkeypatch.setattr(_memory, "available_memory", lambda device: 33 * 22_000 / _memory.MEMORY_FRACTION)
    assert estimate.auto_batch_size(sizes) == 25  # 33 fit: 4 batches, evened out to 25 each
    monkeypatch.setattr(_memory, "available_memory", lambda device: 10**9)
    assert estimate.auto_batch_size(sizes) == 50  # the cap: half the queries
    assert estimate.training_batch_size(sizes, "auto") == 50
    assert estimate.training_batch_size(sizes, 64) == 64


def test_the_undeclared_loss_warning_at_the_boundary(monkeypatch):
    # 2 lists of 100 documents: one [L, L] float32 tensor takes 4 * 2 * 100**2 = 80,000 bytes, and
    # warns when that is more than 1% of the free memory.
    estimate = MemoryEstimate("R", "cpu", 0, 10, undeclared_loss="custom")
    sizes = np.array([100, 100, 100, 100])
    monkeypatch.setattr(_memory, "available_memory", lambda device: 7_999_999)
    with pytest.warns(UserWarning) as record:
        estimate.warn_if_undeclared_loss(sizes, 2)
    assert str(record[0].message) == (
        "R: the loss 'custom' declares no memory cost, so fit cannot check that its largest batch (2 lists of 100 "
        "documents) fits: one [list, list] tensor of it takes 0.00 GB. Register it with "
        "sklearn_ltr.losses.register_loss(name, function, pairwise_tensors=...) and pass its name.")
    monkeypatch.setattr(_memory, "available_memory", lambda device: 8_000_000)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        estimate.warn_if_undeclared_loss(sizes, 2)
        MemoryEstimate("R", "cpu", 0, 10).warn_if_undeclared_loss(np.array([10**5]), 1)  # a declared loss


def test_prediction_documents_by_hand(monkeypatch):
    # Forward pass: 1 [L, L] tensor per list and 10 values per document. The longest list, 100
    # documents, needs 4 * (100 * 10 + 100**2) = 44,000 bytes; a padded slot 4 * (10 + 100) = 440.
    estimate = MemoryEstimate("R", "cpu", 0, 0, prediction_quadratic=1, prediction_linear=10)
    sizes = np.array([100, 20])
    assert estimate.prediction_bytes(1, 100) == 44_000
    monkeypatch.setattr(_memory, "available_memory", lambda device: 10**6)  # budget 800,000: 1,818 slots
    assert estimate.prediction_documents(sizes, 10_000) == 1818
    assert estimate.prediction_documents(sizes, 500) == 500
    monkeypatch.setattr(_memory, "available_memory", lambda device: 44_000 / _memory.MEMORY_FRACTION)
    assert estimate.prediction_documents(sizes, 10_000) == 100  # the longest list alone
    monkeypatch.setattr(_memory, "available_memory", lambda device: 43_999 / _memory.MEMORY_FRACTION)
    with pytest.raises(MemoryError) as error:
        estimate.prediction_documents(sizes, 10_000)
    assert str(error.value) == (
        "R: scoring the longest query (100 documents) needs about 0 MB, but only 0 MB is available on cpu. "
        "Prediction scores every document of a list together; split such a query, or predict on a machine with "
        "more memory.")
    monkeypatch.setattr(_memory, "available_memory", lambda device: None)
    assert estimate.prediction_documents(np.array([20_000]), 10_000) == 20_000


def test_predict_reads_no_loss():
    # A model trained with a registered loss predicts where that loss is not registered (e.g. loaded
    # in another process): the prediction estimate never asks for the loss's cost.
    X, y, qid = make_ranking(n_queries=10, n_features=4, random_state=0)
    register_loss("memory_estimate_toy", softmax_cross_entropy, pairwise_tensors=0)
    try:
        ranker = RankNetRanker(loss="memory_estimate_toy", hidden_sizes=(4,), max_epochs=1, random_state=0)
        ranker.fit(X, y, qid)
    finally:
        unregister_loss("memory_estimate_toy")
    assert np.isfinite(ranker.predict(X)).all()


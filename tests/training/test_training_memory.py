"""The device-aware memory model: which attention kernel runs, the terms it implies, batch_size="auto".

The CUDA cases run without a GPU: :func:`sklearn_ltr.nn.attention_kernel` takes the device type,
dtype, mask kind, dropout, head width, enabled backends and compute capability as plain values,
and the ranker-level estimates are read with ``torch.cuda.get_device_capability`` and the free
memory stubbed. ``test_the_kernel_torch_runs_is_the_one_predicted`` profiles the real attention
call on the device of the run (``pytest --device cuda`` checks the CUDA rules themselves).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.base import clone
from torch.profiler import ProfilerActivity, profile

from sklearn_ltr import DASALCRanker, RankNetRanker, SetRankRanker
from sklearn_ltr.datasets import make_ranking
from sklearn_ltr.nn import DASALCNet, ModuleCost, MultiHeadAttention, SetRankNet, attention_kernel
from sklearn_ltr.nn._cost import FUSED_KERNELS, enabled_sdp_backends
from sklearn_ltr.training import _memory
from sklearn_ltr.utils._sklearn_compat import InvalidParameterError

ALL = {"flash": True, "efficient": True, "cudnn": True, "math": True}
F32, BF16, F16 = torch.float32, torch.bfloat16, torch.float16
H100 = (9, 0)


@pytest.mark.parametrize(("device", "dtype", "mask", "dropout", "head", "capability", "enabled", "expected"), [
    # CPU: the fused (flash) kernel for any mask and dtype, but no attention dropout.
    ("cpu", F32, "boolean", 0.4, 100, None, ALL, "math"),
    ("cpu", F32, "boolean", 0.0, 100, None, ALL, "flash"),
    ("cpu", BF16, None, 0.0, 30, None, ALL, "flash"),
    ("cpu", F32, None, 0.0, 32, None, {**ALL, "flash": False}, "math"),
    # CUDA, float32: memory-efficient with any mask, the head width a multiple of 4 from sm80 on.
    ("cuda", F32, "boolean", 0.4, 100, H100, ALL, "efficient"),
    ("cuda", F32, None, 0.0, 100, H100, ALL, "efficient"),  # flash takes 16-bit floats only
    ("cuda", F32, "boolean", 0.1, 30, H100, ALL, "math"),
    ("cuda", F32, "boolean", 0.1, 30, (7, 0), ALL, "efficient"),  # no tensor-core alignment in float32
    ("cuda", F32, "boolean", 0.1, 30, (5, 0), ALL, "efficient"),
    ("cuda", F32, "boolean", 0.1, 32, (3, 5), ALL, "math"),
    ("cuda", F32, "boolean", 0.4, 100, H100, {**ALL, "efficient": False}, "math"),
    ("cuda", F32, "boolean", 0.4, 100, H100, {**ALL, "efficient": False, "math": False}, "math"),
    # CUDA, 16-bit: flash without a mask; memory-efficient with one, the head a multiple of 8.
    ("cuda", BF16, "boolean", 0.4, 100, H100, ALL, "math"),
    ("cuda", BF16, None, 0.4, 100, H100, ALL, "flash"),
    ("cuda", BF16, None, 0.4, 100, H100, {**ALL, "flash": False}, "math"),
    ("cuda", BF16, "boolean", 0.1, 32, H100, ALL, "efficient"),
    ("cuda", BF16, "boolean", 0.1, 32, (7, 5), ALL, "math"),  # bf16: sm80 on
    ("cuda", F16, "boolean", 0.1, 32, (7, 5), ALL, "efficient"),
    ("cuda", F16, None, 0.0, 288, H100, ALL, "efficient"),  # flash: heads up to 256
    ("cuda", BF16, None, 0.0, 200, (8, 6), ALL, "efficient"),  # flash cannot train 200-wide heads on sm86
    ("cuda", BF16, None, 0.0, 200, (8, 0), ALL, "flash"),
])
def test_attention_kernel_follows_torchs_rules(device, dtype, mask, dropout, head, capability, enabled, expected):
    assert attention_kernel(device, dtype, mask=mask, dropout=dropout, head_size=head, enabled=enabled,
                            capability=capability) == expected


def test_cudnn_counts_only_where_torch_tries_it_first():
    call = dict(mask="boolean", head_size=64, enabled={**ALL, "efficient": False}, capability=H100)
    assert attention_kernel("cuda", BF16, dropout=1 / 16, **call) == "math"
    assert attention_kernel("cuda", BF16, dropout=1 / 16, prefer_cudnn=True, **call) == "cudnn"
    assert attention_kernel("cuda", BF16, dropout=0.1, prefer_cudnn=True, **call) == "math"  # 1/16 steps only
    assert attention_kernel("cuda", F32, dropout=0.0, prefer_cudnn=True, **call) == "math"  # 16-bit only


@pytest.fixture
def sm90(monkeypatch):
    """CUDA cost queries on a machine without CUDA: an sm90 device (H100/H200) with every backend on."""
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *args: H100)
    monkeypatch.setattr("sklearn_ltr.nn._cost.enabled_sdp_backends", lambda: dict(ALL))


def test_the_estimate_assumes_the_worse_of_the_masks_a_batch_can_have(sm90):
    dasalc, setrank = DASALCNet.memory_cost(n_features=5), SetRankNet.memory_cost(n_features=5)
    assert _memory.attention_term(dasalc, "cuda", training=True) == "efficient"
    # bf16: a padded batch runs math (head 100), a full one flash: the estimate assumes math.
    assert _memory.attention_term(dasalc, "cuda", training=True, precision="bf16-mixed") == "math"
    assert _memory.attention_term(setrank, "cuda", training=True, precision="bf16-mixed") == "efficient"
    assert _memory.attention_term(dasalc, "cuda", training=False, precision="bf16-mixed") == "efficient"
    assert _memory.attention_term(dasalc, "cpu", training=True) == "math"  # attention dropout 0.4
    assert _memory.attention_term(dasalc, "cpu", training=False) == "flash"
    assert _memory.attention_term(SetRankNet.memory_cost(n_features=5, block="imsab"), "cuda", training=True) is None


def test_memory_terms_by_hand_for_each_kernel():
    cost = ModuleCost(2, 3, 10, attention_head_size=8, attention_dropout=0.1)
    attention = 2 * 3 * (8 + 1)  # output and log-sum-exp per head, layer and document
    assert _memory.memory_terms(cost, 7, 5, training=True) == (4 * 2 * 3 + 2 + 7, 2 * 5 + 5 * 10)
    assert _memory.memory_terms(cost, 7, 5, training=True, kernel="efficient") == (7, 2 * 5 + 5 * 10 + 2 * attention)
    assert _memory.memory_terms(cost, 7, 5, training=True, kernel="efficient", device="cuda") == (
        7, 2 * 5 + 3 * 10 + 2 * attention)
    assert _memory.memory_terms(cost, 0, 5, training=False, kernel="flash") == (0, 5 + 2 * 10 + attention)
    assert _memory.memory_terms(cost, 0, 5, training=False, device="cuda") == (2 * 3 + 1, 5 + 2 * 10)


#: Peaks of one training batch on an NVIDIA H200 (torch 2.11, ``torch.cuda.max_memory_allocated``,
#: benchmarks/results/training_memory_cuda.md): linear in the documents, the defaults' models.
H200_PEAKS_GB = [
    (DASALCRanker, 8, 2000, 0.72), (DASALCRanker, 8, 4000, 1.29), (DASALCRanker, 2, 8000, 0.66),
    (DASALCRanker, 64, 696, 1.81), (SetRankRanker, 8, 2000, 0.30), (SetRankRanker, 8, 4000, 0.47),
    (SetRankRanker, 2, 8000, 0.23), (SetRankRanker, 64, 696, 0.65),
]


@pytest.mark.parametrize(("cls", "lists", "docs", "peak_gb"), H200_PEAKS_GB)
def test_the_cuda_estimate_is_linear_and_conservative_against_measured_peaks(sm90, cls, lists, docs, peak_gb):
    ranker = cls()
    ranker.uses_initial_rank_ = False  # SetRank's module spec reads it
    memory = ranker._memory_estimate(136, "cuda")
    assert memory.training_quadratic == 0  # memory-efficient attention holds no [L, L] weights
    estimate = memory.training_bytes(lists, docs)
    # Above the peak (never refuse less than it needs), and within 2x of it.
    assert 0.5 <= peak_gb * 1e9 / estimate <= 1.0


@pytest.fixture(scope="module")
def mslr_sizes():
    """Documents per query of 1,000 MSLR-shaped queries (the longest has 696)."""
    _, _, qid = make_ranking(1000, preset="mslr", random_state=1)
    return np.unique(qid, return_counts=True)[1]


def test_dasalc_batch_1024_on_1000_mslr_queries_is_accepted_on_an_h200(sm90, monkeypatch, mslr_sizes):
    # The H200 of the issue: 134.0 GB free, and 1,000 lists padded to 696 documents trained with a
    # 4.9 GB peak at 848 of them, while the quadratic estimate refused them (140.9 GB).
    monkeypatch.setattr(_memory, "available_memory", lambda device: 134.0e9)
    assert mslr_sizes.max() == 696
    ranker = DASALCRanker(batch_size=1024)
    assert ranker._memory_estimate(136, "cuda").training_batch_size(mslr_sizes, 1024) == 1024
    assert ranker._memory_estimate(136, "cuda").training_bytes(1000, 696) < _memory.MEMORY_FRACTION * 134.0e9
    # On CPU (attention dropout: the math kernel) the [L, L] weights are real: refused, naming them.
    with pytest.raises(MemoryError, match=r"needs about 12\d\.\d GB for self-attention \(4 layers x 2 heads, math"):
        ranker._memory_estimate(136, "cpu").training_batch_size(mslr_sizes, 1024)
    # So in bf16 on CUDA, where heads 100 wide rule the fused kernels out of padded batches.
    monkeypatch.setattr(_memory, "available_memory", lambda device: 60e9)
    assert ranker._memory_estimate(136, "cuda").training_batch_size(mslr_sizes, 1024) == 1024
    with pytest.raises(MemoryError, match=r"math attention: \[L, L\] weights per head\), which grows with the "
                                          r"square of the list length"):
        DASALCRanker(precision="bf16-mixed")._memory_estimate(136, "cuda").training_batch_size(mslr_sizes, 1024)


def test_a_refusal_with_fused_attention_names_the_linear_term(sm90, monkeypatch, mslr_sizes):
    monkeypatch.setattr(_memory, "available_memory", lambda device: 10e9)
    with pytest.raises(MemoryError) as error:
        DASALCRanker()._memory_estimate(136, "cuda").training_batch_size(mslr_sizes, 1024)
    message = str(error.value)
    assert "self-attention (4 layers x 2 heads, memory-efficient attention: linear in the list length)" in message
    assert "which grows with the documents of the batch" in message and "batch_size=" in message


def test_pairwise_loss_terms_count_on_every_device(sm90):
    cpu = RankNetRanker(loss="ranknet")._memory_estimate(136, "cpu")
    cuda = RankNetRanker(loss="ranknet")._memory_estimate(136, "cuda")
    assert cpu.training_quadratic == cuda.training_quadratic > 0


def _observed_kernel(device, dtype, dropout, head_size, padded):
    """The kernel that ran one forward and backward pass of the modules' attention call (profiled)."""
    attention = MultiHeadAttention(16, n_heads=2, head_size=head_size, dropout=dropout).to(device, dtype).train()
    x = torch.randn(2, 40, 16, device=device, dtype=dtype)
    mask = torch.ones(2, 40, dtype=torch.bool, device=device)
    if padded:
        mask[1, 30:] = False
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        attention(x, x, mask).sum().backward()
    names = {event.name for event in prof.events()}
    for kernel, op in (("flash", "flash_attention"), ("efficient", "efficient_attention"),
                       ("cudnn", "cudnn_attention"), ("math", "attention_math")):
        if any(op in name and "backward" not in name for name in names):
            return kernel
    if device.type == "cpu" and dropout > 0 and {"aten::_softmax", "aten::bmm"} <= names:
        # CPU training with attention-weight dropout runs the attention written out (softmax weights,
        # the fast dropout sampler): [L, L] weights per head, as the math kernel holds them.
        return "math"
    raise AssertionError(f"no attention kernel among {sorted(names)}")


@pytest.mark.parametrize(("dtype", "dropout", "head_size", "padded"), [
    (F32, 0.0, 32, True), (F32, 0.4, 100, True), (F32, 0.0, 100, False), (F32, 0.1, 30, True),
    (BF16, 0.1, 32, True), (BF16, 0.1, 100, True), (BF16, 0.0, 100, False),
])
def test_the_kernel_torch_runs_is_the_one_predicted(test_device, dtype, dropout, head_size, padded):
    device = torch.device(test_device)
    if device.type == "cuda" and not torch.cuda.is_available():
        pytest.skip("--device cuda without CUDA")
    capability = torch.cuda.get_device_capability(device) if device.type == "cuda" else None
    predicted = attention_kernel(device.type, dtype, mask="boolean" if padded else None, dropout=dropout,
                                 head_size=head_size, capability=capability)
    observed = _observed_kernel(device, dtype, dropout, head_size, padded)
    if device.type == "cpu":
        assert observed == predicted
    else:
        # What the estimate needs is the memory class: fused (no [L, L] tensor) or math. Which fused kernel
        # runs varies by build: on an H200 with torch 2.11 cuDNN took bf16 with dropout 0.1, which the
        # rule leaves to the memory-efficient kernel (prefer_cudnn=False).
        assert (observed in FUSED_KERNELS) == (predicted in FUSED_KERNELS), (observed, predicted)


def _estimate(quadratic, linear, max_list_length=None):
    """An estimate of training terms given by hand."""
    return _memory.MemoryEstimate("R", "cpu", training_quadratic=quadratic, training_linear=linear,
                                  max_list_length=max_list_length)


def test_auto_batch_size_by_hand(monkeypatch):
    sizes = np.array([100] * 30 + [400] * 10 + [7] * 400)  # 440 queries: the cap is 440 // 2 = 220
    per_list = _memory.batch_bytes(1, 400, quadratic=2, linear=10)  # 4 * (400 * 10 + 400**2 * 2) bytes
    monkeypatch.setattr(_memory, "available_memory", lambda device: None)
    assert _estimate(2, 10).auto_batch_size(sizes) == 220
    monkeypatch.setattr(_memory, "available_memory", lambda device: int(100.5 * per_list / _memory.MEMORY_FRACTION))
    # 100 fit: 5 batches of 440 queries, evened out to 88 each (not 4 x 100 and a last one of 40).
    assert _estimate(2, 10).auto_batch_size(sizes) == 88
    # Lists cut to 200 documents: 3.95 times as many fit (half the linear term, a quarter of [L, L]): 397 > 220.
    assert _estimate(2, 10, max_list_length=200).auto_batch_size(sizes) == 220
    assert _estimate(2, 10, max_list_length=100).auto_batch_size(sizes) == 220
    monkeypatch.setattr(_memory, "available_memory", lambda device: 10**9)
    assert _estimate(2, 10).auto_batch_size(np.full(100_000, 5)) == _memory.AUTO_BATCH_CAP
    assert _estimate(2, 10).auto_batch_size(np.full(11, 5)) == 4  # 5, 5 and 1 evened out to 4, 4 and 3
    assert _estimate(2, 10).auto_batch_size(np.full(471, 5)) == 157  # MQ2008 Fold 1: not 235, 235 and 1
    assert _estimate(2, 10).auto_batch_size(np.full(1, 5)) == 1
    monkeypatch.setattr(_memory, "available_memory", lambda device: 1)
    assert _estimate(2, 10).auto_batch_size(sizes) == 1


@pytest.fixture(scope="module")
def data():
    return make_ranking(20, random_state=0)  # "auto" picks 10 queries a batch where memory allows


def test_fit_resolves_auto_into_batch_size_(data, monkeypatch):
    X, y, qid = data
    ranker = RankNetRanker(hidden_sizes=(4,), max_epochs=1, batch_size="auto", random_state=0).fit(X, y, qid)
    assert ranker.batch_size == "auto" and clone(ranker).batch_size == "auto"
    assert ranker.batch_size_ == 20 // _memory.AUTO_MIN_BATCHES == 10
    assert RankNetRanker(hidden_sizes=(4,), max_epochs=1, batch_size=5).fit(X, y, qid).batch_size_ == 5
    # Little memory: fewer queries a batch, from the same estimate the check uses.
    sizes = np.unique(qid, return_counts=True)[1]
    small = RankNetRanker(hidden_sizes=(4,), max_epochs=1, batch_size="auto", random_state=0)
    per_list = small._memory_estimate(X.shape[1]).training_bytes(1, int(sizes.max()))  # on the device fit resolves
    monkeypatch.setattr(_memory, "available_memory", lambda device: int(2.5 * per_list / _memory.MEMORY_FRACTION))
    assert small.fit(X, y, qid).batch_size_ == 2


def test_auto_trains_with_the_batch_it_chose(data, test_device):
    X, y, qid = data
    auto = DASALCRanker(hidden_size=8, n_attention_layers=1, head_size=4, max_epochs=2, batch_size="auto",
                        random_state=0).fit(X, y, qid)
    explicit = DASALCRanker(hidden_size=8, n_attention_layers=1, head_size=4, max_epochs=2, batch_size=10,
                            random_state=0).fit(X, y, qid)
    assert auto.batch_size_ == 10 and auto.net_.batch_size == 10
    if torch.device(test_device).type == "cpu":  # the same seed gives the same model
        np.testing.assert_array_equal(auto.predict(X, qid), explicit.predict(X, qid))
    else:  # CUDA's attention backward may sum in another order
        np.testing.assert_allclose(auto.predict(X, qid), explicit.predict(X, qid), rtol=1e-3, atol=1e-3)


def test_batch_size_rejects_other_strings(data):
    X, y, qid = data
    with pytest.raises(InvalidParameterError, match=r"'batch_size' parameter .*\{'auto'\}"):
        RankNetRanker(batch_size="max").fit(X, y, qid)


@pytest.mark.parametrize(("dtype", "head_size", "capability", "expected"), [
    # The memory-efficient kernel's head-width alignment (PyTorch's minimum_gemm_alignment): 16-bit floats use
    # tensor cores from sm70 (alignment 8), float32 from sm80 (4); without tensor cores it is 1 before sm80.
    (torch.float16, 12, (7, 5), "math"), (torch.float16, 16, (7, 5), "efficient"),
    (torch.float32, 6, (7, 5), "efficient"), (torch.float32, 6, (8, 0), "math"),
    (torch.float32, 8, (8, 0), "efficient"),
    (torch.float16, 6, (6, 0), "efficient"),
])
def test_efficient_kernel_head_alignment_by_capability(dtype, head_size, capability, expected):
    kernel = attention_kernel("cuda", dtype, mask="boolean", dropout=0.0, head_size=head_size, capability=capability,
                              enabled={"flash": True, "efficient": True, "math": True, "cudnn": False})
    assert kernel == expected


@pytest.mark.parametrize(("head_size", "capability", "expected"), [
    # Flash trains heads over 192 wide on sm80 and sm90, not on sm86-sm89 nor sm120-sm121 (PyTorch's
    # check_flash_attention_hardware_support); a wider head falls to the memory-efficient kernel.
    (192, (8, 6), "flash"), (200, (8, 6), "efficient"), (200, (8, 9), "efficient"), (200, (8, 0), "flash"),
    (200, (9, 0), "flash"), (200, (12, 0), "efficient"), (200, (12, 1), "efficient"), (256, (9, 0), "flash"),
    (264, (9, 0), "efficient"),
])
def test_flash_wide_heads_by_capability(head_size, capability, expected):
    kernel = attention_kernel("cuda", torch.bfloat16, mask=None, dropout=0.0, head_size=head_size,
                              capability=capability, enabled={"flash": True, "efficient": True, "math": True,
                                                              "cudnn": False})
    assert kernel == expected
    # Scoring (no gradients) takes wide heads everywhere flash runs.
    scoring = attention_kernel("cuda", torch.bfloat16, mask=None, dropout=0.0, head_size=head_size, training=False,
                               capability=capability, enabled={"flash": True, "efficient": True, "math": True,
                                                               "cudnn": False})
    assert scoring == ("flash" if head_size <= 256 else "efficient")


def test_enabled_backends_are_torchs_flags_by_kernel_name():
    flags = torch.backends.cuda
    assert enabled_sdp_backends() == {
        "flash": flags.flash_sdp_enabled(), "efficient": flags.mem_efficient_sdp_enabled(),
        "cudnn": flags.cudnn_sdp_enabled(), "math": flags.math_sdp_enabled()}


ALL = {"flash": True, "efficient": True, "cudnn": True, "math": True}


@pytest.mark.parametrize(("call", "expected"), [
    # A disabled (or unnamed) backend is skipped for the next one, not the end of the search.
    ({"dtype": torch.bfloat16, "mask": None, "enabled": {**ALL, "flash": False}}, "efficient"),
    ({"dtype": torch.bfloat16, "mask": None, "enabled": {"efficient": True, "math": True}}, "efficient"),
    # cuDNN first where PyTorch prefers it, and the rest in PyTorch's order after it.
    ({"dtype": torch.bfloat16, "mask": "boolean", "enabled": ALL, "prefer_cudnn": True}, "cudnn"),
    ({"dtype": torch.float32, "mask": "boolean", "enabled": ALL, "prefer_cudnn": True}, "efficient"),
    ({"dtype": torch.float32, "mask": "boolean", "enabled": {**ALL, "efficient": False}, "prefer_cudnn": True},
     "math"),
])
def test_attention_kernel_walks_torchs_order(call, expected):
    assert attention_kernel("cuda", dropout=0.0, head_size=64, capability=(9, 0), **call) == expected


def test_cpu_flash_needs_its_flag_and_takes_any_head_width():
    call = {"mask": "boolean", "dropout": 0.0}
    assert attention_kernel("cpu", torch.float32, head_size=1, enabled=ALL, **call) == "flash"
    assert attention_kernel("cpu", torch.float32, head_size=64, enabled={"math": True}, **call) == "math"

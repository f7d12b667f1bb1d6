"""The masked attention on scaled_dot_product_attention against a plain reference computation.

Covers ``MultiHeadAttention`` (SDPA with the padding mask, attention-weight dropout through
``dropout_p`` in training only), DASALC's ``SelfAttentionLayer`` and SetRank's MAB/MSAB and
IMSAB blocks: outputs and gradients equal a hand-written masked softmax attention, padded
query slots and lists without any real document stay finite, and the parameter names are
those of the previous release (saved models load).
"""

import math

import pytest
import torch
from torch.nn import functional as F

from sklearn_ltr.nn import (
    DASALCNet,
    InducedAttentionBlock,
    MultiHeadAttention,
    MultiheadAttentionBlock,
    SelfAttentionLayer,
    SetRankNet,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def reference_attention(attention, query, key, key_mask=None):
    """Masked multi-head attention written out head by head with the module's weights.

    Logits of padded keys are -inf before the softmax; a list without any real key attends
    to all its slots (the module's guard against a NaN softmax).
    """
    inner = attention.n_heads * attention.head_size
    q = attention.query(query)
    k, v = attention.key_value(key).split(inner, dim=-1)
    heads = []
    for h in range(attention.n_heads):
        part = slice(h * attention.head_size, (h + 1) * attention.head_size)
        logits = q[..., part] @ k[..., part].transpose(-2, -1) / math.sqrt(attention.head_size)
        if key_mask is not None:
            attend = key_mask | ~key_mask.any(dim=1, keepdim=True)
            logits = logits.masked_fill(~attend[:, None, :], -math.inf)
        heads.append(torch.softmax(logits, dim=-1) @ v[..., part])
    return attention.out(torch.cat(heads, dim=-1))


def reference_block(block, x, mask, key=None, key_mask=None):
    """MAB(X, K) = LN(B + rFF(B)), B = LN(X + MHA(X, K)), with the reference attention."""
    if key is None:
        key, key_mask = x, mask
    b = block.norm1(x + reference_attention(block.attention, x, key, key_mask))
    return block.norm2(b + block.feedforward(b))


def _inputs(batch=3, n_queries=7, n_keys=7, width=8, seed=0):
    generator = torch.Generator().manual_seed(seed)
    query = torch.randn(batch, n_queries, width, generator=generator)
    key = query if n_keys == n_queries else torch.randn(batch, n_keys, width, generator=generator)
    mask = torch.ones(batch, n_keys, dtype=torch.bool)
    mask[1, 4:] = False  # a padded list
    mask[2, :] = False  # a list without any real document
    return query, key, mask


MASKS = {
    "padded and empty lists": lambda mask: mask,
    "no padding": lambda mask: None,
    "padding, no empty list": lambda mask: mask | torch.arange(mask.shape[0])[:, None].ne(1),
}


@pytest.mark.parametrize("n_heads, head_size", [(1, None), (2, None), (4, None), (2, 8), (3, 5)])
@pytest.mark.parametrize("masking", list(MASKS))
@pytest.mark.parametrize("n_queries", [7, 3])
def test_attention_equals_reference(n_heads, head_size, masking, n_queries):
    torch.manual_seed(0)
    attention = MultiHeadAttention(8, n_heads, head_size, dropout=0.3).eval()
    query, key, mask = _inputs(n_queries=n_queries)
    key_mask = MASKS[masking](mask)
    with torch.no_grad():
        out = attention(query, key, key_mask)
        expected = reference_attention(attention, query, key, key_mask)
    assert out.shape == (3, n_queries, 8)
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5)


def test_attention_in_double_precision():
    torch.manual_seed(0)
    attention = MultiHeadAttention(8, 2).double().eval()
    query, _, mask = _inputs()
    query = query.double()
    with torch.no_grad():
        torch.testing.assert_close(attention(query, query, mask), reference_attention(attention, query, query, mask),
                                   rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("n_queries", [7, 3])
def test_gradients_equal_reference_and_are_finite(n_queries):
    """Gradients through SDPA equal the reference's, with padded query slots and an empty list."""
    torch.manual_seed(0)
    attention = MultiHeadAttention(8, 2).train()  # dropout 0: training takes the same kernel
    query, key, mask = _inputs(n_queries=n_queries)
    query = query.clone().requires_grad_(True)
    key = query if n_queries == 7 else key.clone().requires_grad_(True)
    weights = torch.randn(3, n_queries, 8, generator=torch.Generator().manual_seed(1))

    def gradients(function):
        attention.zero_grad()
        query.grad = None
        if key is not query:
            key.grad = None
        (function(attention, query, key, mask) * weights).sum().backward()
        grads = {name: p.grad.clone() for name, p in attention.named_parameters()}
        grads["query"] = query.grad.clone()
        if key is not query:
            grads["key"] = key.grad.clone()
        return grads

    got = gradients(MultiHeadAttention.__call__)
    expected = gradients(reference_attention)
    for name, grad in got.items():
        assert torch.isfinite(grad).all(), name
        torch.testing.assert_close(grad, expected[name], rtol=1e-4, atol=1e-5, msg=name)
    if key is not query:
        assert torch.all(got["key"][1, 4:] == 0)  # padded keys of a list with real ones get no gradient


def test_dropout_p_reaches_sdpa_in_training_only(monkeypatch):
    """SDPA runs in evaluation and without attention-weight dropout; CPU training with dropout runs the sampler."""
    calls = []
    sdpa = F.scaled_dot_product_attention

    def spy(*args, **kwargs):
        calls.append(kwargs.get("dropout_p", 0.0))
        return sdpa(*args, **kwargs)

    monkeypatch.setattr(F, "scaled_dot_product_attention", spy)
    query, _, mask = _inputs()
    attention = MultiHeadAttention(8, 2, dropout=0.25)
    attention.train()(query, query, mask)  # CPU training with dropout: the fast sampler, not SDPA
    with torch.no_grad():
        attention.eval()(query, query, mask)
    MultiHeadAttention(8, 2, dropout=0.0).train()(query, query, mask)
    assert calls == [0.0, 0.0]


@pytest.mark.parametrize("masking", list(MASKS))
def test_attention_weight_dropout_on_cpu_is_the_reference_with_the_samplers_mask(masking):
    """Training with attention-weight dropout: softmax weights, the sampler's mask, the inverse keep probability."""
    from sklearn_ltr.nn._attention import _keep_mask

    torch.manual_seed(0)
    attention = MultiHeadAttention(8, 2, head_size=3, dropout=0.3).train()
    query, _, mask = _inputs()
    mask = MASKS[masking](mask)
    leaf = query.clone().requires_grad_(True)
    torch.manual_seed(7)
    got = attention(leaf, leaf, mask)
    got.square().sum().backward()
    torch.manual_seed(7)
    keep, scale = _keep_mask((3, 2, 7, 7), 0.3)
    reference_leaf = query.clone().requires_grad_(True)
    q = attention.query(reference_leaf)
    k, v = attention.key_value(reference_leaf).split(6, dim=-1)
    heads = []
    for h in range(2):
        part = slice(3 * h, 3 * h + 3)
        logits = q[..., part] @ k[..., part].transpose(-2, -1) / math.sqrt(3)
        if mask is not None:
            attend = mask | ~mask.any(dim=1, keepdim=True)
            logits = logits.masked_fill(~attend[:, None, :], -math.inf)
        heads.append((torch.softmax(logits, dim=-1) * keep[:, h] * scale) @ v[..., part])
    expected = attention.out(torch.cat(heads, dim=-1))
    expected.square().sum().backward()
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(leaf.grad, reference_leaf.grad, rtol=1e-4, atol=1e-5)
    assert not keep.all() and keep.any()


def test_attention_weight_dropout_is_unbiased_and_finite():
    """Dropout on the attention weights keeps E[output] = the evaluation output; padding stays masked."""
    torch.manual_seed(0)
    attention = MultiHeadAttention(8, 2, dropout=0.4)
    query, _, mask = _inputs()
    with torch.no_grad():
        expected = attention.eval()(query, query, mask)
        attention.train()
        repeats = 4000
        sampled = attention(query.repeat(repeats, 1, 1), query.repeat(repeats, 1, 1), mask.repeat(repeats, 1))
        assert torch.isfinite(sampled).all()
        mean = sampled.view(repeats, *expected.shape).mean(dim=0)
        assert not torch.allclose(sampled[:3], expected)
        torch.testing.assert_close(mean, expected, rtol=0, atol=0.06)
        # Padded keys never get weight, with or without dropout: a huge value there changes nothing.
        changed = query.clone()
        changed[1, 4:] = 1e4
        torch.manual_seed(1)
        first = attention(query, query, mask)
        torch.manual_seed(1)
        second = attention(changed, changed, mask)
        torch.testing.assert_close(second[1, :4], first[1, :4])


def test_self_attention_layer_equals_reference():
    torch.manual_seed(0)
    layer = SelfAttentionLayer(8, n_heads=2).eval()  # Keras convention: head_size = d_model
    assert layer.attention.head_size == 8
    x, _, mask = _inputs()
    with torch.no_grad():
        expected = layer.norm(x + reference_attention(layer.attention, x, x, mask))
        torch.testing.assert_close(layer(x, mask), expected, rtol=1e-5, atol=1e-5)


def test_blocks_equal_reference():
    torch.manual_seed(0)
    block = MultiheadAttentionBlock(8, n_heads=2).eval()
    induced = InducedAttentionBlock(8, n_heads=2, n_inducing_points=3).eval()
    x, _, mask = _inputs()
    with torch.no_grad():
        torch.testing.assert_close(block(x, mask), reference_block(block, x, mask), rtol=1e-5, atol=1e-5)
        points = induced.inducing_points.expand(3, -1, -1)
        summary = reference_block(induced.summarise, points, None, key=x, key_mask=mask)
        expected = reference_block(induced.broadcast, x, None, key=summary)
        torch.testing.assert_close(induced(x, mask), expected, rtol=1e-5, atol=1e-5)
    # With autograd on (training), the feed-forward takes the out-of-place ReLU: same values.
    torch.testing.assert_close(block(x, mask), reference_block(block, x, mask), rtol=1e-5, atol=1e-5)


NETS = {
    "dasalc": lambda: DASALCNet(5, hidden_size=16, n_layers=1, dropout=0.3, n_attention_layers=2, n_heads=2,
                                head_size=8),
    "msab": lambda: SetRankNet(5, d_model=8, n_blocks=2, n_heads=2, dropout=0.3),
    "imsab": lambda: SetRankNet(5, d_model=8, n_blocks=2, n_heads=2, dropout=0.3, block="imsab",
                                n_inducing_points=3),
}


@pytest.mark.parametrize("name", list(NETS))
def test_training_step_with_padded_and_empty_lists_is_finite(name):
    """Padded slots and an all-padding list: scores, loss and every gradient finite, with dropout on."""
    torch.manual_seed(0)
    net = NETS[name]().train()
    X = torch.randn(3, 6, 5)
    mask = torch.ones(3, 6, dtype=torch.bool)
    mask[1, 2:] = False
    mask[2, :] = False
    X[~mask] = 1e6  # padding holds garbage
    scores = net(X, mask)
    assert torch.isfinite(scores).all() and torch.all(scores[~mask] == 0)
    scores[mask].square().sum().backward()
    for parameter_name, parameter in net.named_parameters():
        assert parameter.grad is None or torch.isfinite(parameter.grad).all(), parameter_name


PREVIOUS_KEYS = {
    MultiHeadAttention: ["query.weight", "query.bias", "key_value.weight", "key_value.bias", "out.weight",
                         "out.bias"],
    MultiheadAttentionBlock: [
        "attention.query.weight", "attention.query.bias", "attention.key_value.weight", "attention.key_value.bias",
        "attention.out.weight", "attention.out.bias", "feedforward.0.weight", "feedforward.0.bias",
        "feedforward.2.weight", "feedforward.2.bias", "norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias",
    ],
}


def test_parameter_names_and_shapes_are_those_of_the_previous_release():
    """Models saved before the move to scaled_dot_product_attention load unchanged."""
    attention = MultiHeadAttention(8, 2)
    assert list(attention.state_dict()) == PREVIOUS_KEYS[MultiHeadAttention]
    assert attention.query.weight.shape == (8, 8) and attention.key_value.weight.shape == (16, 8)
    block = MultiheadAttentionBlock(8, 2)
    assert list(block.state_dict()) == PREVIOUS_KEYS[MultiheadAttentionBlock]
    induced = InducedAttentionBlock(8, 2, n_inducing_points=3)
    assert list(induced.state_dict()) == ["inducing_points"] + [
        f"{part}.{name}" for part in ("summarise", "broadcast") for name in PREVIOUS_KEYS[MultiheadAttentionBlock]
    ]
    layer = SelfAttentionLayer(8, 2)
    assert list(layer.state_dict()) == [f"attention.{k}" for k in PREVIOUS_KEYS[MultiHeadAttention]] + [
        "norm.weight", "norm.bias"]

r"""Masked multi-head attention over the documents of a list, and DASALC's self-attention layer.

The attention is shared by DASALC (:class:`SelfAttentionLayer`) and SetRank (the Set Transformer
blocks of ``_set_attention``). Every block takes padded documents ``[batch, list, d]`` and a
boolean ``mask`` ``[batch, list]`` (True on real documents). Padded documents are masked out as
*keys*: their attention logits are :math:`-\infty` before the softmax, so they receive zero
weight and can never change a real document's output. Everything else is row-wise (linear
layers, layer norm, dropout), so a block is permutation equivariant: permuting the documents
of a list permutes its outputs (Pang et al. 2020, Proposition 1; Lee et al. 2019).

The attention itself is :func:`torch.nn.functional.scaled_dot_product_attention` with the
padding as a boolean mask: PyTorch's fused kernels (flash attention on CPU, flash or
memory-efficient attention on CUDA) run it, and it falls back to its reference ("math")
implementation where no fused kernel applies. Attention-weight dropout in training on CPU, which
no fused CPU kernel takes, is written out with the library's fast dropout sampler instead.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

__all__ = [
    "Dropout",
    "MultiHeadAttention",
    "SelfAttentionLayer",
    "dropout",
    "key_padding_mask",
    "pad_rows",
]

_INT16_LEVELS = 1 << 16


def dropout(x, p, training=True):
    r"""Inverted dropout, :math:`x \odot m / (1 - p)` with :math:`m_j \sim \mathrm{Bernoulli}(1 - p)`.

    On CUDA it is :func:`torch.nn.functional.dropout`. On CPU, where PyTorch's Bernoulli
    sampler makes dropout the most expensive operation of a small network, the mask comes
    from 16-bit slices of 64-bit random integers (4x fewer draws): each element is dropped
    with probability ``round(p * 2**16) / 2**16`` (within 2e-5 of ``p``) and kept ones are
    scaled by the exact inverse keep probability, so the expectation is unchanged. Draws
    come from torch's default generator, so ``torch.manual_seed`` makes them reproducible.
    """
    if not training or p == 0:
        return x
    if x.device.type != "cpu":
        return F.dropout(x, p, training=True)
    keep, scale = _keep_mask(x.shape, p)
    return x * (keep * scale).to(x.dtype)


def _keep_mask(shape, p):
    """The CPU sampler of :func:`dropout`: a boolean mask of the kept elements and their scale.

    Each element is dropped with probability ``round(p * 2**16) / 2**16``, decided by one
    16-bit slice of a 64-bit random integer; ``scale`` is the exact inverse keep probability.
    """
    dropped = round(p * _INT16_LEVELS)
    n = math.prod(shape)
    bits = torch.randint(-(1 << 63), (1 << 63) - 1, ((n + 3) // 4,), dtype=torch.int64)
    keep = bits.view(torch.int16)[:n].view(shape) >= dropped - _INT16_LEVELS // 2
    return keep, _INT16_LEVELS / (_INT16_LEVELS - dropped)


def _attention_with_dropout(q, k, v, attn_mask, p):
    r"""Attention with dropout on its weights, :math:`\mathrm{drop}(\mathrm{softmax}(QK^\top/\sqrt{d}))\,V`, on CPU.

    PyTorch's fused CPU kernel takes no attention-weight dropout, so
    :func:`~torch.nn.functional.scaled_dot_product_attention` would fall back to its
    reference path, which draws the ``[batch, heads, L, L]`` mask with the Bernoulli sampler
    and scans the logits for fully masked rows. Written out with the fast sampler of
    :func:`dropout` it is the same function, with one ``[L, L]`` pass less. Padded keys get
    weight 0 (:func:`key_padding_mask` leaves no row without a real key).
    """
    logits = (q * q.shape[-1] ** -0.5) @ k.transpose(-2, -1)
    if attn_mask is not None:  # in place: the product's backward reads q and k, not its output
        logits.masked_fill_(~attn_mask, float("-inf"))
    weights = torch.softmax(logits, dim=-1)
    keep, scale = _keep_mask(weights.shape, p)
    # The inverse keep probability scales the [L, d] output rather than the [L, L] weights.
    return (weights.masked_fill(~keep, 0.0) @ v) * scale


class Dropout(nn.Module):
    """:class:`torch.nn.Dropout` with the fast CPU sampler of :func:`dropout`."""

    def __init__(self, p=0.0):
        super().__init__()
        if not 0 <= p < 1:
            raise ValueError(f"dropout must be in [0, 1); got {p!r}.")
        self.p = p

    def forward(self, x):
        return dropout(x, self.p, self.training)

    def extra_repr(self):
        return f"p={self.p}"


def pad_rows(values, mask):
    """Lay out per-document vectors ``[n_real, d]`` (row-major order of ``mask``) as ``[batch, list, d]``.

    Padded slots hold zeros. The inverse is ``padded[mask]``.
    """
    out = values.new_zeros((*mask.shape, values.shape[-1]))
    out[mask] = values
    return out


#: Default of the ``attn_mask`` arguments: build the attention mask from the key mask here.
#: A module that runs several attention layers over the same keys builds it once
#: (:func:`key_padding_mask`) and passes it down, so that the check "is every key real?",
#: a host synchronisation on CUDA, happens once per forward pass rather than once per layer.
FROM_KEY_MASK = object()


def key_padding_mask(mask):
    r"""Attention mask ``[batch, 1, 1, keys]`` (True = may attend) from a key mask ``[batch, keys]``.

    A list with no real key (an empty row, which the batches never produce) would have every
    logit at :math:`-\infty` and a NaN softmax; such rows attend to all their (padded) keys
    instead, so their outputs stay finite. Returns None when every key is real, which lets
    :func:`torch.nn.functional.scaled_dot_product_attention` skip masking altogether.
    """
    if mask is None or bool(mask.all()):
        return None
    guarded = mask | ~mask.any(dim=1, keepdim=True)
    return guarded[:, None, None, :]


class MultiHeadAttention(nn.Module):
    r"""Multi-head scaled dot-product attention with padded keys masked out.

    For each head :math:`h` with projections :math:`W^Q_h, W^K_h, W^V_h \in \mathbb{R}^{d \times d_h}`,

    .. math::
        \mathrm{head}_h = \mathrm{softmax}\!\left(\frac{Q W^Q_h (K W^K_h)^\top}{\sqrt{d_h}} + M\right) K W^V_h,
        \qquad
        \mathrm{MHA}(Q, K) = [\mathrm{head}_1; \dots; \mathrm{head}_H]\, W^O,

    with :math:`M_{ij} = -\infty` when key :math:`j` is padding (Vaswani et al. 2017). Keys are
    also the values. The heads are computed by
    :func:`torch.nn.functional.scaled_dot_product_attention` with the key padding mask of
    ``key_padding_mask`` (True where a key is a real document); attention-weight dropout is its
    ``dropout_p``, in training only.

    Parameters
    ----------
    d_model : int
        Width of queries and keys.
    n_heads : int, default=1
        Number of heads :math:`H`.
    head_size : int, default=None
        Width :math:`d_h` of each head; ``None`` is ``d_model // n_heads`` (Transformer
        convention). DASALC uses Keras' convention, ``head_size=d_model``.
    d_out : int, default=None
        Output width (``None``: ``d_model``).
    dropout : float, default=0.0
        Dropout on the attention weights, in training only. On CPU, PyTorch computes
        attention with such dropout unfused (its math path); without it, fused.

    References
    ----------
    A. Vaswani, N. Shazeer, N. Parmar, J. Uszkoreit, L. Jones, A. N. Gomez, L. Kaiser and
    I. Polosukhin. "Attention Is All You Need." NeurIPS 2017.

    Examples
    --------
    Three queries attend to a list of five keys, of which the last two are padding:

    >>> import torch
    >>> from sklearn_ltr.nn import MultiHeadAttention
    >>> _ = torch.manual_seed(0)
    >>> attention = MultiHeadAttention(d_model=8, n_heads=2).eval()
    >>> query, key = torch.randn(1, 3, 8), torch.randn(1, 5, 8)
    >>> key_mask = torch.tensor([[True, True, True, False, False]])
    >>> with torch.no_grad():
    ...     out = attention(query, key, key_mask)
    ...     unpadded = attention(query, key[:, :3])  # only the three real keys
    >>> out.shape
    torch.Size([1, 3, 8])
    >>> torch.allclose(out, unpadded)  # padded keys get zero weight
    True
    """

    def __init__(self, d_model, n_heads=1, head_size=None, d_out=None, dropout=0.0):
        super().__init__()
        head_size = head_size or d_model // n_heads
        if head_size < 1:
            raise ValueError(f"head_size must be >= 1; got d_model={d_model}, n_heads={n_heads}.")
        self.n_heads = n_heads
        self.head_size = head_size
        self.dropout = dropout
        inner = n_heads * head_size
        self.query = nn.Linear(d_model, inner)
        self.key_value = nn.Linear(d_model, 2 * inner)
        self.out = nn.Linear(inner, d_out or d_model)

    def _heads(self, x):
        batch, length, _ = x.shape
        return x.view(batch, length, self.n_heads, self.head_size).transpose(1, 2)

    def forward(self, query, key, key_mask=None, attn_mask=FROM_KEY_MASK):
        r"""Attend from ``query`` to ``key`` (the keys are also the values).

        Parameters
        ----------
        query : torch.Tensor of shape (batch, n_queries, d_model)
            Queries :math:`Q`.
        key : torch.Tensor of shape (batch, n_keys, d_model)
            Keys and values :math:`K`.
        key_mask : torch.Tensor of bool, shape (batch, n_keys), default=None
            True on real keys; ``None`` when every key is real.
        attn_mask : torch.Tensor of bool or None, default=FROM_KEY_MASK
            ``key_padding_mask(key_mask)`` computed once by the caller (``None``: no
            masking); by default it is computed here.

        Returns
        -------
        out : torch.Tensor of shape (batch, n_queries, d_out)
            :math:`\mathrm{MHA}(Q, K)`.
        """
        if attn_mask is FROM_KEY_MASK:
            attn_mask = key_padding_mask(key_mask)
        q = self._heads(self.query(query))
        k, v = (self._heads(part) for part in self.key_value(key).chunk(2, dim=-1))
        if self.training and self.dropout > 0 and q.device.type == "cpu":
            attended = _attention_with_dropout(q, k, v, attn_mask, self.dropout)
        else:
            attended = F.scaled_dot_product_attention(
                q, k, v, attn_mask=attn_mask, dropout_p=self.dropout if self.training else 0.0
            )
        batch, _, length, _ = attended.shape
        return self.out(attended.transpose(1, 2).reshape(batch, length, self.n_heads * self.head_size))


class SelfAttentionLayer(nn.Module):
    r"""Post-norm self-attention layer of TF-Ranking's document interaction network (DASALC).

    .. math:: H' = \mathrm{LayerNorm}\big(H + \mathrm{Dropout}(\mathrm{MHA}(H, H))\big)

    with no feed-forward sub-layer, as in TF-Ranking's ``DocumentInteractionAttention``
    (Pasumarthi et al. 2020) used by Qin et al. (2021).

    Parameters
    ----------
    d_model : int
        Width of the document representations.
    n_heads : int, default=1
        Attention heads.
    head_size : int, default=None
        Width of each head (``None``: ``d_model``, Keras' ``key_dim`` convention).
    dropout : float, default=0.0
        Dropout on the attention output.
    attention_dropout : float, default=None
        Dropout on the attention weights (``None``: ``dropout``).

    See Also
    --------
    DASALCNet : The network that stacks these layers.

    References
    ----------
    R. K. Pasumarthi, H. Zhuang, X. Wang, M. Bendersky and M. Najork. "Permutation
    Equivariant Document Interaction Network for Neural Learning to Rank." ICTIR 2020.

    Examples
    --------
    Two lists of up to five documents, the second with two padded slots. Permuting the
    documents of a list permutes the outputs (permutation equivariance):

    >>> import torch
    >>> from sklearn_ltr.nn import SelfAttentionLayer
    >>> _ = torch.manual_seed(0)
    >>> layer = SelfAttentionLayer(d_model=8, n_heads=2).eval()
    >>> x = torch.randn(2, 5, 8)
    >>> mask = torch.tensor([[True] * 5, [True, True, True, False, False]])
    >>> permutation = torch.tensor([4, 2, 0, 1, 3])
    >>> with torch.no_grad():
    ...     out = layer(x, mask)
    ...     permuted = layer(x[:, permutation], mask[:, permutation])
    >>> out.shape
    torch.Size([2, 5, 8])
    >>> torch.allclose(permuted, out[:, permutation], atol=1e-6)
    True

    Padded documents never change the real documents' outputs:

    >>> x_other = x.clone()
    >>> x_other[1, 3:] = 100.0
    >>> with torch.no_grad():
    ...     out_other = layer(x_other, mask)
    >>> torch.allclose(out_other[mask], out[mask], atol=1e-6)
    True
    """

    def __init__(self, d_model, n_heads=1, head_size=None, dropout=0.0, attention_dropout=None):
        super().__init__()
        attention_dropout = dropout if attention_dropout is None else attention_dropout
        self.attention = MultiHeadAttention(d_model, n_heads, head_size or d_model, dropout=attention_dropout)
        self.dropout = Dropout(dropout)
        self.norm = nn.LayerNorm(d_model)

    def forward(self, x, mask, attn_mask=FROM_KEY_MASK):
        """Apply the layer to the documents of a padded batch.

        Parameters
        ----------
        x : torch.Tensor of shape (batch, list, d_model)
            Document representations :math:`H`.
        mask : torch.Tensor of bool, shape (batch, list)
            True on real documents (padded ones are masked as keys).
        attn_mask : torch.Tensor of bool or None, default=FROM_KEY_MASK
            ``key_padding_mask(mask)``, when the caller computed it once for all its layers.

        Returns
        -------
        out : torch.Tensor of shape (batch, list, d_model)
            :math:`H'`; rows of padded documents are computed but meaningless.
        """
        return self.norm(x + self.dropout(self.attention(x, x, mask, attn_mask)))


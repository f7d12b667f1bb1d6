r"""Set Transformer's attention blocks (Lee et al. 2019), SetRank's building blocks (Pang et al. 2020).

:class:`MultiheadAttentionBlock` (MAB; SetRank's MSAB is MAB(X, X)) and
:class:`InducedAttentionBlock` (IMSAB: two MABs through learned inducing points), on the masked
attention of ``_attention``: padded documents are masked out as keys, so they never change a
real document's output, and the blocks are permutation equivariant.
"""

from __future__ import annotations

import torch
from torch import nn

from sklearn_ltr.nn._attention import FROM_KEY_MASK, Dropout, MultiHeadAttention

__all__ = ["InducedAttentionBlock", "MultiheadAttentionBlock"]


class MultiheadAttentionBlock(nn.Module):
    r"""Set Transformer's multi-head attention block MAB (Lee et al. 2019), SetRank's building block.

    .. math::
        \mathrm{MAB}(Q, K) = \mathrm{LayerNorm}\big(B + \mathrm{rFF}(B)\big), \qquad
        B = \mathrm{LayerNorm}\big(Q + \mathrm{MHA}(Q, K)\big),

    with the row-wise feed-forward layer :math:`\mathrm{rFF}(B) = \max(0, B W_1 + b_1) W_2 + b_2`.
    SetRank's MSAB is :math:`\mathrm{MAB}(X, X)` (Pang et al. 2020, Eq. 6).

    Parameters
    ----------
    d_model : int
        Width of the representations.
    n_heads : int, default=1
        Attention heads (``d_model // n_heads`` wide each).
    ff_size : int, default=None
        Hidden width of rFF (``None``: ``2 * d_model``).
    dropout : float, default=0.0
        Dropout on both sub-layer outputs.
    attention_dropout : float, default=None
        Dropout on the attention weights (``None``: ``dropout``).

    See Also
    --------
    InducedAttentionBlock : Two MABs through learned inducing points.
    SetRankNet : The network that stacks these blocks.

    References
    ----------
    J. Lee, Y. Lee, J. Kim, A. Kosiorek, S. Choi and Y. W. Teh. "Set Transformer: A
    Framework for Attention-based Permutation-Invariant Neural Networks." ICML 2019.

    L. Pang, J. Xu, Q. Ai, Y. Lan, X. Cheng and J.-R. Wen. "SetRank: Learning a
    Permutation-Invariant Ranking Model for Information Retrieval." SIGIR 2020.

    Examples
    --------
    Self-attention over the documents (SetRank's MSAB) is permutation equivariant:

    >>> import torch
    >>> from sklearn_ltr.nn import MultiheadAttentionBlock
    >>> _ = torch.manual_seed(0)
    >>> block = MultiheadAttentionBlock(d_model=8, n_heads=2).eval()
    >>> x = torch.randn(2, 4, 8)
    >>> mask = torch.tensor([[True, True, True, True], [True, True, True, False]])
    >>> permutation = torch.tensor([3, 1, 0, 2])
    >>> with torch.no_grad():
    ...     out = block(x, mask)
    ...     permuted = block(x[:, permutation], mask[:, permutation])
    >>> out.shape
    torch.Size([2, 4, 8])
    >>> torch.allclose(permuted, out[:, permutation], atol=1e-6)
    True

    With ``key``, the rows of ``x`` attend to another set, :math:`\mathrm{MAB}(X, K)`:

    >>> points = torch.randn(2, 3, 8)
    >>> with torch.no_grad():
    ...     block(points, None, key=x, key_mask=mask).shape
    torch.Size([2, 3, 8])
    """

    def __init__(self, d_model, n_heads=1, ff_size=None, dropout=0.0, attention_dropout=None):
        super().__init__()
        attention_dropout = dropout if attention_dropout is None else attention_dropout
        self.attention = MultiHeadAttention(d_model, n_heads, dropout=attention_dropout)
        self.feedforward = nn.Sequential(
            nn.Linear(d_model, ff_size or 2 * d_model), nn.ReLU(), nn.Linear(ff_size or 2 * d_model, d_model)
        )
        self.dropout = Dropout(dropout)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)

    def forward(self, x, mask, key=None, key_mask=None, attn_mask=FROM_KEY_MASK):
        r""":math:`\mathrm{MAB}(X, K)`, or the self-attention :math:`\mathrm{MAB}(X, X)` when ``key`` is None.

        Parameters
        ----------
        x : torch.Tensor of shape (batch, n_rows, d_model)
            The rows :math:`X` that attend (queries of the attention).
        mask : torch.Tensor of bool, shape (batch, n_rows) or None
            True on real rows of ``x``; the key mask of the self-attention. Ignored when
            ``key`` is given.
        key : torch.Tensor of shape (batch, n_keys, d_model), default=None
            The set :math:`K` attended to; ``None`` means ``x`` (with ``mask``).
        key_mask : torch.Tensor of bool, shape (batch, n_keys), default=None
            True on real rows of ``key``; ``None`` when all are real.
        attn_mask : torch.Tensor of bool or None, default=FROM_KEY_MASK
            ``key_padding_mask`` of the keys, when the caller computed it once.

        Returns
        -------
        out : torch.Tensor of shape (batch, n_rows, d_model)
            One output per row of ``x``.
        """
        if key is None:
            key, key_mask = x, mask
        b = self.norm1(x + self.dropout(self.attention(x, key, key_mask, attn_mask)))
        return self.norm2(b + self.dropout(self._feedforward(b)))

    def _feedforward(self, b):
        """rFF(B); without autograd (scoring) the ReLU runs in place, one ``[.., ff_size]`` pass less."""
        first, relu, second = self.feedforward
        hidden = first(b)
        return second(relu(hidden) if torch.is_grad_enabled() else hidden.relu_())


class InducedAttentionBlock(nn.Module):
    r"""Induced multi-head self-attention block IMSAB (Lee et al. 2019 ISAB; Pang et al. 2020, Eq. 7).

    With :math:`m` learned inducing points :math:`I \in \mathbb{R}^{m \times d}`,

    .. math:: \mathrm{IMSAB}_m(X) = \mathrm{MAB}\big(X, \mathrm{MAB}(I, X)\big),

    so the cost grows as :math:`O(m L)` instead of :math:`O(L^2)` for a list of :math:`L`
    documents. The inducing points attend to real documents only (padded keys are masked).

    Parameters
    ----------
    d_model : int
        Width of the representations.
    n_heads : int, default=1
        Attention heads.
    n_inducing_points : int, default=20
        Number :math:`m` of inducing points.
    ff_size : int, default=None
        Hidden width of each MAB's rFF.
    dropout : float, default=0.0
        Dropout inside both MABs.
    attention_dropout : float, default=None
        Dropout on the attention weights of both MABs (``None``: ``dropout``).

    Attributes
    ----------
    inducing_points : torch.nn.Parameter of shape (n_inducing_points, d_model)
        The learned inducing points :math:`I`.

    See Also
    --------
    MultiheadAttentionBlock : The MAB used twice here.

    References
    ----------
    J. Lee, Y. Lee, J. Kim, A. Kosiorek, S. Choi and Y. W. Teh. "Set Transformer: A
    Framework for Attention-based Permutation-Invariant Neural Networks." ICML 2019.

    L. Pang, J. Xu, Q. Ai, Y. Lan, X. Cheng and J.-R. Wen. "SetRank: Learning a
    Permutation-Invariant Ranking Model for Information Retrieval." SIGIR 2020.

    Examples
    --------
    >>> import torch
    >>> from sklearn_ltr.nn import InducedAttentionBlock
    >>> _ = torch.manual_seed(0)
    >>> block = InducedAttentionBlock(d_model=8, n_heads=2, n_inducing_points=4).eval()
    >>> block.inducing_points.shape
    torch.Size([4, 8])
    >>> x = torch.randn(2, 6, 8)
    >>> mask = torch.tensor([[True] * 6, [True, True, True, True, False, False]])
    >>> with torch.no_grad():
    ...     out = block(x, mask)
    >>> out.shape
    torch.Size([2, 6, 8])

    Padding never changes a real document's output, and the block is permutation
    equivariant:

    >>> x_other = x.clone()
    >>> x_other[1, 4:] = 100.0
    >>> permutation = torch.tensor([5, 3, 1, 0, 2, 4])
    >>> with torch.no_grad():
    ...     out_other = block(x_other, mask)
    ...     permuted = block(x[:, permutation], mask[:, permutation])
    >>> torch.allclose(out_other[mask], out[mask], atol=1e-6)
    True
    >>> torch.allclose(permuted, out[:, permutation], atol=1e-6)
    True
    """

    def __init__(self, d_model, n_heads=1, n_inducing_points=20, ff_size=None, dropout=0.0,
                 attention_dropout=None):
        super().__init__()
        self.inducing_points = nn.Parameter(torch.empty(n_inducing_points, d_model))
        nn.init.xavier_uniform_(self.inducing_points)
        self.summarise = MultiheadAttentionBlock(d_model, n_heads, ff_size, dropout, attention_dropout)
        self.broadcast = MultiheadAttentionBlock(d_model, n_heads, ff_size, dropout, attention_dropout)

    def forward(self, x, mask, attn_mask=FROM_KEY_MASK):
        r""":math:`\mathrm{IMSAB}_m(X)` of the documents of a padded batch.

        Parameters
        ----------
        x : torch.Tensor of shape (batch, list, d_model)
            Document representations :math:`X`.
        mask : torch.Tensor of bool, shape (batch, list)
            True on real documents (the inducing points attend to these only).
        attn_mask : torch.Tensor of bool or None, default=FROM_KEY_MASK
            ``key_padding_mask(mask)``, when the caller computed it once for all its blocks.

        Returns
        -------
        out : torch.Tensor of shape (batch, list, d_model)
            One output per document.
        """
        points = self.inducing_points.expand(x.shape[0], -1, -1)
        summary = self.summarise(points, None, key=x, key_mask=mask, attn_mask=attn_mask)
        return self.broadcast(x, None, key=summary, key_mask=None)

r"""SetRank's network (Pang et al., SIGIR 2020): stacked set-attention blocks over the list."""

from __future__ import annotations

from torch import nn

from sklearn_ltr.nn._attention import key_padding_mask
from sklearn_ltr.nn._cost import ModuleCost, bound_arguments
from sklearn_ltr.nn._mlp import ScoreHead, scatter_scores
from sklearn_ltr.nn._set_attention import InducedAttentionBlock, MultiheadAttentionBlock

__all__ = ["SetRankNet"]

BLOCKS = ("msab", "imsab")


class SetRankNet(nn.Module):
    r"""SetRank: permutation-equivariant scoring of a set of documents with stacked attention blocks.

    For the documents :math:`x_1, \dots, x_n` of a list, with optional initial ranks
    :math:`r_i \in \{1, 2, \dots\}` (e.g. from a first-stage ranker),

    .. math::
        z^{(0)}_i &= \mathrm{LayerNorm}\big(W_e x_i + b_e \;\big[ + P_{\min(r_i, R)} \big]\big) \\
        Z^{(k)} &= \mathrm{MSAB}(Z^{(k-1)}) \;\text{or}\; \mathrm{IMSAB}_m(Z^{(k-1)}),
                   \quad k = 1, \dots, N_b \\
        s_i &= w^\top z^{(N_b)}_i + b

    where :math:`P \in \mathbb{R}^{R \times d}` are learned ordinal embeddings of the initial
    rank (ranks beyond :math:`R` share the last one), MSAB is
    :class:`~sklearn_ltr.nn._set_attention.MultiheadAttentionBlock` applied as :math:`\mathrm{MAB}(Z, Z)`
    and IMSAB is :class:`~sklearn_ltr.nn._set_attention.InducedAttentionBlock` with :math:`m` inducing
    points. The score of each document is its own row-wise output (Pang et al. 2020, Eq. 8).

    Without initial ranks the network is permutation equivariant (Proposition 1): permuting
    the documents permutes the scores. With them, it is equivariant to permutations that
    carry each document's rank along. Padded documents are masked as attention keys, so
    padding never changes a real document's score.

    Parameters
    ----------
    n_features : int
        Input features per document.
    d_model : int, default=128
        Width :math:`d` of the document representations.
    n_blocks : int, default=2
        Number of stacked blocks :math:`N_b`.
    n_heads : int, default=4
        Attention heads per block (``d_model`` must be divisible by it).
    block : {"msab", "imsab"}, default="msab"
        Block type.
    n_inducing_points : int, default=20
        Inducing points :math:`m` of each IMSAB (ignored by MSAB).
    ff_size : int, default=None
        Hidden width of each block's row-wise feed-forward layer (``None``: ``2 * d_model``).
    dropout : float, default=0.1
        Dropout inside the blocks.
    attention_dropout : float, default=None
        Dropout on the attention weights (``None``: ``dropout``).
    use_initial_rank : bool, default=False
        Add the ordinal embedding :math:`P_{r_i}`; ``forward`` then needs ``initial_rank``.
    max_rank : int, default=256
        Number :math:`R` of ordinal embeddings.
    input_norm : bool, default=False
        Layer-normalise the embeddings :math:`z^{(0)}` before the first block (the
        LayerNorm above; without it :math:`z^{(0)}` is the bare embedding, as in the paper).
        :class:`~sklearn_ltr.SetRankRanker` always sets it: on raw, heavy-tailed features
        (MSLR's reach 4e5) the bare embedding gives the first block attention logits of
        about 1e8, and the fused attention kernels' backward pass on CUDA, which recomputes
        the logits, then overflows ``exp`` and returns NaN gradients (in float32 and more
        often in bf16). Normalised, every block's logits stay of order one, on every
        device and precision, as in pre-LN Transformers (Xiong et al. 2020). The default
        keeps networks saved before the option existed loadable.

    See Also
    --------
    sklearn_ltr.SetRankRanker : The estimator that trains this network.
    MultiheadAttentionBlock : The MSAB block.
    InducedAttentionBlock : The IMSAB block.

    References
    ----------
    L. Pang, J. Xu, Q. Ai, Y. Lan, X. Cheng and J.-R. Wen. "SetRank: Learning a
    Permutation-Invariant Ranking Model for Information Retrieval." SIGIR 2020.

    J. Lee, Y. Lee, J. Kim, A. Kosiorek, S. Choi and Y. W. Teh. "Set Transformer: A
    Framework for Attention-based Permutation-Invariant Neural Networks." ICML 2019.

    R. Xiong, Y. Yang, D. He, K. Zheng, S. Zheng, C. Xing, H. Zhang, Y. Lan, L. Wang and
    T.-Y. Liu. "On Layer Normalization in the Transformer Architecture." ICML 2020.

    Examples
    --------
    >>> import torch
    >>> from sklearn_ltr.nn import SetRankNet
    >>> _ = torch.manual_seed(0)
    >>> net = SetRankNet(n_features=4, d_model=8, n_heads=2, block="imsab", n_inducing_points=3).eval()
    >>> X = torch.randn(2, 5, 4)
    >>> mask = torch.tensor([[True] * 5, [True, True, False, False, False]])
    >>> with torch.no_grad():
    ...     scores = net(X, mask)
    >>> scores.shape
    torch.Size([2, 5])
    >>> scores[1, 2:].tolist()  # padding scores 0
    [0.0, 0.0, 0.0]

    Permuting the documents permutes their scores (Proposition 1 of the paper):

    >>> permutation = torch.tensor([4, 2, 0, 1, 3])
    >>> with torch.no_grad():
    ...     permuted = net(X[:, permutation], mask[:, permutation])
    >>> torch.allclose(permuted, scores[:, permutation], atol=1e-5)
    True

    With ``use_initial_rank=True`` the network also reads the 1-based rank of each
    document in an initial ranking (SetRank-init):

    >>> net = SetRankNet(n_features=4, d_model=8, n_heads=2, use_initial_rank=True, max_rank=10).eval()
    >>> initial_rank = torch.tensor([[1.0, 2.0, 3.0, 4.0, 5.0], [2.0, 1.0, 0.0, 0.0, 0.0]])
    >>> with torch.no_grad():
    ...     net(X, mask, initial_rank=initial_rank).shape
    torch.Size([2, 5])
    """

    @classmethod
    def memory_cost(cls, **kwargs):
        """:class:`~sklearn_ltr.nn._cost.ModuleCost`: MSAB blocks attend over the list (``[L, L]``), IMSAB
        blocks over inducing points (linear in ``L``)."""
        a = bound_arguments(cls, kwargs)
        d_model, heads, blocks = a["d_model"], a["n_heads"], a["n_blocks"]
        ff_size = 2 * d_model if a["ff_size"] is None else a["ff_size"]
        inducing = 2 * a["n_inducing_points"] * heads if a["block"] == "imsab" else 0
        width = blocks * (4 * d_model + ff_size + inducing) + d_model * (2 if a["input_norm"] else 1)
        if a["block"] != "msab":
            return ModuleCost(activation_width=width)
        dropout = a["dropout"] if a["attention_dropout"] is None else a["attention_dropout"]
        return ModuleCost(blocks, heads, width, d_model // heads, float(dropout))

    def __init__(
        self, n_features, d_model=128, n_blocks=2, n_heads=4, block="msab", n_inducing_points=20, ff_size=None,
        dropout=0.1, attention_dropout=None, use_initial_rank=False, max_rank=256, input_norm=False,
    ):
        super().__init__()
        if block not in BLOCKS:
            raise ValueError(f"block must be one of {list(BLOCKS)}; got {block!r}.")
        self.embed = nn.Linear(n_features, d_model)
        self.rank_embedding = nn.Embedding(max_rank, d_model) if use_initial_rank else None
        self.max_rank = max_rank
        self.register_module("input_norm", nn.LayerNorm(d_model) if input_norm else None)
        if block == "msab":
            blocks = (MultiheadAttentionBlock(d_model, n_heads, ff_size, dropout, attention_dropout)
                      for _ in range(n_blocks))
        else:
            blocks = (InducedAttentionBlock(d_model, n_heads, n_inducing_points, ff_size, dropout, attention_dropout)
                      for _ in range(n_blocks))
        self.blocks = nn.ModuleList(blocks)
        self.output = ScoreHead(d_model, 1)

    def forward(self, X, mask, initial_rank=None, **unused):
        """Score the documents of a padded batch, each in the context of its list.

        Parameters
        ----------
        X : torch.Tensor of shape (batch, list, n_features)
            Padded documents.
        mask : torch.Tensor of bool, shape (batch, list)
            True on real documents.
        initial_rank : torch.Tensor of shape (batch, list), default=None
            1-based rank of each document in the initial ranking (any float or integer
            dtype; values on padding are ignored). Required if and only if the network was
            built with ``use_initial_rank=True``.
        **unused
            Other per-document inputs of the batch, ignored.

        Returns
        -------
        scores : torch.Tensor of shape (batch, list)
            One score per document, 0 on padding.
        """
        z = self.embed(X)
        if self.rank_embedding is not None:
            if initial_rank is None:
                raise ValueError("this SetRank network embeds the initial rank: pass initial_rank.")
            index = initial_rank.round().long().clamp(1, self.max_rank) - 1
            z = z + self.rank_embedding(index)
        # A network pickled whole before input_norm existed has no such entry: read it softly.
        norm = self._modules.get("input_norm")
        if norm is not None:
            z = norm(z)
        attn_mask = key_padding_mask(mask)  # once for every block: one host sync on CUDA, not one a block
        for block in self.blocks:
            z = block(z, mask, attn_mask=attn_mask)
        return scatter_scores(self.output(z[mask]).squeeze(-1), mask)

r"""DASALC's network (Qin et al., ICLR 2021): data augmentation, self-attention, latent cross."""

from __future__ import annotations

import torch
from torch import nn

from sklearn_ltr.nn._attention import Dropout, SelfAttentionLayer, key_padding_mask, pad_rows
from sklearn_ltr.nn._cost import ModuleCost, bound_arguments
from sklearn_ltr.nn._mlp import ScoreHead, _MaskedBatchNorm, scatter_scores

__all__ = ["DASALCNet"]


def symmetric_log1p(x):
    r""":math:`\operatorname{sign}(x)\log(1 + |x|)`, elementwise."""
    if torch.is_grad_enabled() and x.requires_grad:
        return torch.copysign(torch.log1p(torch.abs(x)), x)
    # Nothing to differentiate (always so when scoring): one new tensor, transformed in place.
    return torch.abs(x).log1p_().copysign_(x)


class DASALCNet(nn.Module):
    r"""DASALC: a feed-forward tower crossed with multi-head self-attention over the list.

    For the documents :math:`x_1, \dots, x_n` of a list,

    .. math::
        \tilde x_i &= \mathrm{BN}\big(\operatorname{sign}(x_i)\log(1 + |x_i|)\big)
                      + \varepsilon_i, \quad \varepsilon_i \sim \mathcal{N}(0, \sigma^2 I)
                      \text{ in training only} \\
        h_i &= W_o\, g_{N}(\cdots g_1(\tilde x_i)) + b_o, \qquad
               g_l(z) = \mathrm{Dropout}(\mathrm{BN}(\mathrm{ReLU}(W_l z + b_l))) \\
        z^{(0)}_i &= \mathrm{ReLU}(W_z \tilde x_i + b_z), \quad
        z^{(k)} = \mathrm{LayerNorm}\big(z^{(k-1)} + \mathrm{MHA}(z^{(k-1)}, z^{(k-1)})\big) \\
        a_i &= W_a\, \mathrm{BN}(z^{(K)}_i) + b_a \\
        s_i &= w^\top \mathrm{Dropout}\big(\mathrm{ReLU}((1 + a_i) \odot h_i)\big) + b

    The product :math:`(1 + a_i) \odot h_i` is the latent cross (Beutel et al. 2018) of the
    document's own representation with its listwise context. The layout follows the
    TF-Ranking reference implementation of the paper (``tensorflow_ranking/research/dasalc.py``):
    batch normalisation of the inputs before the noise, ReLU-BN-Dropout hidden layers, a
    linear projection :math:`h_i`, DocumentInteractionAttention (post-norm self-attention
    layers without feed-forward sub-layer, on a ReLU projection of the inputs) and a ReLU and
    dropout before the output layer. One simplification: the attention branch reads the same
    normalised, noisy inputs :math:`\tilde x_i` as the tower.

    Batch-norm statistics are computed over the real documents only (``X[mask]``) and padded
    keys are masked in the attention, so padding never changes a real document's score and
    the scores are permutation equivariant. With ``n_attention_layers=0`` there is no
    attention branch and no latent cross: :math:`s_i = w^\top \mathrm{Dropout}(\mathrm{ReLU}(h_i)) + b`,
    a plain MLP (the ablation's baseline).

    Parameters
    ----------
    n_features : int
        Input features per document.
    hidden_size : int, default=512
        Width of the tower's hidden layers and of :math:`h_i` and :math:`a_i`.
    n_layers : int, default=2
        Number of FC-ReLU-BN-Dropout layers before the projection :math:`h_i`.
    dropout : float, default=0.4
        Dropout of the tower, the attention and the output layer.
    log1p : bool, default=True
        Apply the symmetric log1p transform to the inputs.
    noise_std : float, default=1.5
        Standard deviation :math:`\sigma` of the Gaussian noise added to the normalised inputs
        in training mode; never added in evaluation mode.
    n_attention_layers : int, default=4
        Self-attention layers :math:`K`; 0 disables the attention branch and the latent cross.
    n_heads : int, default=2
        Attention heads.
    head_size : int, default=100
        Width of each head and of the attention branch :math:`z` (Keras' ``key_dim``).
    attention_dropout : float, default=None
        Dropout on the attention weights (``None``: ``dropout``, as in the reference). On CPU
        it forces the unfused attention path; 0 is about a quarter faster to train.
    batch_norm_momentum : float, default=0.1
        PyTorch momentum of the running statistics (TF-Ranking's 0.9 in Keras' convention).

    See Also
    --------
    sklearn_ltr.DASALCRanker : The estimator that trains this network.
    SelfAttentionLayer : One layer of the attention branch.

    References
    ----------
    Z. Qin, L. Yan, H. Zhuang, Y. Tay, R. K. Pasumarthi, X. Wang, M. Bendersky and
    M. Najork. "Are Neural Rankers still Outperformed by Gradient Boosted Decision
    Trees?" ICLR 2021.

    R. K. Pasumarthi, H. Zhuang, X. Wang, M. Bendersky and M. Najork. "Permutation
    Equivariant Document Interaction Network for Neural Learning to Rank." ICTIR 2020.

    A. Beutel, P. Covington, S. Jain, C. Xu, J. Li, V. Gatto and E. H. Chi. "Latent Cross:
    Making Use of Context in Recurrent Recommender Systems." WSDM 2018.

    Examples
    --------
    Two lists of up to five documents, the second padded from three:

    >>> import torch
    >>> from sklearn_ltr.nn import DASALCNet
    >>> _ = torch.manual_seed(0)
    >>> net = DASALCNet(n_features=4, hidden_size=16, n_attention_layers=1, head_size=8).eval()
    >>> X = torch.randn(2, 5, 4)
    >>> mask = torch.tensor([[True] * 5, [True, True, True, False, False]])
    >>> with torch.no_grad():
    ...     scores = net(X, mask)
    >>> scores.shape
    torch.Size([2, 5])
    >>> scores[1, 3:].tolist()  # padding scores 0
    [0.0, 0.0]

    The scores are permutation equivariant, and padded slots do not change them:

    >>> permutation = torch.tensor([4, 2, 0, 1, 3])
    >>> X_other = X.clone()
    >>> X_other[1, 3:] = 100.0
    >>> with torch.no_grad():
    ...     permuted = net(X[:, permutation], mask[:, permutation])
    ...     other = net(X_other, mask)
    >>> torch.allclose(permuted, scores[:, permutation], atol=1e-5)
    True
    >>> torch.allclose(other, scores, atol=1e-5)
    True

    In training mode the inputs get Gaussian noise (data augmentation), so two passes differ;
    in evaluation mode (``eval()``, as when ranking) they are deterministic:

    >>> _ = net.train()
    >>> torch.equal(net(X, mask), net(X, mask))
    False
    >>> _ = net.eval()
    >>> torch.equal(net(X, mask), net(X, mask))
    True
    """

    @classmethod
    def memory_cost(cls, **kwargs):
        """:class:`~sklearn_ltr.nn._cost.ModuleCost`: the tower's layers plus q, k, v of every attention layer.

        The heads are ``head_size`` wide (Keras' convention); the attention weights are dropped
        out at ``attention_dropout`` (``None``: ``dropout``) in training.
        """
        a = bound_arguments(cls, kwargs)
        width = a["hidden_size"] * (a["n_layers"] + 2) + 3 * a["n_heads"] * a["head_size"] * a["n_attention_layers"]
        dropout = a["dropout"] if a["attention_dropout"] is None else a["attention_dropout"]
        return ModuleCost(a["n_attention_layers"], a["n_heads"], width, a["head_size"], float(dropout))

    def __init__(
        self, n_features, hidden_size=512, n_layers=2, dropout=0.4, log1p=True, noise_std=1.5,
        n_attention_layers=4, n_heads=2, head_size=100, attention_dropout=None, batch_norm_momentum=0.1,
    ):
        super().__init__()
        self.log1p = log1p
        self.noise_std = noise_std
        momentum = batch_norm_momentum
        self.input_norm = _MaskedBatchNorm(n_features, momentum=momentum)
        layers, width = [], n_features
        for _ in range(n_layers):
            layers += [nn.Linear(width, hidden_size), nn.ReLU(), _MaskedBatchNorm(hidden_size, momentum=momentum),
                       Dropout(dropout)]
            width = hidden_size
        layers.append(nn.Linear(width, hidden_size))
        self.tower = nn.Sequential(*layers)
        self.attention_input = None
        if n_attention_layers:
            self.attention_input = nn.Sequential(nn.Linear(n_features, head_size), nn.ReLU())
            self.attention = nn.ModuleList(
                SelfAttentionLayer(head_size, n_heads, head_size, dropout, attention_dropout)
                for _ in range(n_attention_layers)
            )
            self.context = nn.Sequential(_MaskedBatchNorm(head_size, momentum=momentum),
                                         nn.Linear(head_size, hidden_size))
        self.output = nn.Sequential(nn.ReLU(), Dropout(dropout), ScoreHead(hidden_size, 1))

    #: The tower scores each document on its own and the attention pads only its own inputs:
    #: the library's batches hand it the real documents, packed (``X`` of shape ``(n_real, n_features)``).
    packed_inputs = True

    def transform_inputs(self, X, mask):
        r"""The tower's inputs :math:`\tilde x` of the real documents.

        Symmetric log1p (if ``log1p``), batch normalisation over the real documents, and
        Gaussian noise in training mode.

        Parameters
        ----------
        X : torch.Tensor of shape (batch, list, n_features) or (n_real, n_features)
            Padded documents, or the real documents only in the row-major order of ``mask``.
        mask : torch.Tensor of bool, shape (batch, list)
            True on real documents.

        Returns
        -------
        x : torch.Tensor of shape (n_real, n_features)
            :math:`\tilde x_i` of the real documents, in the row-major order of ``mask``.
        """
        x = X if X.dim() == 2 else X[mask]
        if self.log1p:
            x = symmetric_log1p(x)
        x = self.input_norm(x)
        if self.training and self.noise_std > 0:
            x = x + self.noise_std * torch.randn_like(x)
        return x

    def forward(self, X, mask, **unused):
        """Score the documents of a padded or packed batch, each in the context of its list.

        Parameters
        ----------
        X : torch.Tensor of shape (batch, list, n_features) or (n_real, n_features)
            Padded documents, or the real documents only in the row-major order of ``mask``
            (``X_padded[mask]``, as the library's batches give them: ``packed_inputs``).
        mask : torch.Tensor of bool, shape (batch, list)
            True on real documents.
        **unused
            Other per-document inputs of the batch, ignored.

        Returns
        -------
        scores : torch.Tensor of shape (batch, list)
            One score :math:`s_i` per document, 0 on padding.
        """
        x = self.transform_inputs(X, mask)
        h = self.tower(x)
        if self.attention_input is not None:
            z = pad_rows(self.attention_input(x), mask)
            attn_mask = key_padding_mask(mask)  # once for every layer: one host sync on CUDA, not one a layer
            for layer in self.attention:
                z = layer(z, mask, attn_mask)
            h = h * (1.0 + self.context(z[mask]))
        return scatter_scores(self.output(h).squeeze(-1), mask)

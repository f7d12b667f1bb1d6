"""DASALCRanker: Qin et al.'s neural ranker (ICLR 2021) with scikit-learn's interface."""

from __future__ import annotations

import numpy as np

from sklearn_ltr.nn._dasalc import DASALCNet
from sklearn_ltr.rankers._neural import NeuralRanker, _check_number

__all__ = ["DASALCRanker"]


class DASALCRanker(NeuralRanker):
    r"""DASALC: Data Augmentation, Self-Attention and Latent Cross (Qin et al., ICLR 2021).

    A list-context neural ranker: each document is scored from its own features *and* the
    other documents of its query. For the documents :math:`x_i` of a query,

    .. math::
        \tilde x_i &= \mathrm{BN}\big(\operatorname{sign}(x_i)\log(1 + |x_i|)\big) + \varepsilon_i,
                      \quad \varepsilon_i \sim \mathcal{N}(0, \sigma^2 I) \text{ (training only)} \\
        h_i &= \text{FC-ReLU-BN-Dropout tower}(\tilde x_i), \qquad
        a_i = \text{multi-head self-attention over } \{\tilde x_j\}_{j \in q}\ (\text{at } i) \\
        s_i &= w^\top \mathrm{Dropout}\big(\mathrm{ReLU}((1 + a_i) \odot h_i)\big) + b

    trained by default with the softmax cross-entropy loss
    :math:`-\sum_i \frac{y_i}{\sum_j y_j} \log \frac{e^{s_i}}{\sum_j e^{s_j}}`. See
    :class:`sklearn_ltr.nn.DASALCNet` for the exact layers. Scores are permutation
    equivariant and padding never changes them; ``predict`` needs ``groups`` (the list
    context), is deterministic and never adds noise.

    The defaults are those of the paper's TF-Ranking reference configuration for
    MSLR-WEB30K (hidden size 512, two hidden layers plus a projection, dropout 0.4, noise
    :math:`\sigma = 1.5`, four attention layers of two 100-wide heads, Adam with learning
    rate 1e-3, softmax loss), except the batch size (32 queries instead of 128, for small
    data sets). The paper's ablation is reproduced by ``log1p=False``, ``noise_std=0`` and
    ``n_attention_layers=0`` (a plain MLP). For DASALC-ens, wrap it in
    :class:`sklearn_ltr.rankers.RankingEnsemble`.

    Parameters
    ----------
    hidden_size : int, default=512
        Width of the tower's hidden layers and of the latent cross.
    n_layers : int, default=2
        FC-ReLU-BN-Dropout layers of the tower (followed by a linear projection).
    dropout : float, default=0.4
        Dropout of the tower, the attention and the output layer.
    log1p : bool, default=True
        Apply ``sign(x) * log1p(|x|)`` to every input feature.
    noise_std : float, default=1.5
        Standard deviation of the Gaussian noise added to the (log1p-transformed,
        batch-normalised) inputs during training; 0 disables it.
    n_attention_layers : int, default=4
        Self-attention layers over the list; 0 removes attention and latent cross.
    n_heads : int, default=2
        Attention heads.
    head_size : int, default=100
        Width of each attention head and of the attention branch.
    attention_dropout : float, default=None
        Dropout on the attention weights; ``None`` uses ``dropout`` (the reference). On CPU,
        attention-weight dropout needs the unfused attention path: 0 trains about a quarter
        faster.
    loss : str or callable, default="softmax"
        A name of :data:`sklearn_ltr.losses.LOSSES` or a function
        ``loss(scores, labels, mask) -> scalar``.
    loss_params : dict, default=None
        Options of the loss, e.g. ``{"target": "softmax"}``.
    lr : float, default=1e-3
        Learning rate.
    optimizer : {"adam", "adamw", "sgd"} or torch optimizer class, default="adam"
        Optimiser.
    weight_decay : float, default=0.0
        L2 penalty of the optimiser.
    max_epochs : int, default=20
        Passes over the training queries.
    batch_size : int, default=32
        Queries per batch.
    max_list_length : int, default=None
        Training lists longer than this are subsampled, keeping relevant
        documents first; prediction always scores whole lists.
    validation_fraction : float, default=None
        Share of training queries held out to log ``valid_ndcg@10`` in
        ``history_`` each epoch. ``None`` holds out nothing (0.1 when
        ``early_stopping`` is on).
    early_stopping : bool, default=False
        Stop when the validation NDCG@10 has not improved for
        ``n_iter_no_change`` epochs and restore the best epoch's weights.
    n_iter_no_change : int, default=5
        Patience of early stopping, in epochs.
    device : {"auto", "cpu", "cuda"}, default="auto"
        ``"auto"`` trains on CUDA when available (bf16 autocast), else CPU.
        A model trained on CUDA pickles and loads on a CPU-only machine.
    random_state : int, RandomState instance or None, default=None
        Seeds weights, noise, dropout, shuffling, subsampling and the validation
        split: the same seed gives the same predictions on CPU.
    callbacks : list of skorch callbacks, default=None
        Extra skorch callbacks (e.g. ``LRScheduler``, ``Checkpoint``); copied at fit time.
    verbose : int, default=0
        0 silent, 1 a per-epoch table, 2 also a progress bar per epoch.

    Attributes
    ----------
    net_ : skorch.NeuralNet
        The trained skorch net (its ``module_`` is the :class:`~sklearn_ltr.nn.DASALCNet`).
    history_ : skorch.History
        Per-epoch training loss, validation loss and ``valid_ndcg@10``.
    n_iter_ : int
        Epochs run.
    device_ : str
        Device the model was trained on.
    n_features_in_ : int
        Number of features seen in ``fit``.

    See Also
    --------
    SetRankRanker : Stacked set-attention blocks, optionally with an initial ranking.
    RankingEnsemble : Seed ensembles (DASALC-ens).

    Notes
    -----
    ``predict(X, groups)`` scores each query as a whole; rows of different queries never
    influence each other. Scoring a subset of a query's documents changes their scores
    (list context), so ``predict`` is not invariant to sub-sampling rows.

    References
    ----------
    Z. Qin, L. Yan, H. Zhuang, Y. Tay, R. K. Pasumarthi, X. Wang, M. Bendersky and
    M. Najork. "Are Neural Rankers still Outperformed by Gradient Boosted Decision
    Trees?" ICLR 2021.

    Examples
    --------
    A small DASALC (the defaults are sized for MSLR-WEB30K) on the first 40 of 60 queries:

    >>> import numpy as np
    >>> from sklearn_ltr import DASALCRanker
    >>> from sklearn_ltr.datasets import make_ranking
    >>> from sklearn_ltr.metrics import ndcg_score
    >>> X, y, qid = make_ranking(n_queries=60, n_features=10, random_state=0)
    >>> train, test = qid < 40, qid >= 40
    >>> ranker = DASALCRanker(hidden_size=32, n_attention_layers=1, head_size=16, lr=1e-2, max_epochs=5,
    ...                       random_state=0)
    >>> ranker = ranker.fit(X[train], y[train], groups=qid[train])

    Each document is scored in the context of its query, so ``predict`` needs ``groups``.
    The test queries' NDCG@10 beats random scores':

    >>> scores = ranker.predict(X[test], groups=qid[test])
    >>> scores.shape == y[test].shape
    True
    >>> chance = ndcg_score(y[test], np.random.default_rng(0).random(len(scores)), qid[test], k=10)
    >>> ndcg_score(y[test], scores, qid[test], k=10) > chance + 0.05
    True

    The scores do not depend on the order of the rows:

    >>> order = np.random.default_rng(0).permutation(len(scores))
    >>> np.array_equal(ranker.predict(X[test][order], groups=qid[test][order]), scores[order])
    True
    """

    _list_context = True

    def __init__(
        self,
        hidden_size=512,
        n_layers=2,
        dropout=0.4,
        log1p=True,
        noise_std=1.5,
        n_attention_layers=4,
        n_heads=2,
        head_size=100,
        attention_dropout=None,
        *,
        loss="softmax",
        loss_params=None,
        lr=1e-3,
        optimizer="adam",
        weight_decay=0.0,
        max_epochs=20,
        batch_size=32,
        max_list_length=None,
        validation_fraction=None,
        early_stopping=False,
        n_iter_no_change=5,
        device="auto",
        random_state=None,
        callbacks=None,
        verbose=0,
    ):
        self.hidden_size = hidden_size
        self.n_layers = n_layers
        self.dropout = dropout
        self.log1p = log1p
        self.noise_std = noise_std
        self.n_attention_layers = n_attention_layers
        self.n_heads = n_heads
        self.head_size = head_size
        self.attention_dropout = attention_dropout
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
        self.random_state = random_state
        self.callbacks = callbacks
        self.verbose = verbose

    def _module_spec(self, n_features):
        _check_number("hidden_size", self.hidden_size, low=1, integer=True)
        _check_number("n_layers", self.n_layers, low=0, integer=True)
        _check_number("dropout", self.dropout, low=0, high=1)
        _check_number("noise_std", self.noise_std, low=0)
        _check_number("n_attention_layers", self.n_attention_layers, low=0, integer=True)
        _check_number("n_heads", self.n_heads, low=1, integer=True)
        _check_number("head_size", self.head_size, low=1, integer=True)
        _check_number("attention_dropout", self.attention_dropout, low=0, high=1, allow_none=True)
        if not isinstance(self.log1p, (bool, np.bool_)):
            raise ValueError(f"log1p must be True or False; got {self.log1p!r}.")
        return DASALCNet, {
            "n_features": n_features,
            "hidden_size": int(self.hidden_size),
            "n_layers": int(self.n_layers),
            "dropout": float(self.dropout),
            "log1p": bool(self.log1p),
            "noise_std": float(self.noise_std),
            "n_attention_layers": int(self.n_attention_layers),
            "n_heads": int(self.n_heads),
            "head_size": int(self.head_size),
            "attention_dropout": None if self.attention_dropout is None else float(self.attention_dropout),
        }

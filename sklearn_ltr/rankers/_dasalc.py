"""DASALCRanker: Qin et al.'s neural ranker (ICLR 2021) with scikit-learn's interface."""

from __future__ import annotations

from numbers import Integral, Real

from sklearn_ltr.nn._dasalc import DASALCNet
from sklearn_ltr.rankers._neural import NeuralRanker
from sklearn_ltr.rankers._neural_params import LOSS_CONSTRAINTS, TRAINING_CONSTRAINTS
from sklearn_ltr.utils._sklearn_compat import Interval

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

    Memory: each attention head holds an ``[L, L]`` matrix per list of ``L`` documents
    (about four per head and layer with their gradients in training). ``fit`` estimates the
    largest batch before training and raises a ``MemoryError`` naming ``max_list_length``
    when it would not fit; ``predict`` scores whole lists, in smaller batches when memory
    is short, and raises a ``MemoryError`` naming the query size when even one list
    cannot be scored.

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
    %(neural_parameters)s

    Attributes
    ----------
    net_ : skorch.NeuralNet
        The trained skorch net (its ``module_`` is the :class:`~sklearn_ltr.nn.DASALCNet`).
    history_ : skorch.History
        Per-epoch training loss, validation loss and ``valid_ndcg@10``; on a click log
        with ``propensity`` (``propensity_val`` for ``X_val``), its IPS estimate of DCG@10,
        ``valid_ips_dcg@10``, instead.
    n_iter_ : int
        Epochs run.
    best_iteration_ : int or None
        With ``early_stopping``, the epoch whose weights were kept; else None.
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

    # Clicks with their examination propensities (inverse propensity weighting) travel like ``groups``.
    __metadata_request__fit = {"propensity": True, "propensity_val": True}  # noqa: RUF012

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
        precision="32-true",
        random_state=None,
        callbacks=None,
        verbose=0,
        query_column=None,
        keep_training_state=False,
        distributed=False,
        checkpoint_dir=None,
    ):
        """Store the parameters unchanged; see :class:`DASALCRanker`."""
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
        self.precision = precision
        self.random_state = random_state
        self.callbacks = callbacks
        self.verbose = verbose
        self.query_column = query_column
        self.keep_training_state = keep_training_state
        self.distributed = distributed
        self.checkpoint_dir = checkpoint_dir

    _parameter_constraints = {  # noqa: RUF012
        "hidden_size": [Interval(Integral, 1, None, closed="left")],
        "n_layers": [Interval(Integral, 0, None, closed="left")],
        "dropout": [Interval(Real, 0, 1, closed="left")],
        "log1p": ["boolean"],
        "noise_std": [Interval(Real, 0, None, closed="left")],
        "n_attention_layers": [Interval(Integral, 0, None, closed="left")],
        "n_heads": [Interval(Integral, 1, None, closed="left")],
        "head_size": [Interval(Integral, 1, None, closed="left")],
        "attention_dropout": [Interval(Real, 0, 1, closed="left"), None],
        **LOSS_CONSTRAINTS,
        **TRAINING_CONSTRAINTS,
    }

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.ranker_tags.list_context = True
        return tags



    def _module_spec(self, n_features):
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

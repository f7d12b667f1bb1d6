"""RankNetRanker: a feed-forward scorer trained with a ranking loss."""

from __future__ import annotations

import numbers

from sklearn_ltr.nn import ACTIVATIONS, MLPScorer
from sklearn_ltr.rankers._neural import NeuralRanker, _check_number

__all__ = ["RankNetRanker"]


class RankNetRanker(NeuralRanker):
    r"""RankNet: a multi-layer perceptron scoring each document, trained with a ranking loss.

    The network :math:`f` scores each document on its own, :math:`s_i = f(x_i)`. With the
    default RankNet loss (Burges et al., 2005), for every pair of documents of a query
    with :math:`S_{ij} = \operatorname{sign}(y_i - y_j)`,

    .. math::
        C_{ij} = \tfrac{1}{2}(1 - S_{ij})\,\sigma(s_i - s_j) + \log\left(1 + e^{-\sigma (s_i - s_j)}\right),

    with :math:`\sigma` a scale (the loss's ``sigma`` option, 1 by default), not the
    logistic function; averaged over the pairs of each query and over queries. Any loss of
    :mod:`sklearn_ltr.losses` can replace it (``loss="softmax"``, ``"lambdarank"``, ...).

    Training runs on padded, length-bucketed batches of whole queries through
    skorch, on CUDA when available (``device="auto"``).

    Parameters
    ----------
    hidden_sizes : tuple of int, default=(64, 32)
        Width of each hidden layer; ``()`` for a linear scorer.
    activation : {"relu", "gelu", "tanh", "sigmoid", "leaky_relu", "elu"}, default="relu"
        Hidden-layer activation.
    dropout : float, default=0.0
        Dropout rate after each hidden layer.
    batch_norm : bool, default=False
        Batch normalisation (over the real documents of a batch) before each activation.
    loss : str or callable, default="ranknet"
        A name of :data:`sklearn_ltr.losses.LOSSES` or a function
        ``loss(scores, labels, mask) -> scalar``.
    loss_params : dict, default=None
        Options of the loss, e.g. ``{"sigma": 2.0}``.
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
        Seeds weights, dropout, shuffling, subsampling and the validation
        split: the same seed gives the same predictions on CPU.
    callbacks : list of skorch callbacks, default=None
        Extra skorch callbacks (e.g. ``LRScheduler``, ``Checkpoint``); copied at fit time.
    verbose : int, default=0
        0 silent, 1 a per-epoch table, 2 also a progress bar per epoch.

    Attributes
    ----------
    net_ : skorch.NeuralNet
        The trained skorch net (its ``module_`` is the torch network).
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
    LambdaMARTRanker : Gradient-boosted trees with the LambdaRank objective.
    DASALCRanker : A neural ranker that also sees the other documents of the list.
    sklearn_ltr.nn.MLPScorer : The torch network.

    References
    ----------
    C. Burges, T. Shaked, E. Renshaw, A. Lazier, M. Deeds, N. Hamilton and G.
    Hullender. "Learning to rank using gradient descent." ICML 2005.

    Examples
    --------
    ``groups`` holds the query id of each row; rows of a query need not be contiguous
    (``shuffle=True`` interleaves the queries):

    >>> import numpy as np
    >>> from sklearn_ltr import RankNetRanker
    >>> from sklearn_ltr.datasets import make_ranking
    >>> from sklearn_ltr.metrics import ndcg_score
    >>> X, y, qid = make_ranking(n_queries=60, n_features=10, shuffle=True, random_state=0)
    >>> train, test = qid < 40, qid >= 40
    >>> ranker = RankNetRanker(hidden_sizes=(16,), lr=1e-2, max_epochs=5, random_state=0)
    >>> ranker = ranker.fit(X[train], y[train], groups=qid[train])
    >>> ranker.n_iter_
    5

    ``predict`` returns one score per row, in input order; a pointwise scorer needs no
    ``groups`` to score. The test queries' NDCG@10 beats random scores':

    >>> scores = ranker.predict(X[test])
    >>> scores.shape == y[test].shape
    True
    >>> ndcg = ndcg_score(y[test], scores, qid[test], k=10)
    >>> chance = ndcg_score(y[test], np.random.default_rng(0).random(len(scores)), qid[test], k=10)
    >>> ndcg > chance + 0.05
    True
    >>> ranker.score(X[test], y[test], groups=qid[test]) == ndcg  # score is the mean NDCG@10
    True

    Any loss of :mod:`sklearn_ltr.losses` trains the same network, e.g. ListNet's softmax
    cross-entropy:

    >>> listnet = RankNetRanker(hidden_sizes=(16,), loss="softmax", lr=1e-2, max_epochs=5, random_state=0)
    >>> listnet.fit(X[train], y[train], groups=qid[train]).predict(X[test]).shape == y[test].shape
    True
    """

    def __init__(
        self,
        hidden_sizes=(64, 32),
        activation="relu",
        dropout=0.0,
        batch_norm=False,
        *,
        loss="ranknet",
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
        self.hidden_sizes = hidden_sizes
        self.activation = activation
        self.dropout = dropout
        self.batch_norm = batch_norm
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
        sizes = tuple(self.hidden_sizes)
        if not all(isinstance(s, numbers.Integral) and not isinstance(s, bool) and s >= 1 for s in sizes):
            raise ValueError(f"hidden_sizes must be positive integers; got {self.hidden_sizes!r}.")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}; got {self.activation!r}.")
        _check_number("dropout", self.dropout, low=0, high=1)
        return MLPScorer, {
            "n_features": n_features,
            "hidden_sizes": sizes,
            "activation": self.activation,
            "dropout": float(self.dropout),
            "batch_norm": bool(self.batch_norm),
        }

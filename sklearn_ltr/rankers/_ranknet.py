"""RankNetRanker: a feed-forward scorer trained with a ranking loss."""

from __future__ import annotations

from numbers import Real

from sklearn_ltr.nn import ACTIVATIONS, MLPScorer
from sklearn_ltr.rankers._neural import NeuralRanker
from sklearn_ltr.rankers._neural_params import LOSS_CONSTRAINTS, TRAINING_CONSTRAINTS, positive_int_tuple
from sklearn_ltr.utils._sklearn_compat import Interval, StrOptions

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

    Memory: the pairwise losses (``"ranknet"``, ``"lambdarank"``) and the sorting
    surrogates (ApproxNDCG, NeuralSort) hold several ``[L, L]`` float32 tensors per list
    of ``L`` documents (RankNet: 12,000 documents need about 4.6 GB for one list). ``fit``
    estimates the largest batch before training and, if it would not fit in the memory
    available, raises a ``MemoryError`` that names ``max_list_length`` (training lists are
    then subsampled; prediction always scores whole lists, pointwise, in bounded memory).

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
    %(neural_parameters)s

    Attributes
    ----------
    net_ : skorch.NeuralNet
        The trained skorch net (its ``module_`` is the torch network).
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

    # Clicks with their examination propensities (inverse propensity weighting) travel like ``groups``.
    __metadata_request__fit = {"propensity": True, "propensity_val": True}  # noqa: RUF012

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
        precision="32-true",
        random_state=None,
        callbacks=None,
        verbose=0,
        query_column=None,
        keep_training_state=False,
        distributed=False,
        checkpoint_dir=None,
    ):
        """Store the parameters unchanged; see :class:`RankNetRanker`."""
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
        self.precision = precision
        self.random_state = random_state
        self.callbacks = callbacks
        self.verbose = verbose
        self.query_column = query_column
        self.keep_training_state = keep_training_state
        self.distributed = distributed
        self.checkpoint_dir = checkpoint_dir

    _parameter_constraints = {  # noqa: RUF012
        "hidden_sizes": [positive_int_tuple()],
        "activation": [StrOptions(set(ACTIVATIONS))],
        "dropout": [Interval(Real, 0, 1, closed="left")],
        "batch_norm": ["boolean"],
        **LOSS_CONSTRAINTS,
        **TRAINING_CONSTRAINTS,
    }

    def _module_spec(self, n_features):
        return MLPScorer, {
            "n_features": n_features,
            "hidden_sizes": tuple(self.hidden_sizes),
            "activation": self.activation,
            "dropout": float(self.dropout),
            "batch_norm": bool(self.batch_norm),
        }

"""SetRankRanker: Pang et al.'s permutation-invariant set ranker (SIGIR 2020)."""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.utils.validation import check_is_fitted

from sklearn_ltr.nn._setrank import BLOCKS, SetRankNet
from sklearn_ltr.rankers._neural import NeuralRanker
from sklearn_ltr.rankers._neural_params import LOSS_CONSTRAINTS, TRAINING_CONSTRAINTS
from sklearn_ltr.rankers._validation_set import ValidationData
from sklearn_ltr.utils._sklearn_compat import Interval, StrOptions, _num_samples

__all__ = ["SetRankRanker"]


def _check_initial_rank(initial_rank, n_samples):
    """1-based ranks as a float64 array of length ``n_samples``, or None."""
    if initial_rank is None:
        return None
    ranks = np.asarray(initial_rank)
    if ranks.ndim != 1 or ranks.shape[0] != n_samples:
        raise ValueError(
            f"initial_rank must be 1-D with one rank per row of X ({n_samples}); got shape {ranks.shape}."
        )
    if ranks.dtype.kind not in "iuf" or not np.all(np.isfinite(ranks)):
        raise ValueError("initial_rank must hold finite numbers (1-based ranks within each query).")
    if np.any(ranks < 1) or np.any(ranks != np.round(ranks)):
        raise ValueError("initial_rank must hold whole numbers >= 1 (1 = top of the initial ranking).")
    return ranks.astype(np.float64)


class SetRankRanker(NeuralRanker):
    r"""SetRank: a permutation-invariant ranking model over sets of documents (Pang et al., SIGIR 2020).

    The documents of a query are embedded, passed through :math:`N_b` stacked multi-head
    self-attention blocks (MSAB) or induced blocks (IMSAB, from the Set Transformer) and
    scored one by one:

    .. math::
        Z^{(0)} = X W_e [+ P_{r}], \qquad
        Z^{(k)} = \mathrm{MSAB}(Z^{(k-1)}) \text{ or } \mathrm{IMSAB}_m(Z^{(k-1)}), \qquad
        s_i = w^\top z^{(N_b)}_i + b,

    with :math:`\mathrm{MSAB}(Z) = \mathrm{LN}(B + \mathrm{rFF}(B))`,
    :math:`B = \mathrm{LN}(Z + \mathrm{MHA}(Z, Z, Z))` and
    :math:`\mathrm{IMSAB}_m(Z) = \mathrm{MSAB}`-like :math:`\mathrm{MAB}(Z, \mathrm{MAB}(I_m, Z))`
    with :math:`m` learned inducing points (cost linear in the list length). See
    :class:`sklearn_ltr.nn.SetRankNet`.

    Without an initial ranking the model is permutation equivariant (the paper's
    Proposition 1): the scores do not depend on the order of the documents. Passing
    ``initial_rank`` (1-based ranks of a first-stage ranker, one per row, routable like
    ``groups``) to ``fit`` adds learned ordinal embeddings :math:`P_{r_i}` (SetRank-init);
    ``predict`` and ``score`` then need it too. The default loss is the attention rank loss
    the paper trains with (Ai et al. 2018); any registered loss can replace it.

    Parameters
    ----------
    d_model : int, default=128
        Width of the document representations.
    n_blocks : int, default=2
        Stacked attention blocks.
    n_heads : int, default=4
        Heads per block; ``d_model`` must be divisible by it.
    block : {"msab", "imsab"}, default="msab"
        Multi-head self-attention blocks, or induced blocks.
    n_inducing_points : int, default=20
        Inducing points of each IMSAB (ignored with ``block="msab"``).
    ff_size : int, default=None
        Hidden width of each block's row-wise feed-forward layer (``None``: ``2 * d_model``).
    dropout : float, default=0.1
        Dropout inside the blocks.
    attention_dropout : float, default=None
        Dropout on the attention weights; ``None`` uses ``dropout``. On CPU, attention-weight
        dropout needs the unfused attention path: 0 trains about a quarter faster.
    max_rank : int, default=256
        Number of ordinal embeddings; initial ranks beyond it share the last one.
    %(neural_parameters)s

    Attributes
    ----------
    net_ : skorch.NeuralNet
        The trained skorch net (its ``module_`` is the :class:`~sklearn_ltr.nn.SetRankNet`).
    uses_initial_rank_ : bool
        Whether ``fit`` received ``initial_rank`` (``predict`` then needs it).
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
    DASALCRanker : Feed-forward tower crossed with self-attention.

    Notes
    -----
    SetRank has no built-in feature transform: put a scaler or
    :class:`~sklearn_ltr.preprocessing.Log1pTransformer` before it in a ``Pipeline`` when
    features are heavy-tailed.

    Memory: each MSAB head holds an ``[L, L]`` attention matrix per list of ``L``
    documents (about four per head and block with their gradients in training); IMSAB
    blocks hold ``[L, m]`` ones instead (``m = n_inducing_points``). ``fit`` estimates the
    largest batch before training and raises a ``MemoryError`` naming ``max_list_length``
    when it would not fit; ``predict`` scores whole lists, in smaller batches when memory
    is short, and raises a ``MemoryError`` naming the query size when even one list
    cannot be scored.

    Under metadata routing ``initial_rank`` is requested by
    ``fit``, ``predict`` and ``score`` like ``groups``; the library's NDCG scorer passes only
    ``groups`` to ``predict``, so a search over a model with an initial rank needs a scorer
    that forwards it.

    References
    ----------
    L. Pang, J. Xu, Q. Ai, Y. Lan, X. Cheng and J.-R. Wen. "SetRank: Learning a
    Permutation-Invariant Ranking Model for Information Retrieval." SIGIR 2020.

    J. Lee, Y. Lee, J. Kim, A. Kosiorek, S. Choi and Y. W. Teh. "Set Transformer: A
    Framework for Attention-based Permutation-Invariant Neural Networks." ICML 2019.

    Q. Ai, K. Bi, J. Guo and W. B. Croft. "Learning a Deep Listwise Context Model for
    Ranking Refinement." SIGIR 2018.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ltr import SetRankRanker
    >>> from sklearn_ltr.datasets import make_ranking
    >>> from sklearn_ltr.metrics import ndcg_score
    >>> X, y, qid = make_ranking(n_queries=60, n_features=10, random_state=0)
    >>> train, test = qid < 40, qid >= 40
    >>> ranker = SetRankRanker(d_model=16, n_blocks=1, lr=1e-2, max_epochs=5, random_state=0)
    >>> ranker = ranker.fit(X[train], y[train], groups=qid[train])

    Each document is scored in the context of its query, so ``predict`` needs ``groups``:

    >>> scores = ranker.predict(X[test], groups=qid[test])
    >>> scores.shape == y[test].shape
    True
    >>> chance = ndcg_score(y[test], np.random.default_rng(0).random(len(scores)), qid[test], k=10)
    >>> ndcg_score(y[test], scores, qid[test], k=10) > chance + 0.05
    True

    SetRank-init: the 1-based rank of each row in an initial ranking of its query (here by
    feature 0, as a first-stage ranker such as BM25 would give) is passed to ``fit``,
    ``predict`` and ``score``:

    >>> by_feature = np.lexsort((-X[:, 0], qid))  # by query, then by feature 0, descending
    >>> initial_rank = np.empty(len(qid), dtype=np.int64)
    >>> initial_rank[by_feature] = np.arange(len(qid)) - np.searchsorted(qid[by_feature], qid[by_feature]) + 1
    >>> init = SetRankRanker(d_model=16, n_blocks=1, lr=1e-2, max_epochs=5, random_state=0)
    >>> init = init.fit(X[train], y[train], groups=qid[train], initial_rank=initial_rank[train])
    >>> init.uses_initial_rank_
    True
    >>> init.predict(X[test], groups=qid[test], initial_rank=initial_rank[test]).shape == y[test].shape
    True
    """

    __metadata_request__fit = {"groups": True, "initial_rank": True, "propensity": True,  # noqa: RUF012
                               "propensity_val": True, "initial_rank_val": True}
    __metadata_request__predict = {"groups": True, "initial_rank": True}  # noqa: RUF012
    __metadata_request__score = {"groups": True, "initial_rank": True}  # noqa: RUF012

    def __init__(
        self,
        d_model=128,
        n_blocks=2,
        n_heads=4,
        block="msab",
        n_inducing_points=20,
        ff_size=None,
        dropout=0.1,
        attention_dropout=None,
        max_rank=256,
        *,
        loss="attention_rank",
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
        """Store the parameters unchanged; see :class:`SetRankRanker`."""
        self.d_model = d_model
        self.n_blocks = n_blocks
        self.n_heads = n_heads
        self.block = block
        self.n_inducing_points = n_inducing_points
        self.ff_size = ff_size
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        self.max_rank = max_rank
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
        "d_model": [Interval(Integral, 1, None, closed="left")],
        "n_blocks": [Interval(Integral, 0, None, closed="left")],
        "n_heads": [Interval(Integral, 1, None, closed="left")],
        "block": [StrOptions(set(BLOCKS))],
        "n_inducing_points": [Interval(Integral, 1, None, closed="left")],
        "ff_size": [Interval(Integral, 1, None, closed="left"), None],
        "dropout": [Interval(Real, 0, 1, closed="left")],
        "attention_dropout": [Interval(Real, 0, 1, closed="left"), None],
        "max_rank": [Interval(Integral, 1, None, closed="left")],
        **LOSS_CONSTRAINTS,
        **TRAINING_CONSTRAINTS,
    }

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.ranker_tags.list_context = True
        tags.ranker_tags.extra_fit_inputs = ("initial_rank",)
        tags.ranker_tags.extra_predict_inputs = ("initial_rank",)
        return tags



    def _module_spec(self, n_features):
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads}).")
        return SetRankNet, {
            "n_features": n_features,
            "d_model": int(self.d_model),
            "n_blocks": int(self.n_blocks),
            "n_heads": int(self.n_heads),
            "block": self.block,
            "n_inducing_points": int(self.n_inducing_points),
            "ff_size": None if self.ff_size is None else int(self.ff_size),
            "dropout": float(self.dropout),
            "attention_dropout": None if self.attention_dropout is None else float(self.attention_dropout),
            "use_initial_rank": self.uses_initial_rank_,
            "max_rank": int(self.max_rank),
            # Bounds the first block's attention logits whatever the features' scale (see SetRankNet).
            "input_norm": True,
        }

    def fit(self, X, y, groups=None, initial_rank=None, sample_weight=None, propensity=None, X_val=None, y_val=None,
            groups_val=None, propensity_val=None, initial_rank_val=None):
        """Train on the queries of ``X``, optionally with an initial ranking.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Dense, finite features.
        y : array-like of shape (n_samples,)
            Graded relevance labels (non-negative).
        groups : array-like of shape (n_samples,), default=None
            Query id of each row; ``None`` makes all rows one query (with a warning).
        initial_rank : array-like of shape (n_samples,), default=None
            1-based rank of each row within its query in an initial ranking (1 = top);
            adds the ordinal embedding. Routable metadata, like ``groups``.
        sample_weight : array-like of shape (n_samples,), default=None
            Weight of each row's query, the same for every row of a query. Routed like
            ``groups``.
        propensity : array-like of shape (n_samples,), default=None
            With clicks as ``y``: each row's examination propensity, for inverse propensity
            weighting (see :meth:`RankNetRanker.fit <sklearn_ltr.RankNetRanker.fit>`; needs a
            loss that takes click weights, e.g. ``loss="softmax"``). Routed like ``groups``.
        X_val, y_val, groups_val, propensity_val : array-like, default=None
            A separate validation set, monitored by early stopping (see
            :meth:`RankNetRanker.fit <sklearn_ltr.RankNetRanker.fit>`). Routed like ``groups``;
            inside a ``Pipeline``, use ``transform_input=["X_val"]``.
        initial_rank_val : array-like of shape (n_val_samples,), default=None
            The initial ranks of the validation rows: required with ``X_val`` if and only if
            ``initial_rank`` is given. Routed like ``groups``.

        Returns
        -------
        self : object
            The fitted ranker.
        """
        ranks = _check_initial_rank(initial_rank, _num_samples(X))
        self.uses_initial_rank_ = ranks is not None
        extras = {} if ranks is None else {"initial_rank": ranks}
        validation = ValidationData(X_val, y_val, groups_val, propensity_val,
                                    extras={"initial_rank": initial_rank_val})
        return self._fit(X, y, groups, sample_weight=sample_weight, propensity=propensity, validation=validation,
                         **extras)

    def _validation_extras(self, validation):
        ranks = validation.extras["initial_rank"]
        if self.uses_initial_rank_ != (ranks is not None):
            raise ValueError(
                "SetRankRanker.fit: pass initial_rank_val with X_val if and only if initial_rank is given (the "
                "validation rows are scored with the ordinal embedding of their initial ranks)."
            )
        ranks = _check_initial_rank(ranks, _num_samples(validation.X))
        return {} if ranks is None else {"initial_rank": ranks}

    def predict(self, X, groups=None, initial_rank=None):
        """Score every row; one score per row of ``X``, in input order.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to score.
        groups : array-like of shape (n_samples,), default=None
            Query id of each row (the list context); ``None`` makes all rows one
            query, with a warning.
        initial_rank : array-like of shape (n_samples,), default=None
            Initial 1-based ranks; required if and only if ``fit`` received them.

        Returns
        -------
        scores : ndarray of shape (n_samples,)
            One score per row, in input order; higher ranks first.
        """
        extras = self._rank_extras(X, initial_rank)
        return self._predict(X, groups, **extras)

    def _rank_extras(self, X, initial_rank):
        check_is_fitted(self)
        uses = getattr(self, "uses_initial_rank_", False)
        if uses and initial_rank is None:
            raise ValueError(
                "This SetRankRanker was fitted with initial_rank; pass initial_rank to predict and score too."
            )
        if not uses and initial_rank is not None:
            raise ValueError("This SetRankRanker was fitted without initial_rank; do not pass it to predict.")
        ranks = _check_initial_rank(initial_rank, _num_samples(X))
        return {} if ranks is None else {"initial_rank": ranks}

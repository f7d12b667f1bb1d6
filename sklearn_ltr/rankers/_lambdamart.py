"""LambdaMART: gradient-boosted trees with the LambdaRank (or XE-NDCG) objective, on LightGBM.

The estimator. What LightGBM receives of its parameters is built in ``_lambdamart_params``,
the checks of ``fit``'s labels and queries and its validation sets in ``_lambdamart_data``,
training and prediction on a Dask cluster in ``_lambdamart_dask``.
"""

from __future__ import annotations

from numbers import Integral, Real

from sklearn_ltr._query_column import QUERY_COLUMN_CONSTRAINTS, document_query_column
from sklearn_ltr.base import BaseRanker
from sklearn_ltr.clicks import check_propensity
from sklearn_ltr.rankers import _lambdamart_dask as _dask  # imports dask only when given Dask input
from sklearn_ltr.rankers._lambdamart_data import check_lambdarank, eval_fit_kwargs
from sklearn_ltr.rankers._lambdamart_params import lgbm_eval_at, lgbm_kwargs
from sklearn_ltr.rankers._lambdarank_inputs import (
    as_spmatrix,
    check_init_score,
    check_positions,
    checked_position_callback,
    eval_entries,
    row_weights,
    sort_rows,
)
from sklearn_ltr.rankers._unbiased_lambdarank import click_objective
from sklearn_ltr.rankers._validation_set import VALIDATION_REQUEST, ValidationData
from sklearn_ltr.utils._sklearn_compat import Interval, StrOptions, validate_estimator_params

__all__ = ["LambdaMARTRanker"]

@document_query_column
class LambdaMARTRanker(BaseRanker):
    r"""LambdaMART ranker: LightGBM's ``LGBMRanker`` with ``objective="lambdarank"`` or ``"rank_xendcg"``.

    LambdaMART (Burges, 2010) boosts regression trees on the LambdaRank gradients: for
    each pair of documents :math:`i, j` of a query with :math:`y_i > y_j` and scores
    :math:`s_i, s_j`,

    .. math::
        \lambda_{ij} = \frac{-\sigma\,|\Delta \mathrm{NDCG}_{ij}|}{1 + e^{\sigma (s_i - s_j)}},
        \qquad \lambda_i = \sum_{j: y_i > y_j} \lambda_{ij} - \sum_{j: y_j > y_i} \lambda_{ji},

    the RankNet gradient weighted by the change of NDCG that swapping the two documents
    would cause (:math:`\sigma` is LightGBM's ``sigmoid`` parameter, 1 by default); each
    tree fits the :math:`\lambda_i` by Newton steps.

    With ``objective="rank_xendcg"`` the trees minimise LightGBM's XE-NDCG instead (Bruch,
    2021), a listwise cross entropy between the softmax of a query's scores and a
    distribution of its gains: each round draws :math:`\gamma_i \sim U(0, 1)` per document and

    .. math::
        \ell = -\sum_i \phi_i \log \rho_i, \qquad
        \rho_i = \frac{e^{s_i}}{\sum_j e^{s_j}}, \qquad
        \phi_i = \frac{2^{y_i} - \gamma_i}{\sum_j (2^{y_j} - \gamma_j)},

    a convex bound on NDCG whose gradient :math:`\rho_i - \phi_i` costs :math:`O(n)` per
    query instead of lambdarank's :math:`O(n^2)` pairs. Its gains are always
    :math:`2^y - \gamma`: ``label_gain`` then only sets the gains of the NDCG that
    ``eval_set`` reports and early stopping watches. ``lambdarank_truncation_level``,
    ``position_bias``, ``lambdarank_position_bias_regularization`` and ``fit``'s
    ``positions`` and ``propensity`` (which need pairs or position biases) are lambdarank-only:
    another value than their default is refused. The :math:`\gamma` draws are seeded by
    ``random_state`` (LightGBM's ``objective_seed``), one stream per query in the order of the
    sorted query ids: the model does not depend on the order of the rows, but renaming the
    queries so that they sort in another order draws other :math:`\gamma`, a model as
    different as another ``random_state`` (lambdarank has no such draws).

    ``fit(X, y, groups, init_score=bm25)`` starts boosting from per-row first-stage scores
    (LightGBM's ``init_score``): the trees learn a correction :math:`f(x)` to them, and the
    model's ranking score is ``init_score + f(x)``. ``predict(X)`` returns :math:`f(x)`, the
    trees' score alone, as LightGBM's ``predict`` does; rank new rows by
    ``ranker.predict(X) + init_score`` (see Notes).

    Rows may come in any order: ``fit`` sorts them by ``groups``, each query's rows in
    their canonical order (by their features compared as numbers, then their label and display
    position: ``sklearn_ltr._blocks.canonical_query_order``), hands the run lengths to
    LightGBM as ``group`` and trains exactly the model a ``lightgbm.LGBMRanker`` given the
    rows in that order would. LightGBM's lambdarank depends on the order of a query's rows;
    the canonical order makes the model the same, bit for bit, whatever the order of the
    rows given to ``fit`` (``eval_set`` entries are sorted the same way, so ``evals_result_``
    does not depend on it either). ``predict`` scores each row on its own and returns the
    scores in input row order.

    From clicks, ``fit(X, clicks, groups=session, positions=pos)`` trains LightGBM's
    unbiased lambdarank (LightGBM 4.1+, after Unbiased LambdaMART, Hu et al., 2019): it
    learns one bias :math:`b_p` per display position together with the trees and computes
    the gradients at :math:`s_i + b_{p_i}`, so that the trees need not explain the clicks
    that the position alone brought. ``predict`` uses the trees alone (no position).

    With ``position_bias="unbiased_lambdamart"`` the same call trains the pairwise debiasing
    of Hu et al. (2019) instead, through a custom objective
    (``sklearn_ltr.rankers._unbiased_lambdarank``): each pair
    of a clicked document :math:`i` and a non-clicked :math:`j` of a list is weighted by
    :math:`1 / (t^+_{p_i} t^-_{p_j})`, the biases of the clicked document's position and of the
    non-clicked one's, re-estimated in closed form after every round from the pairs' losses,

    .. math::
        t^+_k = \Bigl(\frac{\sum_{p_i = k} c_{ij} / t^-_{p_j}}{\sum_{p_i = 1} c_{ij} / t^-_{p_j}}
        \Bigr)^{1/(p+1)}

    (and :math:`t^-_k` alike), with :math:`c_{ij}` the pair's :math:`|\Delta \mathrm{NDCG}|`-weighted
    logistic loss and :math:`p` = ``lambdarank_position_bias_regularization``. With known
    examination propensities :math:`\theta`, ``fit(X, clicks, groups=session, propensity=theta)``
    weighs each pair by its clicked document's clipped inverse propensity
    :math:`1 / \max(\theta_i, 0.05)` (:func:`sklearn_ltr.clicks.inverse_propensity_weights`),
    the pairwise inverse propensity weighting that per-row weights cannot express.

    Parameters
    ----------
    objective : {"lambdarank", "rank_xendcg"}, default="lambdarank"
        LightGBM's ranking objective: LambdaRank (pairwise gradients weighted by
        :math:`|\Delta \mathrm{NDCG}|`, the only one that learns from clicks with
        ``positions`` or ``propensity``) or XE-NDCG (listwise cross entropy, above). Setting
        ``objective`` in ``lgbm_params`` too is allowed only with the same objective.
    n_estimators : int, default=100
        Number of boosting rounds (trees).
    learning_rate : float, default=0.1
        Shrinkage of each tree.
    num_leaves : int, default=31
        Maximum leaves per tree.
    max_depth : int, default=-1
        Maximum tree depth; ``-1`` for no limit.
    min_child_samples : int, default=20
        Minimum rows in a leaf (LightGBM's ``min_data_in_leaf``).
    min_child_weight : float, default=1e-3
        Minimum sum of hessians in a leaf (``min_sum_hessian_in_leaf``).
    subsample : float, default=1.0
        Fraction of rows drawn for each bagging round (``bagging_fraction``);
        used only when ``subsample_freq > 0``.
    subsample_freq : int, default=0
        Bag every ``subsample_freq`` rounds (``bagging_freq``); 0 disables bagging.
    colsample_bytree : float, default=1.0
        Fraction of features drawn for each tree (``feature_fraction``).
    reg_alpha : float, default=0.0
        L1 regularisation of leaf values.
    reg_lambda : float, default=0.0
        L2 regularisation of leaf values.
    label_gain : sequence of float, default=None
        Gain of each relevance grade; ``label_gain[g]`` is the gain of label ``g``.
        ``None`` is LightGBM's ``2**g - 1`` for ``g = 0 .. 30``. Labels must be
        smaller than ``len(label_gain)``. With ``objective="rank_xendcg"`` it sets only the
        gains of the evaluation NDCG (``evals_result_``, early stopping).
    lambdarank_truncation_level : int, default=30
        Number of top-ranked documents of each query whose pairs get gradients.
        ``objective="lambdarank"`` only.
    lambdarank_position_bias_regularization : float, default=0.0
        Regularisation of the position biases, used only when ``fit`` receives ``positions``;
        larger values shrink the biases towards "no position bias" in both modes. With
        ``position_bias="lightgbm"``: LightGBM's L2 penalty of that name on its additive
        biases. With ``"unbiased_lambdamart"``: the exponent :math:`p` of Hu et al.'s update,
        :math:`t = (\text{cost ratio})^{1/(p+1)}` (XGBoost's ``lambdarank_bias_norm``).
    position_bias : {"lightgbm", "unbiased_lambdamart"}, default="lightgbm"
        How ``fit(..., positions=...)`` corrects for position bias: LightGBM's unbiased
        lambdarank (an additive bias per position learned by Newton steps, LightGBM 4.1+), or
        Unbiased LambdaMART (Hu et al., 2019: each clicked/non-clicked pair weighted by
        :math:`1 / (t^+_{p_i} t^-_{p_j})`, biases estimated in closed form each round; ``y``
        must be 0/1 clicks). Ignored without ``positions``.
        ``objective="lambdarank"`` only (as is ``lambdarank_position_bias_regularization``).
    eval_at : sequence of int, default=(1, 3, 5, 10)
        Cut-offs of the NDCG computed on each ``eval_set`` every round
        (``evals_result_``); early stopping watches all of them unless
        ``lgbm_params={"first_metric_only": True}``.
    early_stopping_rounds : int, default=None
        Stop when no NDCG in ``eval_at`` on an ``eval_set`` improved for this many
        rounds; ``predict`` then uses ``best_iteration_``. Needs ``eval_set``.
    importance_type : {"split", "gain"}, default="split"
        What ``feature_importances_`` counts.
    random_state : int, RandomState instance or None, default=None
        Seed of bagging and feature sampling. Training is deterministic for a
        given seed and number of threads.
    n_jobs : int, default=None
        Number of threads; ``None`` lets LightGBM (OpenMP) choose, negative
        values follow joblib's convention.
    verbose : int, default=-1
        LightGBM's verbosity; ``-1`` silences it.
    lgbm_params : dict, default=None
        Any other LightGBM parameter (``max_bin``, ``min_split_gain``,
        ``lambdarank_norm``, ``deterministic``, ...), passed verbatim. Names (or
        LightGBM aliases) of this estimator's own parameters are refused, as are
        ``eval_at`` and ``early_stopping_round``; ``objective`` (or an alias) only when it
        names the constructor's ``objective`` (e.g. ``"xendcg"`` with ``"rank_xendcg"``).
    client : distributed.Client, default=None
        Cluster that trains on Dask input (``lightgbm.dask.DaskLGBMRanker``);
        ``None`` uses the active client. Ignored for in-memory input.
    %(query_column)s

    Attributes
    ----------
    model_ : lightgbm.LGBMRanker
        The fitted LightGBM estimator.
    booster_ : lightgbm.Booster
        Its booster.
    position_bias_clicked_ : ndarray of shape (max_position,)
        Only after ``fit(..., positions=...)`` with ``position_bias="unbiased_lambdamart"``:
        :math:`t^+_k`, the estimated bias of a clicked document at position ``k = 1, 2, ...``
        relative to position 1 (``position_bias_clicked_[0] == 1``), as of the last round run.
    position_bias_unclicked_ : ndarray of shape (max_position,)
        :math:`t^-_k`, the same for a non-clicked document.
    feature_importances_ : ndarray of shape (n_features,)
        Importance of each feature (see ``importance_type``).
    best_iteration_ : int or None
        1-based round with the best validation score when early stopping ran,
        else ``None``.
    n_estimators_ : int
        Number of trees in the fitted model. After early stopping LightGBM keeps the
        trees up to the best round only, so this is ``best_iteration_``; the number of
        rounds run is the length of each list in ``evals_result_``.
    evals_result_ : dict
        ``{eval_name: {"ndcg@k": [value per round]}}`` for each ``eval_set``.
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Column names, when ``X`` was a DataFrame with string column names.
    dask_info_ : dict
        Only after a fit on Dask input: whether the rows were shuffled to gather the
        queries (``"shuffled"``), ``"n_partitions"``, ``"n_queries"``, ``"n_samples"``, and
        the seconds spent arranging and training.

    See Also
    --------
    lightgbm.LGBMRanker : The wrapped estimator, which needs rows sorted by query.
    RankingEnsemble : Average of rankers trained with different seeds.

    Notes
    -----
    ``n_estimators``, ``early_stopping_rounds`` and ``eval_at`` are settings and
    live here; ``fit`` takes only data (``groups``, ``positions``, ``eval_set``) plus
    LightGBM callbacks, since every ``fit`` argument is routable metadata.

    Positions: LightGBM treats them as categories (one bias per distinct value, numbered
    in order of first appearance), so 1-based ranks are passed as they are; positions
    beyond the first page can be clipped by the caller to share one bias. The learned
    biases stay inside LightGBM's objective (written only to its debug log): LightGBM
    exposes no API to read them, so this estimator has no attribute for them (the biases of
    ``position_bias="unbiased_lambdamart"`` are estimated by this library's objective and kept
    in ``position_bias_clicked_`` and ``position_bias_unclicked_``). Validation
    sets need no positions: LightGBM's NDCG on them scores the trees alone. When the
    logging ranker already sorted documents by relevance, position and relevance are
    confounded and the biases can absorb relevance (on ``simulate_clicks`` logs with
    ``w = 1``, unbiased lambdarank ranked worse than plain lambdarank on clicks); a
    positive ``lambdarank_position_bias_regularization`` shrinks them. Judge it on
    held-out relevance judgments.

    First-stage scores: LightGBM adds ``init_score`` to the scores it boosts from and
    evaluates, not to what ``predict`` returns, so ``predict(X)`` is the trees' correction
    alone and the model's full score is ``predict(X) + init_score``. ``predict`` takes no
    ``init_score`` argument on purpose: scikit-learn's scorers, ``cross_val_predict`` and a
    ``Pipeline`` call ``predict(X)`` alone, so the sum is written where the first-stage scores
    are at hand. Inside a search, the scorer therefore ranks the held-out fold by the trees
    alone; ``init_score`` is routed to ``fit`` (requested by default, like ``groups``) and split
    with the rows by the cross-validation. The validation rows of ``X_val`` need their
    ``init_score_val``, and ``eval_set`` entries (which have none) are refused with
    ``init_score``, so that early stopping always watches the summed score.

    After a search, ``GridSearchCV.predict`` takes no ``groups``; call
    ``search.best_estimator_.predict(X, groups=qid)`` (a pointwise model such as
    this one also scores correctly without ``groups``).

    References
    ----------
    C. J. C. Burges. "From RankNet to LambdaRank to LambdaMART: An Overview."
    Microsoft Research Technical Report MSR-TR-2010-82, 2010.

    G. Ke, Q. Meng, T. Finley, T. Wang, W. Chen, W. Ma, Q. Ye and T.-Y. Liu. "LightGBM: A
    Highly Efficient Gradient Boosting Decision Tree." NeurIPS 2017.

    Z. Hu, Y. Wang, Q. Peng and H. Li. "Unbiased LambdaMART: An Unbiased Pairwise
    Learning-to-Rank Algorithm." WWW 2019.

    S. Bruch. "An Alternative Cross Entropy Loss for Learning-to-Rank." WWW 2021.

    Examples
    --------
    ``groups`` holds the query id of each row; rows of a query need not be contiguous
    (``shuffle=True`` interleaves the queries). ``n_jobs=1`` because the data are tiny:

    >>> import numpy as np
    >>> from sklearn_ltr import LambdaMARTRanker
    >>> from sklearn_ltr.datasets import make_ranking
    >>> from sklearn_ltr.metrics import ndcg_score
    >>> X, y, qid = make_ranking(n_queries=60, n_features=10, shuffle=True, random_state=0)
    >>> train, test = qid < 40, qid >= 40
    >>> ranker = LambdaMARTRanker(n_estimators=20, n_jobs=1, random_state=0)
    >>> ranker = ranker.fit(X[train], y[train], groups=qid[train])
    >>> scores = ranker.predict(X[test])  # one score per row, in input order
    >>> scores.shape == y[test].shape, ranker.feature_importances_.shape
    (True, (10,))
    >>> chance = ndcg_score(y[test], np.random.default_rng(0).random(len(scores)), qid[test], k=10)
    >>> ndcg_score(y[test], scores, qid[test], k=10) > chance + 0.1
    True

    Early stopping on validation queries, which bring their own query ids:

    >>> stopped = LambdaMARTRanker(n_estimators=500, early_stopping_rounds=5, n_jobs=1, random_state=0)
    >>> stopped = stopped.fit(X[train], y[train], groups=qid[train], eval_set=[(X[test], y[test], qid[test])])
    >>> sorted(stopped.evals_result_["valid_0"])
    ['ndcg@1', 'ndcg@10', 'ndcg@3', 'ndcg@5']
    >>> rounds_run = len(stopped.evals_result_["valid_0"]["ndcg@10"])
    >>> stopped.best_iteration_ < rounds_run < 500
    True
    >>> stopped.n_estimators_ == stopped.best_iteration_  # the trees kept
    True

    Model selection with scikit-learn's metadata routing: the same ``groups`` reach
    ``GroupKFold``, every ``fit`` and the scorer, which ranks each test fold by query.
    ``GridSearchCV.predict`` takes no ``groups``; the best estimator's ``predict`` does:

    >>> import sklearn
    >>> from sklearn.model_selection import GridSearchCV, GroupKFold
    >>> from sklearn_ltr import ndcg_scorer
    >>> with sklearn.config_context(enable_metadata_routing=True):
    ...     search = GridSearchCV(LambdaMARTRanker(n_estimators=20, n_jobs=1, random_state=0),
    ...                           {"num_leaves": [4, 16]}, cv=GroupKFold(n_splits=3), scoring=ndcg_scorer)
    ...     search = search.fit(X[train], y[train], groups=qid[train])
    >>> search.best_params_["num_leaves"] in (4, 16), bool(search.best_score_ > chance)
    (True, True)
    >>> search.best_estimator_.predict(X[test], groups=qid[test]).shape == y[test].shape
    True

    XE-NDCG instead of LambdaRank, boosting from a first-stage score (here the first
    feature stands in for BM25); the model's score is the first-stage score plus the trees':

    >>> xendcg = LambdaMARTRanker(objective="rank_xendcg", n_estimators=20, n_jobs=1, random_state=0)
    >>> xendcg = xendcg.fit(X[train], y[train], groups=qid[train], init_score=X[train, 0])
    >>> full_score = xendcg.predict(X[test]) + X[test, 0]
    >>> bool(ndcg_score(y[test], full_score, qid[test], k=10) > chance)
    True

    From position-biased clicks: the display position of each row (1 = top) makes
    LightGBM learn a bias per position alongside the trees. Under metadata routing
    ``positions`` reaches ``fit`` like ``groups``:

    >>> from sklearn_ltr.datasets import simulate_clicks
    >>> positions, clicks = simulate_clicks(y[train], qid[train], w=0.0, y_max=4, random_state=0)
    >>> unbiased = LambdaMARTRanker(n_estimators=20, n_jobs=1, random_state=0)
    >>> unbiased = unbiased.fit(X[train], clicks, groups=qid[train], positions=positions)
    >>> unbiased.predict(X[test]).shape == y[test].shape  # no position at serving time
    True

    Unbiased LambdaMART (Hu et al., 2019) instead weighs each clicked/non-clicked pair by the
    inverse biases of their positions, estimated with the trees (``position_bias_clicked_[k - 1]``
    is the bias of a click at position ``k``, relative to position 1); known propensities weigh
    each pair by its click's inverse propensity:

    >>> debiased = LambdaMARTRanker(n_estimators=20, position_bias="unbiased_lambdamart",
    ...                             lambdarank_position_bias_regularization=1.0, n_jobs=1, random_state=0)
    >>> debiased = debiased.fit(X[train], clicks, groups=qid[train], positions=positions)
    >>> debiased.position_bias_clicked_.tolist()[0], len(debiased.position_bias_clicked_) == int(positions.max())
    (1.0, True)
    >>> ips = LambdaMARTRanker(n_estimators=20, n_jobs=1, random_state=0)
    >>> ips = ips.fit(X[train], clicks, groups=qid[train], propensity=1.0 / positions)
    >>> ips.predict(X[test]).shape == y[test].shape
    True

    On a Dask cluster (``pip install sklearn-ltr[dask]``) the same estimator trains with
    LightGBM's distributed learner when ``X``, ``y`` and ``groups`` are Dask collections;
    the rows of a query may lie in different partitions. This part needs a running
    cluster, so it is not run as a test:

    >>> import dask.array as da  # doctest: +SKIP
    >>> from distributed import Client, LocalCluster  # doctest: +SKIP
    >>> client = Client(LocalCluster(n_workers=2, threads_per_worker=1))  # doctest: +SKIP
    >>> Xd, yd, qd = (da.from_array(a, chunks=500) for a in (X, y, qid))  # doctest: +SKIP
    >>> distributed_ranker = LambdaMARTRanker(n_estimators=20).fit(Xd, yd, groups=qd)  # doctest: +SKIP
    >>> distributed_ranker.predict(Xd).compute().shape == y.shape  # a lazy Dask array  # doctest: +SKIP
    True
    >>> distributed_ranker.to_local().predict(X).shape == y.shape  # for serving  # doctest: +SKIP
    True
    """

    _accept_sparse = ("csr", "csc")
    _allow_nan = True
    _integer_labels = True

    # Per-query weights and display positions travel with the queries, like ``groups``.
    # So does a separate validation set (X_val, y_val, groups_val). ``propensity`` is not requested
    # by default: a search that routes propensities to an IPS scorer keeps training plain LambdaMART
    # unless ``set_fit_request(propensity=True)`` asks for pairwise IPS.
    # First-stage scores (init_score, init_score_val) are per-row data too, requested by default.
    __metadata_request__fit = {"groups": True, "sample_weight": True, "positions": True,  # noqa: RUF012
                               "propensity": False, "init_score": True, "init_score_val": True,
                               **VALIDATION_REQUEST}

    # LightGBM's own limits (docs' Parameters page), checked before LightGBM sees them.
    _parameter_constraints = {  # noqa: RUF012
        "objective": [StrOptions({"lambdarank", "rank_xendcg"})],
        "n_estimators": [Interval(Integral, 1, None, closed="left")],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "num_leaves": [Interval(Integral, 2, 131072, closed="both")],
        "max_depth": [Integral],
        "min_child_samples": [Interval(Integral, 0, None, closed="left")],
        "min_child_weight": [Interval(Real, 0, None, closed="left")],
        "subsample": [Interval(Real, 0, 1, closed="right")],
        "subsample_freq": [Interval(Integral, 0, None, closed="left")],
        "colsample_bytree": [Interval(Real, 0, 1, closed="right")],
        "reg_alpha": [Interval(Real, 0, None, closed="left")],
        "reg_lambda": [Interval(Real, 0, None, closed="left")],
        "label_gain": ["array-like", None],
        "lambdarank_truncation_level": [Interval(Integral, 1, None, closed="left")],
        "lambdarank_position_bias_regularization": [Interval(Real, 0, None, closed="left")],
        "position_bias": [StrOptions({"lightgbm", "unbiased_lambdamart"})],
        "eval_at": [Interval(Integral, 1, None, closed="left"), "array-like"],
        "early_stopping_rounds": [Interval(Integral, 1, None, closed="left"), None],
        "importance_type": [StrOptions({"split", "gain"})],
        "random_state": ["random_state"],
        "n_jobs": [Integral, None],
        "verbose": [Integral],
        "lgbm_params": [dict, None],
        "client": "no_validation",
        "query_column": QUERY_COLUMN_CONSTRAINTS,
    }

    def __init__(
        self,
        *,
        objective="lambdarank",
        n_estimators=100,
        learning_rate=0.1,
        num_leaves=31,
        max_depth=-1,
        min_child_samples=20,
        min_child_weight=1e-3,
        subsample=1.0,
        subsample_freq=0,
        colsample_bytree=1.0,
        reg_alpha=0.0,
        reg_lambda=0.0,
        label_gain=None,
        lambdarank_truncation_level=30,
        lambdarank_position_bias_regularization=0.0,
        position_bias="lightgbm",
        eval_at=(1, 3, 5, 10),
        early_stopping_rounds=None,
        importance_type="split",
        random_state=None,
        n_jobs=None,
        verbose=-1,
        lgbm_params=None,
        client=None,
        query_column=None,
    ):
        self.objective = objective
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.num_leaves = num_leaves
        self.max_depth = max_depth
        self.min_child_samples = min_child_samples
        self.min_child_weight = min_child_weight
        self.subsample = subsample
        self.subsample_freq = subsample_freq
        self.colsample_bytree = colsample_bytree
        self.reg_alpha = reg_alpha
        self.reg_lambda = reg_lambda
        self.label_gain = label_gain
        self.lambdarank_truncation_level = lambdarank_truncation_level
        self.lambdarank_position_bias_regularization = lambdarank_position_bias_regularization
        self.position_bias = position_bias
        self.eval_at = eval_at
        self.early_stopping_rounds = early_stopping_rounds
        self.importance_type = importance_type
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.lgbm_params = lgbm_params
        self.client = client
        self.query_column = query_column

    def fit(self, X, y, groups=None, *, positions=None, sample_weight=None, eval_set=None, eval_names=None,
            callbacks=None, X_val=None, y_val=None, groups_val=None, propensity=None, init_score=None,
            init_score_val=None):
        """Train the LambdaMART model.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Features; NaN marks a missing value.
        y : array-like of shape (n_samples,)
            Relevance grades: whole numbers ``0 <= y < len(label_gain)`` (clicks: 0 or 1).
        groups : array-like of shape (n_samples,), default=None
            Query id of each row (integers or strings, any order). ``None``
            treats all rows as one query and warns.
        positions : array-like of shape (n_samples,), default=None
            Display position of each row, whole numbers ``>= 1`` (1 = top), for learning
            from clicks: LightGBM then learns one bias per position (unbiased lambdarank,
            LightGBM 4.1+). Routed like ``groups``. Not needed for ``eval_set`` nor at
            prediction; not supported on Dask input. ``position_bias`` chooses the correction.
        sample_weight : array-like of shape (n_samples,), default=None
            Weight of each row's query, the same for every row of a query
            (LightGBM multiplies each document's gradients by it). Routed like
            ``groups``. Only relative weights matter: with ``positions`` they are
            rescaled to mean 1.
        eval_set : list of (X_val, y_val, groups_val) tuples, default=None
            Validation queries, each set with its own query ids, evaluated every
            round with NDCG at ``eval_at`` and used by early stopping.
        eval_names : list of str, default=None
            Names of the ``eval_set`` entries in ``evals_result_``.
        callbacks : list of callable, default=None
            LightGBM callbacks (``lightgbm.log_evaluation``, ...).
        X_val, y_val, groups_val : array-like, default=None
            A separate validation set, the interface every ranker shares: appended to
            ``eval_set`` under the name ``"valid"`` (its curves are
            ``evals_result_["valid"]``) and used by early stopping. Routed like ``groups``,
            so that inside a ``Pipeline(..., transform_input=["X_val"])`` it goes through
            the same steps as ``X``.
        propensity : array-like of shape (n_samples,), default=None
            Known examination propensity of each row, in (0, 1] (e.g.
            ``estimate.propensity_of(positions)`` of a propensity estimate): each pair of a
            clicked and a non-clicked document is weighted by the clicked one's
            ``1 / max(propensity, 0.05)``. ``y`` must be 0/1 clicks; not with ``positions``.
            Under metadata routing it reaches ``fit`` after ``set_fit_request(propensity=True)``
            (not requested by default, so that propensities routed to an IPS scorer do not
            change what a search trains). ``objective="lambdarank"`` only, as are ``positions``.
        init_score : array-like of shape (n_samples,), default=None
            First-stage score of each row (e.g. BM25), finite: boosting starts from it
            (LightGBM's ``init_score``) and the trees learn a correction to it. ``predict``
            returns the correction alone; rank by ``predict(X) + init_score``. Routed like
            ``groups`` (requested by default). Not with ``eval_set`` entries other than the
            training data: give the validation set as ``X_val`` with ``init_score_val``.
        init_score_val : array-like of shape (n_val_samples,), default=None
            First-stage score of each row of ``X_val``; needed when both ``X_val`` and
            ``init_score`` are given, refused without them. Routed like ``groups``.

        Returns
        -------
        self : LambdaMARTRanker
            The fitted ranker.
        """
        validate_estimator_params(self)
        if _dask.is_dask_collection(X):  # Dask array / DataFrame: train on the cluster
            self._check_dask_fit_args(positions, sample_weight, propensity)
            if init_score is not None or init_score_val is not None:
                raise ValueError("init_score is not supported on Dask input yet; fit in memory (NumPy arrays).")
            if X_val is not None:
                raise ValueError("X_val is not supported on Dask input yet; train with a fixed n_estimators.")
            return _dask.fit_dask(self, X, y, groups, eval_set=eval_set, callbacks=callbacks)
        import lightgbm

        kwargs = lgbm_kwargs(self)
        eval_at = lgbm_eval_at(self)
        X_in, y_in, groups_in = X, y, groups
        X, y, query_groups = self._validate_fit_data(X, y, groups)
        check_lambdarank(y, query_groups, "y", label_gain=self.label_gain, groups_none=groups is None)
        # By query, each query's rows in canonical order (positions too): the model does not depend on row order.
        pairwise = self._pairwise_debiasing(positions, propensity)
        per_row = () if positions is None else (check_positions(positions, X.shape[0]),)
        if propensity is not None:
            per_row = (check_propensity(propensity, X.shape[0]),)
        if init_score is not None:
            per_row = (*per_row, check_init_score(init_score, X.shape[0]))
        X_sorted, y_sorted, *per_row_sorted = sort_rows(query_groups, X, y, *per_row)
        fit_kwargs = {}
        if init_score is not None:
            fit_kwargs["init_score"] = per_row_sorted.pop()
        weights = None if sample_weight is None else row_weights(
            sample_weight, query_groups, to_mean_one=positions is not None or propensity is not None)
        objective = None
        if pairwise:  # our own objective: pairs weighted by their positions' biases or the click's propensity
            objective = click_objective(self, y_sorted, query_groups.sizes, query_weights=weights,
                                        **{"positions" if positions is not None else "propensity": per_row_sorted[0]})
            kwargs["objective"] = objective
            kwargs.setdefault("metric", "ndcg")
        elif positions is not None:  # LightGBM's unbiased lambdarank: one learned bias per display position
            callbacks = [*(callbacks or []), checked_position_callback(*per_row_sorted)]
            kwargs["lambdarank_position_bias_regularization"] = float(self.lambdarank_position_bias_regularization)
        if weights is not None and not pairwise:
            fit_kwargs["sample_weight"] = weights
        training = ((X_in, y_in, groups_in), (X_sorted, y_sorted, query_groups.sizes))
        init_scores = self._eval_init_scores(eval_set, training[0], init_score, init_score_val, X_val)
        validation = ValidationData(X_val, y_val, groups_val, extras={"init_score": init_score_val})
        eval_set, eval_names = self._with_validation_set(eval_set, eval_names, validation)
        fit_kwargs.update(eval_fit_kwargs(self, eval_set, eval_names, training, init_scores))
        model = lightgbm.LGBMRanker(**kwargs)
        model.fit(X_sorted, y_sorted, group=query_groups.sizes, eval_at=eval_at, callbacks=callbacks, **fit_kwargs)
        for name in ("position_bias_clicked_", "position_bias_unclicked_"):
            self.__dict__.pop(name, None)
        if objective is not None:
            objective.release()  # the fitted model keeps no training rows
            if positions is not None:
                self.position_bias_clicked_ = objective.bias_clicked_.copy()
                self.position_bias_unclicked_ = objective.bias_unclicked_.copy()
        return self._set_fitted(model)

    def _eval_init_scores(self, eval_set, training, init_score, init_score_val, X_val):
        """The first-stage scores of each evaluation entry (``eval_set``'s, then ``X_val``'s), or None.

        Boosting from ``init_score`` and evaluating from zero (or the other way round) would
        rank validation queries by a score the model is not trained to complete: refused.
        """
        if init_score is None:
            if init_score_val is not None and X_val is not None:
                raise ValueError("fit got init_score_val without init_score: the validation rows start from "
                                 "first-stage scores only when the training rows do; pass init_score too, or "
                                 "neither.")
            return None
        entries = [] if eval_set is None else list(eval_entries(eval_set))
        if any(not (entry[0] is training[0] and entry[1] is training[1] and entry[2] is training[2])
               for entry in entries):
            raise ValueError("fit got init_score, but the eval_set entries have no first-stage scores, so their "
                             "NDCG would score the trees alone: pass the validation set as X_val, y_val, "
                             "groups_val with its init_score_val instead of eval_set.")
        if X_val is not None and init_score_val is None:
            raise ValueError("fit got init_score but not init_score_val: the validation rows (X_val) need their "
                             "first-stage scores too; pass init_score_val, one per row of X_val.")
        return [None] * len(entries) + ([init_score_val] if X_val is not None else [])

    def _pairwise_debiasing(self, positions, propensity):
        """Whether ``fit`` trains the pairwise-debiased objective; refuses inputs that do not go together."""
        if self.objective != "lambdarank" and (positions is not None or propensity is not None):
            name = "positions" if positions is not None else "propensity"
            raise ValueError(
                f"fit got {name}, which only objective='lambdarank' can use (position biases, pairwise inverse "
                f"propensity weights); objective={self.objective!r} has no pairs nor position biases. Use "
                f"objective='lambdarank' to learn from clicks, or fit without {name}."
            )
        if positions is not None and propensity is not None:
            raise ValueError(
                "pass either positions (the position biases are then estimated) or propensity (known "
                "examination propensities), not both; propensity=estimate.propensity_of(positions) already "
                "holds what the positions say."
            )
        if propensity is not None:
            return True
        if self.position_bias == "unbiased_lambdamart":
            if positions is None:
                raise ValueError(
                    "position_bias='unbiased_lambdamart' estimates the bias of each display position: pass "
                    "fit(..., positions=pos) (1-based ranks), or propensity=... for known propensities."
                )
            return True
        return False

    def _with_validation_set(self, eval_set, eval_names, validation):
        """``(eval_set, eval_names)`` with ``fit``'s ``X_val`` appended as ``"valid"`` (unchanged without it)."""
        if validation.X is None:
            validation.check_absent()
            return eval_set, eval_names
        if self.query_column is None:  # with a query column, the eval_set path reads the ids from X_val
            X_val, y_val, groups_val, _ = validation.checked(self)
        else:
            X_val, y_val, groups_val = validation.X, validation.y, validation.groups
        entries = [] if eval_set is None else list(eval_entries(eval_set))
        names = list(eval_names) if eval_names is not None else [f"valid_{i}" for i in range(len(entries))]
        if "valid" in names:
            raise ValueError("eval_names already holds 'valid', the name of fit's X_val: rename that eval_set entry.")
        return [*entries, (X_val, y_val, groups_val)], [*names, "valid"]

    def _check_dask_fit_args(self, positions, sample_weight, propensity=None):
        """Refuse the ``fit`` inputs that the Dask path (``lightgbm.dask``) cannot take."""
        if self.query_column is not None:
            raise ValueError("query_column is not supported on Dask input; pass groups as a Dask collection.")
        if sample_weight is not None:
            raise ValueError("sample_weight is not supported on Dask input yet; fit without it.")
        if propensity is not None:
            raise ValueError("propensity is not supported on Dask input; fit in memory (NumPy arrays).")
        if positions is not None:
            raise ValueError(
                "positions (unbiased lambdarank) is not supported on Dask input: lightgbm.dask has no "
                "position argument. Fit in memory (X, y, groups and positions as NumPy arrays) or without "
                "positions."
            )

    def _set_fitted(self, model):
        """Keep the fitted ``LGBMRanker`` and the attributes read from it; returns ``self``."""
        self.model_ = model
        self.booster_ = model.booster_
        self.feature_importances_ = model.feature_importances_
        best = model.best_iteration_
        self.best_iteration_ = int(best) if best is not None and best > 0 else None
        self.n_estimators_ = int(model.booster_.current_iteration())
        self.evals_result_ = model.evals_result_
        return self

    def predict(self, X, groups=None):
        """Score each row; LambdaMART is pointwise, so ``groups`` is not needed.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Rows to score.
        groups : array-like of shape (n_samples,), default=None
            Accepted (and checked for length) so that routed ``groups`` are
            welcome; scores do not depend on it.

        Returns
        -------
        scores : ndarray of shape (n_samples,)
            One score per row, in input order; higher ranks first. Uses
            ``best_iteration_`` when early stopping ran. After ``fit(..., init_score=...)``
            this is the trees' score alone (LightGBM's ``predict`` does not add the
            first-stage score): rank new rows by ``scores + init_score``.
        """
        if _dask.is_dask_collection(X):  # a lazy Dask array of scores, in input row order
            return _dask.predict_dask(self, X, groups)
        X = self._validate_predict_data(X, groups)
        return self.model_.predict(as_spmatrix(X))

    def to_local(self):
        """A plain single-machine copy (``client=None``, same booster and predictions), e.g. for serving.

        Returns
        -------
        ranker : LambdaMARTRanker
            A fitted copy with ``client=None``, which needs no Dask cluster.
        """
        return _dask.to_local(self)


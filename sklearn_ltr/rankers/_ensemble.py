"""RankingEnsemble: average the scores of copies of a ranker trained with different seeds (DASALC-ens)."""

from __future__ import annotations

import copy
from numbers import Integral

import numpy as np
from sklearn.base import MetaEstimatorMixin, clone
from sklearn.utils import Bunch, check_random_state, get_tags
from sklearn.utils.metadata_routing import MetadataRouter, MethodMapping, process_routing
from sklearn.utils.validation import check_is_fitted

from sklearn_ltr._groups import order_within_groups
from sklearn_ltr._query_column import query_column_of, query_ids_from_X
from sklearn_ltr.base import BaseRanker, resolve_groups
from sklearn_ltr.utils._sklearn_compat import (
    HasMethods,
    Interval,
    StrOptions,
    _routing_enabled,
    validate_estimator_params,
)

__all__ = ["RankingEnsemble", "normalize_scores"]

def normalize_scores(scores, query_groups, method):
    r"""Normalise scores within each query, vectorised over all queries.

    Parameters
    ----------
    scores : ndarray of shape (n_samples,)
        Scores in input row order.
    query_groups : QueryGroups
        The query of each row.
    method : {None, "zscore", "rank"}
        ``None`` returns the scores unchanged. ``"zscore"``:
        :math:`(s_i - \mu_q) / \sigma_q` with the query's mean and (population) standard
        deviation, 0 for a query whose scores are all equal. ``"rank"``:
        :math:`1 - (r_i - 1) / (n_q - 1)` with :math:`r_i` the 1-based descending rank of
        :math:`s_i` in its query (tied scores share their average rank; a one-document
        query gets 0.5), i.e. a Borda count in :math:`[0, 1]`.

    Returns
    -------
    normalized : ndarray of shape (n_samples,)
    """
    scores = np.asarray(scores, dtype=np.float64)
    if method is None:
        return scores
    codes, sizes = query_groups.codes, query_groups.sizes
    if method == "zscore":
        mean = np.bincount(codes, scores, minlength=len(sizes)) / sizes
        centred = scores - mean[codes]
        std = np.sqrt(np.bincount(codes, centred**2, minlength=len(sizes)) / sizes)
        scale = std[codes]
        return np.divide(centred, scale, out=np.zeros_like(centred), where=scale > 0)
    order = order_within_groups(codes, scores)  # by query, then by score descending
    sorted_codes, sorted_scores = codes[order], scores[order]
    new_run = np.ones(len(order), dtype=bool)
    new_run[1:] = (sorted_codes[1:] != sorted_codes[:-1]) | (sorted_scores[1:] != sorted_scores[:-1])
    run = np.cumsum(new_run) - 1
    position = np.arange(len(order)) - query_groups.offsets[sorted_codes]
    average_position = (np.bincount(run, position) / np.bincount(run))[run]
    size = sizes[sorted_codes]
    value = np.where(size > 1, 1.0 - average_position / np.maximum(size - 1, 1), 0.5)
    normalized = np.empty_like(value)
    normalized[order] = value
    return normalized


class RankingEnsemble(MetaEstimatorMixin, BaseRanker):
    r"""Average of rankers that differ only in their random seed (DASALC-ens of Qin et al. 2021).

    ``fit`` trains ``n_estimators`` clones of ``estimator``, each with its own
    ``random_state`` (every parameter named ``random_state`` or ``*__random_state`` is
    set, so pipelines work too). ``predict`` averages their scores, optionally normalised
    within each query first:

    .. math:: s_i = \frac{1}{M} \sum_{m=1}^{M} \nu_q\big(f_m(x)\big)_i

    with :math:`\nu_q` the identity (``normalize=None``, the paper's plain average),
    a per-query z-score or a per-query rank (see ``normalize``). Seed ensembles
    of neural rankers reduce the variance between training runs; the DASALC paper reports
    DASALC-ens, an ensemble of DASALC models, on top of single DASALC models.

    Why a general estimator rather than an ``n_ensemble`` parameter of ``DASALCRanker``:
    it works for any ranker (SetRank, RankNet, LambdaMART with bagging), keeps each
    ranker's parameters about its model only, and members stay ordinary fitted rankers
    (``estimators_``) that can be inspected or used alone.

    Parameters
    ----------
    estimator : ranker, default=None
        The ranker to copy; ``None`` means ``DASALCRanker()`` (DASALC-ens). It must have a
        ``random_state`` parameter.
    n_estimators : int, default=5
        Number of members :math:`M`.
    normalize : {None, "zscore", "rank"}, default=None
        Per-query normalisation of each member's scores before averaging. ``None``
        averages raw scores (the paper). ``"zscore"`` removes differences of per-query
        scale between members: :math:`(s_i - \mu_q) / \sigma_q` with the query's mean and
        population standard deviation (0 when all its scores are equal). ``"rank"``
        averages ranks (a Borda count): :math:`1 - (r_i - 1) / (n_q - 1)` with :math:`r_i`
        the 1-based descending rank in the query of :math:`n_q` rows (ties share their
        average rank; a one-document query gets 0.5). The last two need ``groups`` in
        ``predict``.
    random_state : int, RandomState instance or None, default=None
        Draws the members' seeds: the same value gives the same ensemble.

    Attributes
    ----------
    estimators_ : list of rankers
        The fitted members.
    seeds_ : ndarray of shape (n_estimators,)
        The ``random_state`` given to each member.
    n_features_in_ : int
        Number of features seen in ``fit``.

    See Also
    --------
    DASALCRanker : The default member.

    Notes
    -----
    Metadata routing: the ensemble requests ``groups`` for itself and routes to its
    members whatever they request (``groups``, SetRank's ``initial_rank``, ...). Without
    routing, ``groups`` and any extra keyword argument of ``fit``/``predict`` are passed
    to every member as given.

    References
    ----------
    Z. Qin, L. Yan, H. Zhuang, Y. Tay, R. K. Pasumarthi, X. Wang, M. Bendersky and
    M. Najork. "Are Neural Rankers still Outperformed by Gradient Boosted Decision
    Trees?" ICLR 2021.

    Examples
    --------
    Three LambdaMART models with bagging, whose per-query ranks are averaged. DASALC-ens is
    ``RankingEnsemble(DASALCRanker(...))``; LambdaMART keeps the example fast:

    >>> import numpy as np
    >>> from sklearn_ltr import LambdaMARTRanker, RankingEnsemble
    >>> from sklearn_ltr.datasets import make_ranking
    >>> from sklearn_ltr.metrics import ndcg_score
    >>> X, y, qid = make_ranking(n_queries=60, n_features=10, random_state=0)
    >>> train, test = qid < 40, qid >= 40
    >>> base = LambdaMARTRanker(n_estimators=20, subsample=0.8, subsample_freq=1, n_jobs=1)
    >>> ensemble = RankingEnsemble(base, n_estimators=3, normalize="rank", random_state=0)
    >>> ensemble = ensemble.fit(X[train], y[train], groups=qid[train])
    >>> len(ensemble.estimators_), [m.random_state for m in ensemble.estimators_] == ensemble.seeds_.tolist()
    (3, True)

    ``normalize="rank"`` ranks within each query, so ``predict`` needs ``groups``. Each
    member's normalised scores lie in [0, 1], and so does their mean:

    >>> scores = ensemble.predict(X[test], groups=qid[test])
    >>> bool(scores.min() >= 0 and scores.max() <= 1)
    True
    >>> chance = ndcg_score(y[test], np.random.default_rng(0).random(len(scores)), qid[test], k=10)
    >>> ndcg_score(y[test], scores, qid[test], k=10) > chance + 0.1
    True
    """

    _parameter_constraints = {  # noqa: RUF012
        "estimator": [HasMethods(["fit", "predict"]), None],
        "n_estimators": [Interval(Integral, 1, None, closed="left")],
        "normalize": [StrOptions({"zscore", "rank"}), None],
        "random_state": ["random_state"],
    }

    def __init__(self, estimator=None, n_estimators=5, *, normalize=None, random_state=None):
        self.estimator = estimator
        self.n_estimators = n_estimators
        self.normalize = normalize
        self.random_state = random_state

    def _query_column(self):
        # The members read the query ids from X; the ensemble reads them from the same column.
        return query_column_of(self._base())

    def _base(self):
        if self.estimator is None:
            from sklearn_ltr.rankers._dasalc import DASALCRanker

            return DASALCRanker()
        return self.estimator

    def get_metadata_routing(self):
        """Routing: ``groups`` for the ensemble itself, and the members' own requests.

        Returns
        -------
        routing : sklearn.utils.metadata_routing.MetadataRouter
            The ensemble's own requests and those of ``estimator``.
        """
        mapping = (
            MethodMapping().add(caller="fit", callee="fit").add(caller="predict", callee="predict")
            .add(caller="score", callee="predict")
        )
        return MetadataRouter(owner=type(self).__name__).add_self_request(self).add(
            estimator=self._base(), method_mapping=mapping
        )

    def _member_params(self, method, groups, params):
        if _routing_enabled():
            given = {"groups": groups, **params} if groups is not None else dict(params)
            return process_routing(self, method, **given).estimator[method]
        return Bunch(groups=groups, **params)

    def fit(self, X, y, groups=None, **fit_params):
        """Fit ``n_estimators`` clones of ``estimator`` with different seeds.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features.
        y : array-like of shape (n_samples,)
            Relevance labels.
        groups : array-like of shape (n_samples,), default=None
            Query id of each row, passed to every member.
        **fit_params
            Further arguments of the members' ``fit`` (e.g. ``initial_rank``).

        Returns
        -------
        self : object
            The fitted ensemble.
        """
        validate_estimator_params(self)
        base = self._base()
        seed_params = [key for key in base.get_params(deep=True)
                       if key == "random_state" or key.endswith("__random_state")]
        if not seed_params:
            raise ValueError(f"{type(base).__name__} has no random_state parameter: the members would be identical.")
        params = self._member_params("fit", groups, fit_params)
        rng = check_random_state(self.random_state)
        self.seeds_ = rng.randint(np.iinfo(np.int32).max, size=self.n_estimators)
        members = []
        for seed in self.seeds_:
            member = clone(base).set_params(**dict.fromkeys(seed_params, int(seed)))
            members.append(member.fit(X, y, **params))
        self.estimators_ = members
        self.n_features_in_ = members[0].n_features_in_
        if hasattr(members[0], "feature_names_in_"):
            self.feature_names_in_ = members[0].feature_names_in_
        return self

    def predict(self, X, groups=None, **predict_params):
        """Mean (optionally per-query normalised) score of the members, one per row of ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to score.
        groups : array-like of shape (n_samples,), default=None
            Query id of each row: passed to every member, and used by ``normalize``.
        **predict_params
            Further arguments of the members' ``predict``.

        Returns
        -------
        scores : ndarray of shape (n_samples,)
            Mean score of the members, in input row order; higher ranks first.
        """
        check_is_fitted(self)
        params = self._member_params("predict", groups, predict_params)
        scores = [member.predict(X, **params) for member in self.estimators_]
        if self.normalize is not None:
            if self._query_column() is not None:
                groups = query_ids_from_X(self._base(), X)
            query_groups = resolve_groups(groups, len(scores[0]), method="predict")
            scores = [normalize_scores(s, query_groups, self.normalize) for s in scores]
        return np.mean(scores, axis=0)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        base = get_tags(self._base())
        tags.input_tags.sparse = base.input_tags.sparse
        tags.input_tags.allow_nan = base.input_tags.allow_nan
        tags.non_deterministic = self.random_state is None  # the members' seeds are drawn at random
        member = getattr(base, "ranker_tags", None)
        if member is not None:  # list context and routed inputs are the members'
            tags.ranker_tags = copy.deepcopy(member)
        return tags

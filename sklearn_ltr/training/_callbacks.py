"""The one validation-NDCG callback of the training layer."""

from __future__ import annotations

import numpy as np
import torch
from skorch.callbacks import Callback

from sklearn_ltr.training._batches import CLICK_WEIGHTS

__all__ = ["ValidationNDCG"]


class ValidationNDCG(Callback):
    r"""Record the mean NDCG@k of validation queries after each epoch in the net's history.

    Two sources of validation queries:

    - ``X=None`` (default): the queries the net holds out itself (``validation_fraction``);
      the callback reuses the predictions of skorch's validation pass, with no second
      forward pass. Under data-parallel training each process holds a share of them and
      the per-query sums are reduced over every process (``RankingNet.reduce_sum``),
      so every process records the same value.
    - ``X, y, groups`` given: a separate validation set (e.g. the LETOR ``vali`` file),
      scored with the net's prediction path after each epoch.

    Monitor it with ``EarlyStopping(monitor=callback.name, lower_is_better=False)``. A
    non-finite score gives NaN.

    When the training rows carry click weights (``fit(..., propensity=...)``), the held-out
    lists are click logs, and the NDCG of the clicks as labels would reward a model that
    reproduces the logging ranker's positions. The callback then records the
    inverse-propensity estimate of DCG@k instead, :func:`sklearn_ltr.metrics.ips_dcg_score`
    (Joachims et al., 2017): unbiased for the DCG of binary relevance when the propensities
    are right. Not the self-normalised IPS-NDCG: where a list has one click, as most result
    pages do, its weight cancels in the ratio, and the estimate would select like the NDCG
    of the raw clicks.

    Parameters
    ----------
    k : int, default=10
        Cut-off of NDCG.
    X : ndarray of shape (n_samples, n_features), default=None
        Features of a separate validation set.
    y : ndarray of shape (n_samples,), default=None
        Its graded relevance labels, or its clicks (0/1) with ``propensity``.
    groups : ndarray of shape (n_samples,), default=None
        Its query (or result page) ids.
    propensity : ndarray of shape (n_samples,), default=None
        For a separate validation *click log*: each row's examination propensity. The
        callback then records the IPS estimate of DCG@k (each click weighted
        :math:`1 / \max(p_i, 0.05)`), as for held-out click weights.
    name : str, default=None
        History key; ``"valid_ndcg@{k}"`` by default.

    Examples
    --------
    Early stopping on a separate validation click log: with ``early_stopping=True``, a neural
    ranker monitors the ``ValidationNDCG`` of a separate set found in its ``callbacks`` and
    holds out nothing of the training data.

    >>> from sklearn_ltr import RankNetRanker
    >>> from sklearn_ltr.datasets import make_ranking, observation_propensity, simulate_clicks
    >>> from sklearn_ltr.training import ValidationNDCG
    >>> X, y, qid = make_ranking(n_queries=60, n_features=5, random_state=0)
    >>> positions, clicks = simulate_clicks(y, qid, w=0.5, random_state=0)
    >>> train, val = qid < 40, qid >= 40
    >>> valid = ValidationNDCG(k=5, X=X[val], y=clicks[val], groups=qid[val],
    ...                        propensity=observation_propensity(positions[val]))
    >>> ranker = RankNetRanker(loss="sigmoid_ce", early_stopping=True, max_epochs=3, callbacks=[valid],
    ...                        random_state=0)
    >>> ranker = ranker.fit(X[train], clicks[train], qid[train])
    >>> len(ranker.history_[:, "valid_ndcg@5"]) == ranker.n_iter_
    True
    """

    def __init__(self, k=10, *, X=None, y=None, groups=None, propensity=None, name=None):
        self.k = k
        self.X = X
        self.y = y
        self.groups = groups
        self.propensity = propensity
        self.name_ = name

    @property
    def name(self):
        return self.name_ or f"valid_ndcg@{self.k}"

    def initialize(self):
        self.dataset_ = None
        if self.X is not None:
            from sklearn_ltr._groups import QueryGroups
            from sklearn_ltr.training._batches import QueryDataset

            self.query_groups_ = QueryGroups(np.asarray(self.groups))
            self.dataset_ = QueryDataset.from_arrays(self.query_groups_, np.asarray(self.X, dtype=np.float32))
        return self

    def on_train_end(self, net, **kwargs):
        # The float32 copy of a separate validation set is needed during training only.
        self.dataset_ = self.query_groups_ = None

    def on_epoch_begin(self, net, **kwargs):
        self._scores, self._labels, self._groups, self._weights = [], [], [], []
        self._n_queries = 0

    def on_batch_end(self, net, batch=None, training=False, y_pred=None, **kwargs):
        if training or y_pred is None or self.dataset_ is not None:
            return
        inputs, labels = batch
        mask = inputs["mask"]
        # Any id unique to each list of the epoch identifies its query.
        query = torch.arange(mask.shape[0], device=mask.device)[:, None].expand_as(mask)
        self._scores.append(y_pred[mask].float().cpu())
        self._labels.append(labels[mask].float().cpu())
        if CLICK_WEIGHTS in inputs:
            self._weights.append(inputs[CLICK_WEIGHTS][mask].float().cpu())
        self._groups.append(query[mask].cpu() + self._n_queries)
        self._n_queries += mask.shape[0]

    def _held_out_totals(self):
        """``[sum of per-query NDCG, queries, non-finite flag]`` of this process's held-out queries."""
        from sklearn_ltr.metrics import ips_dcg_score, ndcg_score

        totals = torch.zeros(3, dtype=torch.float64)
        if self._scores:
            scores = torch.cat(self._scores).numpy().astype(np.float64)
            if not np.isfinite(scores).all():
                totals[2] = 1.0
            else:
                labels, groups = torch.cat(self._labels).numpy(), torch.cat(self._groups).numpy()
                if self._weights:  # a click log with propensities: the IPS estimate (see the class docstring)
                    # The weights are 1 / max(p, clip): their inverse is the clipped propensity itself.
                    propensity = 1.0 / torch.cat(self._weights).numpy().astype(np.float64)
                    mean = ips_dcg_score(labels, scores, groups, propensity, k=self.k)
                else:
                    mean = ndcg_score(labels, scores, groups, k=self.k)
                totals[0], totals[1] = mean * self._n_queries, self._n_queries
        return totals

    def on_epoch_end(self, net, **kwargs):
        from sklearn_ltr.metrics import ips_dcg_score, ndcg_score

        if self.dataset_ is not None:
            scores = self.query_groups_.unsort(net.score_rows(self.dataset_))
            finite = np.isfinite(scores).all()
            labels, groups = np.asarray(self.y), np.asarray(self.groups)
            if not finite:
                value = np.nan
            elif self.propensity is not None:  # a click log: the IPS estimate (see the class docstring)
                value = ips_dcg_score(labels, scores, groups, self.propensity, k=self.k)
            else:
                value = ndcg_score(labels, scores, groups, k=self.k)
            net.history.record(self.name, float(value))
            return
        totals = net.reduce_sum(self._held_out_totals())
        if totals[1] == 0 and totals[2] == 0:  # no validation queries (no split)
            return
        net.history.record(self.name, float("nan") if totals[2] > 0 else float(totals[0] / totals[1]))

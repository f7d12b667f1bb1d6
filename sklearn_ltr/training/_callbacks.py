"""The one validation-NDCG callback of the training layer."""

from __future__ import annotations

import numpy as np
import torch
from skorch.callbacks import Callback

from sklearn_ltr._blocks import canonical_query_order
from sklearn_ltr.training._batches import CLICK_PROPENSITY

__all__ = ["ValidationNDCG", "check_validation_features"]


def check_validation_features(X, *, name):
    """``X`` as a float32 array, or a ValueError naming ``name`` when it holds NaN or infinity.

    A validation set with NaN would give a NaN value every epoch, and early stopping
    would stop on nothing: refused with the fix instead.
    """
    features = np.asarray(X, dtype=np.float32)
    if features.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array of features, got an array of shape {features.shape}.")
    bad = ~np.isfinite(features)
    if bad.any():
        n_nan = int(np.isnan(features).sum())
        rows, columns = np.nonzero(bad)
        raise ValueError(
            f"{name} holds {int(bad.sum())} non-finite value(s) ({n_nan} NaN), the first in row {int(rows[0])}, "
            f"feature {int(columns[0])}: the validation value of every epoch would be NaN. Transform the validation "
            f"features as the training features: inside a Pipeline with an imputer, pass them as fit parameters "
            f"X_val=, y_val=, groups_val= with Pipeline(..., transform_input=['X_val'])."
        )
    return features


class ValidationNDCG(Callback):
    r"""Record the mean NDCG@k of validation queries after each epoch in the net's history.

    Two sources of validation queries:

    - ``X=None`` (default): the queries the net holds out itself (``validation_fraction``);
      the callback reuses the predictions of skorch's validation pass, with no second
      forward pass. Under data-parallel training each process holds a share of them and
      the per-query sums are reduced over every process (``RankingNet.reduce_sum``),
      so every process records the same value.
    - ``X, y, groups`` given: a separate validation set (e.g. the LETOR ``vali`` file),
      scored after each epoch by the path that ``predict`` runs: each row gets the score
      ``predict`` would give it.

    Monitor it with ``EarlyStopping(monitor=callback.history_key, lower_is_better=False)``. A
    non-finite score gives NaN.

    On a click log with propensities (a separate set given ``propensity``, or held-out queries
    of ``fit(..., propensity=...)``), the NDCG of the clicks as labels would reward a model that
    reproduces the logging ranker's positions. The callback then records the
    inverse-propensity estimate of DCG@k instead, :func:`sklearn_ltr.metrics.ips_dcg_score`
    (Joachims et al., 2017), under its own name, ``valid_ips_dcg@{k}``: unbiased for the DCG of
    binary relevance when the propensities are right. Not the self-normalised IPS-NDCG: where a
    list has one click, as most result pages do, its weight cancels in the ratio, and the
    estimate would select like the NDCG of the raw clicks. Held-out queries pass the
    propensities the training rows were given, as given, to the metric.

    With affine propensities (an ``(n_samples, 2)`` array of per-row :math:`(\alpha_i, \beta_i)`
    of trust bias, in ``fit`` or here), the recorded value is the affine estimate of DCG@k,
    each row's gain :math:`(c_i - \beta_i) / \max(\alpha_i, 0.05)` (Vardasbi et al., 2020; see
    :func:`sklearn_ltr.metrics.ips_dcg_per_query`): unbiased under trust bias, where IPS is not.

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
    propensity : ndarray of shape (n_samples,) or (n_samples, 2), default=None
        For a separate validation *click log*: each row's examination propensity. The
        callback then records the IPS estimate of DCG@k (each click weighted
        :math:`1 / \max(p_i, 0.05)`) as ``valid_ips_dcg@{k}``, as for held-out queries of
        ``fit(..., propensity=...)``. With two columns, each row's affine click parameters
        :math:`(\alpha_i, \beta_i)`: the affine estimate of DCG@k.
    name : str, default=None
        History key (:attr:`history_key`); when None, ``"valid_ips_dcg@{k}"`` for the IPS
        estimate and ``"valid_ndcg@{k}"`` otherwise.
    extras : dict of str to ndarray, default=None
        Further per-row inputs of the module for the separate set (e.g. SetRank's
        ``{"initial_rank": ranks}``), one value per row of ``X``.

    Raises
    ------
    ValueError
        When training starts, for a separate set whose features hold NaN or infinity, or
        whose width is not the training features' (a validation set given to the ranker
        outside its ``Pipeline``: pass it as ``fit(..., X_val=, y_val=, groups_val=)`` with
        ``Pipeline(..., transform_input=["X_val"])`` so that it goes through the same steps).
        A NaN history would let early stopping stop on nothing.

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
    >>> valid.history_key, len(ranker.history_[:, "valid_ips_dcg@5"]) == ranker.n_iter_
    ('valid_ips_dcg@5', True)
    """

    def __init__(self, k=10, *, X=None, y=None, groups=None, propensity=None, name=None, extras=None):
        self.k = k
        self.X = X
        self.y = y
        self.groups = groups
        self.propensity = propensity
        self.name = name
        self.extras = extras

    @property
    def history_key(self):
        """The history key of the recorded value: ``name``, else ``"valid_ips_dcg@{k}"`` or ``"valid_ndcg@{k}"``.

        The IPS estimate's key for a separate set given ``propensity``, and for held-out queries
        once training on rows with propensities has begun (the rankers name the key of their own
        held-out validation when they build it: ``name="valid_ips_dcg@10"``).
        """
        if self.name:
            return self.name
        ips = self.propensity is not None or getattr(self, "clicks_", False)
        return f"valid_ips_dcg@{self.k}" if ips else f"valid_ndcg@{self.k}"

    def state_dict(self):
        """Nothing: the callback keeps nothing from one epoch to the next that a checkpoint should hold."""
        return {}

    def load_state_dict(self, state):
        """Restore :meth:`state_dict`'s (empty) state."""

    def initialize(self):
        self.dataset_ = self.evaluator_ = None
        self.clicks_ = False  # whether held-out queries carry propensities (set when training begins)
        if self.X is not None:
            from sklearn_ltr._groups import QueryGroups
            from sklearn_ltr.training._batches import QueryDataset

            if self.y is None or self.groups is None:
                raise ValueError(f"{type(self).__name__}(X=...) needs the labels y=... and the query ids groups=... "
                                 f"of its separate validation set too.")
            features = check_validation_features(self.X, name=f"{type(self).__name__} X")
            self.query_groups_ = QueryGroups(np.asarray(self.groups), features.shape[0])
            extras = {name: np.asarray(values) for name, values in (self.extras or {}).items()}
            # Rows by query (each query's in the order training sees rows): score_rows scores each list
            # in its canonical order, as predict does, so the value does not depend on the order of the
            # validation rows within a query.
            self.order_ = canonical_query_order(self.query_groups_, features, *extras.values())
            self.dataset_ = QueryDataset.from_arrays(self.query_groups_, features, order=self.order_, **extras)
            # The labels and queries do not change between epochs: grouping, gains and ideal DCG are built once.
            from sklearn_ltr.metrics import RankingEvaluator

            self.evaluator_ = (RankingEvaluator(self.y, self.query_groups_) if self.propensity is None
                               else self.query_groups_)
        return self

    def on_train_begin(self, net, X=None, y=None, **kwargs):
        rows = getattr(X, "rows", None)
        self.clicks_ = self.X is None and isinstance(rows, dict) and CLICK_PROPENSITY in rows
        if self.dataset_ is None or not isinstance(rows, dict) or "X" not in rows:
            return
        trained, given = rows["X"].shape[1], self.dataset_.rows["X"].shape[1]
        if trained != given:
            raise ValueError(
                f"{type(self).__name__}: the separate validation set has {given} features but the network trains on "
                f"{trained}. Validation features must go through the same preprocessing as the training features: "
                f"inside a Pipeline, pass them as fit parameters X_val=, y_val=, groups_val= and construct "
                f"Pipeline(..., transform_input=['X_val']) (with sklearn.set_config(enable_metadata_routing=True))."
            )

    def on_train_end(self, net, **kwargs):
        # The float32 copy of a separate validation set is needed during training only.
        self.dataset_ = self.query_groups_ = self.order_ = self.evaluator_ = None

    def on_epoch_begin(self, net, **kwargs):
        self._scores, self._labels, self._groups, self._propensity = [], [], [], []
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
        if CLICK_PROPENSITY in inputs:
            self._propensity.append(inputs[CLICK_PROPENSITY][mask].double().cpu())
        self._groups.append(query[mask].cpu() + self._n_queries)
        self._n_queries += mask.shape[0]

    def _held_out_totals(self):
        """``[sum of per-query NDCG (or IPS-DCG), queries, non-finite flag]`` of this process's held-out queries."""
        from sklearn_ltr.metrics import ips_dcg_score, ndcg_score

        totals = torch.zeros(3, dtype=torch.float64)
        if self._scores:
            scores = torch.cat(self._scores).numpy().astype(np.float64)
            if not np.isfinite(scores).all():
                totals[2] = 1.0
            else:
                labels, groups = torch.cat(self._labels).numpy(), torch.cat(self._groups).numpy()
                if self._propensity:  # a click log with propensities: the IPS estimate (see the class docstring)
                    propensity = torch.cat(self._propensity).numpy()
                    mean = ips_dcg_score(labels, scores, groups, propensity, k=self.k)
                else:
                    mean = ndcg_score(labels, scores, groups, k=self.k)
                totals[0], totals[1] = mean * self._n_queries, self._n_queries
        return totals

    def on_epoch_end(self, net, **kwargs):
        from sklearn_ltr.metrics import ips_dcg_score, ndcg_score

        if self.dataset_ is not None:
            scores = np.empty(len(self.order_))
            scores[self.order_] = net.score_rows(self.dataset_)  # back in input row order
            finite = np.isfinite(scores).all()
            if not finite:
                value = np.nan
            elif self.propensity is not None:  # a click log: the IPS estimate (see the class docstring)
                value = ips_dcg_score(np.asarray(self.y), scores, self.evaluator_, self.propensity, k=self.k)
            else:
                value = ndcg_score(self.evaluator_.y_true, scores, self.evaluator_, k=self.k)
            net.history.record(self.history_key, float(value))
            return
        totals = net.reduce_sum(self._held_out_totals())
        if totals[1] == 0 and totals[2] == 0:  # no validation queries (no split)
            return
        net.history.record(self.history_key, float("nan") if totals[2] > 0 else float(totals[0] / totals[1]))

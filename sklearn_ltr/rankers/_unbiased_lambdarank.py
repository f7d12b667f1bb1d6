r"""Pairwise debiasing of LambdaMART from clicks: Unbiased LambdaMART as a LightGBM custom objective.

LightGBM's own weights multiply each document's whole gradient; inverse propensity weighting of a
pairwise loss must weigh each *pair* (clicked :math:`i`, non-clicked :math:`j`). This module computes
the LambdaRank gradients and Hessians of the pairs itself, in NumPy, vectorised over the pairs of all
lists of similar length at once (lists padded to a common length per bucket, with a mask), with

- ``"unbiased_lambdamart"``: the pair weight :math:`1 / (t^+_{p_i} t^-_{p_j})`, the position biases of
  the clicked and the non-clicked document estimated jointly with the trees (Hu et al., 2019);
- ``"propensity"``: the pair weight :math:`1 / \max(\theta_i, \tau)`, the clipped inverse of the
  clicked document's known propensity (:func:`sklearn_ltr.clicks.inverse_propensity_weights`);
- ``"none"``: weight 1, plain LambdaRank.

NumPy only: no torch, no LightGBM import (LightGBM calls the objective).
"""

from __future__ import annotations

import numpy as np

__all__ = ["UnbiasedLambdaRankObjective", "click_objective"]

#: Most pair-matrix entries (lists x positives x length) computed at once; bounds the memory of a call.
_MAX_PAIR_CELLS = 1 << 21


def _padded(n):
    """``n`` rounded up to 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, ... (at most 1.5 ``n``): few buckets, little padding."""
    n = np.maximum(np.asarray(n, dtype=np.int64), 1)
    power = 2 ** np.floor(np.log2(n)).astype(np.int64)
    return np.where(n == power, n, np.where(n <= power * 3 // 2, power * 3 // 2, 2 * power))


def _buckets(sizes, n_positive, max_cells=None):
    """Lists with a positive label, grouped by padded (positives, length), in chunks of at most ``max_cells``.

    Returns a list of ``(query_index, n_positive_padded, length_padded)``.
    """
    max_cells = _MAX_PAIR_CELLS if max_cells is None else max_cells
    has_pairs = np.flatnonzero((n_positive > 0) & (sizes > 1))
    keys = np.stack([_padded(n_positive[has_pairs]), _padded(sizes[has_pairs])], axis=1)
    out = []
    for n_pos, length in np.unique(keys, axis=0):
        queries = has_pairs[(keys[:, 0] == n_pos) & (keys[:, 1] == length)]
        per_chunk = max(1, max_cells // int(n_pos * length))
        out.extend((queries[i:i + per_chunk], int(n_pos), int(length)) for i in range(0, len(queries), per_chunk))
    return out


class UnbiasedLambdaRankObjective:
    r"""LambdaRank gradients with pairwise debiasing weights, for LightGBM's ``objective=``.

    For each list (query, result page) and each pair of its documents with labels
    :math:`y_i > y_j` (for clicks: :math:`i` clicked, :math:`j` not), at least one of which the
    current scores rank within the top ``truncation_level``, the pair loss is

    .. math::
        \ell_{ij} = w_{ij}\,|\Delta\mathrm{NDCG}_{ij}|\,\log\bigl(1 + e^{-\sigma (s_i - s_j)}\bigr),

    with :math:`|\Delta\mathrm{NDCG}_{ij}| = |g_i - g_j|\,|D(r_i) - D(r_j)| / \mathrm{maxDCG@T}`
    (gains :math:`g = 2^y - 1` or ``label_gain``, discount :math:`D(r) = 1 / \log_2(r + 2)` of the
    0-based rank :math:`r` in the current scores, ties kept in row order, ideal DCG at the
    truncation level :math:`T`) held constant, as in LambdaMART (Burges, 2010). With
    :math:`\rho_{ij} = 1 / (1 + e^{\sigma (s_i - s_j)})` and :math:`\lambda_{ij} = \sigma w_{ij}
    |\Delta\mathrm{NDCG}_{ij}| \rho_{ij}`, document :math:`i` gets gradient :math:`-\lambda_{ij}` and
    :math:`j` gets :math:`+\lambda_{ij}`; both get Hessian
    :math:`\sigma^2 w_{ij} |\Delta\mathrm{NDCG}_{ij}| \rho_{ij} (1 - \rho_{ij})`. Each list's terms
    are multiplied by its query weight.

    The pair weight :math:`w_{ij}` is

    - ``mode="unbiased_lambdamart"``: :math:`1 / (t^+_{p_i}\,t^-_{p_j})`, the biases of the
      clicked document's position :math:`p_i` and of the non-clicked one's :math:`p_j`. After
      each round's gradients, both are re-estimated in closed form (Hu et al., 2019, eqs. 30-31)
      from that round's pair costs :math:`c_{ij} = |\Delta\mathrm{NDCG}_{ij}| \log(1 + e^{-\sigma
      (s_i - s_j)})`:

      .. math::
          t^+_k = \Bigl(\frac{\sum_{p_i = k} c_{ij} / t^-_{p_j}}{\sum_{p_i = 1} c_{ij} / t^-_{p_j}}
          \Bigr)^{1/(p+1)}, \qquad
          t^-_k = \Bigl(\frac{\sum_{p_j = k} c_{ij} / t^+_{p_i}}{\sum_{p_j = 1} c_{ij} / t^+_{p_i}}
          \Bigr)^{1/(p+1)},

      so :math:`t^+_1 = t^-_1 = 1`; :math:`p \ge 0` (``regularization``) shrinks them towards 1.
      A position without pairs in a round keeps its previous bias. Biases start at 1 and are
      first updated after round ``warm_up + 1``.
    - ``mode="propensity"``: :math:`1 / \max(\theta_i, \tau)`, the clicked document's clipped
      inverse propensity (fixed, not estimated).
    - ``mode="none"``: 1.

    Parameters
    ----------
    labels : ndarray of shape (n_samples,)
        Whole-number labels (clicks 0/1) of the training rows, sorted by query.
    sizes : ndarray of shape (n_queries,)
        Number of rows of each query, in the order of the rows.
    mode : {"unbiased_lambdamart", "propensity", "none"}
        Pair weighting (above).
    positions : ndarray of shape (n_samples,), default=None
        1-based display position of each row; needed by ``"unbiased_lambdamart"``.
    row_weights : ndarray of shape (n_samples,), default=None
        With ``"propensity"``: the clicked rows' inverse propensities (already clipped).
    query_weights : ndarray of shape (n_samples,), default=None
        Weight of each row's query (the same on all its rows); ``None`` is 1.
    sigma : float, default=1.0
        Slope :math:`\sigma` of the pair's logistic loss (LightGBM's ``sigmoid``).
    truncation_level : int, default=30
        Pairs need one document within the top ``truncation_level`` of the current ranking.
    label_gain : sequence of float, default=None
        Gain of each label; ``None`` is :math:`2^y - 1`.
    regularization : float, default=0.0
        The exponent :math:`p` of the bias update.
    warm_up : int, default=0
        Rounds before the biases are first updated.

    Attributes
    ----------
    bias_clicked_ : ndarray of shape (max_position,)
        :math:`t^+_k` for positions ``k = 1 .. max_position`` (``"unbiased_lambdamart"`` only).
    bias_unclicked_ : ndarray of shape (max_position,)
        :math:`t^-_k`.
    n_calls_ : int
        Rounds computed.

    References
    ----------
    Z. Hu, Y. Wang, Q. Peng and H. Li. "Unbiased LambdaMART: An Unbiased Pairwise Learning-to-Rank
    Algorithm." WWW 2019.

    C. J. C. Burges. "From RankNet to LambdaRank to LambdaMART: An Overview." MSR-TR-2010-82, 2010.

    Examples
    --------
    Two lists of three documents; one click each, at positions 1 and 2:

    >>> import numpy as np
    >>> from sklearn_ltr.rankers._unbiased_lambdarank import UnbiasedLambdaRankObjective
    >>> clicks = np.array([1, 0, 0, 0, 1, 0])
    >>> objective = UnbiasedLambdaRankObjective(clicks, np.array([3, 3]), "unbiased_lambdamart",
    ...                                         positions=np.array([1, 2, 3, 1, 2, 3]))
    >>> grad, hess = objective(clicks, np.zeros(6))
    >>> bool(grad[0] < 0 and grad[4] < 0 and (grad[[1, 2, 3, 5]] > 0).all()), bool((hess > 0).all())
    (True, True)
    >>> objective.bias_clicked_.tolist()[0], objective.bias_unclicked_.tolist()[0]  # position 1: the reference
    (1.0, 1.0)
    """

    def __init__(self, labels, sizes, mode, *, positions=None, row_weights=None, query_weights=None, sigma=1.0,
                 truncation_level=30, label_gain=None, regularization=0.0, warm_up=0, clip=0.05):
        if mode not in ("unbiased_lambdamart", "propensity", "none"):
            raise ValueError(f"mode must be 'unbiased_lambdamart', 'propensity' or 'none'; got {mode!r}.")
        labels = np.asarray(labels)
        sizes = np.asarray(sizes, dtype=np.int64)
        if sizes.sum() != labels.shape[0]:
            raise ValueError(f"sizes sum to {sizes.sum()} but there are {labels.shape[0]} labels.")
        if mode == "unbiased_lambdamart" and positions is None:
            raise ValueError("mode='unbiased_lambdamart' needs positions (1-based display ranks).")
        if mode == "propensity" and row_weights is None:
            raise ValueError("mode='propensity' needs row_weights (the clipped inverse propensities).")
        self.mode = mode
        self.sigma = float(sigma)
        self.truncation_level = int(truncation_level)
        self.regularization = float(regularization)
        self.warm_up = int(warm_up)
        self.clip = float(clip)
        self.n_samples = labels.shape[0]
        ints = labels.astype(np.int64)
        gain = (2.0 ** ints - 1.0) if label_gain is None else np.asarray(label_gain, dtype=np.float64)[ints]
        offsets = np.concatenate(([0], np.cumsum(sizes)))
        n_positions = int(np.max(positions)) if mode == "unbiased_lambdamart" and len(positions) else 1
        self.bias_clicked_ = np.ones(n_positions)
        self.bias_unclicked_ = np.ones(n_positions)
        self.n_calls_ = 0
        # Pairs need y_i > y_j >= 0: the first document of a pair has a positive label. Each block pairs
        # the (padded) positives of its lists with all their (padded) documents.
        positive = ints > 0
        n_positive = np.add.reduceat(positive.astype(np.int64), offsets[:-1]) if len(ints) else np.zeros(0, int)
        n_positive[sizes == 0] = 0
        # Within each query, the positives first (in row order), then the others.
        rank_in_query = np.arange(len(ints)) - np.repeat(offsets[:-1], sizes)
        order = np.lexsort((rank_in_query, ~positive, np.repeat(np.arange(len(sizes)), sizes)))
        positions = None if positions is None else np.asarray(positions, dtype=np.int64) - 1
        self._blocks = []
        for queries, n_pos, length in _buckets(sizes, n_positive):
            cols = np.arange(length)
            mask = cols[None, :] < sizes[queries][:, None]
            index = np.where(mask, offsets[queries][:, None] + cols[None, :], 0)
            pos_mask = cols[None, :n_pos] < n_positive[queries][:, None]
            pos_index = np.where(pos_mask, order[np.minimum(offsets[queries][:, None] + cols[None, :n_pos],
                                                            len(ints) - 1)], 0)
            block = {"index": index, "mask": mask, "pos_index": pos_index, "pos_mask": pos_mask,
                     "pos_col": np.where(pos_mask, pos_index - offsets[queries][:, None], 0),
                     "label": np.where(mask, ints[index], 0), "pos_label": np.where(pos_mask, ints[pos_index], -1),
                     "gain": np.where(mask, gain[index], 0.0), "pos_gain": np.where(pos_mask, gain[pos_index], 0.0)}
            block["inv_max_dcg"] = self._inverse_max_dcg(block["gain"])
            block["query_weight"] = 1.0 if query_weights is None else np.asarray(query_weights)[index[:, 0]]
            if mode == "unbiased_lambdamart":
                block["position"] = np.where(mask, positions[index], 0)
                block["pos_position"] = np.where(pos_mask, positions[pos_index], 0)
            if mode == "propensity":
                block["pos_row_weight"] = np.asarray(row_weights, dtype=np.float64)[pos_index]
            self._blocks.append(block)

    def _discount(self, ranks):
        return 1.0 / np.log2(ranks + 2.0)

    def _inverse_max_dcg(self, gain):
        """``1 / maxDCG@T`` of each padded list (0 for a list whose ideal DCG is 0)."""
        ideal = -np.sort(-gain, axis=1)[:, : self.truncation_level]
        dcg = (ideal * self._discount(np.arange(ideal.shape[1]))).sum(axis=1)
        return np.divide(1.0, dcg, out=np.zeros_like(dcg), where=dcg > 0)

    def __call__(self, y_true, y_pred):
        """Gradients and Hessians of the training rows at scores ``y_pred`` (LightGBM's sklearn signature).

        Parameters
        ----------
        y_true : ndarray of shape (n_samples,)
            The training labels (unused: the objective holds them).
        y_pred : ndarray of shape (n_samples,)
            The current raw scores.

        Returns
        -------
        grad, hess : ndarray of shape (n_samples,)
        """
        grad, hess, cost_clicked, cost_unclicked = self.gradients(np.asarray(y_pred, dtype=np.float64))
        self.n_calls_ += 1
        if self.mode == "unbiased_lambdamart" and self.n_calls_ > self.warm_up:
            self._update_biases(cost_clicked, cost_unclicked)
        return grad, hess

    def gradients(self, scores):
        """``grad, hess`` at ``scores`` and the position costs of the bias update (see the class docstring)."""
        grad = np.zeros(self.n_samples)
        hess = np.zeros(self.n_samples)
        n_positions = self.bias_clicked_.shape[0]
        cost_clicked = np.zeros(n_positions)
        cost_unclicked = np.zeros(n_positions)
        for block in self._blocks:
            mask, pos_mask, pos_col = block["mask"], block["pos_mask"], block["pos_col"]
            s = np.where(mask, scores[block["index"]], -np.inf)
            order = np.argsort(-s, axis=1, kind="stable")  # ties in row order, padding last
            ranks = np.empty_like(order)
            np.put_along_axis(ranks, order, np.arange(order.shape[1])[None, :], axis=1)
            pos_ranks = np.take_along_axis(ranks, pos_col, axis=1)
            # [lists, positives i, documents j]
            pairs = ((block["pos_label"][:, :, None] > block["label"][:, None, :]) & mask[:, None, :]
                     & pos_mask[:, :, None]
                     & (np.minimum(pos_ranks[:, :, None], ranks[:, None, :]) < self.truncation_level))
            discount = self._discount(ranks)
            pos_discount = np.take_along_axis(discount, pos_col, axis=1)
            delta = (np.abs(block["pos_gain"][:, :, None] - block["gain"][:, None, :])
                     * np.abs(pos_discount[:, :, None] - discount[:, None, :]) * block["inv_max_dcg"][:, None, None])
            s0 = np.where(mask, s, 0.0)
            pos_s = np.take_along_axis(s0, pos_col, axis=1)
            z = self.sigma * (pos_s[:, :, None] - s0[:, None, :])
            rho = 0.5 * (1.0 - np.tanh(0.5 * z))  # 1 / (1 + exp(z)), without overflow
            qw = block["query_weight"]
            qw = qw[:, None, None] if np.ndim(qw) else qw
            base = np.where(pairs, delta * qw, 0.0)
            weighted = base * self._pair_weights(block)
            lam = self.sigma * weighted * rho
            h = self.sigma ** 2 * weighted * rho * (1.0 - rho)
            # The non-clicked side j gets +lambda_ij, the clicked side i gets -lambda_ij; both the Hessian.
            grad[block["index"][mask]] += lam.sum(axis=1)[mask]
            hess[block["index"][mask]] += h.sum(axis=1)[mask]
            grad[block["pos_index"][pos_mask]] -= lam.sum(axis=2)[pos_mask]
            hess[block["pos_index"][pos_mask]] += h.sum(axis=2)[pos_mask]
            if self.mode == "unbiased_lambdamart":
                cost = base * np.logaddexp(0.0, -z)
                i_pos = np.broadcast_to(block["pos_position"][:, :, None], cost.shape)[pairs]
                j_pos = np.broadcast_to(block["position"][:, None, :], cost.shape)[pairs]
                c = cost[pairs]
                cost_clicked += np.bincount(i_pos, c / self.bias_unclicked_[j_pos], minlength=n_positions)
                cost_unclicked += np.bincount(j_pos, c / self.bias_clicked_[i_pos], minlength=n_positions)
        return grad, hess, cost_clicked, cost_unclicked

    def _pair_weights(self, block):
        """``w_ij`` of each (positive i, document j) cell of ``block``."""
        if self.mode == "unbiased_lambdamart":
            return 1.0 / (self.bias_clicked_[block["pos_position"]][:, :, None]
                          * self.bias_unclicked_[block["position"]][:, None, :])
        if self.mode == "propensity":
            return block["pos_row_weight"][:, :, None]
        return 1.0

    def _update_biases(self, cost_clicked, cost_unclicked):
        """Hu et al.'s closed-form update (eqs. 30-31), relative to position 1, with exponent 1 / (p + 1)."""
        exponent = 1.0 / (self.regularization + 1.0)
        for bias, cost in ((self.bias_clicked_, cost_clicked), (self.bias_unclicked_, cost_unclicked)):
            if cost[0] <= 0:
                continue  # no pair at position 1 this round: no reference, keep the biases
            seen = cost > 0
            bias[seen] = np.maximum((cost[seen] / cost[0]) ** exponent, self.clip)

    def __deepcopy__(self, memo):
        """The object itself: LightGBM deep-copies its parameters, and the biases must be those it updates."""
        return self

    def release(self):
        """Drop the per-row data (kept: the biases), so that a fitted model does not carry its training set."""
        self._blocks = []


def click_objective(ranker, y, sizes, *, positions=None, propensity=None, query_weights=None):
    """The objective of ``ranker.fit`` on sorted clicks ``y``: debiased by ``positions`` or by ``propensity``.

    ``positions`` (with ``position_bias="unbiased_lambdamart"``) estimates the biases;
    ``propensity`` weighs each pair by its clicked document's clipped inverse propensity.
    """
    from sklearn_ltr.clicks import check_clicks, inverse_propensity_weights

    check_clicks(y, name="y", fix="LambdaMARTRanker debiases pairs of clicks (propensity=..., or positions=... with "
                 "position_bias='unbiased_lambdamart'); train on graded relevance labels without them.")
    extra = ranker.lgbm_params or {}
    common = {"query_weights": query_weights, "sigma": float(extra.get("sigmoid", 1.0)),
              "truncation_level": ranker.lambdarank_truncation_level, "label_gain": ranker.label_gain}
    if propensity is not None:
        weights = inverse_propensity_weights(propensity, n_samples=len(y))
        return UnbiasedLambdaRankObjective(y, sizes, "propensity", row_weights=weights, **common)
    return UnbiasedLambdaRankObjective(y, sizes, "unbiased_lambdamart", positions=positions,
                                       regularization=ranker.lambdarank_position_bias_regularization, **common)

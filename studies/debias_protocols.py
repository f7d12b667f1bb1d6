"""Two position protocols for simulated click logs, and the reference two-tower trainer.

The comparison of Zhang et al. (KDD 2023) as published by the public reproduction
``yng87/unbiased-ltr`` rests on a click simulation whose display positions are not the
ranks of the documents in the logging ordering (:func:`reference_positions`). This
module holds both position rules (the clicks of either are drawn by
:func:`sklearn_ltr.clicks.simulate_click_log`, the reference rule passed as its
``position_rule``), the negative down-sampling, a small MQ2008 five-fold loader, and a
plain-torch trainer that follows that repository's training set-up (:func:`fit_reference`),
so that ``bench_debias_protocols.py`` can train the *same* models on both protocols.

The code is written from the description of the set-up, not copied from the repository.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from sklearn.preprocessing import StandardScaler
from torch import nn

from sklearn_ltr.clicks import PositionBasedModel, simulate_click_log
from sklearn_ltr.datasets import load_svmlight_ranking
from sklearn_ltr.metrics import ndcg_score
from sklearn_ltr.nn import gradient_reversal

__all__ = [
    "CURVE_POSITIONS",
    "METHODS",
    "PROTOCOLS",
    "ReferenceFit",
    "click_log",
    "downsample_negatives",
    "fit_reference",
    "load_mq2008_fold",
    "reference_positions",
    "reference_rule",
    "shuffle_within_queries",
    "true_rank_positions",
]

#: The four models of the published table, in its order.
METHODS = ("Single Tower", "Two Tower", "Observation Dropout", "Gradient Reversal")
PROTOCOLS = ("true-rank", "reference")
CURVE_POSITIONS = 20


# ----------------------------------------------------------------------------- data


def load_mq2008_fold(data_dir, fold):
    """One LETOR fold of MQ2008 built from the five partitions ``S1.txt`` .. ``S5.txt``.

    Fold ``k`` trains on S(k), S(k+1), S(k+2), validates on S(k+3) and tests on S(k+4),
    counting modulo 5 (Fold 1: train S1+S2+S3, validation S4, test S5).

    Parameters
    ----------
    data_dir : str or Path
        The folder holding ``mq2008/partitions/S1.txt`` .. ``S5.txt``.
    fold : int
        1 .. 5.

    Returns
    -------
    splits : dict
        ``{"train": (X, y, qid), "vali": (X, y, qid), "test": (X, y, qid)}``; ``X``
        float64 of shape (n, 46), ``y`` integer labels 0-2, ``qid`` the file's query ids.
    """
    if fold not in range(1, 6):
        raise ValueError(f"fold must be 1 .. 5; got {fold!r}.")
    folder = Path(data_dir) / "mq2008" / "partitions"

    def part(i):
        return load_svmlight_ranking(folder / f"S{(fold - 1 + i) % 5 + 1}.txt", n_features=46)

    train = [part(i) for i in range(3)]
    splits = {
        "train": tuple(np.concatenate(arrays) for arrays in zip(*train, strict=True)),
        "vali": part(3),
        "test": part(4),
    }
    for name, (X, y, qid) in splits.items():
        assert X.shape == (len(y), 46) and len(qid) == len(y) and np.isfinite(X).all(), name
        splits[name] = (X, y.astype(np.int64), qid.astype(np.int64))
    seen = [set(np.unique(qid).tolist()) for _, _, qid in splits.values()]
    assert not (seen[0] & seen[1] or seen[0] & seen[2] or seen[1] & seen[2]), "a query is in two splits"
    return splits


def shuffle_within_queries(qid, rng):
    """Row order that makes every query contiguous with its rows in random order.

    The reference position rule depends on the row order inside a query; the reference
    repository applies it after an unstable sort of the rows by query id, i.e. in an
    order unrelated to relevance. Applying this permutation first gives that (random)
    order explicitly.

    Parameters
    ----------
    qid : ndarray of shape (n_samples,)
        Query id of each row.
    rng : numpy.random.Generator
        Source of the random order.

    Returns
    -------
    order : ndarray of int64 of shape (n_samples,)
        Row indices: queries in increasing id order, rows of a query shuffled.
    """
    return np.lexsort((rng.random(len(qid)), qid))


# ------------------------------------------------------------------ position rules


def _logging_score(labels, w, rng, y_max):
    """The logging ranker's score of every row, ``w * y + (1 - w) * Uniform(0, y_max)`` (one noise draw per row)."""
    labels = np.asarray(labels, dtype=np.float64)
    return w * labels + (1 - w) * rng.uniform(0, y_max, len(labels))


def _logging_order(score, qid, rng):
    """Rows sorted by query, then by descending logging ``score``.

    Returns ``(by_row, by_score, start)``: rows of each query in row order, the same
    queries' rows best first (random tie-breaking), and the first index of each row's
    query block within those arrays.
    """
    qid = np.asarray(qid)
    n = len(score)
    by_row = np.lexsort((np.arange(n), qid))
    by_score = np.lexsort((rng.random(n), -score, qid))
    sorted_qid = qid[by_row]
    first = np.r_[True, sorted_qid[1:] != sorted_qid[:-1]]
    start = np.maximum.accumulate(np.where(first, np.arange(n), 0))
    return by_row, by_score, start


def true_rank_positions(labels, qid, w, rng, y_max):
    """Display rank of each row in the logging ordering (protocol (a), the design's).

    The documents of a query are shown in descending order of
    ``w * y + (1 - w) * Uniform(0, y_max)``; a document's position is its 1-based rank
    there. This is the rule of :func:`sklearn_ltr.datasets.simulate_clicks`, which the
    study calls directly for this protocol; this function exposes the rule alone for
    comparison with :func:`reference_positions`.

    Parameters
    ----------
    labels : array-like of shape (n_samples,)
        Relevance labels.
    qid : array-like of shape (n_samples,)
        Query id of each row.
    w : float
        Weight of the label in the logging score, in [0, 1].
    rng : numpy.random.Generator
        Source of the noise and of the tie-breaking.
    y_max : float
        Upper end of the uniform noise.

    Returns
    -------
    positions : ndarray of int64 of shape (n_samples,)
        A permutation of ``1 .. n_q`` within each query of ``n_q`` rows.

    Examples
    --------
    >>> import numpy as np
    >>> true_rank_positions([0, 2, 1, 0], [7, 7, 7, 7], 1.0, np.random.default_rng(0), 2)
    array([4, 1, 2, 3])
    """
    by_row, by_score, start = _logging_order(_logging_score(labels, w, rng, y_max), qid, rng)
    positions = np.empty(len(by_row), dtype=np.int64)
    positions[by_score] = np.arange(len(by_row)) - start + 1
    return positions


def reference_positions(labels, qid, w, rng, y_max=4):
    """Display positions by the rule of the public code behind the published table (protocol (b)).

    With the rows of a query in row order ``0 .. n_q - 1`` and ``pi`` the logging
    ranking (``pi[k]`` = row index of the ``k``-th best row by
    ``w * y + (1 - w) * Uniform(0, y_max)``), the repository's
    ``positions[rows] = argsort(-scores) + 1`` gives row ``i`` the position ``pi[i] + 1``:
    one plus the index of the ``i``-th best row. The true display rank of row ``i`` is
    ``pi^{-1}[i] + 1`` (:func:`true_rank_positions`). The reference rule is the
    *inverse permutation* of the ranks.

    Why it matters: with rows in an order unrelated to relevance (as in the repository,
    which sorts rows by query id with an unstable sort), ``pi[i]`` is the index of some
    other document, so a document's position, and hence its examination probability
    ``1 / position``, hardly depends on its own relevance, whatever ``w``. Position bias
    becomes noise independent of relevance: an observation tower can fit it without
    absorbing relevance, and a single tower loses information but is not confounded.
    Under the true ranks with ``w`` near 1, position and relevance are confounded,
    which is the situation Zhang et al. study. The rule is a permutation of
    ``1 .. n_q`` per query either way, so the marginal distribution of positions is the
    same.

    Parameters
    ----------
    labels : array-like of shape (n_samples,)
        Relevance labels.
    qid : array-like of shape (n_samples,)
        Query id of each row; the rows of a query need not be contiguous, "row order"
        is their order in the arrays.
    w : float
        Weight of the label in the logging score, in [0, 1].
    rng : numpy.random.Generator
        Source of the noise and of the tie-breaking (the repository breaks ties by
        ``argsort``'s order; here at random).
    y_max : float, default=4
        Upper end of the uniform noise (the repository fixes it to MSLR's 4).

    Returns
    -------
    positions : ndarray of int64 of shape (n_samples,)
        A permutation of ``1 .. n_q`` within each query.

    Examples
    --------
    Four rows of one query, logging by relevance (``w = 1``): with this seed the ranking is
    row 1, row 2, row 3, row 0 (the tie of rows 0 and 3 is broken at random), so the true
    ranks are ``[4, 1, 2, 3]`` (:func:`true_rank_positions` with the same seed). The
    reference rule gives row ``i`` one plus the index of the ``i``-th best row:

    >>> import numpy as np
    >>> reference_positions([0, 2, 1, 0], [7, 7, 7, 7], 1.0, np.random.default_rng(0), 2)
    array([2, 3, 4, 1])

    The most relevant document (row 1) is shown third, not first.
    """
    return reference_rule(_logging_score(labels, w, rng, y_max), qid, rng)


def reference_rule(score, qid, rng):
    """The reference positions of :func:`reference_positions` from given logging scores.

    The ``position_rule`` of :func:`sklearn_ltr.clicks.simulate_click_log` for protocol (b):
    the simulator draws the logging scores ``w * y + (1 - w) * Uniform(0, y_max)``, this rule
    turns them into positions (ties broken at random from ``rng``).

    Parameters
    ----------
    score : ndarray of float64 of shape (n_samples,)
        Logging score of each row, larger ranked first.
    qid : array-like of shape (n_samples,)
        Query id of each row.
    rng : numpy.random.Generator
        Source of the tie-breaking.

    Returns
    -------
    positions : ndarray of int64 of shape (n_samples,)
        A permutation of ``1 .. n_q`` within each query.
    """
    by_row, by_score, start = _logging_order(score, qid, rng)
    n = len(by_row)
    local = np.empty(n, dtype=np.int64)
    local[by_row] = np.arange(n) - start  # index of each row among its query's rows, in row order
    positions = np.empty(n, dtype=np.int64)
    positions[by_row] = local[by_score] + 1  # k-th row of the query <- 1 + index of its k-th best row
    return positions


def downsample_negatives(clicks, keep, rng):
    """Keep every clicked row and each non-clicked row independently with probability ``keep``.

    Parameters
    ----------
    clicks : ndarray of shape (n_samples,)
        0/1 clicks.
    keep : float
        Share of non-clicked rows kept (0.1 in the repository).
    rng : numpy.random.Generator
        Source of the draws (independent of the click simulation; see the study's notes).

    Returns
    -------
    mask : ndarray of bool of shape (n_samples,)
    """
    return (clicks == 1) | (rng.random(len(clicks)) < keep)


def click_log(labels, qid, *, w, protocol, sessions, rng, y_max, epsilon=0.1):
    """Positions and clicks of ``sessions`` independent result pages per query.

    Parameters
    ----------
    labels : ndarray of shape (n_samples,)
        Integer relevance labels.
    qid : ndarray of shape (n_samples,)
        Query id of each row.
    w : float
        Quality of the logging ranker.
    protocol : {"true-rank", "reference"}
        ``"true-rank"``: :func:`sklearn_ltr.clicks.simulate_click_log` with the default
        position-based model (one :func:`sklearn_ltr.clicks.simulate_clicks` per session).
        ``"reference"``: the same simulator and click model with the positions of
        :func:`reference_rule` (those of :func:`reference_positions`).
    sessions : int
        Result pages per query.
    rng : numpy.random.Generator
        Source of everything random.
    y_max : float
        Highest grade (noise range and click normaliser).
    epsilon : float, default=0.1
        Click noise.

    Returns
    -------
    rows, positions, clicks, session : ndarrays of shape (sessions * n_samples,)
        Row of ``labels`` shown, its position, its click, and the id of its result page
        (``query_index * sessions + s``, unique per query and session).
    """
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {PROTOCOLS}; got {protocol!r}.")
    # true-rank: the draws of one simulate_clicks call per session, from rng; reference: the same noise
    # and tie-breaking draws, the positions of reference_rule.
    log = simulate_click_log(labels, qid, click_model=PositionBasedModel(eta=1.0, epsilon=epsilon), w=w,
                             sessions=sessions, y_max=y_max, position_rule=None if protocol == "true-rank" else
                             reference_rule, random_state=rng)
    return log.rows, log.positions, log.clicks, log.sessions


# ----------------------------------------------------------------- reference trainer


def _mlp(n_in):
    return nn.Sequential(nn.Linear(n_in, 64), nn.ReLU(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 1))


class _ReferenceModel(nn.Module):
    """Relevance tower, and for the two-tower methods an observation tower on the position."""

    def __init__(self, method, n_features, *, max_position, dropout, dropout_on, reversal):
        super().__init__()
        self.method, self.max_position, self.reversal = method, max_position, reversal
        self.relevance = _mlp(n_features)
        if method == "Single Tower":
            return
        layers = [nn.Embedding(max_position + 1, 64), nn.ReLU(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 1)]
        if method == "Observation Dropout":
            # "output": HEAD of the repository (dropout on o); "hidden": its first version (on the 32 units).
            layers.insert(len(layers) if dropout_on == "output" else 4, nn.Dropout(dropout))
        self.observation = nn.Sequential(*layers)
        if method == "Gradient Reversal":
            self.adversary = nn.Linear(1, 1)

    def observation_logit(self, positions):
        return self.observation(positions.clamp(max=self.max_position)).squeeze(-1)

    def loss(self, x, clicks, positions):
        r = self.relevance(x).squeeze(-1)
        if self.method == "Single Tower":
            return nn.functional.binary_cross_entropy_with_logits(r, clicks)
        o = self.observation_logit(positions)
        loss = nn.functional.binary_cross_entropy_with_logits(r + o, clicks)
        if self.method == "Gradient Reversal":
            guess = self.adversary(gradient_reversal(o.unsqueeze(-1), self.reversal)).squeeze(-1)
            loss = loss + nn.functional.mse_loss(guess, clicks)
        return loss


@dataclass
class ReferenceFit:
    """A trained reference model.

    Attributes
    ----------
    method : str
        One of :data:`METHODS`.
    scaler : StandardScaler
        Fitted on the (down-sampled) training rows.
    relevance : torch.nn.Module
        The relevance tower (the best epoch's weights), in eval mode.
    curve : ndarray of shape (20,) or None
        ``exp(o(p) - o(1))`` for ``p = 1 .. 20`` with the observation tower in eval mode
        (dropout off): the click-odds ratio of position ``p`` to position 1 at equal
        relevance, which is the relative examination probability when clicks are rare
        (truth: ``1 / p``). None for the single tower.
    n_epochs : int
        Epochs run (early stopping included).
    best_epoch : int
        1-based epoch whose weights were kept.
    val_ndcg : list of float
        Validation click NDCG@5 after every epoch.
    """

    method: str
    scaler: StandardScaler
    relevance: nn.Module
    curve: np.ndarray | None
    n_epochs: int
    best_epoch: int
    val_ndcg: list = field(default_factory=list)

    def predict(self, X):
        """Relevance-tower scores of the rows of ``X`` (raw features).

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features)
            Features, unscaled.

        Returns
        -------
        scores : ndarray of float64 of shape (n_samples,)
        """
        with torch.no_grad():
            x = torch.as_tensor(self.scaler.transform(X), dtype=torch.float32)
            scores = self.relevance(x).squeeze(-1).double().numpy()
        assert scores.shape == (len(X),) and np.isfinite(scores).all(), "non-finite relevance scores"
        return scores


def fit_reference(method, X, clicks, positions, qid, X_val, clicks_val, qid_val, seed, *, max_epochs=30, patience=5,
                  batch_size=32, lr=1e-3, weight_decay=1e-5, max_position=120, dropout=0.2, dropout_on="output",
                  reversal=0.8):
    """Train one model of the published comparison as the reference repository does.

    Set-up: features standardised (``StandardScaler`` fitted on the training rows given);
    pointwise binary cross-entropy on the clicks over rows (not lists), in shuffled
    batches of ``batch_size`` rows; relevance tower ``d -> 64 -> 32 -> 1`` (ReLU);
    observation tower ``Embedding(max_position + 1, 64) -> ReLU -> 32 -> ReLU -> 1`` on
    ``min(position, max_position)``; click logit ``r + o`` (additive). Methods:

    - ``"Single Tower"``: the relevance tower alone on the clicks;
    - ``"Two Tower"``: ``r + o`` (the published "PAL (additive)");
    - ``"Observation Dropout"``: ``nn.Dropout(dropout)`` on ``o`` (``dropout_on="output"``,
      the repository's HEAD; inverted dropout, ``o / (1 - p)`` when kept) or on the 32
      hidden units before the last layer (``"hidden"``, the version that produced the
      published numbers);
    - ``"Gradient Reversal"``: ``r + o`` plus an adversary ``Linear(1, 1)`` on
      ``o`` passed through a gradient-reversal layer of scale ``reversal``, regressing the
      clicks with a mean squared error added to the loss.

    Adam (``lr``, L2 ``weight_decay`` on every parameter). After each epoch the relevance
    tower scores the validation rows; their click NDCG@5 per validation list (``qid_val``;
    lists without a click count 0) decides early stopping: at most ``max_epochs``,
    stop after ``patience`` epochs without a strict improvement, keep the best epoch.

    Parameters
    ----------
    method : str
        One of :data:`METHODS`.
    X : ndarray of shape (n_samples, n_features)
        Training features (raw).
    clicks : ndarray of shape (n_samples,)
        0/1 clicks.
    positions : ndarray of int of shape (n_samples,)
        1-based display positions (ignored by the single tower).
    qid : ndarray of shape (n_samples,)
        Query or session of each training row (unused by the pointwise loss; checked).
    X_val : ndarray of shape (n_val, n_features)
        Validation features (raw).
    clicks_val : ndarray of shape (n_val,)
        Validation clicks.
    qid_val : ndarray of shape (n_val,)
        Validation list (query or session) of each row.
    seed : int
        Seeds the initialisation, the batch order and dropout.
    max_epochs, patience, batch_size : int
        Training budget, early-stopping patience, rows per batch.
    lr, weight_decay : float
        Adam's learning rate and L2 penalty.
    max_position : int
        Positions above it share the last embedding slot.
    dropout : float
        Observation dropout rate.
    dropout_on : {"output", "hidden"}
        Where observation dropout acts.
    reversal : float
        Gradient-reversal scale.

    Returns
    -------
    fit : ReferenceFit
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}; got {method!r}.")
    n = len(clicks)
    assert X.shape[0] == n == len(positions) == len(qid) and X_val.shape[0] == len(clicks_val) == len(qid_val)
    assert set(np.unique(clicks).tolist()) <= {0, 1} and np.asarray(positions).min() >= 1
    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    scaler = StandardScaler().fit(X)
    x = torch.as_tensor(scaler.transform(X), dtype=torch.float32)
    c = torch.as_tensor(clicks, dtype=torch.float32)
    p = torch.as_tensor(np.asarray(positions), dtype=torch.int64)
    x_val = torch.as_tensor(scaler.transform(X_val), dtype=torch.float32)
    model = _ReferenceModel(method, X.shape[1], max_position=max_position, dropout=dropout, dropout_on=dropout_on,
                            reversal=reversal)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    best, best_state, best_epoch, history, stale = -np.inf, None, 0, [], 0
    for epoch in range(1, max_epochs + 1):
        model.train()
        order = torch.randperm(n, generator=generator)
        for start in range(0, n, batch_size):
            batch = order[start:start + batch_size]
            optimizer.zero_grad()
            loss = model.loss(x[batch], c[batch], p[batch])
            loss.backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            val_scores = model.relevance(x_val).squeeze(-1).double().numpy()
        assert np.isfinite(val_scores).all(), f"{method}: non-finite validation scores at epoch {epoch}"
        history.append(float(ndcg_score(clicks_val, val_scores, qid_val, k=5, empty_value=0.0)))
        if history[-1] > best:
            best, best_state, best_epoch, stale = history[-1], copy.deepcopy(model.state_dict()), epoch, 0
        else:
            stale += 1
            if stale >= patience:
                break
    model.load_state_dict(best_state)
    model.eval()
    curve = None
    if method != "Single Tower":
        with torch.no_grad():
            logits = model.observation_logit(torch.arange(1, CURVE_POSITIONS + 1)).double().numpy()
        curve = np.exp(logits - logits[0])
        assert np.isfinite(curve).all()
    return ReferenceFit(method, scaler, model.relevance, curve, len(history), best_epoch, history)

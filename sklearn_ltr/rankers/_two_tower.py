"""TwoTowerDebiasedRanker: learn relevance from position-biased clicks with a two-tower click model."""

from __future__ import annotations

import warnings
from numbers import Integral, Real

import numpy as np
import torch
from scipy.special import expit
from sklearn.utils.validation import check_is_fitted

from sklearn_ltr.clicks import PROPENSITY_CLIP, check_clicks, check_positions
from sklearn_ltr.nn import ACTIVATIONS
from sklearn_ltr.nn._two_tower import TwoTowerScorer
from sklearn_ltr.nn._two_tower_loss import COMBINATIONS, REVERSAL_TARGETS, TwoTowerClickLoss
from sklearn_ltr.rankers._neural import NeuralRanker
from sklearn_ltr.rankers._neural_params import TRAINING_CONSTRAINTS, positive_int_tuple
from sklearn_ltr.rankers._validation_set import ValidationData
from sklearn_ltr.training._distributed import DataParallelMixin
from sklearn_ltr.training._net import RankingNet
from sklearn_ltr.utils._sklearn_compat import Interval, StrOptions

__all__ = ["MissingPositionsWarning", "TwoTowerDebiasedRanker"]


class MissingPositionsWarning(UserWarning):
    """``positions=None`` in ``TwoTowerDebiasedRanker.fit``: every row is taken as shown at position 1.

    The observation tower then learns nothing and the model is a single tower trained on
    clicks. Inside a ``Pipeline`` or a search, ``positions`` reaches the ranker only with
    ``sklearn.set_config(enable_metadata_routing=True)``.

    Examples
    --------
    >>> import warnings
    >>> from sklearn_ltr import MissingPositionsWarning, TwoTowerDebiasedRanker
    >>> from sklearn_ltr.datasets import make_ranking, simulate_clicks
    >>> X, y, qid = make_ranking(n_queries=10, n_features=4, random_state=0)
    >>> positions, clicks = simulate_clicks(y, qid, random_state=0)
    >>> ranker = TwoTowerDebiasedRanker(hidden_sizes=(4,), max_epochs=1, random_state=0)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     ranker = ranker.fit(X, clicks, groups=qid)  # positions forgotten
    >>> any(issubclass(w.category, MissingPositionsWarning) for w in caught)
    True
    >>> issubclass(MissingPositionsWarning, UserWarning)
    True
    """


class _TwoTowerNet(RankingNet):
    """RankingNet whose module returns a :class:`TwoTowerOutput` in training; callbacks see relevance only."""

    @staticmethod
    def _relevance_only(step):
        y_pred = step["y_pred"]
        return {**step, "y_pred": y_pred if isinstance(y_pred, torch.Tensor) else y_pred.relevance}

    def train_step_single(self, batch, **fit_params):
        return self._relevance_only(super().train_step_single(batch, **fit_params))

    def validation_step(self, batch, **fit_params):
        return self._relevance_only(super().validation_step(batch, **fit_params))


class _DataParallelTwoTowerNet(DataParallelMixin, _TwoTowerNet):
    """:class:`_TwoTowerNet` trained data-parallel (``distributed=True`` under a launcher)."""


def _check_positions(positions, n_samples, *, n_bias_features="any"):
    """Validated positions: ``(n,)`` float 1-based ranks or ``(n, d)`` float bias features."""
    if hasattr(positions, "to_numpy"):
        positions = positions.to_numpy()
    positions = np.asarray(positions)
    if positions.dtype.kind not in "biuf" or positions.ndim not in (1, 2):
        raise ValueError(
            f"positions must be a numeric 1-D array of display ranks or a 2-D array of bias features; "
            f"got dtype {positions.dtype} and shape {positions.shape}."
        )
    if positions.shape[0] != n_samples:
        raise ValueError(
            f"positions has {positions.shape[0]} rows but X (and groups) has {n_samples}; "
            f"pass one display position (or one row of bias features) per row of X."
        )
    width = None if positions.ndim == 1 else positions.shape[1]
    if n_bias_features != "any" and width != n_bias_features:
        raise ValueError(f"positions has {'1-D' if width is None else f'{width}-column'} values, but the model "
                         f"was fitted with {'1-D positions' if n_bias_features is None else n_bias_features}.")
    if width is None:
        return check_positions(positions, n_samples).astype(np.float32)
    if not np.isfinite(positions).all():
        raise ValueError("positions contains NaN or infinite values (missing positions); every row needs one.")
    return positions.astype(np.float32)


class TwoTowerDebiasedRanker(NeuralRanker):
    r"""Two-tower click model: learns document relevance from position-biased clicks.

    A relevance tower :math:`r = f(x)` (an MLP on the document features) and an
    observation tower :math:`o = g(b)` (on the display position, or on bias features
    such as device or layout) explain each click together:

    .. math::
        P(c = 1 \mid x, b) = \sigma(r + o) \quad (\text{additive}), \qquad
        P(c = 1 \mid x, b) = \sigma(r)\,\sigma(o) \quad (\text{multiplicative, PAL}),

    trained by binary cross-entropy on the clicks (the multiplicative likelihood in log
    space, see :func:`~sklearn_ltr.nn.click_log_likelihood`). Only :math:`r` ranks at
    serving time: there the position is unknown. With 1-D positions, :math:`b` is the
    one-hot encoding of :math:`\min(p, P)` with ``P = max_position``, so the linear
    observation tower learns one logit per position.

    Because the logging ranker put relevant documents on top, the observation tower can
    absorb relevance ("confounding", Zhang et al., 2023). Two remedies of that paper:
    ``observation_dropout`` (dropout on :math:`o` while training) and
    ``gradient_reversal``: an adversary predicts a relevance proxy (the detached
    :math:`\sigma(r)` or the clicks) linearly from :math:`o`, and a gradient reversal layer
    turns its gradient, times ``gradient_reversal``, against the observation tower, which
    so learns an :math:`o` that predicts less of the proxy: a flatter curve.

    The adversary is the least-squares line of the standardised proxy on :math:`o`, fitted
    exactly on each batch with a ridge of 1 (:func:`~sklearn_ltr.nn.linear_adversary_loss`);
    the reversal then amounts to the penalty :math:`\lambda\,\mathrm{cov}(o, \tilde t)^2 /
    (\mathrm{var}(o) + 1)`, at most :math:`\lambda`. This form is chosen for stability: a
    learned linear head on :math:`o` lets the reversed squared error grow with the scale of
    :math:`o` (the logits can diverge), and a learned MLP head fits the proxy's mean at each
    position almost exactly, which leaves a reversed gradient near zero (an earlier version
    of this estimator learned the same curve with and without reversal).

    Parameters
    ----------
    hidden_sizes : tuple of int, default=(64, 32)
        Hidden layers of the relevance tower; ``()`` for a linear one.
    activation : {"relu", "gelu", "tanh", "sigmoid", "leaky_relu", "elu"}, default="relu"
        Hidden-layer activation (both towers).
    dropout : float, default=0.0
        Dropout after each hidden layer of the relevance tower.
    batch_norm : bool, default=False
        Batch normalisation in the relevance tower.
    combination : {"additive", "multiplicative", "dla"}, default="additive"
        ``sigmoid(r + o)`` or PAL's ``sigmoid(r) * sigmoid(o)``, trained by the clicks'
        likelihood; or ``"dla"``, the dual learning algorithm (Ai et al., 2018): each tower
        trained by a softmax cross-entropy on the clicks weighted by the other tower's inverse
        estimate, clipped at 20 (:func:`~sklearn_ltr.nn.dual_learning_loss`).
    max_position : int, default=50
        Positions above it share one observation logit (1-D positions only).
    observation_hidden_sizes : tuple of int, default=()
        Hidden layers of the observation tower.
    observation_dropout : float, default=0.0
        Dropout rate on the observation logit in training (inverted dropout).
    gradient_reversal : float, default=0.0
        Weight :math:`\lambda` of the adversary's reversed gradient; 0 disables it. The
        penalty it adds is at most :math:`\lambda` (the click loss is a mean binary
        cross-entropy), so values about 0.1 to 3 span weak to nearly flat curves.
    reversal_target : {"relevance", "clicks"}, default="relevance"
        What the adversary predicts from :math:`o`: the detached :math:`\sigma(r)` or the clicks.
        Clicks also carry the position effect itself, so ``"clicks"`` flattens the learned curve more.
    observation_lr : float, default=None
        Learning rate of the observation tower; ``None`` uses ``lr``. With 1-D positions each
        position has its own logit, which Adam moves by about the learning rate per step: on a
        small click log, a larger ``observation_lr`` (e.g. ``10 * lr``) lets the curve converge
        without overfitting the relevance tower.
    %(neural_parameters)s

    Attributes
    ----------
    observation_curve_ : ndarray of shape (max_position,)
        Learned examination propensity of positions ``1 .. max_position`` (1-D positions
        only). Multiplicative: :math:`\sigma(o_p)`. Additive: :math:`e^{o_p - o_1}`, the
        click-odds ratio to position 1, which is the relative examination propensity when
        clicks are rare (the additive model has no absolute one). DLA: :math:`e^{o_p - o_1}`,
        the ratio of the examination estimates :math:`\mathrm{softmax}(o)` of position ``p``
        and position 1.
    observation_logits_ : ndarray of shape (max_position,)
        :math:`o_p` for ``p = 1 .. max_position`` (1-D positions only).
    n_bias_features_ : int or None
        Columns of 2-D bias features seen in ``fit``; None for 1-D positions.
    net_ : skorch.NeuralNet
        The trained skorch net (its ``module_`` is the :class:`~sklearn_ltr.nn.TwoTowerScorer`).
    history_ : skorch.History
        Per-epoch training loss, validation loss and ``valid_ndcg@10`` (for ``X_val`` with
        ``propensity_val``, its IPS estimate of DCG@10, ``valid_ips_dcg@10``).
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
    RankNetRanker : The single tower; ``loss="sigmoid_ce"`` trains it on clicks.
    sklearn_ltr.datasets.simulate_clicks : Position-biased clicks for experiments.

    References
    ----------
    T. Joachims, A. Swaminathan and T. Schnabel. "Unbiased Learning-to-Rank with Biased
    Feedback." WSDM 2017.

    X. Wang, N. Golbandi, M. Bendersky, D. Metzler and M. Najork. "Position Bias
    Estimation for Unbiased Learning to Rank in Personal Search." WSDM 2018.

    Q. Ai, K. Bi, C. Luo, J. Guo and W. B. Croft. "Unbiased Learning to Rank with Unbiased
    Propensity Estimation." SIGIR 2018.

    H. Guo, J. Yu, Q. Liu, R. Tang and Y. Zhang. "PAL: a Position-bias Aware Learning
    Framework for CTR Prediction in Live Recommender Systems." RecSys 2019.

    Y. Zhang, L. Yan, Z. Qin, H. Zhuang, J. Shen, X. Wang, M. Bendersky and M. Najork.
    "Towards Disentangling Relevance and Bias in Unbiased Learning to Rank." KDD 2023.

    Examples
    --------
    One result page per training query, shown by a logging ranker of quality ``w=0.6``;
    a document at position :math:`p` is examined with probability :math:`1/p`:

    >>> import numpy as np
    >>> from sklearn_ltr import TwoTowerDebiasedRanker
    >>> from sklearn_ltr.datasets import make_ranking, simulate_clicks
    >>> from sklearn_ltr.metrics import ndcg_score
    >>> X, y, qid = make_ranking(n_queries=150, n_features=10, random_state=0)
    >>> train, test = qid < 100, qid >= 100
    >>> positions, clicks = simulate_clicks(y[train], qid[train], w=0.6, y_max=4, random_state=0)

    ``positions`` (one display rank per row) feeds the observation tower only:

    >>> ranker = TwoTowerDebiasedRanker(hidden_sizes=(16,), combination="multiplicative", max_position=10,
    ...                                 lr=1e-2, observation_lr=1e-1, max_epochs=5, random_state=0)
    >>> ranker = ranker.fit(X[train], clicks, groups=qid[train], positions=positions)

    Ranking uses the relevance tower alone, with no position. Judged by the true labels
    of the test queries, it beats random scores:

    >>> scores = ranker.predict(X[test])
    >>> scores.shape == y[test].shape
    True
    >>> chance = ndcg_score(y[test], np.random.default_rng(0).random(len(scores)), qid[test], k=10)
    >>> ndcg_score(y[test], scores, qid[test], k=10) > chance
    True

    The learned examination propensity falls with the position:

    >>> curve = ranker.observation_curve_
    >>> curve.shape, bool(curve[0] > 2 * curve[4])
    ((10,), True)
    >>> np.allclose(ranker.observation_logit([1, 2, 3]), ranker.observation_logits_[:3])
    True
    """

    __metadata_request__fit = {"groups": True, "positions": True, "propensity_val": True}  # noqa: RUF012

    def __init__(
        self,
        hidden_sizes=(64, 32),
        activation="relu",
        dropout=0.0,
        batch_norm=False,
        *,
        combination="additive",
        max_position=50,
        observation_hidden_sizes=(),
        observation_dropout=0.0,
        gradient_reversal=0.0,
        reversal_target="relevance",
        observation_lr=None,
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
        """Store the parameters unchanged; see :class:`TwoTowerDebiasedRanker`."""
        self.hidden_sizes = hidden_sizes
        self.activation = activation
        self.dropout = dropout
        self.batch_norm = batch_norm
        self.combination = combination
        self.max_position = max_position
        self.observation_hidden_sizes = observation_hidden_sizes
        self.observation_dropout = observation_dropout
        self.gradient_reversal = gradient_reversal
        self.reversal_target = reversal_target
        self.observation_lr = observation_lr
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
        "combination": [StrOptions(set(COMBINATIONS))],
        "max_position": [Interval(Integral, 1, None, closed="left")],
        "observation_hidden_sizes": [positive_int_tuple()],
        "observation_dropout": [Interval(Real, 0, 1, closed="left")],
        "gradient_reversal": [Interval(Real, 0, None, closed="left")],
        "reversal_target": [StrOptions(set(REVERSAL_TARGETS))],
        "observation_lr": [Interval(Real, 0, None, closed="neither"), None],
        **TRAINING_CONSTRAINTS,
    }
    _net_class = _TwoTowerNet
    _data_parallel_net_class = _DataParallelTwoTowerNet

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.ranker_tags.target_kind = "clicks"
        tags.ranker_tags.extra_fit_inputs = ("positions",)
        return tags

    def _module_spec(self, n_features):
        return TwoTowerScorer, {
            "n_features": n_features, "hidden_sizes": tuple(self.hidden_sizes), "activation": self.activation,
            "dropout": float(self.dropout), "batch_norm": bool(self.batch_norm),
            "n_bias_features": self.n_bias_features_, "max_position": int(self.max_position),
            "observation_hidden_sizes": tuple(self.observation_hidden_sizes),
            "observation_dropout": float(self.observation_dropout),
            "gradient_reversal": float(self.gradient_reversal),
        }

    def _criterion_spec(self):
        return TwoTowerClickLoss, {"combination": self.combination, "reversal_target": self.reversal_target,
                                   "max_weight": 1.0 / PROPENSITY_CLIP}

    def _net_extras(self):
        if self.observation_lr is None:
            return {}
        return {"optimizer__param_groups": [("observation.*", {"lr": self.observation_lr})]}

    def fit(self, X, y, groups=None, positions=None, sample_weight=None, X_val=None, y_val=None, groups_val=None,
            propensity_val=None):
        """Train both towers on clicks.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Dense, finite document features (input of the relevance tower).
        y : array-like of shape (n_samples,)
            Clicks: 1 clicked, 0 shown and not clicked.
        groups : array-like of shape (n_samples,), default=None
            Query (or session) id of each row; ``None`` makes all rows one query (with a warning).
        positions : array-like of shape (n_samples,) or (n_samples, n_bias_features), default=None
            1-based display rank of each row (whole numbers), or a 2-D array of bias features
            (device, layout, ...) fed to the observation tower. Routed like ``groups`` under
            metadata routing. ``None`` takes every row as shown at position 1 (with a
            :class:`MissingPositionsWarning`): a single tower on clicks.
        sample_weight : array-like of shape (n_samples,), default=None
            Weight of each row's query (or session), the same for every row of it.
            Routed like ``groups``.
        X_val, y_val, groups_val : array-like, default=None
            A separate validation set of other queries: features, labels or clicks, query ids.
            The relevance tower's NDCG@10 on it (the IPS estimate of DCG@10 with
            ``propensity_val``) is recorded each epoch and, with ``early_stopping=True``,
            monitored by early stopping; positions are not needed, since ranking uses the
            relevance tower alone. Routed like ``groups``; inside a ``Pipeline``, use
            ``transform_input=["X_val"]``.
        propensity_val : array-like of shape (n_val_samples,), default=None
            With a validation click log as ``y_val``: each row's examination propensity.

        Returns
        -------
        self : object
            The fitted ranker.
        """
        validation = ValidationData(X_val, y_val, groups_val, propensity_val)
        return self._fit(X, y, groups, sample_weight=sample_weight, positions=positions, validation=validation)

    def _prepare_training(self, X, y, query_groups, extras):
        clicks = check_clicks(y, name="y (clicks)")
        positions = extras["positions"]
        if positions is None:
            warnings.warn("positions=None: every row is taken as shown at position 1, so nothing is debiased. "
                          "Pass positions=<display rank per row> (with metadata routing enabled inside a "
                          "Pipeline or a search).", MissingPositionsWarning, stacklevel=5)
            positions = np.ones(X.shape[0], dtype=np.float32)
        positions = _check_positions(positions, X.shape[0])
        self.n_bias_features_ = None if positions.ndim == 1 else positions.shape[1]
        return clicks, {"positions": positions}

    def _after_fit(self):
        if self.n_bias_features_ is None:
            ranks = np.arange(1, int(self.max_position) + 1, dtype=np.float32)
            self.observation_logits_ = logits = self.observation_logit(ranks)
            if self.combination == "multiplicative":
                self.observation_curve_ = expit(logits)
            else:
                self.observation_curve_ = np.exp(logits - logits[0])

    def observation_logit(self, positions):
        """Observation-tower logit :math:`o` of each row of ``positions`` (as given to ``fit``).

        Parameters
        ----------
        positions : array-like of shape (n_samples,) or (n_samples, n_bias_features)
            1-based display ranks (positions beyond ``max_position`` share its logit), or
            rows of bias features, of the kind given to ``fit``.

        Returns
        -------
        logits : ndarray of shape (n_samples,)
            The observation logit :math:`o` of each row.
        """
        check_is_fitted(self)
        positions = np.asarray(positions.to_numpy() if hasattr(positions, "to_numpy") else positions)
        positions = _check_positions(positions, positions.shape[0] if positions.ndim else 0,
                                     n_bias_features=self.n_bias_features_)
        module = self.net_.module_
        module.eval()
        with torch.no_grad():
            logits = module.observation_logits(torch.as_tensor(positions, device=self.net_.device))
        return logits.float().cpu().numpy().astype(np.float64)

    def predict(self, X, groups=None, positions=None):
        """Relevance-tower score of every row, in input order.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to score.
        groups : array-like of shape (n_samples,), default=None
            Ignored (pointwise scorer); accepted for a uniform interface.
        positions : array-like, default=None
            Ignored: ranking uses the relevance tower alone, since at serving time there is
            no display position (use :meth:`observation_logit` for the observation tower).

        Returns
        -------
        scores : ndarray of shape (n_samples,)
            Relevance logit :math:`r` of each row, in input order; higher ranks first.
        """
        return self._predict(X, groups)

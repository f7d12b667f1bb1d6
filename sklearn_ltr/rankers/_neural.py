"""Shared estimator logic of the neural rankers (RankNet, DASALC, SetRank, two-tower).

Subclasses declare their constructor parameters and the torch module to build;
this base validates the data and the shared parameters, builds the private
skorch :class:`~sklearn_ltr._skorch.RankingNet`, trains it and predicts one score
per row in input order.
"""

from __future__ import annotations

import copy
import numbers

import numpy as np
import torch
from skorch.callbacks import EarlyStopping, ProgressBar

from sklearn_ltr._groups import QueryGroups
from sklearn_ltr._skorch import QuerySplit, RankingLoss, RankingNet, ValidationNDCG, build_dataset, resolve_device
from sklearn_ltr.base import BaseRanker, resolve_groups
from sklearn_ltr.losses import get_loss

__all__ = ["OPTIMIZERS", "NeuralRanker", "canonical_row_order"]

OPTIMIZERS = {"adam": torch.optim.Adam, "adamw": torch.optim.AdamW, "sgd": torch.optim.SGD}

#: Rows per pseudo-query when a pointwise scorer predicts: it has no list context.
_PREDICT_CHUNK = 1024


def canonical_row_order(X):
    """Permutation sorting the rows of ``X`` by their bytes: the same rows give the same order.

    Any fixed order works; comparing raw bytes is cheap (``memcmp``) and needs no choice
    of key. Identical rows keep their relative input order.
    """
    X = np.ascontiguousarray(X)
    rows = X.view(np.dtype((np.void, X.dtype.itemsize * X.shape[1]))).ravel()
    return np.argsort(rows, kind="stable")


def _check_number(name, value, *, low, high=None, integer=False, low_open=False, allow_none=False):
    if value is None and allow_none:
        return
    kind = numbers.Integral if integer else numbers.Real
    ok = isinstance(value, kind) and not isinstance(value, bool)
    ok = ok and (value > low if low_open else value >= low) and (high is None or value < high)
    if not ok:
        bound = f"> {low}" if low_open else f">= {low}"
        upper = f" and < {high}" if high is not None else ""
        what = "an integer" if integer else "a number"
        none = " or None" if allow_none else ""
        raise ValueError(f"{name} must be {what} {bound}{upper}{none}; got {value!r}.")


class NeuralRanker(BaseRanker):
    """Base of the neural rankers; not for direct use.

    Subclasses define ``__init__`` with every parameter (scikit-learn
    convention), :meth:`_module_spec` and, for list-context models,
    ``_list_context = True`` (``groups`` is then needed at predict time).
    """

    #: Whether scores depend on the other documents of the list (then ``predict`` needs
    #: ``groups`` and scores each query's rows in a canonical order).
    _list_context = False

    def _module_spec(self, n_features):
        """Return ``(module_class, kwargs)`` of the torch module for ``n_features`` inputs."""
        raise NotImplementedError

    def _check_shared_params(self):
        _check_number("lr", self.lr, low=0, low_open=True)
        _check_number("max_epochs", self.max_epochs, low=1, integer=True)
        _check_number("batch_size", self.batch_size, low=1, integer=True)
        _check_number("max_list_length", self.max_list_length, low=2, integer=True, allow_none=True)
        _check_number("weight_decay", self.weight_decay, low=0)
        _check_number("n_iter_no_change", self.n_iter_no_change, low=1, integer=True)
        _check_number("validation_fraction", self.validation_fraction, low=0, high=1, low_open=True,
                      allow_none=True)
        if not (self.optimizer in OPTIMIZERS or (isinstance(self.optimizer, type)
                                                 and issubclass(self.optimizer, torch.optim.Optimizer))):
            raise ValueError(
                f"optimizer must be one of {sorted(OPTIMIZERS)} or a torch.optim.Optimizer class; "
                f"got {self.optimizer!r}."
            )

    def _callbacks(self):
        callbacks = []
        fraction = self.validation_fraction
        if self.early_stopping and fraction is None:
            fraction = 0.1
        if fraction is not None:
            callbacks.append(("valid_ndcg", ValidationNDCG(k=10)))
        if self.early_stopping:
            callbacks.append(("early_stopping", EarlyStopping(
                monitor="valid_ndcg@10", lower_is_better=False, patience=self.n_iter_no_change, load_best=True,
            )))
        if self.verbose >= 2:
            callbacks.append(("progress_bar", ProgressBar()))
        # Copies, so that a fit never mutates the user's callback objects (clone stays clean).
        callbacks.extend(copy.deepcopy(list(self.callbacks or [])))
        return callbacks, fraction

    def _build_net(self, n_features):
        self._check_shared_params()
        loss = get_loss(self.loss, **(self.loss_params or {}))
        module, module_kwargs = self._module_spec(n_features)
        callbacks, fraction = self._callbacks()
        optimizer = OPTIMIZERS.get(self.optimizer, self.optimizer)
        split_seed = None if self.random_state is None else np.random.RandomState(self.random_state).randint(2**31)
        return RankingNet(
            module,
            criterion=RankingLoss,
            criterion__loss=loss,
            optimizer=optimizer,
            optimizer__weight_decay=self.weight_decay,
            lr=self.lr,
            max_epochs=self.max_epochs,
            batch_size=self.batch_size,
            train_split=None if fraction is None else QuerySplit(fraction, split_seed),
            callbacks=callbacks,
            device=resolve_device(self.device),
            verbose=int(self.verbose),
            max_list_length=self.max_list_length,
            random_state=self._seed(),
            **{f"module__{key}": value for key, value in module_kwargs.items()},
        )

    def _seed(self):
        if self.random_state is None:
            return None
        if isinstance(self.random_state, np.random.RandomState):
            return int(self.random_state.randint(2**31))
        return int(self.random_state)

    def fit(self, X, y, groups=None):
        """Train the network on the queries of ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Dense, finite features (use an imputer for missing values).
        y : array-like of shape (n_samples,)
            Graded relevance labels (non-negative).
        groups : array-like of shape (n_samples,), default=None
            Query id of each row; ``None`` makes all rows one query (with a warning).

        Returns
        -------
        self : object
            The fitted ranker.
        """
        return self._fit(X, y, groups)

    def _fit(self, X, y, groups, **extras):
        """Fit with optional extra per-row inputs of the module (e.g. click positions)."""
        X, y, query_groups = self._validate_fit_data(X, y, groups)
        net = self._build_net(X.shape[1])
        net.fit(build_dataset(query_groups, X, y, **extras))
        self.net_ = net
        self.n_iter_ = len(net.history)
        self.device_ = str(net.device)
        return self

    @property
    def history_(self):
        """skorch's training history (per-epoch losses, ``valid_ndcg@10``, timings)."""
        return self.net_.history

    def _prediction_groups(self, groups, n_samples):
        if self._list_context:
            return resolve_groups(groups, n_samples, method="predict")
        # Pointwise scorers: any partition of the rows gives the same scores.
        return QueryGroups(np.arange(n_samples) // _PREDICT_CHUNK)

    def predict(self, X, groups=None):
        """Score every row; returns one score per row of ``X``, in input order.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to score.
        groups : array-like of shape (n_samples,), default=None
            Query id of each row. Pointwise scorers ignore it; list-context
            models need it (``None`` makes all rows one query, with a warning).

        Returns
        -------
        scores : ndarray of shape (n_samples,)
            One score per row, in input order; higher ranks first.
        """
        return self._predict(X, groups)

    def _predict(self, X, groups, **extras):
        """Predict with optional extra per-row inputs of the module (e.g. an initial rank)."""
        X = self._validate_predict_data(X, groups)
        query_groups = self._prediction_groups(groups, X.shape[0])
        if not self._list_context:
            return query_groups.unsort(self.net_.score_rows(build_dataset(query_groups, X, **extras)))
        # A list-context network is permutation equivariant, but in float32 the order in which
        # attention sums over documents changes the last bits of a score (~1e-7). Scoring each
        # query's rows in a canonical order makes predict exactly invariant to input row order.
        order = canonical_row_order(X)
        canonical = QueryGroups(query_groups.codes[order])
        extras = {name: np.asarray(values)[order] for name, values in extras.items()}
        scores = np.empty(X.shape[0], dtype=np.float64)
        scores[order] = canonical.unsort(self.net_.score_rows(build_dataset(canonical, X[order], **extras)))
        return scores

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = self.random_state is None
        return tags

"""Shared estimator logic of the neural rankers (RankNet, DASALC, SetRank, two-tower).

Subclasses write their constructors out (shared parameters' constraints and docs are declared
once in :mod:`~sklearn_ltr.rankers._neural_params`) and name the torch module to build; this
base validates the data and every parameter, builds the net of the training layer
(:mod:`sklearn_ltr.training`), checks the memory of the largest batch from the costs the
module and the loss declare, trains, and predicts one score per row in input order.
"""

from __future__ import annotations

import copy
import inspect
import numbers
import warnings

import numpy as np
from sklearn.utils.validation import validate_data
from skorch.callbacks import EarlyStopping, ProgressBar

from sklearn_ltr._blocks import check_finite_scores, query_blocks
from sklearn_ltr._groups import check_query_weights
from sklearn_ltr.base import BaseRanker, resolve_groups
from sklearn_ltr.clicks import check_affine, check_clicks, check_propensity, click_weights
from sklearn_ltr.exceptions import TrainingInterruptedWarning
from sklearn_ltr.losses import get_loss
from sklearn_ltr.rankers._neural_params import OPTIMIZERS, NeuralParameters
from sklearn_ltr.rankers._validation_set import VALIDATION_REQUEST, ValidationData, check_validation_features_of
from sklearn_ltr.training import ValidationNDCG
from sklearn_ltr.training._batches import CLICK_PROPENSITY, CLICK_WEIGHTS
from sklearn_ltr.training._checkpoint import training_checkpoint
from sklearn_ltr.training._device import is_cuda, resolve_device
from sklearn_ltr.training._distributed import net_class_for
from sklearn_ltr.training._memory import MemoryEstimate, module_cost
from sklearn_ltr.training._net import QuerySplit, RankingLoss, RankingNet, build_dataset
from sklearn_ltr.training._predict import PREDICTION_BLOCK_ROWS, ScoringBlock, predict_scores
from sklearn_ltr.utils._sklearn_compat import InvalidParameterError, validate_estimator_params

__all__ = ["OPTIMIZERS", "NeuralRanker"]

#: Rows per prediction block (whole queries; a longer query is a block of its own): those of the
#: scoring path (:data:`~sklearn_ltr.training._predict.PREDICTION_BLOCK_ROWS`), read here when predict
#: plans its blocks.
_PREDICT_DOCUMENTS = PREDICTION_BLOCK_ROWS


class NeuralRanker(NeuralParameters, BaseRanker):
    """Base of the neural rankers; not for direct use.

    Subclasses write their ``__init__`` out and their ``_parameter_constraints`` (spreading
    ``LOSS_CONSTRAINTS`` and ``TRAINING_CONSTRAINTS`` of :mod:`~sklearn_ltr.rankers._neural_params`)
    and implement :meth:`_module_spec`. Hooks a subclass may
    override instead of rewriting the net: :meth:`_criterion_spec` and :meth:`_net_extras`
    (e.g. optimiser parameter groups). The memory estimate reads the costs that the module
    (``memory_cost``) and the loss (:func:`~sklearn_ltr.losses.register_loss`) declare.
    List-context models set ``ranker_tags.list_context`` in ``__sklearn_tags__``.
    """

    # Per-query weights travel with the queries, like ``groups``; subclasses whose ``fit`` takes
    # ``propensity`` request it too.
    __metadata_request__fit = {"groups": True, "sample_weight": True, **VALIDATION_REQUEST}  # noqa: RUF012

    #: The net that trains the module, and its data-parallel twin (None: DataParallelRankingNet).
    _net_class = RankingNet
    _data_parallel_net_class = None
    #: The networks compute in float32: float64 features beyond its range are refused in validation.
    _float32_features = True

    def _module_spec(self, n_features):
        """Return ``(module_class, kwargs)`` of the torch module for ``n_features`` inputs."""
        raise NotImplementedError

    def _loss_function(self):
        reserved = sorted({"weights", "reduction"} & set(self.loss_params or {}))
        if reserved:
            raise InvalidParameterError(
                f"loss_params of {type(self).__name__} sets {reserved}: training always averages the queries' "
                f"losses; per-query weights come from fit(..., sample_weight=...)."
            )
        try:
            return get_loss(self.loss, **(self.loss_params or {}))
        except TypeError as error:  # an option the loss does not take
            raise InvalidParameterError(f"loss_params of {type(self).__name__}: {error}") from None

    def _criterion_spec(self):
        """Return ``(criterion_class, kwargs)``: the ranking loss of the training batches."""
        return RankingLoss, {"loss": self._loss_function()}

    def _net_extras(self):
        """Further keyword arguments of the skorch net (e.g. optimiser parameter groups)."""
        return {}

    def _prepare_training(self, X, y, query_groups, extras):
        """Check the target and the extra per-row inputs; return ``(y, extras)`` to train on."""
        return y, extras

    def _after_fit(self):
        """Set fitted attributes derived from the trained module."""

    @property
    def _list_context(self):
        return self.__sklearn_tags__().ranker_tags.list_context

    def _callbacks(self, validation=None, *, clicks=False):
        """``(callbacks, validation fraction)`` of the net; ``validation`` is the callback of ``fit``'s ``X_val``.

        ``clicks``: the training rows are a click log with propensities (``fit(..., propensity=...)``),
        whose held-out queries record the IPS estimate as ``valid_ips_dcg@10``.
        """
        # Copies, so that a fit never mutates the user's callback objects (clone stays clean).
        extra = copy.deepcopy(list(self.callbacks or []))
        if validation is not None:  # first: early stopping monitors the set given to fit
            extra.insert(0, ("valid_ndcg", validation))
        # A ValidationNDCG of a separate set among them is what early stopping monitors (e.g. a
        # validation click log: held-out pages of the training queries tell little of overfitting).
        def is_separate(entry):
            callback = entry[1] if isinstance(entry, tuple) else entry
            return isinstance(callback, ValidationNDCG) and callback.X is not None

        # They run first, so that the epoch's value is in the history when early stopping reads it.
        callbacks = [entry for entry in extra if is_separate(entry)]
        separate = [entry[1] if isinstance(entry, tuple) else entry for entry in callbacks]
        extra = [entry for entry in extra if not is_separate(entry)]
        fraction = self.validation_fraction
        held_out = ValidationNDCG(k=10, name="valid_ips_dcg@10" if clicks else None)
        monitor = held_out.history_key
        if self.early_stopping and separate and fraction is None:
            monitor = separate[0].history_key
        elif self.early_stopping and fraction is None:
            fraction = 0.1
        if fraction is not None:
            callbacks.append(("valid_ndcg", held_out))
        if self.early_stopping:
            callbacks.append(("early_stopping", EarlyStopping(
                monitor=monitor, lower_is_better=False, patience=self.n_iter_no_change, load_best=True,
            )))
        if self.verbose >= 2:
            callbacks.append(("progress_bar", ProgressBar()))
        callbacks.extend(extra)
        # A ranker subclassed before checkpoint_dir existed (see "Your own ranker") has none.
        if getattr(self, "checkpoint_dir", None) is not None:  # last: it restores the callbacks before it
            callbacks.append(("training_checkpoint", training_checkpoint(self)))
        return callbacks, fraction

    def _seeds(self):
        """``(torch seed, validation split seed)``; an int seed always gives the same pair."""
        state = self.random_state
        if state is None:
            return None, None
        if isinstance(state, numbers.Integral):
            return int(state), int(np.random.RandomState(state).randint(2**31))
        return int(state.randint(2**31)), int(state.randint(2**31))

    def _build_net(self, n_features, validation=None, *, clicks=False):
        module, module_kwargs = self._module_spec(n_features)
        criterion, criterion_kwargs = self._criterion_spec()
        callbacks, fraction = self._callbacks(validation, clicks=clicks)
        seed, split_seed = self._seeds()
        net_class = net_class_for(self.distributed, owner=type(self).__name__, plain=self._net_class,
                                  data_parallel=self._data_parallel_net_class)
        return net_class(
            module,
            criterion=criterion,
            optimizer=OPTIMIZERS.get(self.optimizer, self.optimizer),
            optimizer__weight_decay=self.weight_decay,
            lr=self.lr,
            max_epochs=self.max_epochs,
            batch_size=self.batch_size,
            train_split=None if fraction is None else QuerySplit(fraction, split_seed),
            callbacks=callbacks,
            device=resolve_device(self.device),
            verbose=int(self.verbose),
            max_list_length=self.max_list_length,
            random_state=seed,
            precision=self.precision,
            **{f"criterion__{key}": value for key, value in criterion_kwargs.items()},
            **{f"module__{key}": value for key, value in module_kwargs.items()},
            **self._net_extras(),
        )

    def _memory_estimate(self, n_features, device=None, *, training=True):
        """The :class:`~sklearn_ltr.training._memory.MemoryEstimate` of this ranker's batches on ``device``.

        It reads the costs that the module (``memory_cost``) and, for training, the loss declare
        (predict never reads the loss: it may not be registered where a model is loaded);
        ``device`` is the fitted net's when not given, else the one ``device`` resolves to.
        """
        if device is None:
            net = getattr(self, "net_", None)
            device = net.device if net is not None else resolve_device(self.device)
        return MemoryEstimate.declared(
            type(self).__name__, module_cost(*self._module_spec(n_features)), n_features, device=device,
            loss=getattr(self, "loss", None) if training else None, loss_params=getattr(self, "loss_params", None),
            precision=self.precision, max_list_length=self.max_list_length,
        )

    def _loss_name(self):
        loss = getattr(self, "loss", None)
        return loss if isinstance(loss, str) else getattr(loss, "__name__", "the loss")

    def fit(self, X, y, groups=None, sample_weight=None, propensity=None, X_val=None, y_val=None, groups_val=None,
            propensity_val=None):
        """Train the network on the queries of ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Dense, finite features (use an imputer for missing values).
        y : array-like of shape (n_samples,)
            Graded relevance labels (non-negative), or clicks (0/1) with ``propensity``.
        groups : array-like of shape (n_samples,), default=None
            Query id of each row; ``None`` makes all rows one query (with a warning).
        sample_weight : array-like of shape (n_samples,), default=None
            Weight of each row's query, the same for every row of a query: the loss of
            the batch is the weighted mean of its queries' losses. Routed like
            ``groups``.
        propensity : array-like of shape (n_samples,) or (n_samples, 2), default=None
            With clicks as ``y``: the probability that each row was examined where it was
            shown (e.g. ``estimate.propensity_of(positions)`` of a propensity estimate of
            :mod:`sklearn_ltr.clicks`). Each click then weighs
            :math:`1 / \\max(p, 0.05)` in the loss (inverse propensity weighting, clipped:
            :func:`sklearn_ltr.clicks.inverse_propensity_weights`), for the losses that take
            click weights (``"sigmoid_ce"``, ``"softmax"``, ``"ranknet"``), and the validation
            value of the held-out clicks is the IPS estimate of DCG@10, recorded as
            ``history_[:, "valid_ips_dcg@10"]`` and monitored by early stopping
            (:class:`~sklearn_ltr.training.ValidationNDCG`). Routed
            like ``groups``.

            Under trust bias, an array of shape (n_samples, 2) of each row's affine click
            parameters :math:`(\\alpha, \\beta)`, :math:`P(\\text{click}) = \\alpha P(R = 1) + \\beta`
            (e.g. ``estimate.affine_of(positions)`` of
            :func:`sklearn_ltr.clicks.estimate_trust_bias_em`): the losses then use the affine
            estimate of relevance :math:`(c - \\beta) / \\max(\\alpha, 0.05)` in their unbiased
            forms (:func:`sklearn_ltr.clicks.affine_click_weights`; Vardasbi et al., 2020), and
            validation the affine estimate of DCG@10. ``(p, 0)`` is position bias alone.
        X_val, y_val, groups_val : array-like, default=None
            A separate validation set (e.g. LETOR's ``vali`` file, or a validation click log of
            other queries): its features, labels (or clicks) and query ids. Its NDCG@10 is
            recorded each epoch as ``history_[:, "valid_ndcg@10"]`` (with ``propensity_val``, its
            IPS estimate of DCG@10 as ``history_[:, "valid_ips_dcg@10"]``) and, with
            ``early_stopping=True``, monitored by early stopping instead of a held-out share of
            the training queries (``validation_fraction`` must then be None). Routed like
            ``groups``; inside a ``Pipeline``, construct it with
            ``transform_input=["X_val"]`` so that the validation features go through the same
            steps as ``X``. Features of another width or with NaN are refused.
        propensity_val : array-like of shape (n_val_samples,), default=None
            With a validation *click log* as ``y_val``: each of its rows' examination
            propensity; the recorded value is then the IPS estimate of DCG@10,
            ``valid_ips_dcg@10`` (:class:`~sklearn_ltr.training.ValidationNDCG`). Routed like ``groups``.

        Returns
        -------
        self : object
            The fitted ranker.
        """
        validation = ValidationData(X_val, y_val, groups_val, propensity_val)
        return self._fit(X, y, groups, sample_weight=sample_weight, propensity=propensity, validation=validation)

    def _fit(self, X, y, groups, sample_weight=None, propensity=None, validation=None, **extras):
        """Fit with optional extra per-row inputs of the module (e.g. click positions).

        ``validation`` is the :class:`~sklearn_ltr.rankers._validation_set.ValidationData` of ``fit``'s ``X_val``.
        """
        validate_estimator_params(self)
        X, y, query_groups = self._validate_fit_data(X, y, groups, stacklevel=4)
        validation = self._validation_callback(validation)
        self._check_separate_validation()
        y, extras = self._prepare_training(X, y, query_groups, extras)
        if propensity is not None:
            extras.update(self._click_inputs(y, propensity, X.shape[0]))
        query_weights = None if sample_weight is None else check_query_weights(sample_weight, query_groups)
        if query_weights is not None:
            self._check_loss_takes_weights()
        net = self._build_net(X.shape[1], validation, clicks=propensity is not None)
        # batch_size="auto" resolved, and a largest batch that cannot fit refused, before training.
        self.batch_size_ = self._memory_estimate(X.shape[1], net.device).training_batch_size(query_groups.sizes,
                                                                                             self.batch_size)
        net.set_params(batch_size=self.batch_size_)
        net.fit(build_dataset(query_groups, X, y, query_weights=query_weights, **extras))
        self.net_ = net
        self.n_iter_ = sum("train_loss" in row for row in net.history)
        self.resumed_from_epoch_ = getattr(net, "resumed_from_epoch_", None)  # set by the checkpoint callback
        self.device_ = str(net.device)
        self.best_iteration_ = None
        if self.early_stopping:
            stopper = dict(net.callbacks_).get("early_stopping")
            self.best_iteration_ = int(stopper.best_epoch_) if stopper is not None else None
        if net.interrupted_:
            warnings.warn(
                f"{type(self).__name__}.fit was interrupted (KeyboardInterrupt) after {self.n_iter_} complete "
                f"epoch(s) of max_epochs={self.max_epochs}; the model keeps the weights of the last batch "
                f"trained. Refit to train fully, or treat TrainingInterruptedWarning as an error to refuse "
                f"such a model.", TrainingInterruptedWarning, stacklevel=3,
            )
        self._after_fit()
        if not self.keep_training_state:
            self.net_ = net.without_training_state()
        return self

    def _validation_callback(self, validation):
        """The :class:`~sklearn_ltr.training.ValidationNDCG` of ``fit``'s validation set, checked; None without one."""
        if validation is None or validation.X is None:
            if validation is not None:
                validation.check_absent()
            return None
        if self.validation_fraction is not None:
            raise ValueError(
                f"{type(self).__name__}.fit got a separate validation set (X_val=...) and validation_fraction="
                f"{self.validation_fraction!r}: early stopping monitors one of them. Set validation_fraction=None to "
                f"validate on X_val, or fit without X_val."
            )
        X_val, y_val, groups_val, propensity_val = validation.checked(self, clicks=validation.propensity is not None)
        return ValidationNDCG(k=10, X=X_val, y=y_val, groups=groups_val, propensity=propensity_val,
                              extras=self._validation_extras(validation) or None)

    def _validation_extras(self, validation):
        """Further per-row module inputs of the validation set (e.g. SetRank's initial ranks)."""
        return {}

    def _check_separate_validation(self):
        """Refuse a ``ValidationNDCG`` of a separate set in ``callbacks`` whose features the network cannot take."""
        for entry in self.callbacks or []:
            callback = entry[1] if isinstance(entry, tuple) else entry
            if isinstance(callback, ValidationNDCG) and callback.X is not None:
                check_validation_features_of(self, callback.X, name=f"the features X of {type(callback).__name__}")

    def _click_inputs(self, y, propensity, n_samples):
        """The per-row bookkeeping inputs of ``fit(..., propensity=...)``, after checking its use.

        :data:`~sklearn_ltr.training._batches.CLICK_WEIGHTS`, the click weights (float32) that the
        loss reads: a 1-D ``propensity`` gives the inverse-propensity weights ``(n_samples,)``; an
        ``(n_samples, 2)`` one of per-row ``(alpha, beta)`` the affine correction's
        ``(1 / alpha, beta / alpha)`` pairs (:func:`sklearn_ltr.clicks.affine_click_weights`), which
        the losses read as ``[batch, list, 2]``. :data:`~sklearn_ltr.training._batches.CLICK_PROPENSITY`,
        the validated propensities themselves (float64), that the validation of held-out queries
        passes to :func:`sklearn_ltr.metrics.ips_dcg_score`.
        """
        propensity = (check_affine if np.ndim(propensity) == 2 else check_propensity)(propensity, n_samples)
        weights = click_weights(propensity, n_samples=n_samples)
        check_clicks(y, name="y", fix="propensity=... weighs clicks: fit graded relevance labels without propensity.")
        loss = self._loss_function()
        try:
            takes = "click_weights" in inspect.signature(loss).parameters
        except (TypeError, ValueError):
            takes = False
        if not takes:
            raise ValueError(
                f"propensity was given, but the loss {self._loss_name()!r} takes no click weights: use "
                f"loss='sigmoid_ce', 'softmax', 'ranknet' or 'hinge' (their inverse-propensity-weighted forms), or a "
                f"loss function with a keyword argument click_weights=None (a [batch, list] tensor, or "
                f"[batch, list, 2] of (1 / alpha, beta / alpha) for a propensity of per-row (alpha, beta))."
            )
        return {CLICK_WEIGHTS: weights.astype(np.float32), CLICK_PROPENSITY: propensity}

    def _check_loss_takes_weights(self):
        loss = getattr(self, "loss", None)
        if loss is None or isinstance(loss, str):
            return
        try:
            parameters = inspect.signature(loss).parameters.values()
        except (TypeError, ValueError):
            return
        if not any(p.name == "weights" or p.kind is p.VAR_KEYWORD for p in parameters):
            raise ValueError(
                f"sample_weight was given, but the loss {self._loss_name()!r} takes no per-query weights: "
                f"give it a keyword argument weights=None (a [batch] tensor), or fit without sample_weight."
            )

    @property
    def history_(self):
        """skorch's training history (per-epoch losses, ``valid_ndcg@10`` or ``valid_ips_dcg@10``, timings).

        Per-batch losses (``history_[:, "batches"]``) are kept only with ``keep_training_state=True``.
        """
        return self.net_.history

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

    def _checks_features_on_device(self):
        """Whether predict checks the features for NaN and infinity on the device instead of in validation.

        On a GPU the check is nearly free on the device, block by block, where a pass over
        ``X`` on the host would cost as much as copying it; on CPU the one vectorised pass of
        validation is the cheapest place.
        """
        net = getattr(self, "net_", None)
        return net is not None and is_cuda(net.device)

    def _validate_X(self, X, name="X"):
        if not self._checks_features_on_device():
            return super()._validate_X(X, name=name)
        return validate_data(self, X, reset=False, **{**self._check_X_kwargs(), "ensure_all_finite": False})

    def _scoring_plan(self, X, groups):
        """``(blocks, documents)`` of :func:`~sklearn_ltr.training._predict.predict_scores` for validated rows."""
        n_samples = X.shape[0]
        estimate = self._memory_estimate(X.shape[1], self.net_.device, training=False)

        def documents(sizes):
            return estimate.prediction_documents(sizes, self.net_.prediction_documents)

        if not self._list_context:
            # A pointwise scorer has no list context: any partition of the rows scores the same, and
            # a block as one list is scored from views of its rows (no padding, gather or re-sorting).
            blocks = (ScoringBlock(slice(start, min(start + _PREDICT_DOCUMENTS, n_samples)),
                                   np.array([min(_PREDICT_DOCUMENTS, n_samples - start)]), canonical=False)
                      for start in range(0, n_samples, _PREDICT_DOCUMENTS))
        else:
            query_groups = resolve_groups(groups, n_samples, method="predict", stacklevel=3)
            # Each query's rows in their canonical order: predict is exactly invariant to the input row order.
            blocks = (ScoringBlock(rows, sizes, canonical=True)
                      for rows, sizes in query_blocks(query_groups, _PREDICT_DOCUMENTS))
        return blocks, documents

    def _predict(self, X, groups, **extras):
        """Predict with optional extra per-row inputs of the module (e.g. an initial rank).

        Rows are scored in blocks of whole queries of about :data:`_PREDICT_DOCUMENTS`
        documents: only one block at a time is copied into float32 tensors, so memory stays
        bounded whatever the number of rows. Inside a block, batches hold as many padded
        documents as the memory budget allows, whatever the training ``batch_size``. The
        host prepares the next block while the device scores this one
        (:mod:`sklearn_ltr.training._predict`).
        """
        X, groups = self._validate_predict_data(X, groups, return_groups=True)
        blocks, documents = self._scoring_plan(X, groups)
        scores, finite = predict_scores(self.net_, X, blocks, documents=documents, extras=extras,
                                        check_features=self._checks_features_on_device())
        if not finite:  # a staged block held NaN or infinity (or a float64 value beyond float32): validation's message
            self._check_features(X)
        return check_finite_scores(scores, type(self).__name__)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = self.random_state is None
        return tags

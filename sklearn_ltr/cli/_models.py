"""The rankers of the command line: names, default preprocessing, and training with a validation file.

=============  ===================================  ==========================================
``--model``    estimator                            default preprocessing (``--preprocessing auto``)
=============  ===================================  ==========================================
lambdamart     :class:`~sklearn_ltr.LambdaMARTRanker`        none (trees need no scaling)
ranknet        :class:`~sklearn_ltr.RankNetRanker`           log1p-standardize
dasalc         :class:`~sklearn_ltr.DASALCRanker`            none (log1p and batch norm built in)
setrank        :class:`~sklearn_ltr.SetRankRanker`           log1p-standardize
two-tower      :class:`~sklearn_ltr.TwoTowerDebiasedRanker`  log1p-standardize
=============  ===================================  ==========================================

``log1p-standardize`` is :class:`~sklearn_ltr.Log1pTransformer` then
:class:`~sklearn.preprocessing.StandardScaler`, so that a neural ranker trains on raw LETOR
features (counts, BM25 scores, PageRank) as well as on normalised ones. With preprocessing
the fitted model is a :class:`~sklearn.pipeline.Pipeline` whose last step, ``ranker``, is
the ranker; ``--param`` values always set parameters of the ranker.

Missing values (NaN, e.g. LETOR 4.0's ``NULL``): the ``impute`` choices put
:class:`~sklearn.impute.SimpleImputer` with ``add_indicator=True`` first (``impute``,
``impute-standardize``, ``impute-log1p-standardize``): each missing value is filled by the
feature's training mean (``--impute-strategy``, :data:`IMPUTE_STRATEGIES`), and a 0/1 column
per feature with missing values says where. ``--preprocessing auto`` picks the model's
default's ``impute`` variant when the training data holds NaN and the model cannot take it
(every model but lambdamart, which LightGBM trains with NaN as a missing value):
:func:`resolve_preprocessing`.

The command line trains a ranker with its constructor's defaults, except where
:data:`CLI_DEFAULTS` sets its own (LambdaMART's and RankNet's, chosen on five LETOR folds of
MQ2008 and OHSUMED: ``studies/results/cli_defaults.md``); ``--param`` overrides either. ``train``
prints the settings it used in one line (:func:`describe_settings`): the parameters that
differ from the constructor's defaults, as a call of the class.

A validation file is used where the ranker supports it: LambdaMART gets it as ``eval_set``
and, with early stopping, stops when its NDCG@10 has not improved for
``early_stopping_rounds`` rounds (50 unless set; ``eval_at`` is ``(10,)``, a command-line
default of :data:`CLI_DEFAULTS`, with or without a validation file); a
neural ranker records ``vali_ndcg@10`` after every epoch in ``history_`` and, with early
stopping, stops after ``n_iter_no_change`` epochs without improvement and restores the
best epoch's weights. Neither changes what is saved: the command line's callbacks are
removed from the fitted model.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from sklearn_ltr.cli import _progress
from sklearn_ltr.cli._errors import CLIError

__all__ = [
    "CLI_DEFAULTS", "ESTIMATOR_ERRORS", "IMPUTE_STRATEGIES", "MODELS", "PREPROCESSING", "ModelSpec",
    "describe_settings", "estimator_errors", "fit_model", "imputes", "resolve_preprocessing", "settable_params",
]

#: What the estimators' ``fit`` and ``predict`` raise for a value the user gave, reported as a user
#: error (one line, exit status 2) rather than a traceback. The policy is deliberately narrow:
#:
#: - ``ValueError``: a rejected parameter value (scikit-learn's ``InvalidParameterError`` is one) or
#:   data (labels, NaN features, a loss that went NaN: ``NonFiniteLossError``);
#: - ``TypeError``: a ``--param`` value of the wrong kind reaching the ranker (``hidden_sizes=("a",)``);
#: - ``OverflowError``: a ``--param`` number too large for the backend's integers;
#: - ``MemoryError``: the rankers' check that a batch fits in memory (it names ``max_list_length``
#:   as the fix), or an allocation that the parameters or data make too large.
#:
#: Plus LightGBM's ``LightGBMError`` (matched by name, LightGBM being imported lazily). Only calls
#: into the estimators are covered (construction, the preprocessing steps, ``fit``, ``predict``),
#: never the command line's own code around them; any other exception (``RuntimeError``,
#: ``AttributeError``, ``KeyError``, ``IndexError``, ...) is a bug and keeps its traceback.
#: ``--traceback`` shows the traceback of a user error too.
ESTIMATOR_ERRORS = (ValueError, TypeError, OverflowError, MemoryError)

#: Patience of LambdaMART's early stopping on ``--valid`` when ``early_stopping_rounds`` is not given.
LAMBDAMART_PATIENCE = 50

#: ``--model`` -> ranker parameters the command line sets unless ``--param`` does. LambdaMART: a
#: smaller learning rate than LightGBM's 0.1, which on small LETOR sets stops after a few trees
#: (best iteration 2 on MQ2008 fold 1), and 300 trees, which early stopping never reached there
#: and which scored best without --valid. RankNet: the demo's learning rate and epoch budget,
#: which beat the class's (lr 1e-3, 20 epochs) on both data sets. Measured over the five folds of
#: MQ2008 and OHSUMED: studies/results/cli_defaults.md (bench_cli_defaults.py). LambdaMART's
#: ``eval_at=(10,)``: the NDCG@10 that train reports and early-stops on (the class's (1, 3, 5, 10)
#: would stop when any of four cut-offs stalls), set with or without --valid so that the settings
#: line is the same.
CLI_DEFAULTS = {
    "lambdamart": {"n_estimators": 300, "learning_rate": 0.02, "num_leaves": 15, "eval_at": (10,)},
    "ranknet": {"lr": 2e-3, "max_epochs": 30},
}

#: Ranker parameters that ``--param`` cannot set (Python objects, not values).
_NOT_SETTABLE = frozenset({"callbacks", "client"})

#: Prefix of the skorch callbacks the command line adds, and removes after training.
_PREFIX = "cli_"


@dataclass(frozen=True)
class ModelSpec:
    """A ``--model`` choice: the estimator class name and its defaults on the command line."""

    name: str
    estimator: str
    preprocessing: str
    #: Trains on clicks with display positions (the two-tower model).
    clicks: bool = False
    #: A torch model (its ``fit`` takes skorch callbacks).
    neural: bool = False

    @property
    def cls(self):
        import sklearn_ltr

        return getattr(sklearn_ltr, self.estimator)

    @property
    def list_context(self):
        """Whether predictions need each row's query id (the score depends on the list)."""
        from sklearn_ltr.utils import get_ranker_tags

        return get_ranker_tags(self.cls()).list_context


class _Models(Mapping):
    """``--model`` name -> :class:`ModelSpec`, read from the registry of rankers each time."""

    def _specs(self):
        from sklearn_ltr.rankers import RANKERS

        return {entry.cli_name: ModelSpec(entry.cli_name, entry.name, entry.cli_preprocessing, entry.clicks,
                                          entry.neural)
                for entry in RANKERS.values() if entry.cli_name is not None}

    def __getitem__(self, name):
        return self._specs()[name]

    def __iter__(self):
        return iter(self._specs())

    def __len__(self):
        return len(self._specs())


#: The rankers the command line trains: those of the registry with a ``cli_name``.
MODELS = _Models()

#: ``--preprocessing`` choices (``auto`` is the model's default, see :func:`resolve_preprocessing`).
PREPROCESSING = ("none", "standardize", "log1p-standardize", "impute", "impute-standardize", "impute-log1p-standardize")

#: ``--impute-strategy`` choices, :class:`~sklearn.impute.SimpleImputer`'s ``strategy``; ``constant=VALUE``
#: fills ``VALUE``. The default, ``mean``, is one a neural ranker trains well with on any features (a
#: constant far outside a feature's values, e.g. a rank worse than any, stretches its scale); with
#: ``add_indicator=True`` the model also sees where a value was missing.
IMPUTE_STRATEGIES = ("mean", "median", "most_frequent", "constant=VALUE")


def settable_params(spec):
    """``{name: default}`` of the parameters ``--param`` accepts for ``spec``: the ranker's constructor's."""
    return {key: value for key, value in spec.cls().get_params(deep=False).items() if key not in _NOT_SETTABLE}


def _shown(value):
    return f"{value.__name__}" if isinstance(value, type) else repr(value)


def describe_settings(ranker):
    """One line: the ranker as a call of its class with the parameters that differ from the class's defaults.

    ``callbacks`` is left out (the command line's own are removed after training).
    """
    defaults = type(ranker)().get_params(deep=False)
    changed = {key: value for key, value in ranker.get_params(deep=False).items()
               if key != "callbacks" and not _same(value, defaults.get(key, object()))}
    arguments = ", ".join(f"{key}={_shown(value)}" for key, value in sorted(changed.items()))
    return f"{type(ranker).__name__}({arguments}); every other parameter at its default"


def _same(a, b):
    try:
        return bool(a == b) if type(a) is type(b) or {type(a), type(b)} <= {int, float} else False
    except Exception:  # an array or an object without a plain ==: shown as set
        return False


def imputes(kind):
    """Whether the ``--preprocessing`` choice ``kind`` imputes missing values."""
    return kind.split("-")[0] == "impute"


def resolve_preprocessing(spec, preprocessing, *, missing=False):
    """The ``--preprocessing`` choice used: ``auto`` is the model's default, its ``impute`` variant on data with NaN.

    Parameters
    ----------
    spec : ModelSpec
    preprocessing : str
        ``auto`` or a name of :data:`PREPROCESSING` (returned as it is).
    missing : bool, default=False
        Whether the training (or validation) data holds NaN.
    """
    from sklearn.utils import get_tags

    if preprocessing != "auto":
        return preprocessing
    kind = spec.preprocessing
    if missing and not imputes(kind) and not get_tags(spec.cls()).input_tags.allow_nan:
        kind = "impute" if kind == "none" else f"impute-{kind}"
    return kind


def _imputer(strategy):
    from sklearn.impute import SimpleImputer

    name, _, value = strategy.partition("=")
    if name not in {choice.partition("=")[0] for choice in IMPUTE_STRATEGIES} or bool(value) != (name == "constant"):
        raise CLIError(f"--impute-strategy must be one of {', '.join(IMPUTE_STRATEGIES)}; got {strategy!r}.")
    try:
        fill = float(value) if value else None
    except ValueError:
        raise CLIError(f"--impute-strategy constant=VALUE needs a number; got {value!r}.") from None
    if fill is not None and not np.isfinite(fill):
        raise CLIError(f"--impute-strategy constant=VALUE needs a finite number; got {value!r}.")
    return SimpleImputer(strategy=name, fill_value=fill, add_indicator=True)


def _preprocessing_steps(kind, impute_strategy="mean"):
    from sklearn.preprocessing import StandardScaler

    from sklearn_ltr import Log1pTransformer

    imputer = [("impute", _imputer(impute_strategy))] if imputes(kind) else []
    kind = kind.removeprefix("impute").lstrip("-") or "none"
    return imputer + {"none": [], "standardize": [("scale", StandardScaler())],
                      "log1p-standardize": [("log1p", Log1pTransformer()), ("scale", StandardScaler())]}[kind]


def _strip_cli_callbacks(ranker):
    """Remove the command line's callbacks (and the validation data they hold) from a fitted ranker.

    Only a net kept whole (``keep_training_state=True``) has callbacks after ``fit``.
    """
    net = ranker.net_
    net.callbacks = [cb for cb in net.callbacks or [] if not (isinstance(cb, tuple) and cb[0].startswith(_PREFIX))]
    if hasattr(net, "callbacks_"):
        net.callbacks_ = [(name, cb) for name, cb in net.callbacks_ if not name.startswith(_PREFIX)]


@contextlib.contextmanager
def estimator_errors(doing):
    """Report the errors of ``ESTIMATOR_ERRORS`` and LightGBM's as ``CLIError(f"{doing} failed: ...")``."""
    try:
        yield
    except ESTIMATOR_ERRORS as err:
        prefix = "" if isinstance(err, (ValueError, TypeError)) else f"{type(err).__name__}: "
        raise CLIError(f"{doing} failed: {prefix}{err}") from err
    except Exception as err:
        if type(err).__name__ != "LightGBMError":
            raise
        raise CLIError(f"{doing} failed: LightGBM: {err}") from err


def _fit_lambdamart(ranker, params, train, valid, *, early_stopping, progress, desc, name):
    kwargs = {}
    if valid is not None:
        kwargs = {"eval_set": [valid], "eval_names": ["vali"]}
        if early_stopping and params.get("early_stopping_rounds") is None:
            ranker.set_params(early_stopping_rounds=LAMBDAMART_PATIENCE)
    bar = _progress.BoostingBar(ranker.n_estimators, desc) if progress else None
    try:
        with estimator_errors(f"training {name}"):
            ranker.fit(*train, callbacks=None if bar is None else [bar], **kwargs)
    finally:
        if bar is not None:
            bar.close()
    history = next(iter(ranker.evals_result_.values()), {})
    rounds = len(next(iter(history.values()))) if history else ranker.n_estimators_
    return {"rounds": rounds, "best_iteration": ranker.best_iteration_}


def _fit_neural(ranker, train, valid, *, extras, early_stopping, progress, desc, name):
    from skorch.callbacks import EarlyStopping

    from sklearn_ltr.cli._epoch_bar import EpochBar

    callbacks = []
    if valid is not None:
        from sklearn_ltr.training import ValidationNDCG

        X_valid, y_valid, groups_valid = valid
        callbacks.append((_PREFIX + "vali_ndcg", ValidationNDCG(10, X=X_valid, y=y_valid, groups=groups_valid,
                                                               name="vali_ndcg@10")))
        if early_stopping:
            callbacks.append((_PREFIX + "early_stopping", EarlyStopping(
                monitor="vali_ndcg@10", lower_is_better=False, patience=ranker.n_iter_no_change, load_best=True)))
    if progress:
        callbacks.append((_PREFIX + "progress", EpochBar(desc)))
    user_callbacks = ranker.callbacks
    ranker.set_params(callbacks=callbacks + list(user_callbacks or []))
    try:
        with estimator_errors(f"training {name}"):
            ranker.fit(*train, **extras)
    finally:
        ranker.set_params(callbacks=user_callbacks)
        if hasattr(ranker, "net_"):
            _strip_cli_callbacks(ranker)
    report = {"epochs": ranker.n_iter_}
    resumed = getattr(ranker, "resumed_from_epoch_", None)
    if resumed is not None:
        report["resumed_from_epoch"] = resumed
    if valid is not None and early_stopping:
        history = np.asarray(ranker.history_[:, "vali_ndcg@10"], dtype=np.float64)
        report["best_epoch"] = int(np.nanargmax(history)) + 1 if np.isfinite(history).any() else None
    return report


def fit_model(spec, params, train, valid=None, *, preprocessing="auto", early_stopping=True, seed=0, threads=None,
              progress=False, desc=None, impute_strategy="mean"):
    """Build and train the ``spec`` ranker; returns ``(estimator, report)``.

    Parameters
    ----------
    spec : ModelSpec
    params : dict
        Ranker parameters (``--param``), over :data:`CLI_DEFAULTS`; ``random_state`` defaults to ``seed``.
    train : object with ``X``, ``y``, ``groups`` (and ``positions`` for the two-tower model)
    valid : object with ``X``, ``y``, ``groups``, default=None
        Validation rows (see the module docstring).
    preprocessing : "auto" or a name of :data:`PREPROCESSING`, default="auto"
        ``auto``: :func:`resolve_preprocessing`, the model's default (its ``impute`` variant
        when ``train`` or ``valid`` holds NaN and the model cannot take it).
    early_stopping : bool, default=True
        Stop on the validation NDCG@10 (only with ``valid``).
    seed : int, default=0
    threads : int, default=None
        LightGBM's ``n_jobs`` unless ``params`` sets it (torch's threads are set by the caller).
    progress : bool, default=False
        Show a progress bar on standard error.
    desc : str, default=None
        Text of the progress bar.
    impute_strategy : str, default="mean"
        The imputer's strategy with an ``impute`` choice (:data:`IMPUTE_STRATEGIES`).

    Returns
    -------
    estimator : ranker or Pipeline
        Fitted; ``estimator.predict(X, groups=groups)`` scores rows.
    report : dict
        ``fit_seconds``, the ``preprocessing`` used (and its ``impute_strategy`` when it
        imputes), the epochs or boosting rounds run (for a neural ranker resumed from a
        checkpoint, ``resumed_from_epoch``), and ``settings``, the ranker's parameters
        (:func:`describe_settings`).

    Raises
    ------
    CLIError
        When the ranker rejects a parameter value or the data: one of ``ESTIMATOR_ERRORS``,
        or a ``LightGBMError``, raised by a preprocessing step or the ranker.
    """
    from sklearn.pipeline import Pipeline

    missing = preprocessing == "auto" and any(
        part is not None and not np.isfinite(np.sum(part.X)) and np.isnan(part.X).any() for part in (train, valid))
    kind = resolve_preprocessing(spec, preprocessing, missing=missing)
    steps = _preprocessing_steps(kind, impute_strategy)
    defaults = {**CLI_DEFAULTS.get(spec.name, {}), "random_state": seed}
    if threads is not None and not spec.neural:
        defaults["n_jobs"] = threads
    start = time.perf_counter()
    with estimator_errors(f"training {spec.name}"):
        ranker = spec.cls(**{**defaults, **params})
        X, X_valid = train.X, None if valid is None else valid.X
        for _, step in steps:
            X = step.fit_transform(X)
            X_valid = None if valid is None else step.transform(X_valid)
    train_set = (X, train.y, train.groups)
    valid_set = None if valid is None else (X_valid, valid.y, valid.groups)
    if spec.neural:
        extras = {"positions": train.positions} if spec.clicks else {}
        report = _fit_neural(ranker, train_set, valid_set, extras=extras, early_stopping=early_stopping,
                             progress=progress, desc=desc, name=spec.name)
    else:
        report = _fit_lambdamart(ranker, params, train_set, valid_set, early_stopping=early_stopping,
                                 progress=progress, desc=desc, name=spec.name)
    report["fit_seconds"] = time.perf_counter() - start
    report["preprocessing"] = kind
    if imputes(kind):
        report["impute_strategy"] = impute_strategy
    report["settings"] = describe_settings(ranker)
    estimator = Pipeline([*steps, ("ranker", ranker)]) if steps else ranker
    return estimator, report

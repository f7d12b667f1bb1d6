"""The closed and open ends of every numeric parameter of the public estimators and scorers.

``INTERVALS`` below is the specification, written by hand: one row per ``Interval`` of every
``_parameter_constraints`` (the public estimators of ``sklearn_ltr``'s and its public
subpackages' ``__all__``, and the scorers that declare constraints). The declared constraints must
equal it exactly, so that an end that moves or changes from closed to open, or a new numeric
parameter without a row, fails here naming it. Then the ends themselves: a value at a closed end
passes validation (and, for a representative set, a tiny fit), a value at an open end or one step
beyond a closed end is refused with scikit-learn's ``InvalidParameterError`` naming the parameter.

Numbers checked by the library's own code rather than by ``Interval`` constraints have their own
tables, checked the same way: the click models' parameters (``CLICK_MODEL_RANGES``, through
``marginal_click_probability``), the sizes in the layer-size tuples (``SIZE_TUPLES``) and the
numeric options of the losses that the neural rankers take in ``loss_params`` (``LOSS_OPTIONS``).
"""

import functools
import inspect
import math
from numbers import Integral, Real

import numpy as np
import pytest
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import Interval, InvalidParameterError

import sklearn_ltr
import sklearn_ltr.clicks
import sklearn_ltr.export
import sklearn_ltr.metrics
import sklearn_ltr.preprocessing
import sklearn_ltr.rankers
from sklearn_ltr._validation import NumberInterval
from sklearn_ltr.metrics import METRICS

pytestmark = pytest.mark.usefixtures("one_torch_thread")

N = None  # an end that is not there (infinity)

#: (owner, parameter, type, left, right, closed, refuses booleans): the specification.
INTERVALS = [
    # The shared training parameters of the neural rankers (rankers/_neural_params.py).
    *[(owner, parameter, kind, left, right, closed, False)
      for owner in ("DASALCRanker", "RankNetRanker", "SetRankRanker", "TwoTowerDebiasedRanker")
      for parameter, kind, left, right, closed in (
          ("lr", Real, 0, N, "neither"),
          ("weight_decay", Real, 0, N, "left"),
          ("max_epochs", Integral, 1, N, "left"),
          ("batch_size", Integral, 1, N, "left"),
          ("max_list_length", Integral, 2, N, "left"),
          ("validation_fraction", Real, 0, 1, "neither"),
          ("n_iter_no_change", Integral, 1, N, "left"),
      )],
    ("DASALCRanker", "hidden_size", Integral, 1, N, "left", False),
    ("DASALCRanker", "n_layers", Integral, 0, N, "left", False),
    ("DASALCRanker", "dropout", Real, 0, 1, "left", False),
    ("DASALCRanker", "noise_std", Real, 0, N, "left", False),
    ("DASALCRanker", "n_attention_layers", Integral, 0, N, "left", False),
    ("DASALCRanker", "n_heads", Integral, 1, N, "left", False),
    ("DASALCRanker", "head_size", Integral, 1, N, "left", False),
    ("DASALCRanker", "attention_dropout", Real, 0, 1, "left", False),
    ("RankNetRanker", "dropout", Real, 0, 1, "left", False),
    ("SetRankRanker", "d_model", Integral, 1, N, "left", False),
    ("SetRankRanker", "n_blocks", Integral, 0, N, "left", False),
    ("SetRankRanker", "n_heads", Integral, 1, N, "left", False),
    ("SetRankRanker", "n_inducing_points", Integral, 1, N, "left", False),
    ("SetRankRanker", "ff_size", Integral, 1, N, "left", False),
    ("SetRankRanker", "dropout", Real, 0, 1, "left", False),
    ("SetRankRanker", "attention_dropout", Real, 0, 1, "left", False),
    ("SetRankRanker", "max_rank", Integral, 1, N, "left", False),
    ("TwoTowerDebiasedRanker", "dropout", Real, 0, 1, "left", False),
    ("TwoTowerDebiasedRanker", "max_position", Integral, 1, N, "left", False),
    ("TwoTowerDebiasedRanker", "observation_dropout", Real, 0, 1, "left", False),
    ("TwoTowerDebiasedRanker", "gradient_reversal", Real, 0, N, "left", False),
    ("TwoTowerDebiasedRanker", "observation_lr", Real, 0, N, "neither", False),
    ("LambdaMARTRanker", "n_estimators", Integral, 1, N, "left", False),
    ("LambdaMARTRanker", "learning_rate", Real, 0, N, "neither", False),
    ("LambdaMARTRanker", "num_leaves", Integral, 2, 131072, "both", False),  # LightGBM's own limits
    ("LambdaMARTRanker", "min_child_samples", Integral, 0, N, "left", False),
    ("LambdaMARTRanker", "min_child_weight", Real, 0, N, "left", False),
    ("LambdaMARTRanker", "subsample", Real, 0, 1, "right", False),
    ("LambdaMARTRanker", "subsample_freq", Integral, 0, N, "left", False),
    ("LambdaMARTRanker", "colsample_bytree", Real, 0, 1, "right", False),
    ("LambdaMARTRanker", "reg_alpha", Real, 0, N, "left", False),
    ("LambdaMARTRanker", "reg_lambda", Real, 0, N, "left", False),
    ("LambdaMARTRanker", "lambdarank_truncation_level", Integral, 1, N, "left", False),
    ("LambdaMARTRanker", "lambdarank_position_bias_regularization", Real, 0, N, "left", False),
    ("LambdaMARTRanker", "eval_at", Integral, 1, N, "left", False),
    ("LambdaMARTRanker", "early_stopping_rounds", Integral, 1, N, "left", False),
    ("RankingEnsemble", "n_estimators", Integral, 1, N, "left", False),
    # The scorers check at construction, and refuse a boolean where a number is expected.
    *[(owner, parameter, kind, left, right, closed, True)
      for owner in ("NDCGScorer", "RankingScorer")
      for parameter, kind, left, right, closed in (("k", Integral, 1, N, "left"), ("empty_value", Real, 0, 1, "both"))],
    ("RankingScorer", "max_grade", Real, 0, N, "left", True),
    ("RankingScorer", "clip", Real, 0, 1, "right", True),
    ("OnnxScorer", "max_batch_documents", Integral, 1, N, "left", True),
    ("OnnxScorer", "max_batch_queries", Integral, 1, N, "left", True),
    ("OnnxScorer", "n_threads", Integral, 1, N, "left", True),
]

#: Numeric parameters with no end on purpose: LightGBM reads max_depth <= 0 as "no limit",
#: n_jobs < 0 as "all cores but ...", and verbose is a level.
UNBOUNDED = {("LambdaMARTRanker", "max_depth"), ("LambdaMARTRanker", "n_jobs"), ("LambdaMARTRanker", "verbose")}


def _public_classes():
    """Every class of ``sklearn_ltr.__all__`` and its public subpackages' that declares constraints."""
    found = {}
    for module in (sklearn_ltr, sklearn_ltr.rankers, sklearn_ltr.preprocessing, sklearn_ltr.metrics,
                   sklearn_ltr.export, sklearn_ltr.clicks):
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isclass(obj) and "_parameter_constraints" in dir(obj):
                found[obj.__name__] = obj
    return found


CLASSES = _public_classes()


def _declared():
    rows, bare = set(), set()
    for owner, cls in CLASSES.items():
        for parameter, constraints in cls._parameter_constraints.items():
            if not isinstance(constraints, list):  # "no_validation"
                continue
            for constraint in constraints:
                if isinstance(constraint, Interval):
                    rows.add((owner, parameter, constraint.type, constraint.left, constraint.right, constraint.closed,
                              isinstance(constraint, NumberInterval)))
                elif constraint in (Integral, Real, int, float):
                    bare.add((owner, parameter))
    return rows, bare


def test_every_class_with_constraints_is_found():
    assert set(CLASSES) >= {"DASALCRanker", "LambdaMARTRanker", "RankNetRanker", "RankingEnsemble", "SetRankRanker",
                            "TwoTowerDebiasedRanker", "NDCGScorer", "RankingScorer", "OnnxScorer"}


def test_declared_intervals_equal_the_table():
    declared, bare = _declared()
    table = set(INTERVALS)
    assert len(table) == len(INTERVALS), "a row of INTERVALS is written twice"
    missing = sorted(map(str, declared - table))
    stale = sorted(map(str, table - declared))
    assert not missing, f"constraints without a row of INTERVALS (or a row that differs): {missing}"
    assert not stale, f"rows of INTERVALS that no constraint declares (or declares differently): {stale}"
    assert bare == UNBOUNDED, f"numeric parameters without an Interval: {sorted(bare - UNBOUNDED)}"


# --------------------------------------------------------------------------- values at the ends


def _step(value, kind, direction):
    """The next value of ``kind`` beyond ``value`` in ``direction`` (+1 or -1)."""
    if kind is Integral:
        return value + direction
    return float(np.nextafter(float(value), direction * math.inf))


def _ends(left, right, closed):
    """``(end, direction outwards, whether closed)`` for the left and the right end."""
    return ((left, -1, closed in ("left", "both")), (right, 1, closed in ("right", "both")))


def _end_cases():
    """``(row, value, accepted)`` at each finite end of each row: the end, and one step beyond it."""
    cases = []
    for row in INTERVALS:
        owner, parameter, kind, left, right, closed, _ = row
        for end, direction, is_closed in _ends(left, right, closed):
            if end is None:
                continue
            end = int(end) if kind is Integral else float(end)
            cases.append(pytest.param(row, end, is_closed, id=f"{owner}-{parameter}={end!r}"))
            cases.append(pytest.param(row, _step(end, kind, direction), False,
                                      id=f"{owner}-{parameter}={_step(end, kind, direction)!r}"))
    return cases


@functools.cache
def _onnx_model():
    from sklearn_ltr.export import to_onnx

    X, y, groups = _tiny()
    return to_onnx(sklearn_ltr.LambdaMARTRanker(n_estimators=1, min_child_samples=1).fit(X, y, groups))


def _metric_taking(parameter):
    """A registered metric that takes ``parameter`` (``clip`` belongs to the click-log metrics only)."""
    return next(name for name, record in METRICS.items() if parameter in record.options)


def _construct(owner, parameter, value):
    """The scorer ``owner`` with ``parameter=value``: the scorers check when constructed."""
    if owner == "OnnxScorer":
        pytest.importorskip("onnxruntime")
        pytest.importorskip("onnx")
        return sklearn_ltr.export.OnnxScorer(_onnx_model(), **{parameter: value})
    if owner == "NDCGScorer":
        return sklearn_ltr.metrics.NDCGScorer(**{parameter: value})
    return sklearn_ltr.metrics.RankingScorer(_metric_taking(parameter), **{parameter: value})


def _tiny():
    """Three queries of four documents, two features: enough for every ranker's fit."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 2))
    y = np.array([2, 1, 0, 0, 1, 0, 3, 0, 0, 1, 1, 2], dtype=float)
    return X, y, np.repeat([1, 2, 3], 4)


@pytest.mark.parametrize(("row", "value", "accepted"), _end_cases())
def test_value_at_and_beyond_each_end(row, value, accepted):
    owner, parameter, *_ = row
    cls = CLASSES[owner]
    if issubclass(cls, BaseEstimator):
        estimator = cls(**{parameter: value})
        if accepted:
            estimator._validate_params()
            return
        X, y, groups = _tiny()
        # fit checks its parameters before anything else: a refusal costs no training.
        with pytest.raises(InvalidParameterError, match=rf"The '{parameter}' parameter of {owner} must be"):
            estimator.fit(X, y, groups)
    elif accepted:
        _construct(owner, parameter, value)
    else:
        if owner == "OnnxScorer":  # refused before the model is read: no model needed
            with pytest.raises(InvalidParameterError, match=rf"The '{parameter}' parameter of OnnxScorer must be"):
                sklearn_ltr.export.OnnxScorer(b"", **{parameter: value})
            return
        with pytest.raises(InvalidParameterError, match=rf"The '{parameter}' parameter of \w+ must be"):
            _construct(owner, parameter, value)


@pytest.mark.parametrize("row", [row for row in INTERVALS if row[6]], ids=lambda row: f"{row[0]}-{row[1]}")
def test_number_intervals_refuse_booleans(row):
    owner, parameter, *_ = row
    for flag in (True, False):
        with pytest.raises(InvalidParameterError, match=rf"The '{parameter}' parameter"):
            if owner == "OnnxScorer":
                sklearn_ltr.export.OnnxScorer(b"", **{parameter: flag})
            else:
                _construct(owner, parameter, flag)


# --------------------------------------------------------------------------- fits at closed ends

_SMALL = {
    "RankNetRanker": {"hidden_sizes": (4,)},
    "DASALCRanker": {"hidden_size": 4, "n_attention_layers": 1, "n_heads": 1, "head_size": 4},
    "SetRankRanker": {"d_model": 4, "n_heads": 1, "n_blocks": 1},
    "TwoTowerDebiasedRanker": {"hidden_sizes": (4,)},
}

#: (owner, parameter, value at its closed end): tiny fits where the end means something.
FITS_AT_CLOSED_ENDS = [
    ("RankNetRanker", "dropout", 0.0),
    ("RankNetRanker", "weight_decay", 0.0),
    ("RankNetRanker", "batch_size", 1),
    ("RankNetRanker", "max_list_length", 2),
    ("DASALCRanker", "n_layers", 0),
    ("DASALCRanker", "n_attention_layers", 0),
    ("DASALCRanker", "noise_std", 0.0),
    ("DASALCRanker", "hidden_size", 1),
    ("DASALCRanker", "head_size", 1),
    ("DASALCRanker", "attention_dropout", 0.0),
    ("SetRankRanker", "n_blocks", 0),
    ("SetRankRanker", "d_model", 1),
    ("SetRankRanker", "max_rank", 1),
    ("SetRankRanker", "ff_size", 1),
    ("SetRankRanker", "n_inducing_points", 1),
    ("TwoTowerDebiasedRanker", "max_position", 1),
    ("TwoTowerDebiasedRanker", "gradient_reversal", 0.0),
    ("TwoTowerDebiasedRanker", "observation_dropout", 0.0),
    ("LambdaMARTRanker", "n_estimators", 1),
    ("LambdaMARTRanker", "num_leaves", 2),
    ("LambdaMARTRanker", "num_leaves", 131072),
    ("LambdaMARTRanker", "min_child_samples", 0),
    ("LambdaMARTRanker", "subsample", 1.0),
    ("LambdaMARTRanker", "colsample_bytree", 1.0),
    ("LambdaMARTRanker", "lambdarank_truncation_level", 1),
    ("LambdaMARTRanker", "eval_at", 1),
    ("RankingEnsemble", "n_estimators", 1),
]


def _closed_ends(owner, parameter):
    for row_owner, row_parameter, _, left, right, closed, _ in INTERVALS:
        if (row_owner, row_parameter) == (owner, parameter):
            return {end for end, _, is_closed in _ends(left, right, closed) if is_closed and end is not None}
    return set()


@pytest.mark.parametrize(("owner", "parameter", "value"), FITS_AT_CLOSED_ENDS,
                         ids=[f"{o}-{p}={v!r}" for o, p, v in FITS_AT_CLOSED_ENDS])
def test_tiny_fit_at_a_closed_end(owner, parameter, value):
    assert value in _closed_ends(owner, parameter), "the value is no closed end of the table"
    X, y, groups = _tiny()
    cls = CLASSES[owner]
    if owner == "LambdaMARTRanker":
        estimator = cls(**{"n_estimators": 2, "min_child_samples": 1, parameter: value})
    elif owner == "RankingEnsemble":
        estimator = cls(sklearn_ltr.LambdaMARTRanker(n_estimators=1, min_child_samples=1), **{parameter: value})
    else:
        estimator = cls(**{**_SMALL[owner], "max_epochs": 1, "device": "cpu", "random_state": 0, parameter: value})
    if owner == "TwoTowerDebiasedRanker":  # clicks and the positions they were shown at
        estimator.fit(X, (y > 1).astype(float), groups, positions=np.tile(np.arange(1, 5), 3))
    else:
        estimator.fit(X, y, groups)
    assert getattr(estimator, parameter) == value
    scores = estimator.predict(X, groups)
    assert scores.shape == (12,) and np.isfinite(scores).all()


# --------------------------------------------------------------------------- click models

#: (click model, parameter, left, right, closed): checked by the click models' own code.
CLICK_MODEL_RANGES = [
    ("PositionBasedModel", "eta", 0, N, "left"),
    ("PositionBasedModel", "epsilon", 0, 1, "both"),
    ("CascadeModel", "epsilon", 0, 1, "both"),
    ("DependentClickModel", "continuation", 0, 1, "both"),
    ("DependentClickModel", "epsilon", 0, 1, "both"),
    ("DynamicBayesianNetwork", "gamma", 0, 1, "both"),
    ("DynamicBayesianNetwork", "satisfaction", 0, 1, "both"),
    ("DynamicBayesianNetwork", "epsilon", 0, 1, "both"),
    ("UserBrowsingModel", "eta", 0, N, "left"),
    ("UserBrowsingModel", "epsilon", 0, 1, "both"),
]


def test_every_numeric_click_model_parameter_has_a_row():
    numeric = set()
    for name in sklearn_ltr.clicks.__all__:
        cls = getattr(sklearn_ltr.clicks, name)
        if inspect.isclass(cls) and issubclass(cls, sklearn_ltr.clicks.ClickModel) and cls is not \
                sklearn_ltr.clicks.ClickModel:
            for parameter in list(inspect.signature(cls.__init__).parameters.values())[1:]:
                default = parameter.default
                if isinstance(default, Real) and not isinstance(default, bool):
                    numeric.add((name, parameter.name))
    numeric.add(("DynamicBayesianNetwork", "satisfaction"))  # default None: a probability when given
    assert numeric == {(owner, parameter) for owner, parameter, *_ in CLICK_MODEL_RANGES}


def _click_cases():
    cases = []
    for owner, parameter, left, right, closed in CLICK_MODEL_RANGES:
        for end, direction, is_closed in _ends(left, right, closed):
            if end is None:  # the open end at infinity: the models want a finite number
                cases.append(pytest.param(owner, parameter, math.inf, False, id=f"{owner}-{parameter}=inf"))
                continue
            cases.append(pytest.param(owner, parameter, float(end), is_closed, id=f"{owner}-{parameter}={end}"))
            beyond = _step(end, Real, direction)
            cases.append(pytest.param(owner, parameter, beyond, False, id=f"{owner}-{parameter}={beyond!r}"))
    return cases


@pytest.mark.parametrize(("owner", "parameter", "value", "accepted"), _click_cases())
def test_click_model_value_at_and_beyond_each_end(owner, parameter, value, accepted):
    model = getattr(sklearn_ltr.clicks, owner)(**{parameter: value})
    y, positions, sessions = [2, 0, 1, 1, 0], [1, 2, 3, 1, 2], [0, 0, 0, 1, 1]
    if accepted:
        probability = model.marginal_click_probability(y, positions, sessions, y_max=2)
        assert probability.shape == (5,) and ((probability >= 0) & (probability <= 1)).all()
    else:
        with pytest.raises(ValueError, match=rf"^{parameter} must be"):
            model.marginal_click_probability(y, positions, sessions, y_max=2)


def test_click_model_ends_by_hand():
    """At the ends the formulas reduce to numbers worked out by hand (r(y) = (2**y - 1) / (2**y_max - 1))."""
    y, positions = [2, 0, 1], [1, 2, 3]
    # eta=0: every position is examined; epsilon=0: attraction is r(y) = 1, 0, 1/3.
    pbm = sklearn_ltr.clicks.PositionBasedModel(eta=0.0, epsilon=0.0)
    np.testing.assert_allclose(pbm.marginal_click_probability(y, positions, y_max=2), [1.0, 0.0, 1 / 3])
    # epsilon=1: every examined document attracts; examination 1/position.
    pbm = sklearn_ltr.clicks.PositionBasedModel(eta=1.0, epsilon=1.0)
    np.testing.assert_allclose(pbm.marginal_click_probability(y, positions, y_max=2), [1.0, 0.5, 1 / 3])


def test_onnx_scorer_refuses_a_fractional_thread_count():
    """``int(2.5)`` would run two threads without a word: the count must be a whole number."""
    with pytest.raises(InvalidParameterError, match=r"The 'n_threads' parameter of OnnxScorer must be"):
        sklearn_ltr.export.OnnxScorer(b"", n_threads=2.5)


# --------------------------------------------------------------------------- tuples of layer sizes

#: (owner, parameter): tuples of layer sizes, each size an int >= 1 (() is no hidden layer).
SIZE_TUPLES = [("RankNetRanker", "hidden_sizes"), ("TwoTowerDebiasedRanker", "hidden_sizes"),
               ("TwoTowerDebiasedRanker", "observation_hidden_sizes")]


@pytest.mark.parametrize(("owner", "parameter"), SIZE_TUPLES, ids=[f"{o}-{p}" for o, p in SIZE_TUPLES])
def test_layer_sizes_end_at_one(owner, parameter):
    cls = CLASSES[owner]
    for sizes in ((1,), (3, 1), ()):
        cls(**{parameter: sizes})._validate_params()
    X, y, groups = _tiny()
    for sizes in ((0,), (4, 0), (-1,), (True,)):
        with pytest.raises(InvalidParameterError, match=rf"The '{parameter}' parameter of {owner} must be"):
            cls(**{parameter: sizes}).fit(X, y, groups)


# --------------------------------------------------------------------------- options of the losses (loss_params)

#: (loss, option, type, left, right, closed): the numeric options a neural ranker passes through
#: ``loss_params``, checked by the losses' own code when the loss is computed.
LOSS_OPTIONS = [
    ("sigmoid_ce", "max_label", Real, 0, N, "neither"),
    ("ranknet", "sigma", Real, 0, N, "neither"),
    ("lambdarank", "sigma", Real, 0, N, "neither"),
    ("lambdarank", "k", Integral, 1, N, "left"),
    ("approx_ndcg", "temperature", Real, 0, N, "neither"),
    ("gumbel_approx_ndcg", "temperature", Real, 0, N, "neither"),
    ("gumbel_approx_ndcg", "n_samples", Integral, 1, N, "left"),
    *[(loss, option, kind, left, right, closed)
      for loss in ("neuralsort_ndcg", "gumbel_neuralsort_ndcg")
      for option, kind, left, right, closed in (("temperature", Real, 0, N, "neither"), ("k", Integral, 1, N, "left"),
                                                ("sinkhorn_iters", Integral, 0, N, "left"),
                                                ("tol", Real, 0, N, "neither"))],
    ("gumbel_neuralsort_ndcg", "n_samples", Integral, 1, N, "left"),
    ("lambdaloss", "k", Integral, 1, N, "left"),
    ("lambdaloss", "sigma", Real, 0, N, "neither"),
    ("lambdaloss", "mu", Real, 0, N, "neither"),
    ("hinge", "margin", Real, 0, N, "neither"),
]

#: Options whose default (None) hides that they are numbers.
_NUMERIC_NONE_OPTIONS = {"k", "max_label"}


def test_every_numeric_loss_option_has_a_row():
    from sklearn_ltr.losses import LOSSES

    numeric = set()
    for name, function in LOSSES.items():
        for parameter in inspect.signature(function).parameters.values():
            default = parameter.default
            if (isinstance(default, Real) and not isinstance(default, bool)) or \
                    (default is None and parameter.name in _NUMERIC_NONE_OPTIONS):
                numeric.add((name, parameter.name))
    assert numeric == {(loss, option) for loss, option, *_ in LOSS_OPTIONS}


def _loss_cases():
    cases = []
    for row in LOSS_OPTIONS:
        loss, option, kind, left, right, closed = row
        for end, direction, is_closed in _ends(left, right, closed):
            if end is None:
                continue
            cases.append(pytest.param(loss, option, end, is_closed, id=f"{loss}-{option}={end!r}"))
            beyond = _step(end, kind, direction)
            cases.append(pytest.param(loss, option, beyond, False, id=f"{loss}-{option}={beyond!r}"))
    return cases


@pytest.mark.parametrize(("loss", "option", "value", "accepted"), _loss_cases())
def test_loss_option_at_and_beyond_each_end(loss, option, value, accepted):
    import torch

    from sklearn_ltr.losses import get_loss

    function = get_loss(loss, **{option: value})
    scores = torch.tensor([[0.5, -1.0, 2.0, 0.0], [1.0, 0.25, -0.5, 0.75]], requires_grad=True)
    labels = torch.tensor([[2.0, 0.0, 1.0, 0.0], [0.0, 1.0, 3.0, 1.0]])
    if accepted:
        value = function(scores, labels)
        assert torch.isfinite(value)
    else:
        with pytest.raises(ValueError, match=rf"^{option} must be"):
            function(scores, labels)


def test_a_ranker_refuses_a_loss_option_beyond_its_end():
    """Through ``loss_params``: k=1 of LambdaRank trains, k=0 is refused naming k."""
    X, y, groups = _tiny()
    small = {**_SMALL["RankNetRanker"], "max_epochs": 1, "device": "cpu", "random_state": 0, "loss": "lambdarank"}
    sklearn_ltr.RankNetRanker(**small, loss_params={"k": 1}).fit(X, y, groups)
    with pytest.raises(ValueError, match=r"^k must be None or a positive integer; got 0"):
        sklearn_ltr.RankNetRanker(**small, loss_params={"k": 0}).fit(X, y, groups)

"""The data a checkpoint is written for: every input of a fit it covers, and the same data in another row order.

A checkpoint resumes only the fit of the same data. Each input that changes training or its
validation is refused when it changes, with the reason, and the checkpoint is left as it is: the
query weights (``sample_weight``), the propensities (the click weights the loss reads, and the
propensities themselves that the IPS validation of held-out queries reads), trust bias's affine
parameters, the display positions of the two-tower ranker, SetRank's initial ranks, the query
bounds and the order of the queries, and a separate validation set (``X_val``, ``y_val``,
``groups_val``, ``propensity_val``, ``initial_rank_val``), which early stopping monitors.

Training sees each query's rows in their canonical order, so the same rows in another order (or
used in place from a float32 array grouped by query, or copied) are the same data: a fit crashed
on one order resumes on another to the uninterrupted fit exactly.
"""

import numpy as np
import pytest
from checkpoint_helpers import assert_same_fit, crash_then_resume, fit, tiny_data, uninterrupted

from sklearn_ltr import RankNetRanker, SetRankRanker, TwoTowerDebiasedRanker
from sklearn_ltr._groups import QueryGroups
from sklearn_ltr.clicks import click_weights
from sklearn_ltr.training._checkpoint import CHECKPOINT_FILE

pytestmark = pytest.mark.usefixtures("one_torch_thread")

_X, _Y, _QID = tiny_data(n_queries=12)
_CLICKS = (_Y >= 2).astype(np.float64)
_RANK = QueryGroups(_QID).positions + 1.0  # each row's 1-based place in its query, in input order
_PROPENSITY = 1.0 / np.sqrt(_RANK)
_AFFINE = np.column_stack([0.9 / np.sqrt(_RANK), np.full(len(_RANK), 0.05)])
_WEIGHTS = (_QID % 3 + 1.0)  # one weight per query, on each of its rows
_VAL = tiny_data(n_queries=5, random_state=3)
_VAL_RANK = QueryGroups(_VAL[2]).positions + 1.0

_RANKNET = {"hidden_sizes": (8,), "batch_size": 4, "lr": 0.01, "max_epochs": 1, "device": "cpu", "random_state": 0}
_TWO_TOWER = {"hidden_sizes": (8,), "observation_hidden_sizes": (4,), "max_position": 20, "batch_size": 4,
              "max_epochs": 1, "device": "cpu", "random_state": 0}
_SETRANK = {"d_model": 8, "n_blocks": 1, "n_heads": 2, "n_inducing_points": 4, "ff_size": 8, "max_rank": 200,
            "batch_size": 4, "max_epochs": 1, "device": "cpu", "random_state": 0}
_VALIDATED = {**_RANKNET, "early_stopping": True, "n_iter_no_change": 1}


def _changed(values, row=3, by=None):
    """A copy of ``values`` with row ``row`` changed (halved, or set to ``by``)."""
    values = np.array(values, dtype=np.float64)
    values[row] = values[row] / 2 if by is None else by
    return values


def _swapped(values, query=0):
    """A copy of ``values`` with the values of the first two rows of query ``query`` swapped."""
    values = np.array(values, copy=True)
    first, second = np.flatnonzero(_QID == np.unique(_QID)[query])[:2]
    values[[first, second]] = values[[second, first]]
    return values


def _with(**fit_params):
    return ((_X, _Y, _QID), fit_params)


def _clicked(**fit_params):
    return ((_X, _CLICKS, _QID), fit_params)


def _validation(X=_VAL[0], y=_VAL[1], groups=_VAL[2], **more):
    return {"X_val": X, "y_val": y, "groups_val": groups, **more}


def _contiguous_queries():
    """Rows grouped by query, the first feature increasing: each query's canonical order is its input order."""
    order = np.argsort(_QID, kind="stable")
    X, y, qid = _X[order].copy(), _Y[order], _QID[order]
    X[:, 0] = np.arange(len(y)) / len(y)
    return X, y, qid


def _boundary_moved():
    """The rows of :func:`_contiguous_queries` in the same order, the first query's last row moved to the second."""
    X, y, qid = _contiguous_queries()
    qid = qid.copy()
    qid[np.flatnonzero(qid == qid[0])[-1]] = np.unique(qid)[1]
    return X, y, qid


# case: (class, parameters, the inputs of the checkpoint's fit, the changed inputs of the refused fit)
_TRAINING = {
    "sample_weight": (RankNetRanker, _RANKNET, _with(sample_weight=_WEIGHTS),
                      _with(sample_weight=np.where(_QID == _QID[0], 5.0, _WEIGHTS))),
    "sample_weight_added": (RankNetRanker, _RANKNET, _with(), _with(sample_weight=_WEIGHTS)),
    "propensity": (RankNetRanker, _RANKNET, _clicked(propensity=_PROPENSITY),
                   _clicked(propensity=_changed(_PROPENSITY))),
    "affine_propensity": (RankNetRanker, _RANKNET, _clicked(propensity=_AFFINE),
                          _clicked(propensity=np.column_stack([_AFFINE[:, 0], _changed(_AFFINE[:, 1], by=0.0)]))),
    "positions": (TwoTowerDebiasedRanker, _TWO_TOWER, _clicked(positions=_RANK), _clicked(positions=_swapped(_RANK))),
    "initial_rank": (SetRankRanker, _SETRANK, _with(initial_rank=_RANK), _with(initial_rank=_swapped(_RANK))),
    "query_bounds": (RankNetRanker, _RANKNET, (_contiguous_queries(), {}), (_boundary_moved(), {})),
    # The same queries numbered in another order: training draws its batches by query number.
    "query_order": (RankNetRanker, _RANKNET, _with(), ((_X, _Y, -_QID), {})),
}


def _refused(directory, cls, params, inputs, match):
    """Fitting ``inputs`` with the checkpoint in ``directory`` raises a ValueError matching ``match``, file kept."""
    before = (directory / CHECKPOINT_FILE).read_bytes()
    data, fit_params = inputs
    with pytest.raises(ValueError, match=match):
        fit(cls, params, data, fit_params, checkpoint_dir=directory)
    assert (directory / CHECKPOINT_FILE).read_bytes() == before, "a refused checkpoint was overwritten"


def _resumes(directory, cls, params, inputs):
    """The inputs of the checkpoint's own (finished) fit are accepted: it is restored, not trained again."""
    data, fit_params = inputs
    assert fit(cls, params, data, fit_params, checkpoint_dir=directory).resumed_from_epoch_ == params["max_epochs"]


@pytest.mark.parametrize("case", list(_TRAINING))
def test_a_checkpoint_is_refused_for_other_training_inputs(tmp_path, case):
    cls, params, written, changed = _TRAINING[case]
    data, fit_params = written
    fit(cls, params, data, fit_params, checkpoint_dir=tmp_path)
    _refused(tmp_path, cls, params, changed, r"was written for other training data \(\d+ rows of \d+ queries there")
    _resumes(tmp_path, cls, params, written)  # the refusal was the change's: the same inputs resume


def test_propensities_that_give_the_same_click_weights_are_other_data(tmp_path):
    # Within float32's precision the loss's click weights are equal; the IPS validation of the held-out
    # queries reads the propensities themselves, in float64: its values, and early stopping, differ.
    other = _PROPENSITY * (1 - 1e-9)
    assert np.array_equal(click_weights(_PROPENSITY).astype(np.float32), click_weights(other).astype(np.float32))
    params = {**_RANKNET, "validation_fraction": 0.3}
    first = fit(RankNetRanker, params, (_X, _CLICKS, _QID), {"propensity": _PROPENSITY}, checkpoint_dir=tmp_path)
    second = fit(RankNetRanker, params, (_X, _CLICKS, _QID), {"propensity": other})
    assert first.history_[:, "valid_ips_dcg@10"] != second.history_[:, "valid_ips_dcg@10"]
    _refused(tmp_path, RankNetRanker, params, _clicked(propensity=other), "was written for other training data")


_VALIDATION = {
    "X_val": (RankNetRanker, _VALIDATED, _with(**_validation()), _with(**_validation(X=_VAL[0] * 1.01))),
    "y_val": (RankNetRanker, _VALIDATED, _with(**_validation()), _with(**_validation(y=_changed(_VAL[1], by=4)))),
    "groups_val": (RankNetRanker, _VALIDATED, _with(**_validation()),
                   _with(**_validation(groups=np.where(_VAL[2] == _VAL[2].min(), _VAL[2].max(), _VAL[2])))),
    "propensity_val": (RankNetRanker, _VALIDATED, _with(**_validation(y=(_VAL[1] > 1) * 1.0,
                                                                      propensity_val=1 / np.sqrt(_VAL_RANK))),
                       _with(**_validation(y=(_VAL[1] > 1) * 1.0, propensity_val=_changed(1 / np.sqrt(_VAL_RANK))))),
    "initial_rank_val": (SetRankRanker, {**_SETRANK, "early_stopping": True},
                         _with(initial_rank=_RANK, **_validation(initial_rank_val=_VAL_RANK)),
                         _with(initial_rank=_RANK, **_validation(initial_rank_val=_VAL_RANK[::-1].copy()))),
    "validation_added": (RankNetRanker, _RANKNET, _with(), _with(**_validation())),
    "validation_removed": (RankNetRanker, _RANKNET, _with(**_validation()), _with()),
}


@pytest.mark.parametrize("case", list(_VALIDATION))
def test_a_checkpoint_is_refused_for_another_validation_set(tmp_path, case):
    # Early stopping monitors it and the history records its values: a resumed fit on another set
    # would mix two validations and stop at an epoch that neither fit would have stopped at.
    cls, params, written, changed = _VALIDATION[case]
    data, fit_params = written
    fit(cls, params, data, fit_params, checkpoint_dir=tmp_path)
    _refused(tmp_path, cls, params, changed, r"was written for another validation set \(X_val, y_val, groups_val")
    _resumes(tmp_path, cls, params, written)


def _shuffled(data, seed=0):
    """The rows of ``data`` (arrays of one row each) in a random order."""
    permutation = np.random.default_rng(seed).permutation(len(data[0]))
    return tuple(np.asarray(values)[permutation] for values in data)


def test_a_validation_set_in_another_row_order_is_the_same_set(tmp_path):
    X, y, groups, ranks = _shuffled((*_VAL, _VAL_RANK), seed=1)
    params = {**_SETRANK, "early_stopping": True}
    written = _with(initial_rank=_RANK, **_validation(initial_rank_val=_VAL_RANK))
    fit(SetRankRanker, params, *written, checkpoint_dir=tmp_path)
    _resumes(tmp_path, SetRankRanker, params, _with(initial_rank=_RANK, **_validation(X, y, groups,
                                                                                       initial_rank_val=ranks)))


def _grouped(data, seed=0):
    """The rows of ``data`` as float32 features grouped by query (training uses them in place), each query shuffled."""
    X, y, qid = data
    rng = np.random.default_rng(seed)
    order = np.concatenate([rng.permutation(np.flatnonzero(qid == query)) for query in np.unique(qid)[::-1]])
    return np.ascontiguousarray(X[order], dtype=np.float32), y[order], qid[order]


_FLOAT32 = (_X.astype(np.float32).astype(np.float64), _Y, _QID)  # values float32 holds exactly

# case: (the rows of the crashed fit, the same rows as the resumed fit gets them)
_ORDERS = {
    # Shuffled across queries, the query ids renumbered in the same order.
    "shuffled": ((_X, _Y, _QID), (lambda X, y, qid: (X, y, 10 * qid + 7))(*_shuffled((_X, _Y, _QID)))),
    # Used in place (float32 rows grouped by query, each query in its own order), then copied (float64, shuffled).
    "in_place_then_copied": (_grouped(_FLOAT32), _shuffled(_FLOAT32)),
    "copied_then_in_place": (_shuffled(_FLOAT32), _grouped(_FLOAT32, seed=1)),
}


@pytest.mark.parametrize("case", list(_ORDERS))
def test_the_same_rows_in_another_order_resume_to_the_uninterrupted_fit(tmp_path, case):
    # Training puts each query's rows in their canonical order and the queries in the order of their ids:
    # the crashed fit's checkpoint is the same data's, and the resumed fit is the uninterrupted one.
    crashed, resumed_on = _ORDERS[case]
    params = {**_RANKNET, "max_epochs": 4, "max_list_length": 20, "dropout": 0.2}
    reference = uninterrupted(RankNetRanker, params, epoch=3, data=crashed)
    resumed = crash_then_resume(RankNetRanker, params, tmp_path, epoch=3, data=crashed, resume_data=resumed_on)
    assert_same_fit(resumed, reference, resumed_from=2, data=crashed)

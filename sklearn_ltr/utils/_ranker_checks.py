"""The ranker checks of the contract suite; :mod:`sklearn_ltr.utils.estimator_checks` runs them."""

from __future__ import annotations

import inspect
import pickle

import numpy as np
import sklearn
from sklearn.base import clone
from sklearn.model_selection import GroupKFold, cross_validate
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from sklearn_ltr.metrics import ndcg_score
from sklearn_ltr.utils._check_data import (
    _NEURAL,
    _assert_close,
    _deterministic,
    _documented,
    _fit,
    _fitted,
    _predict,
    _quiet,
    _ranking_data,
    _tags,
    _take,
)
from sklearn_ltr.utils._tags import TARGET_KINDS, RankerTags, Tags


@_documented()
def check_ranker_tags(name, estimator_orig):
    """The tags are :class:`~sklearn_ltr.utils.Tags` holding a valid :class:`RankerTags`."""
    from sklearn.utils import get_tags

    tags = get_tags(estimator_orig)
    assert isinstance(tags, Tags) and isinstance(tags.ranker_tags, RankerTags), (
        f"{name}.__sklearn_tags__ must return sklearn_ltr.utils.Tags with ranker_tags (use RankerMixin)."
    )
    ranker_tags = tags.ranker_tags
    assert ranker_tags.target_kind in TARGET_KINDS, f"{name}: target_kind must be one of {TARGET_KINDS}."

    for method, names in (("fit", ranker_tags.extra_fit_inputs), ("predict", ranker_tags.extra_predict_inputs)):
        accepted = inspect.signature(getattr(estimator_orig, method)).parameters
        for input_name in names:
            assert input_name in accepted, f"{name}.{method} does not take {input_name!r}, which its tags declare."


@_documented()
def check_fit_invariant_to_query_interleaving(name, estimator_orig):
    """Interleaving the queries' rows differently (each query's rows in the same order) changes nothing."""
    estimator = _deterministic(estimator_orig)
    if estimator is None:
        return
    X, y, groups, fit_extras, predict_extras = _ranking_data(estimator)
    by_query = np.argsort(groups, kind="stable")  # queries contiguous, rows of a query in the same order
    first = _predict(_fit(clone(estimator), X, y, groups, fit_extras), X, groups, predict_extras)
    second = _fit(clone(estimator), X[by_query], y[by_query], groups[by_query], _take(fit_extras, by_query))
    _assert_close(_predict(second, X, groups, predict_extras), first,
                  f"{name}: fitting on the same queries with their rows interleaved differently changed the model.")


@_documented()
def check_fit_invariant_to_row_order_within_queries(name, estimator_orig):
    """Shuffling the rows within each query (the queries' interleaving kept) trains the same model, exactly.

    Each query's rows trade places among the positions that query holds, so the sequence of
    query ids is unchanged and only the order of a query's own rows differs (extra inputs move
    with their rows). A ranker must train on an order that depends on each query's rows alone
    (the library's canonical order), so that the predictions are bit-identical: the inputs of
    training are then the same, so any difference would be a nondeterminism that
    :func:`check_clone_reproduces` catches too.
    """
    estimator = _deterministic(estimator_orig)
    if estimator is None:
        return
    X, y, groups, fit_extras, predict_extras = _ranking_data(estimator)
    # Position i of query order receives a random row of the same query: groups[permutation] == groups.
    slots = np.argsort(groups, kind="stable")
    permutation = np.empty(len(groups), dtype=np.intp)
    permutation[slots] = np.lexsort((np.random.default_rng(3).random(len(groups)), groups))
    assert np.array_equal(groups[permutation], groups) and not np.array_equal(permutation, np.arange(len(groups)))
    first = _predict(_fit(clone(estimator), X, y, groups, fit_extras), X, groups, predict_extras)
    shuffled = _fit(clone(estimator), X[permutation], y[permutation], groups, _take(fit_extras, permutation))
    np.testing.assert_array_equal(_predict(shuffled, X, groups, predict_extras), first,
                                  err_msg=f"{name}: shuffling the rows within each query changed the model.")


@_documented()
def check_predict_invariant_to_row_order(name, estimator_orig):
    """``predict`` on shuffled rows returns the shuffled scores."""
    estimator, (X, y, groups, _fit_extras, predict_extras), scores = _fitted(estimator_orig)
    permutation = np.random.default_rng(1).permutation(len(y))
    shuffled = _predict(estimator, X[permutation], groups[permutation], _take(predict_extras, permutation))
    _assert_close(shuffled, scores[permutation], f"{name}.predict depends on the order of the rows.")


@_documented()
def check_query_relabelling(name, estimator_orig):
    """Query ids are names: strings instead of ints (fit) and another sort order (predict) change nothing."""
    estimator = _deterministic(estimator_orig)
    if estimator is None:
        return
    X, y, groups, fit_extras, predict_extras = _ranking_data(estimator)
    as_strings = np.array([f"q{g:06d}" for g in groups])  # same order of queries
    scrambled = np.array([f"{(g * 7919) % 1000:03d}-{g}" for g in groups])  # another order
    fitted = _fit(clone(estimator), X, y, groups, fit_extras)
    scores = _predict(fitted, X, groups, predict_extras)
    relabelled = _fit(clone(estimator), X, y, as_strings, fit_extras)
    _assert_close(_predict(relabelled, X, as_strings, predict_extras), scores,
                  f"{name}: fitting with string query ids gave another model than integer ids.")
    _assert_close(_predict(fitted, X, scrambled, predict_extras), scores,
                  f"{name}.predict depends on the query ids' values, not only on which rows share one.")


@_documented()
def check_query_column(name, estimator_orig):
    """Query ids read from a column of ``X`` (``query_column``) act exactly as ``groups``.

    Fitting, predicting and scoring with the ids in a column (first as index 2, then
    as the last column, index -1) give the scores of ``groups=``; ``score`` needs no
    ``groups``; ``groups`` that group the rows differently from the column are refused.
    """
    estimator = _deterministic(estimator_orig)
    if estimator is None:
        return
    X, y, groups, fit_extras, predict_extras = _ranking_data(estimator)
    scores = _predict(_fit(clone(estimator), X, y, groups, fit_extras), X, groups, predict_extras)
    labels = np.digitize(X[:, 0], [-1, 0, 1])
    expected_score = ndcg_score(labels, scores, groups, k=10)
    for column, with_ids in ((2, np.insert(X, 2, groups, axis=1)), (-1, np.column_stack([X, groups]))):
        fitted = _fit(clone(estimator).set_params(query_column=column), with_ids, y, None, fit_extras)
        assert fitted.n_features_in_ == X.shape[1], (
            f"{name}(query_column={column}).n_features_in_ counts the query column.")
        _assert_close(_predict(fitted, with_ids, None, predict_extras), scores,
                      f"{name}(query_column={column}) scores differ from groups=.")
        with _quiet():
            assert np.isclose(fitted.score(with_ids, labels, **predict_extras), expected_score), (
                f"{name}(query_column={column}).score(X, y) is not the NDCG@10 of its queries.")
        try:
            _predict(fitted, with_ids, np.arange(len(groups)), predict_extras)
        except ValueError as error:
            assert "query_column" in str(error), f"{name}: the error does not name query_column: {error}"
        else:
            raise AssertionError(f"{name}(query_column={column}).predict accepted groups that disagree with "
                                 f"the query column.")


@_documented(_NEURAL)
def check_batch_size_invariance(name, estimator_orig):
    """Predictions do not depend on how many queries go into one prediction batch."""
    estimator, (X, _y, groups, _fit_extras, predict_extras), scores = _fitted(estimator_orig)
    for batch_size in (1, 3, len(np.unique(groups)) + 1):
        estimator.set_params(batch_size=batch_size)
        _assert_close(_predict(estimator, X, groups, predict_extras), scores,
                      f"{name}.predict changed with batch_size={batch_size}.")


@_documented()
def check_query_alone_vs_among_others(name, estimator_orig):
    """A query scored alone gets the scores it gets in a call with other queries."""
    estimator, (X, _y, groups, _fit_extras, predict_extras), scores = _fitted(estimator_orig)
    for query in np.unique(groups)[:4]:
        rows = np.flatnonzero(groups == query)
        alone = _predict(estimator, X[rows], groups[rows], _take(predict_extras, rows))
        _assert_close(alone, scores[rows], f"{name}: query {query} scored alone differs from among others.")


@_documented()
def check_score_equals_ndcg_scorer(name, estimator_orig):
    """``score(X, y, groups)`` is ``ndcg_scorer(estimator, X, y, groups=groups)``."""
    from sklearn_ltr.metrics import ndcg_scorer

    X, y, groups, fit_extras, predict_extras = _ranking_data(estimator_orig)
    estimator = _fit(clone(estimator_orig), X, y, groups, fit_extras)
    labels = np.digitize(X[:, 0], [-1, 0, 1])  # graded labels, whatever the training target
    with _quiet():
        ours = estimator.score(X, labels, groups=groups, **predict_extras)
    from sklearn_ltr.metrics import ndcg_score

    reference = ndcg_score(labels, _predict(estimator, X, groups, predict_extras), groups, k=10)
    assert ours == reference, f"{name}.score gave {ours}, NDCG@10 of its predictions is {reference}."
    if not predict_extras:  # the library's scorer passes only groups to predict
        assert ndcg_scorer(estimator, X, labels, groups=groups) == ours, f"{name}.score differs from ndcg_scorer."


@_documented()
def check_routing_reaches_fit_and_predict(name, estimator_orig):
    """Under routing, ``groups`` and the extra inputs reach every fit, predict and score through the tools."""
    estimator = _deterministic(estimator_orig)
    if estimator is None:
        return
    X, y, groups, fit_extras, predict_extras = _ranking_data(estimator)
    folds = list(GroupKFold(2).split(X, y, groups))
    expected = []  # by hand: each fold fitted and scored with its own query ids
    for train, test in folds:
        fitted = _fit(clone(estimator), X[train], y[train], groups[train], _take(fit_extras, train))
        with _quiet():
            expected.append(fitted.score(X[test], y[test], groups=groups[test], **_take(predict_extras, test)))
    direct = _predict(_fit(clone(estimator), X, y, groups, fit_extras), X, groups, predict_extras)
    with sklearn.config_context(enable_metadata_routing=True), _quiet():
        pipeline = make_pipeline(FunctionTransformer(), clone(estimator))
        pipeline.fit(X, y, groups=groups, **fit_extras)
        piped = np.asarray(pipeline.predict(X, groups=groups, **predict_extras), dtype=np.float64)
        # scoring=None: the estimator's own score, which requests groups and the extra inputs.
        routed = cross_validate(clone(estimator), X, y, cv=folds, params={"groups": groups, **fit_extras,
                                                                          **predict_extras})["test_score"]
    _assert_close(piped, direct,
                  f"{name}: inside a Pipeline with routing, groups or an extra input did not reach fit or predict.")
    _assert_close(routed, expected,
                  f"{name}: cross_validate with routing gave other fold scores than fitting each fold by hand "
                  f"with its groups: groups (or an extra input) did not reach fit, predict or score.")


@_documented()
def check_pickle_round_trip(name, estimator_orig):
    """A pickled and restored fitted ranker predicts exactly what it predicted."""
    X, y, groups, fit_extras, predict_extras = _ranking_data(estimator_orig)
    estimator = _fit(clone(estimator_orig), X, y, groups, fit_extras)
    restored = pickle.loads(pickle.dumps(estimator))
    np.testing.assert_array_equal(_predict(restored, X, groups, predict_extras),
                                  _predict(estimator, X, groups, predict_extras),
                                  err_msg=f"{name}: predictions changed through pickle.")


@_documented()
def check_clone_reproduces(name, estimator_orig):
    """With a fixed ``random_state``, a clone fitted on the same data predicts exactly the same."""
    estimator = _deterministic(estimator_orig)
    if estimator is None:
        return
    X, y, groups, fit_extras, predict_extras = _ranking_data(estimator)
    first = _predict(_fit(clone(estimator), X, y, groups, fit_extras), X, groups, predict_extras)
    second = _predict(_fit(clone(clone(estimator)), X, y, groups, fit_extras), X, groups, predict_extras)
    np.testing.assert_array_equal(second, first, err_msg=f"{name}: the same random_state gave other predictions.")


@_documented(_NEURAL)
def check_early_stopping_restores_best(name, estimator_orig):
    """Early stopping keeps the best epoch's weights: the same as training exactly that many epochs.

    Trained long enough (with a patience that never stops it) that the best validation
    epoch is not the last, the kept model must equal a model trained for ``best_iteration_``
    epochs on the same split, and not the last epoch's.
    """
    X, y, groups, fit_extras, predict_extras = _ranking_data(estimator_orig, n_queries=40, noise=2.0)
    settings = {"early_stopping": True, "validation_fraction": 0.3, "max_epochs": 12, "n_iter_no_change": 12}
    for seed in range(6):
        estimator = clone(estimator_orig).set_params(**settings, lr=0.05, random_state=seed)
        _fit(estimator, X, y, groups, fit_extras)
        best = estimator.best_iteration_
        if best is not None and best < estimator.n_iter_:
            break
    else:
        raise AssertionError(f"{name}: in six seeds the best validation epoch was always the last; "
                             f"the check cannot observe early stopping.")
    exact = clone(estimator).set_params(early_stopping=False, max_epochs=best)
    last = clone(estimator).set_params(early_stopping=False)
    kept = _predict(estimator, X, groups, predict_extras)
    _assert_close(kept, _predict(_fit(exact, X, y, groups, fit_extras), X, groups, predict_extras),
                  f"{name}: early stopping did not restore the weights of epoch {best} (best_iteration_).")
    assert not np.allclose(kept, _predict(_fit(last, X, y, groups, fit_extras), X, groups, predict_extras)), (
        f"{name}: the kept model equals the last epoch's although epoch {best} was the best."
    )


@_documented(_NEURAL)
def check_max_list_length_training_only(name, estimator_orig):
    """``max_list_length`` cuts training lists; prediction still scores every document of every list."""
    X, y, groups, fit_extras, predict_extras = _ranking_data(estimator_orig, min_length=8, max_length=20)
    estimator = _fit(clone(estimator_orig).set_params(max_list_length=3), X, y, groups, fit_extras)
    scores = _predict(estimator, X, groups, predict_extras)
    assert np.isfinite(scores).all(), f"{name}: predict left rows of long lists unscored (non-finite)."
    permutation = np.random.default_rng(2).permutation(len(y))
    _assert_close(_predict(estimator, X[permutation], groups[permutation], _take(predict_extras, permutation)),
                  scores[permutation], f"{name}: predict on long lists depends on row order (lists subsampled?).")
    if not _tags(estimator).list_context:  # a pointwise score is the row's own
        rows = np.flatnonzero(groups == groups[0])
        alone = np.concatenate([_predict(estimator, X[[i]], groups[[i]], _take(predict_extras, [i])) for i in rows])
        _assert_close(alone, scores[rows], f"{name}: a long list's rows are not all scored as themselves.")


def _nan_loss(scores, labels, mask, **options):
    return scores.sum() * float("nan")


_SEEN_OPTIONS = []


def _recording_loss(scores, labels, mask, *, marker=None):
    _SEEN_OPTIONS.append(marker)
    return (scores * mask).pow(2).mean()


@_documented(_NEURAL)
def check_non_finite_loss_raises(name, estimator_orig):
    """A loss that turns NaN stops training with an error that names the epoch, never a NaN model."""
    X, y, groups, fit_extras, _ = _ranking_data(estimator_orig)
    estimator = clone(estimator_orig).set_params(loss=_nan_loss)
    try:
        _fit(estimator, X, y, groups, fit_extras)
    except (FloatingPointError, ValueError) as error:
        assert "epoch" in str(error), f"{name}: the non-finite loss error does not name the epoch: {error}"
    else:
        raise AssertionError(f"{name}.fit returned normally although its loss was NaN.")


@_documented(_NEURAL)
def check_loss_params_reach_loss(name, estimator_orig):
    """``loss_params`` are passed to the loss function."""
    X, y, groups, fit_extras, _ = _ranking_data(estimator_orig)
    _SEEN_OPTIONS.clear()
    estimator = clone(estimator_orig).set_params(loss=_recording_loss, loss_params={"marker": 17})
    _fit(estimator, X, y, groups, fit_extras)
    assert _SEEN_OPTIONS and set(_SEEN_OPTIONS) == {17}, f"{name}: loss_params did not reach the loss."


@_documented()
def check_sample_weight(name, estimator_orig):
    """Per-query ``sample_weight``: uniform weights change nothing, uneven ones do, varying within a query fails."""
    estimator = _deterministic(estimator_orig)
    if estimator is None:
        return
    X, y, groups, fit_extras, predict_extras = _ranking_data(estimator)
    plain = _predict(_fit(clone(estimator), X, y, groups, fit_extras), X, groups, predict_extras)
    uniform = _fit(clone(estimator), X, y, groups, fit_extras, sample_weight=np.full(len(y), 3.0))
    _assert_close(_predict(uniform, X, groups, predict_extras), plain,
                  f"{name}: a uniform sample_weight of 3 changed the model.", rtol=1e-4, atol=1e-5)
    uneven = np.where(groups % 2 == 1, 5.0, 0.2)  # constant within each query
    weighted = _fit(clone(estimator), X, y, groups, fit_extras, sample_weight=uneven)
    assert not np.allclose(_predict(weighted, X, groups, predict_extras), plain), (
        f"{name}: uneven per-query sample_weight had no effect: the weights are ignored."
    )
    varying = np.arange(len(y), dtype=np.float64) + 1.0
    try:
        _fit(clone(estimator), X, y, groups, fit_extras, sample_weight=varying)
    except ValueError as error:
        assert "sample_weight" in str(error), f"{name}: the error does not name sample_weight: {error}"
    else:
        raise AssertionError(f"{name}.fit accepted a sample_weight that varies within a query.")

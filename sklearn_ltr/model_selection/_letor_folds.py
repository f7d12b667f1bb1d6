"""The five LETOR folds: their rotation, loading one from partition files, and evaluating a ranker on all.

A LETOR data set ships as five partitions of its queries, ``S1.txt`` .. ``S5.txt`` (SVMlight
with ``qid:``). Fold ``k`` trains on S(k), S(k+1), S(k+2), validates on S(k+3) and tests on
S(k+4), modulo 5 (Qin and Liu, 2013). The files are read with
:func:`sklearn_ltr.datasets.load_svmlight_ranking`; the metrics are the per-query metrics of
:mod:`sklearn_ltr.metrics`, with their conventions.
"""

from __future__ import annotations

import numbers
import time
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.model_selection import ParameterGrid
from sklearn.utils import Bunch

from sklearn_ltr._groups import QueryGroups
from sklearn_ltr.datasets import load_svmlight_ranking
from sklearn_ltr.metrics import RankingEvaluator, get_metric
from sklearn_ltr.metrics._registry import is_builtin
from sklearn_ltr.utils._sklearn_compat import check_parameters

__all__ = ["evaluate_letor_folds", "letor_fold_parts", "load_letor_fold"]

N_PARTITIONS = 5
_PARTITIONS = tuple(f"S{i}" for i in range(1, N_PARTITIONS + 1))


def _check_fold(fold, name="fold"):
    if isinstance(fold, bool) or not isinstance(fold, numbers.Integral) or not 1 <= fold <= N_PARTITIONS:
        raise ValueError(f"{name} must be an integer from 1 to {N_PARTITIONS} (the LETOR folds); got {fold!r}.")
    return int(fold)


def letor_fold_parts(fold):
    """The partitions of one LETOR fold: train on S(k..k+2), validate on S(k+3), test on S(k+4).

    Counting is modulo 5, so every partition is the test partition of exactly one fold.

    Parameters
    ----------
    fold : int
        The fold, 1 to 5.

    Returns
    -------
    parts : dict
        ``{"train": (name, name, name), "vali": name, "test": name}`` with partition
        names ``"S1"`` .. ``"S5"``.

    Raises
    ------
    ValueError
        When ``fold`` is not an integer from 1 to 5.

    Examples
    --------
    >>> from sklearn_ltr.model_selection import letor_fold_parts
    >>> letor_fold_parts(1)
    {'train': ('S1', 'S2', 'S3'), 'vali': 'S4', 'test': 'S5'}
    >>> [letor_fold_parts(k)["test"] for k in range(1, 6)]
    ['S5', 'S1', 'S2', 'S3', 'S4']
    """
    fold = _check_fold(fold)
    names = [_PARTITIONS[(fold - 1 + i) % N_PARTITIONS] for i in range(N_PARTITIONS)]
    return {"train": tuple(names[:3]), "vali": names[3], "test": names[4]}


def _partition_files(partitions_dir):
    """``{"S1": path, ...}``, with errors that name ``partitions_dir`` and say what to pass."""
    path = Path(partitions_dir)
    what = "the folder holding a LETOR data set's five partitions S1.txt .. S5.txt"
    if not path.is_dir():
        raise FileNotFoundError(f"partitions_dir={str(path)!r} is not a directory; pass {what} "
                                f"(e.g. $SKLEARN_LTR_DATA/mq2008/partitions).")
    files = {name: path / f"{name}.txt" for name in _PARTITIONS}
    missing = [f"{name}.txt" for name, file in files.items() if not file.is_file()]
    if missing:
        message = f"partitions_dir={str(path)!r} lacks {', '.join(missing)}; pass {what}."
        if (path / "partitions").is_dir():
            message += f" Did you mean partitions_dir={str(path / 'partitions')!r}?"
        elif all((path / f"{split}.txt").is_file() for split in ("train", "vali", "test")):
            message += (" This folder holds one fold (train.txt, vali.txt, test.txt): load it with "
                        "sklearn_ltr.datasets.load_svmlight_ranking, or pass the data set's partitions folder.")
        raise FileNotFoundError(message)
    return files


def _read_partitions(files, dtype):
    """``{name: (X, y, groups)}`` with CSR ``X`` of one width for all five partitions.

    Feature indices are one-based (LETOR) unless a partition holds an index 0, decided
    over all five files at once so that every partition has the same columns.
    """
    parts = {name: load_svmlight_ranking(file, dtype=dtype, zero_based=True, dense=False)
             for name, file in files.items()}
    first = 0 if any((X.indices == 0).any() for X, _, _ in parts.values()) else 1
    width = max(X.shape[1] for X, _, _ in parts.values())
    for name, (X, y, groups) in parts.items():
        X = sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], width))
        parts[name] = (X[:, first:], y, groups)
    ids = {name: np.unique(groups) for name, (_, _, groups) in parts.items()}
    for i, a in enumerate(_PARTITIONS):
        for b in _PARTITIONS[i + 1:]:
            shared = np.intersect1d(ids[a], ids[b])
            if shared.size:
                raise ValueError(
                    f"query id {shared[0].item()!r} is in both {files[a]} and {files[b]} ({shared.size} shared "
                    f"queries); LETOR partitions hold disjoint queries: check the files in partitions_dir."
                )
    return parts


def _assemble(parts, fold, dense):
    """``(train, vali, test)`` of ``fold`` from the partitions read by :func:`_read_partitions`."""
    names = letor_fold_parts(fold)

    def split(members):
        chosen = [parts[name] for name in members]
        X = sp.vstack([X for X, _, _ in chosen], format="csr")
        y = np.concatenate([y for _, y, _ in chosen])
        groups = np.concatenate([g for _, _, g in chosen])
        return (X.toarray() if dense else X), y, groups

    return split(names["train"]), split([names["vali"]]), split([names["test"]])


def load_letor_fold(partitions_dir, fold, *, dense=True, dtype=np.float64):
    """Load one LETOR fold, ``(train, vali, test)``, from the five partition files.

    Fold ``k`` trains on S(k), S(k+1), S(k+2) (concatenated in that order), validates on
    S(k+3) and tests on S(k+4), counting modulo 5 (:func:`letor_fold_parts`); fold 1 equals
    LETOR's ``Fold1/{train,vali,test}.txt``.

    Parameters
    ----------
    partitions_dir : str or path-like
        The folder holding ``S1.txt`` .. ``S5.txt`` (LETOR / SVMlight with ``qid:``), e.g.
        ``$SKLEARN_LTR_DATA/mq2008/partitions``.
    fold : int
        The fold, 1 to 5.
    dense : bool, default=True
        Return ``X`` as ndarrays; False keeps scipy CSR matrices.
    dtype : numpy dtype, default=np.float64
        Dtype of ``X``.

    Returns
    -------
    train, vali, test : tuple of (X, y, groups)
        Features, relevance labels (float64) and the ``qid:`` of each row, in file order.
        All three have the columns of the widest partition; feature indices are read as
        one-based (LETOR's convention) unless a partition holds an index 0.

    Raises
    ------
    FileNotFoundError
        When ``partitions_dir`` is not a directory or lacks a partition file; the message
        names the argument and suggests the folder to pass.
    ValueError
        When ``fold`` is not 1 to 5, a file is not SVMlight, or a query id occurs in two
        partitions.

    See Also
    --------
    evaluate_letor_folds : Fit and evaluate a ranker on every fold.
    sklearn_ltr.datasets.load_svmlight_ranking : The reader of each partition.

    Examples
    --------
    Five partitions of synthetic queries, written with the library's writer:

    >>> import tempfile
    >>> from pathlib import Path
    >>> from sklearn_ltr.datasets import dump_svmlight_ranking, make_ranking
    >>> from sklearn_ltr.model_selection import load_letor_fold
    >>> X, y, qid = make_ranking(n_queries=25, n_features=5, random_state=0)
    >>> folder = Path(tempfile.mkdtemp())
    >>> for s in range(5):  # S1 holds queries 0-4, S2 queries 5-9, ...
    ...     rows = qid // 5 == s
    ...     dump_svmlight_ranking(X[rows], y[rows], qid[rows], folder / f"S{s + 1}.txt")
    >>> train, vali, test = load_letor_fold(folder, 2)  # train S2, S3, S4; vali S5; test S1
    >>> sorted(set(test[2].tolist())), sorted(set(vali[2].tolist()))
    ([0, 1, 2, 3, 4], [20, 21, 22, 23, 24])
    >>> train[0].shape[1]
    5
    """
    fold = _check_fold(fold)
    parts = _read_partitions(_partition_files(partitions_dir), dtype)
    return _assemble(parts, fold, dense)


def _check_cutoffs(k):
    ks = list(k) if isinstance(k, (list, tuple)) else [k]
    if not ks:
        raise ValueError("k is empty; pass a cut-off such as k=10, or several, k=(1, 5, 10).")
    if len(set(ks)) != len(ks):
        raise ValueError(f"k has repeated cut-offs {ks!r}; pass each once.")
    return ks


def _check_folds(folds):
    if folds is None:
        return list(range(1, N_PARTITIONS + 1))
    chosen = [_check_fold(fold, "each entry of folds") for fold in ([folds] if np.ndim(folds) == 0 else folds)]
    if not chosen or len(set(chosen)) != len(chosen):
        raise ValueError(f"folds must hold distinct folds from 1 to {N_PARTITIONS}; got {folds!r}.")
    return chosen


def _maker(estimator):
    """``make(vali, params)`` building an unfitted estimator for one fold and candidate."""
    if hasattr(estimator, "fit"):
        return lambda vali, params: clone(estimator).set_params(**params)
    if callable(estimator):
        def make(vali, params):
            built = estimator(vali)
            if not hasattr(built, "fit"):
                raise TypeError(f"estimator(vali) returned {type(built).__name__!r}, not an estimator; a factory "
                                f"passed as estimator must return an unfitted ranker.")
            return built.set_params(**params) if params else built
        return make
    raise TypeError(f"estimator must be a ranker (an object with fit and predict) or a callable make(vali) that "
                    f"returns one; got {type(estimator).__name__!r}.")


def _fit_kwargs(fit_params, vali):
    if fit_params is None:
        return {}
    kwargs = fit_params(vali) if callable(fit_params) else fit_params
    if not isinstance(kwargs, Mapping):
        raise TypeError(f"fit_params must be a dict of fit arguments or a callable fit_params(vali) returning one; "
                        f"got {type(kwargs).__name__!r}.")
    return dict(kwargs)


def evaluate_letor_folds(
    estimator,
    partitions_dir,
    *,
    param_grid=None,
    folds=None,
    metric="ndcg",
    k=10,
    select_k=10,
    metric_params=None,
    fit_params=None,
    return_estimators=False,
    verbose=0,
):
    """Fit a ranker on each LETOR fold, select on its validation queries, and score every test query.

    For each fold (:func:`load_letor_fold`): every candidate of ``param_grid`` is fitted on
    ``train``; the one with the best ``metric@select_k`` on ``vali`` (the first on
    ties) scores ``test``, and its metric value of each test query is returned. As every
    query is a test query of exactly one fold, the five folds give one value per query of
    the data set: two rankers evaluated on the same ``partitions_dir`` return the same
    queries in the same order (by fold, then query id), ready for
    :func:`~sklearn_ltr.metrics.paired_significance`.

    Parameters
    ----------
    estimator : ranker or callable
        A ranker (``fit(X, y, groups=...)``, ``predict(X, groups=...)``), cloned for each fold
        and candidate; or a callable ``make(vali)`` that returns an unfitted ranker, called
        with the fold's validation split ``(X, y, groups)``, e.g. to early-stop a neural
        ranker on it through a callback. A pipeline needs
        ``sklearn.set_config(enable_metadata_routing=True)`` to pass ``groups`` on.
    partitions_dir : str or path-like
        The folder holding ``S1.txt`` .. ``S5.txt``.
    param_grid : dict or list of dict, default=None
        Candidate parameters, as in :class:`~sklearn.model_selection.GridSearchCV` (set
        with ``set_params``); None fits ``estimator`` as it is.
    folds : int or sequence of int, default=None
        The folds to run, 1 to 5; None runs all five.
    metric : str, default="ndcg"
        A metric of :data:`sklearn_ltr.metrics.METRICS` with per-query values (``"ndcg"``,
        ``"dcg"``, ``"map"``, ``"precision"``, ``"mrr"``, ``"err"``, an alias or a registered
        one), with the conventions of its public function (e.g.
        :func:`~sklearn_ltr.metrics.ndcg_score`: queries without a relevant document score 1).
        The candidate with the best validation value is kept: the largest, or the smallest
        for a metric whose ``higher_is_better`` is False.
    k : int, None or sequence of them, default=10
        Cut-offs of the test values returned; None uses whole lists.
    select_k : int or None, default=10
        Cut-off of the validation metric that chooses among ``param_grid``.
    metric_params : dict, default=None
        Further options of the metric, e.g. ``{"empty_value": None}`` (queries without a
        relevant document then get NaN: drop them before a test) or ``{"gain": "linear"}``.
    fit_params : dict or callable, default=None
        Keyword arguments of ``fit``, or a callable ``fit_params(vali)`` returning them,
        e.g. ``lambda vali: {"eval_set": [vali]}`` for LambdaMART's early stopping.
    return_estimators : bool, default=False
        Keep each fold's selected, fitted ranker in the result.
    verbose : int, default=0
        1 prints one line per fitted candidate.

    Returns
    -------
    result : sklearn.utils.Bunch
        ``per_query``: dict of arrays with one entry per test query, sorted by fold then
        query id: ``"fold"``, ``"query_id"`` and one ``"<metric>@<k>"`` array per cut-off
        (``"<metric>"`` for ``k=None``); ``pandas.DataFrame(result.per_query)`` makes a table.
        ``folds``: one dict per fold with ``"fold"``, ``"params"`` (the candidates),
        ``"vali_scores"``, ``"fit_times"`` (seconds), ``"best_index"``, ``"best_params"``,
        and ``"estimator"`` with ``return_estimators=True``.

    Raises
    ------
    FileNotFoundError
        When ``partitions_dir`` is not a folder of the five partitions.
    ValueError
        When ``folds``, ``metric``, ``k``, ``select_k`` or ``metric_params`` is invalid.
    TypeError
        When ``estimator`` or ``fit_params`` is neither of the accepted kinds, or
        ``metric_params`` has an option the metric does not take.

    See Also
    --------
    load_letor_fold : One fold's splits.
    sklearn_ltr.metrics.paired_significance : Paired tests on the per-query values.

    Examples
    --------
    Five partitions of synthetic queries, then LambdaMART with two candidate depths,
    early-stopped on each fold's validation queries:

    >>> import tempfile
    >>> from pathlib import Path
    >>> from sklearn_ltr import LambdaMARTRanker
    >>> from sklearn_ltr.datasets import dump_svmlight_ranking, make_ranking
    >>> from sklearn_ltr.model_selection import evaluate_letor_folds
    >>> X, y, qid = make_ranking(n_queries=50, n_features=8, random_state=0)
    >>> folder = Path(tempfile.mkdtemp())
    >>> for s in range(5):
    ...     rows = qid % 5 == s
    ...     dump_svmlight_ranking(X[rows], y[rows], qid[rows], folder / f"S{s + 1}.txt")
    >>> ranker = LambdaMARTRanker(n_estimators=50, early_stopping_rounds=5, n_jobs=1, random_state=0)
    >>> result = evaluate_letor_folds(ranker, folder, param_grid={"num_leaves": [3, 7]}, k=(5, 10),
    ...                               fit_params=lambda vali: {"eval_set": [vali]})
    >>> sorted(result.per_query)
    ['fold', 'ndcg@10', 'ndcg@5', 'query_id']
    >>> len(result.per_query["query_id"]), len(set(result.per_query["query_id"].tolist()))  # each query once
    (50, 50)
    >>> [f["best_params"]["num_leaves"] in (3, 7) for f in result.folds]
    [True, True, True, True, True]

    Compared with 5 depth-1 trees, query by query:

    >>> from sklearn_ltr.metrics import paired_significance
    >>> stumps = evaluate_letor_folds(LambdaMARTRanker(n_estimators=5, num_leaves=2, n_jobs=1), folder)
    >>> table = paired_significance(stumps.per_query["ndcg@10"], {"tuned": result.per_query["ndcg@10"]},
    ...                             random_state=0)
    >>> table.n_queries
    50
    """
    record = get_metric(metric, per_query=True, owner="evaluate_letor_folds", parameter="metric", inputs=())
    ks = _check_cutoffs(k)
    metric_params = dict(metric_params or {})
    allowed = record.options
    unknown = sorted(set(metric_params) - set(allowed) | ({"k"} & set(metric_params)))
    if unknown:
        raise TypeError(f"metric_params has {unknown[0]!r}, not an option of the {record.name!r} metric; its options "
                        f"are {sorted(set(allowed) - {'k'})} (cut-offs go in k and select_k).")
    if record.takes_k:
        for cutoff, name in [(c, "k") for c in ks] + [(select_k, "select_k")]:
            check_parameters("evaluate_letor_folds", {name: allowed["k"]}, {name: cutoff})
    elif ks != [None] or select_k is not None:
        raise ValueError(f"the {record.name!r} metric takes no cut-off; pass k=None and select_k=None.")
    check_parameters("evaluate_letor_folds", dict(allowed), metric_params)

    def cut(cutoff):  # the cut-off as a keyword, for a metric that takes one
        return {"k": cutoff} if record.takes_k else {}

    sign = 1.0 if record.higher_is_better else -1.0  # selection keeps the largest of sign * value
    folds = _check_folds(folds)
    candidates = [{}] if param_grid is None else list(ParameterGrid(param_grid))
    make = _maker(estimator)
    parts = _read_partitions(_partition_files(partitions_dir), np.float64)

    names = [record.spelling(c) for c in ks]
    columns = {"fold": [], "query_id": [], **{name: [] for name in names}}
    fold_results = []
    reusable = is_builtin(record)  # the package's metrics take a grouping built once
    for fold in folds:
        train, vali, test = _assemble(parts, fold, dense=True)
        kwargs = _fit_kwargs(fit_params, vali)
        # Every candidate is scored on the same validation queries: group them once.
        vali_labels, vali_groups = vali[1], vali[2]
        if reusable:
            evaluator = RankingEvaluator(vali[1], vali[2])
            vali_labels, vali_groups = evaluator.y_true, evaluator
        best, best_index, vali_scores, fit_times = None, 0, [], []
        for index, params in enumerate(candidates):
            model = make(vali, params)
            start = time.perf_counter()
            model.fit(train[0], train[1], groups=train[2], **kwargs)
            fit_times.append(time.perf_counter() - start)
            scores = model.predict(vali[0], groups=vali[2])
            vali_scores.append(float(record.score(vali_labels, scores, vali_groups, **cut(select_k),
                                                  **metric_params)))
            if best is None or sign * vali_scores[-1] > sign * vali_scores[best_index]:
                best, best_index = model, index
            if verbose:
                print(f"fold {fold}, candidate {index + 1}/{len(candidates)} {params}: vali {record.name}@{select_k} "
                      f"{vali_scores[-1]:.4f} ({fit_times[-1]:.1f} s)")
        X_test, y_test, g_test = test
        scores = best.predict(X_test, groups=g_test)
        test_groups = QueryGroups(g_test)
        ids = test_groups.ids
        columns["fold"].append(np.full(ids.size, fold))
        columns["query_id"].append(ids)
        if reusable:  # several cut-offs of the same test queries
            evaluator = RankingEvaluator(y_test, test_groups)
            y_test, g_test = evaluator.y_true, evaluator
        for name, cutoff in zip(names, ks, strict=True):
            columns[name].append(record.per_query(y_test, scores, g_test, **cut(cutoff), **metric_params))
        fold_results.append({
            "fold": fold, "params": candidates, "vali_scores": np.asarray(vali_scores),
            "fit_times": np.asarray(fit_times), "best_index": best_index, "best_params": candidates[best_index],
            **({"estimator": best} if return_estimators else {}),
        })
    per_query_values = {name: np.concatenate(values) for name, values in columns.items()}
    return Bunch(per_query=per_query_values, folds=fold_results)

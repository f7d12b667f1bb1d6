"""Propensity estimation by EM: seconds and accuracy, before and after the document EM
(cc12104, 2026-12-02).

Simulated position-based click logs on LETOR data (MQ2008 Fold 1 train, MQ2007-agg Fold 1
train): each session shows the top ``top_k`` of a query's documents ordered by
``w * y + (1 - w) * U`` (``sklearn_ltr.datasets.simulate_clicks``), each shown document is
examined with probability ``(1 / position) ** eta`` and clicked when examined with probability
``0.1 + 0.9 * (2**y - 1) / (2**y_max - 1)``. Optionally only a fraction ``keep`` of the
non-clicked rows is kept, with weight ``1 / keep``.

Estimators:

- before: ``estimate_propensity_em`` with its defaults (regression EM on the features,
  LightGBM relevance cross-fitted over 2 folds, 50 trees per M-step, 20 bootstrap replicates
  that rerun the whole EM);
- after: ``estimate_propensity_document_em`` (one relevance per (query, document), closed-form
  EM, 100 bootstrap replicates), and ``estimate_propensity_harvesting`` for comparison.

Columns: rows of the log, seconds, the ratio of the seconds to one LightGBM regression fit of the
same rows (the relevance regression's settings: ``cross_entropy``, 50 trees, 31 leaves, on the
log's features), the largest relative error ``max_k |p_k - p*_k| / p*_k`` over positions 1-10
against the true curve, and how many of the ten true values lie in the 95% band.

Run (from the repository root)::

    SKLEARN_LTR_DATA=/work/shared/data PYTHONPATH=. python benchmarks/bench_propensity_em.py
    SKLEARN_LTR_DATA=/work/shared/data PYTHONPATH=. python benchmarks/bench_propensity_em.py --quick
    SKLEARN_LTR_DATA=/work/shared/data PYTHONPATH=. python benchmarks/bench_propensity_em.py --regression-em

``--regression-em``: ``estimate_propensity_em``'s defaults of 157f1c9 (bootstrap replicates
started from the estimate) against its old ones, with seconds, ratio, error, band coverage and
width, on the first three logs.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from _common import data_dir, load_average, machine, utc_now

import sklearn_ltr  # noqa: F401  (first: its OpenMP setting reaches LightGBM)
from sklearn_ltr.clicks import estimate_propensity_document_em, estimate_propensity_em, estimate_propensity_harvesting
from sklearn_ltr.datasets import simulate_clicks

MAX_POSITION = 10
#: The reference fit: the regression EM's relevance settings before 157f1c9 (50 trees of 31 leaves).
REFERENCE_FIT = {"objective": "cross_entropy", "num_iterations": 50, "learning_rate": 0.1, "num_leaves": 31,
                 "min_data_in_leaf": 20, "verbosity": -1, "deterministic": True, "force_row_wise": True}


def load(name):
    """Training rows ``(X, y, qid)`` of Fold 1 of a LETOR data set."""
    from sklearn_ltr.model_selection import load_letor_fold

    folder = data_dir("mq2008", "partitions") if name == "mq2008" else data_dir("mq2007-agg")
    X, y, qid = load_letor_fold(folder, 1)[0]
    return X, y.astype(np.int64), qid


def simulate_log(y, qid, *, eta, w, sessions, top_k=10, keep=1.0, seed=0):
    """A position-based click log: ``(rows, clicks, positions, sample_weight)``, one row per shown document.

    ``rows`` indexes the data set's rows (so ``qid[rows]`` and ``rows`` are the query and the
    document of each impression). Examination ``(1 / position) ** eta`` (``eta >= 1``): the
    clicks of ``simulate_clicks`` (examination ``1 / position``) thinned with probability
    ``(1 / position) ** (eta - 1)``.
    """
    try:
        from sklearn_ltr.clicks import PositionBasedModel, simulate_click_log
    except ImportError:
        simulate_click_log = None
    if simulate_click_log is not None:
        log = simulate_click_log(y, qid, click_model=PositionBasedModel(eta=eta), w=w, sessions=sessions,
                                 top_k=top_k, keep_non_clicked=keep, random_state=seed)
        return log.rows, log.clicks, log.positions, log.sample_weight
    rng = np.random.default_rng(seed)
    parts = []
    for _ in range(sessions):
        positions, clicks = simulate_clicks(y, qid, w=w, y_max=int(y.max()),
                                            random_state=int(rng.integers(2**31 - 1)))
        clicks = clicks * (rng.random(len(y)) < (1.0 / positions) ** (eta - 1))
        shown = np.flatnonzero(positions <= (top_k or positions.max()))
        parts.append((shown, clicks[shown], positions[shown]))
    rows = np.concatenate([p[0] for p in parts])
    clicks = np.concatenate([p[1] for p in parts])
    positions = np.concatenate([p[2] for p in parts])
    kept = (clicks == 1) | (rng.random(len(rows)) < keep)
    weight = np.where(clicks == 1, 1.0, 1.0 / keep)
    return rows[kept], clicks[kept], positions[kept], weight[kept]


def lightgbm_fit_seconds(X, clicks, weight, repeats=1):
    """Seconds of one LightGBM regression fit of the log's rows (the median of ``repeats`` fits).

    The reference fit keeps the relevance regression's settings of cc12104 (50 trees, learning rate
    0.1), whatever the EM's defaults are now, so that ratios compare across versions.
    """
    import lightgbm

    params = {**REFERENCE_FIT, "num_threads": 0}
    rounds = params.pop("num_iterations")
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        lightgbm.train(params, lightgbm.Dataset(X, label=clicks.astype(float), weight=weight), num_boost_round=rounds)
        seconds.append(time.perf_counter() - start)
    return float(np.median(seconds))


def max_relative_error(curve, truth):
    return float(np.max(np.abs(np.asarray(curve[:10]) - truth[:10]) / truth[:10]))


def covered(estimate, truth):
    if estimate.lower is None:
        return None
    k = slice(0, 10)
    return int(((estimate.lower[k] - 1e-9 <= truth[k]) & (truth[k] <= estimate.upper[k] + 1e-9)).sum())


def run(name, function, arrays, kwargs, truth, fit_seconds, rows):
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = function(*arrays, **kwargs)
    seconds = time.perf_counter() - start
    entry = {"method": name, "rows": rows, "seconds": seconds, "ratio": seconds / fit_seconds,
             "error": max_relative_error(result.propensity, truth), "covered": covered(result, truth),
             "curve": result.propensity[:10],
             "width": None if result.lower is None else float(np.mean((result.upper - result.lower)[1:10]))}
    return entry


#: The regression EM's defaults before 157f1c9: 50 trees at learning rate 0.1 per M-step, every replicate a whole EM.
OLD_DEFAULTS = {"relevance_params": {"num_iterations": 50, "learning_rate": 0.1}, "replicate_trees": None}


def regression_em():
    """``estimate_propensity_em``'s seconds, ratio, error and band, new defaults against old ones.

    On the three logs of the document EM's comparison (cc12104). The old defaults with their 20 replicates take
    minutes (359.7 s on the first log at cc12104): here the old estimate alone, whose seconds
    each old replicate costs again. On the first log also the new defaults with the replicates
    rerun from the cold start, for the band's comparison. The reference fit of each log is the
    median of three, measured before and after its rows (the mean of the two is the divisor).
    """
    print(f"load average at start: {load_average(sep=' ')}; {utc_now()}; {machine(python=False)}")
    print("| log | estimate_propensity_em | rows | seconds | x one LightGBM fit | max rel. error 1-10 | truth in band "
          "| mean band width 2-10 |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    cases = [("old defaults, n_bootstrap=0 (estimate only)", {**OLD_DEFAULTS, "n_bootstrap": 0}),
             ("new defaults, n_bootstrap=0 (estimate only)", {"n_bootstrap": 0}),
             ("new defaults (20 replicates from the estimate, 3 trees per M-step)", {}),
             ("new defaults, replicate_trees=None (20 replicates from the cold start)", {"replicate_trees": None})]
    logs = [("mq2008", 1.5, 0.7, 15, 1.0, cases), ("mq2008", 1.0, 1.0, 15, 0.1, cases[:3]),
            ("mq2007-agg", 2.0, 0.7, 10, 1.0, cases[:3])]
    for data, eta, w, sessions, keep, log_cases in logs:
        X, y, qid = load(data)
        rows, clicks, positions, weight = simulate_log(y, qid, eta=eta, w=w, sessions=sessions, keep=keep)
        truth = (1.0 / np.arange(1, MAX_POSITION + 1)) ** eta
        label = f"{data} eta={eta:g} w={w:g} {sessions} sessions" + ("" if keep == 1 else f" keep {keep:g}")
        n = len(rows)
        fit_before = lightgbm_fit_seconds(X[rows], clicks, weight, repeats=3)
        arrays = (X[rows], clicks, positions, qid[rows])
        common = {"sample_weight": weight, "max_position": MAX_POSITION, "random_state": 0}
        entries = [(name, run(name, estimate_propensity_em, arrays, {**common, **kwargs}, truth, 1.0, n))
                   for name, kwargs in log_cases]
        fit_after = lightgbm_fit_seconds(X[rows], clicks, weight, repeats=3)
        fit_seconds = (fit_before + fit_after) / 2
        for name, entry in entries:
            band = "-" if entry["covered"] is None else f"{entry['covered']}/10"
            width = "-" if entry["width"] is None else f"{entry['width']:.4f}"
            print(f"| {label} | {name} | {n:,} | {entry['seconds']:.1f} | {entry['seconds'] / fit_seconds:.2f} | "
                  f"{entry['error']:.3f} | {band} | {width} |", flush=True)
        print(f"<!-- {label}: one LightGBM fit (median of 3) {fit_before:.2f} s before the rows, "
              f"{fit_after:.2f} s after -->", flush=True)
    print(f"load average at end: {load_average(sep=' ')}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="one small log, no 'before' bootstrap")
    parser.add_argument("--skip-before", action="store_true")
    parser.add_argument("--regression-em", action="store_true",
                        help="the regression EM's new defaults against its old ones, on the first log only")
    args = parser.parse_args(argv)
    if args.regression_em:
        return regression_em()
    # (data set, eta, w, sessions, keep, before-bootstrap): ~60k impressions up to ~2M.
    # The 'before' estimator with its default 20 replicates runs on the first log only (minutes); elsewhere the
    # estimate alone (n_bootstrap=0), whose seconds are what each of its replicates costs again. None: not run.
    logs = [("mq2008", 1.5, 0.7, 15, 1.0, 20), ("mq2008", 1.0, 1.0, 15, 0.1, 0),
            ("mq2007-agg", 2.0, 0.7, 10, 1.0, 0), ("mq2007-agg", 1.0, 1.0, 15, 0.1, None),
            ("mq2007-agg", 1.5, 0.7, 200, 1.0, None)]
    if args.quick:
        logs = [("mq2008", 1.5, 0.7, 15, 1.0, 0)]
    print(f"load average at start: {load_average(sep=' ')}; {utc_now()}; {machine(python=False)}")
    print("| log | estimator | rows | seconds | x one LightGBM fit | max rel. error 1-10 | truth in band |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    cache = {}
    for data, eta, w, sessions, keep, before_bootstrap in logs:
        if data not in cache:
            cache[data] = load(data)
        X, y, qid = cache[data]
        rows, clicks, positions, weight = simulate_log(y, qid, eta=eta, w=w, sessions=sessions, keep=keep)
        truth = (1.0 / np.arange(1, MAX_POSITION + 1)) ** eta
        label = f"{data} eta={eta:g} w={w:g} {sessions} sessions" + ("" if keep == 1 else f" keep {keep:g}")
        fit_seconds = lightgbm_fit_seconds(X[rows], clicks, weight)
        n = len(rows)
        log = (clicks, positions, qid[rows], rows)
        common = {"sample_weight": weight, "max_position": MAX_POSITION, "random_state": 0}
        cases = []
        if before_bootstrap is not None and not args.skip_before:
            cases.append((f"before: estimate_propensity_em, defaults, n_bootstrap={before_bootstrap}",
                          estimate_propensity_em, (X[rows], *log[:3]), {**common, "n_bootstrap": before_bootstrap}))
        cases.append(("after: estimate_propensity_document_em, n_bootstrap=200", estimate_propensity_document_em,
                      log, common))
        cases.append(("estimate_propensity_harvesting, n_bootstrap=200", estimate_propensity_harvesting, log, common))
        for name, function, arrays, kwargs in cases:
            entry = run(name, function, arrays, kwargs, truth, fit_seconds, n)
            band = "-" if entry["covered"] is None else f"{entry['covered']}/10"
            print(f"| {label} | {name} | {n:,} | {entry['seconds']:.1f} | {entry['ratio']:.2f} | "
                  f"{entry['error']:.2f} | {band} |", flush=True)
        print(f"<!-- {label}: one LightGBM fit {fit_seconds:.2f} s -->", flush=True)
    print(f"load average at end: {load_average(sep=' ')}")


if __name__ == "__main__":
    main()

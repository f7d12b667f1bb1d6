"""Debiasing from clicks under two position protocols: why the published two-tower ordering appears.

The published reproduction of Zhang et al. (KDD 2023) on MSLR-WEB30K (``yng87/unbiased-ltr``,
first version; w = 1: single tower 0.322 < PAL additive 0.347 < observation dropout 0.353 <
gradient reversal 0.360 NDCG@5) simulates its click log with a position rule that is the
inverse permutation of the logging ranks (``debias_protocols.reference_positions``), so a
document's position hardly depends on its own relevance. This script trains the SAME
models with the SAME plain-torch trainer (``debias_protocols.fit_reference``: the
repository's set-up, pointwise BCE over rows, batches of 32, early stopping on the
validation click NDCG@5) on click logs that differ only in the position rule:

(a) ``true-rank``: a document's position is its rank in the logging ordering
    ``w * y + (1 - w) * Uniform(0, y_max)`` (``sklearn_ltr.datasets.simulate_clicks``);
(b) ``reference``: the repository's rule, ``argsort(-scores) + 1`` assigned in row order
    (rows of a query in random order, as the repository's unstable sort by query leaves them).

Both: examination ``1 / position``, click ``0.1 + 0.9 * (2**y - 1) / (2**y_max - 1)`` if
examined; in every result page all clicked rows and each non-clicked row with
probability 0.1 are kept for training; validation pages are not down-sampled. Methods:
Single Tower, Two Tower (PAL additive), Observation Dropout (0.2 on o), Gradient Reversal
(0.8, adversary on o regressing the clicks), plus, for context, LambdaMART on the clicks
(``LambdaMARTRanker``, result pages as queries) and ``TwoTowerDebiasedRanker`` (additive,
listwise training over result pages, 20 epochs, observation lr 1e-2).

Data: MQ2008, all five folds (Fold k: train S(k..k+2), validate S(k+3), test S(k+4)),
``--mq-sessions`` result pages per training and validation query, labels 0-2
(``y_max = 2``); MSLR-shaped ``make_ranking(preset="mslr")`` (one data set, fixed
train/validation/test queries, one result page per query as in the repository, ``y_max = 4``).
Test: NDCG@5 on the true labels, per test query (queries with no relevant document are
left out: they score the same for every model). A seed drives the click logs, the
down-sampling and the initialisation; per query, values are averaged over seeds, then
reported as mean ± 95% t-interval over test queries, with the SD over seeds of the mean,
and each two-tower variant is compared with the single tower by a paired randomization
test over test queries (``sklearn_ltr.metrics.paired_significance``).

Design and cost, measured on 2 shared cores (load average 0.9-2.3) with 2 workers running
cells side by side, torch with 1 thread per worker; reference fits stopped after 6-16
epochs (early stopping, at most 30):

- ``--study mq2008``: 5 folds x 5 w x 5 seeds = 125 cells; 10 result pages per training
  and validation query give about 14,500 (true-rank) / 12,500 (reference) training rows
  per cell after down-sampling. A full-size cell (fold 1, w = 1 and w = 0 in parallel)
  took 29-31 s (about 23 s for the 8 reference fits, 6 s for TwoTowerDebiasedRanker,
  1 s for LambdaMART): about 31 min for the study. Only if the load tripled, or every
  fit ran all 30 epochs, would it reach 90 min.
- ``--study mslr``: 5 w x 3 seeds = 15 cells on one data set of 6,000 training, 1,000
  validation and 1,000 test queries (about 1.0 M rows, 136 features), one result page
  per query, about 80,000 training rows per cell after down-sampling. A cell with a
  quarter of the training queries (1,500; 20,000 rows; validation and test as above) took
  52-57 s; the training parts scale with the rows, so a full cell takes about 3 min:
  about 25 min for the study (about 60 min if every fit ran all 30 epochs).
- ``--quick``: 1 fold, 1 seed, w in {1, 0}, at most 3 epochs, 2 pages per MQ2008 query,
  300/100/100 MSLR-shaped queries: about 15 s for both studies.

Trainers: the reference trainer in the repository's current version (batches of 32 rows,
observation dropout on o: ``--batch-size 32 --dropout-on output``, the default) or its first
version, which produced the published numbers (``--batch-size 64 --dropout-on hidden``), and
``--library``: the library's own variants (:data:`LIBRARY`: ``RankNetRanker`` on the clicks as
the single tower; ``TwoTowerDebiasedRanker`` additive, multiplicative, with observation dropout
and with its closed-form gradient-reversal adversary) on the same click logs (same seeds, so
paired with the reference trainer's cells). Each (data set, trainer) is one study of the store.

Run (from the repository root)::

    PYTHONPATH=. python studies/bench_debias_protocols.py --study mq2008
    PYTHONPATH=. python studies/bench_debias_protocols.py --study both --seeds 3 \\
        --batch-size 64 --dropout-on hidden --no-ours
    PYTHONPATH=. python studies/bench_debias_protocols.py --study both --seeds 3 --library
    PYTHONPATH=. python studies/bench_debias_protocols.py --quick --out /tmp/debias_protocols_quick

Each run stores its study in ``debias_protocols.json`` under ``"<data set> <trainer>"``
(per-query values, curves, epochs, sizes, times; other studies already in the file are kept)
and saves every finished cell at once: a cut-off run resumes where it stopped, and a run with
more seeds, folds or values of w adds only the missing cells (other settings are refused;
``--fresh`` starts the study over). It rewrites ``debias_protocols.md`` (the summary table of
every trainer first, then each study) and the figures ``debias_protocols_curves.png`` (per
study) and ``debias_protocols_final.png`` (the learned curves of every trainer at w = 1 against
the truth 1/p) from every study in the file.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
import torch
from joblib import Parallel, delayed
from scipy import stats
from sklearn.preprocessing import StandardScaler

sys.path.insert(0, str(Path(__file__).resolve().parent))
from debias_protocols import (
    CURVE_POSITIONS,
    METHODS,
    PROTOCOLS,
    click_log,
    downsample_negatives,
    fit_reference,
    load_mq2008_fold,
    shuffle_within_queries,
)

from sklearn_ltr import LambdaMARTRanker, RankNetRanker, TwoTowerDebiasedRanker
from sklearn_ltr._atomic import write_atomically
from sklearn_ltr.datasets import make_ranking
from sklearn_ltr.metrics import ndcg_per_query, paired_significance

WEIGHTS = (1.0, 0.8, 0.6, 0.2, 0.0)
LAMBDAMART = "LambdaMART (clicks)"
OURS = "TwoTowerDebiasedRanker (additive)"
VARIANTS = METHODS[1:]
PUBLISHED_W1 = {"Single Tower": 0.322, "Two Tower": 0.347, "Observation Dropout": 0.353, "Gradient Reversal": 0.360}
STUDY_NAMES = {"mq2008": "MQ2008 (5 folds)", "mslr": "MSLR-shaped (make_ranking)"}
#: What trained the models of a study: the reference trainer in the repository's current or first version
#: (``--batch-size 32 --dropout-on output`` / ``--batch-size 64 --dropout-on hidden``), or the library.
TRAINER_NAMES = {"current": "reference trainer, current version (batches of 32, dropout on o)",
                 "first": "reference trainer, first version (batches of 64, dropout on the hidden units)",
                 "library": "sklearn_ltr (RankNetRanker, TwoTowerDebiasedRanker), 20 epochs, no early stopping",
                 "recipe": "sklearn_ltr, the click-log recipe (early stopping on the validation log; IPS; DLA)"}
DLA = "DLA"
IPS_ESTIMATED = "IPS (estimated propensities)"
IPS_TRUE = "IPS (true propensities 1/p)"
ORACLE = "Oracle (true labels)"
#: The click-log recipe's variants (``--recipe``): the library's estimators with early stopping on the
#: validation click log (``ValidationNDCG`` of a separate set in ``callbacks``), which
#: ``bench_click_training.py`` found to close the gap to the reference trainer; IPS-weighted training with the
#: propensities estimated by regression EM (and, for headroom, the true 1/p); DLA; and the oracle, the single
#: tower trained on the true labels of the training queries. Each: the estimator, its parameters, and the
#: validation rule (``"clicks"``: NDCG@5 of the validation clicks, as the reference trainer; ``"ips"``: the IPS
#: estimate of DCG@5 with the estimated propensities; ``"labels"``: the true labels of the validation queries).
RECIPE = {
    "Single Tower": ("ranknet", {"loss": "sigmoid_ce"}, "clicks"),
    "Two Tower": ("two_tower", {"combination": "additive"}, "clicks"),
    "PAL multiplicative": ("two_tower", {"combination": "multiplicative"}, "clicks"),
    "Observation Dropout": ("two_tower", {"combination": "additive", "observation_dropout": 0.2}, "clicks"),
    "Gradient Reversal": ("two_tower", {"combination": "additive", "gradient_reversal": 0.8,
                                        "reversal_target": "clicks"}, "clicks"),
    DLA: ("two_tower", {"combination": "dla"}, "ips"),
    IPS_ESTIMATED: ("ranknet", {"loss": "sigmoid_ce"}, "ips"),
    IPS_TRUE: ("ranknet", {"loss": "sigmoid_ce"}, "ips-true"),
    ORACLE: ("ranknet", {"loss": "sigmoid_ce"}, "labels"),
}
#: The click-trained models among which the validation estimates select (the oracle trained on labels).
SELECTABLE = tuple(m for m in RECIPE if m != ORACLE)
#: The library's variants: the estimator and its parameters beside the shared ones of ``cfg["library"]``.
LIBRARY = {
    "Single Tower": ("ranknet", {"loss": "sigmoid_ce"}),
    "Two Tower": ("two_tower", {"combination": "additive"}),
    "PAL multiplicative": ("two_tower", {"combination": "multiplicative"}),
    "Observation Dropout": ("two_tower", {"combination": "additive", "observation_dropout": 0.2}),
    "Gradient Reversal": ("two_tower", {"combination": "additive", "gradient_reversal": 0.8,
                                        "reversal_target": "clicks"}),
}
NOTES = [
    "Two Tower is the published \"PAL (additive)\": logit r + o, pointwise BCE over rows.",
    "The published numbers come from the repository's first version (commit b9efb27, scripts `eval_scripts/`): "
    "batches of 64 rows (the `NNModel` default) and observation dropout on the 32 hidden units before the last "
    "layer. Its current version (Kedro, batches of 32, dropout on o) reports other numbers, where the order does "
    "not hold (w = 1: single 0.3075, two tower 0.3401, dropout 0.2976, reversal 0.3399). Both versions are run "
    "here: `--batch-size 32 --dropout-on output` (current) and `--batch-size 64 --dropout-on hidden` (first).",
    "The library's rows (`--library`) train on the same click logs as the reference trainer's (same seeds, "
    "same rows): `RankNetRanker(loss=\"sigmoid_ce\")` as the Single Tower and `TwoTowerDebiasedRanker` "
    "(one logit per position, closed-form linear adversary) for the others, listwise batches of 32 result "
    "pages, 20 epochs, no early stopping; observation dropout 0.2 on o and gradient reversal 0.8 against the "
    "clicks, as the reference trainer's. PAL multiplicative (sigma(r) sigma(o)) has no published row; its curve "
    "is sigma(o(p)) / sigma(o(1)).",
    "Not reproduced: the repository scores test queries without a relevant document 0 (left out here); fixes "
    "the noise range and click normaliser to MSLR's y_max = 4 (here the data's y_max); draws its down-sampling "
    "from a generator seeded like the one that drew the logging noise, so in some runs a non-clicked row is "
    "kept exactly when its logging noise is below 0.4 (here independent draws); runs one seed on one fold.",
    "Gradient Reversal as specified (an unbounded Linear(1, 1) adversary regressing the clicks from o, with "
    "the reversed gradient on o) pushes o away from the clicks without bound: its learned curve is not a "
    "propensity (values far from 1/p below).",
]
PROTOCOL_NAMES = {"true-rank": "(a) true ranks", "reference": "(b) reference positions (inverse permutation)"}


def study_key(dataset, trainer):
    """Key of a study in ``debias_protocols.json``: ``"mq2008 first"``, ``"mslr library"``, ..."""
    return f"{dataset} {trainer}"


def split_key(key):
    """``(dataset, trainer)`` of a :func:`study_key`."""
    dataset, trainer = key.split(" ", 1)
    return dataset, trainer


def trainer_of(args):
    """``"library"``, ``"current"``, ``"first"``, or ``"batch<B>-<on>"`` for other reference settings."""
    if args.recipe:
        return "recipe"
    if args.library:
        return "library"
    return {(32, "output"): "current", (64, "hidden"): "first"}.get((args.batch_size, args.dropout_on),
                                                                    f"batch{args.batch_size}-{args.dropout_on}")


# ---------------------------------------------------------------------------- data


def load_study(args, study):
    """``{fold: splits}`` and ``y_max`` of a study; ``splits`` as :func:`load_mq2008_fold` returns."""
    if study == "mq2008":
        return {fold: load_mq2008_fold(args.data_dir, fold) for fold in args.folds}, 2
    n_train, n_val, n_test = args.mslr_queries
    X, y, qid = make_ranking(n_queries=n_train + n_val + n_test, preset="mslr", random_state=args.data_seed)
    y = y.astype(np.int64)
    cuts = np.unique(qid)[[n_train, n_train + n_val]]
    parts = {"train": qid < cuts[0], "vali": (qid >= cuts[0]) & (qid < cuts[1]), "test": qid >= cuts[1]}
    return {1: {name: (X[mask], y[mask], qid[mask]) for name, mask in parts.items()}}, 4


def _log(labels, qid, *, w, protocol, sessions, rng, y_max):
    """:func:`click_log` on the rows put in random order within each query; rows index the inputs."""
    order = shuffle_within_queries(qid, rng)
    rows, positions, clicks, session = click_log(labels[order], qid[order], w=w, protocol=protocol,
                                                 sessions=sessions, rng=rng, y_max=y_max)
    return order[rows], positions, clicks, session


# --------------------------------------------------------------------------- a cell


def _click_data(study, fold, w, seed, splits, y_max, cfg):
    """Per protocol, the down-sampled training log and the validation log of one cell.

    Every trainer draws the same logs for the same (study, fold, w, seed): the rows of the
    library's study are the rows of the reference trainer's, so their results are paired.
    """
    X, y, qid = splits["train"]
    X_val, y_val, qid_val = splits["vali"]
    streams = np.random.SeedSequence([seed, fold, round(100 * w), 0 if study == "mq2008" else 1]).spawn(2)
    for protocol, stream in zip(PROTOCOLS, streams, strict=True):
        rng = np.random.default_rng(stream)
        rows, positions, clicks, session = _log(y, qid, w=w, protocol=protocol, sessions=cfg["sessions"], rng=rng,
                                                y_max=y_max)
        kept = downsample_negatives(clicks, cfg["keep"], rng)
        rows, positions, clicks, session = rows[kept], positions[kept], clicks[kept], session[kept]
        v_rows, v_positions, v_clicks, v_session = _log(y_val, qid_val, w=w, protocol=protocol,
                                                        sessions=cfg["sessions"], rng=rng, y_max=y_max)
        yield protocol, (X[rows], clicks, positions, session), (X_val[v_rows], v_clicks, v_session, v_positions)


def _reference_results(train, val, X_test, seed, cfg):
    X, clicks, positions, session = train
    results = {}
    for method in METHODS:
        fit = fit_reference(method, X, clicks, positions, session, *val[:3], seed, **cfg["trainer"])
        results[method] = {"scores": fit.predict(X_test), "epochs": fit.n_epochs, "best_epoch": fit.best_epoch,
                           "curve": None if fit.curve is None else fit.curve.tolist()}
    scaler = StandardScaler().fit(X)
    X_std, X_test_std = scaler.transform(X).astype(np.float32), scaler.transform(X_test).astype(np.float32)
    lambdamart = LambdaMARTRanker(random_state=seed, n_jobs=1, **cfg["lambdamart"])
    results[LAMBDAMART] = {"scores": lambdamart.fit(X_std, clicks, session).predict(X_test_std)}
    if cfg["ours"]:
        ours = TwoTowerDebiasedRanker(combination="additive", random_state=seed, device="cpu", **cfg["ours"])
        ours.fit(X_std, clicks, session, positions=positions)
        results[OURS] = {"scores": ours.predict(X_test_std), "epochs": cfg["ours"]["max_epochs"],
                         "curve": ours.observation_curve_[:CURVE_POSITIONS].tolist()}
    return results


def _library_results(train, X_test, seed, cfg):
    """The library's variants (:data:`LIBRARY`) on standardised features, result pages as queries.

    ``curve`` is the learned curve relative to position 1 (``observation_curve_ / observation_curve_[0]``:
    for the additive model that is the curve itself, for the multiplicative one ``σ(o_p) / σ(o_1)``).
    """
    X, clicks, positions, session = train
    scaler = StandardScaler().fit(X)
    X_std, X_test_std = scaler.transform(X).astype(np.float32), scaler.transform(X_test).astype(np.float32)
    shared = cfg["library"]
    results = {}
    for method, (kind, params) in LIBRARY.items():
        if kind == "ranknet":
            net = {k: v for k, v in shared.items() if k not in ("max_position", "observation_lr")}
            model = RankNetRanker(random_state=seed, device="cpu", **net, **params).fit(X_std, clicks, session)
            results[method] = {"scores": model.predict(X_test_std), "epochs": model.n_iter_, "curve": None}
            continue
        model = TwoTowerDebiasedRanker(random_state=seed, device="cpu", **shared, **params)
        model.fit(X_std, clicks, session, positions=positions)
        curve = model.observation_curve_[:CURVE_POSITIONS]
        results[method] = {"scores": model.predict(X_test_std), "epochs": model.n_iter_,
                           "curve": (curve / curve[0]).tolist()}
    return results


def _estimate_propensities(train, seed, keep):
    """Regression-EM propensities of the training log (non-clicks weighted 1 / keep: the log was down-sampled)."""
    from sklearn_ltr.clicks import estimate_propensity_em

    X, clicks, positions, session = train
    weight = np.where(clicks == 1, 1.0, 1.0 / keep)
    return estimate_propensity_em(X, clicks, positions, session, max_position=20, sample_weight=weight,
                                  n_bootstrap=0, random_state=seed, n_jobs=1)


def _recipe_results(train, val, splits, X_test, seed, cfg, y_max):
    """The click-log recipe's variants (:data:`RECIPE`), and each one's validation estimates for model selection.

    Besides the test scores, each variant records its scores' NDCG@5 of the validation clicks
    (``val_clicks``) and their IPS-DCG@5 with the estimated (``val_ips``) and the true (``val_ips_true``)
    propensities, so that the report can say how well each estimate ranks the models. (IPS-DCG, not the
    self-normalised IPS-NDCG: on result pages with one click, the weight cancels in the ratio.)
    """
    from sklearn_ltr.datasets import observation_propensity
    from sklearn_ltr.metrics import ips_dcg_score, ndcg_score
    from sklearn_ltr.training import ValidationNDCG

    X, clicks, positions, session = train
    X_val, v_clicks, v_session, v_positions = val
    scaler = StandardScaler().fit(X)
    X_std, X_test_std = scaler.transform(X).astype(np.float32), scaler.transform(X_test).astype(np.float32)
    X_val_std = scaler.transform(X_val).astype(np.float32)
    estimate = _estimate_propensities(train, seed, cfg["keep"])
    propensity = {"ips": estimate.propensity_of(positions), "ips-true": observation_propensity(positions)}
    v_propensity = {"ips": estimate.propensity_of(v_positions), "ips-true": observation_propensity(v_positions)}
    shared = {k: v for k, v in cfg["recipe"].items() if k not in ("max_position", "observation_lr")}
    two_tower = cfg["recipe"]
    results = {}
    for method, (kind, params, rule) in RECIPE.items():
        if rule == "labels":
            X_lab, y_lab, qid_lab = splits["train"]
            X_lv, y_lv, qid_lv = splits["vali"]
            labels_scaler = StandardScaler().fit(X_lab)
            valid = ValidationNDCG(k=5, X=labels_scaler.transform(X_lv).astype(np.float32), y=y_lv, groups=qid_lv)
            model = RankNetRanker(random_state=seed, device="cpu", early_stopping=True, callbacks=[valid],
                                  loss_params={"max_label": y_max}, **shared, **params)
            model.fit(labels_scaler.transform(X_lab).astype(np.float32), y_lab, qid_lab)
            scores, v_scores = (model.predict(labels_scaler.transform(Z).astype(np.float32)) for Z in (X_test, X_val))
        else:
            p_val = None if rule == "clicks" else v_propensity[rule]
            valid = ValidationNDCG(k=5, X=X_val_std, y=v_clicks, groups=v_session, propensity=p_val)
            fit_params = {} if rule == "clicks" or kind == "two_tower" else {"propensity": propensity[rule]}
            if kind == "ranknet":
                model = RankNetRanker(random_state=seed, device="cpu", early_stopping=True, callbacks=[valid],
                                      **shared, **params)
                model.fit(X_std, clicks, session, **fit_params)
            else:
                model = TwoTowerDebiasedRanker(random_state=seed, device="cpu", early_stopping=True,
                                               callbacks=[valid], **two_tower, **params)
                model.fit(X_std, clicks, session, positions=positions)
            scores, v_scores = model.predict(X_test_std), model.predict(X_val_std)
        curve = None
        if kind == "two_tower":
            curve = model.observation_curve_[:CURVE_POSITIONS]
            curve = (curve / curve[0]).tolist()
        results[method] = {
            "scores": scores, "epochs": model.n_iter_, "best_epoch": model.best_iteration_, "curve": curve,
            "val_clicks": float(ndcg_score(v_clicks, v_scores, v_session, k=5)),
            **{f"val_{name.replace('-', '_')}": float(ips_dcg_score(v_clicks, v_scores, v_session, p, k=5))
               for name, p in v_propensity.items()},
        }
    results["_propensity"] = {"estimated": estimate.propensity_of(np.arange(1, CURVE_POSITIONS + 1)).tolist()}
    return results


def run_cell(study, fold, w, seed, splits, y_max, cfg):
    """Every method of the study's trainer under both protocols for one (study, fold, w, seed).

    Returns
    -------
    cell : dict
        ``{"study", "fold", "w", "seed", "seconds", "sizes", "results"}`` with
        ``results[protocol][method] = {"ndcg": per-query list, "curve", "epochs", "best_epoch"}``
        (per-query values in the order of :func:`_test_queries`).
    """
    torch.set_num_threads(1)
    start = time.perf_counter()
    X_test, y_test, qid_test = splits["test"]
    keep_queries = _test_queries(y_test, qid_test)[1]
    out = {"study": study, "fold": fold, "w": w, "seed": seed, "sizes": {}, "results": {}}
    for protocol, train, val in _click_data(study, fold, w, seed, splits, y_max, cfg):
        out["sizes"][protocol] = {"train_rows": len(train[1]), "train_clicks": int(train[1].sum()),
                                  "val_rows": len(val[1]), "val_clicks": int(val[1].sum())}
        if cfg.get("recipe"):
            results = _recipe_results(train, val, splits, X_test, seed, cfg, y_max)
        elif cfg.get("library"):
            results = _library_results(train, X_test, seed, cfg)
        else:
            results = _reference_results(train, val, X_test, seed, cfg)
        extra = {key: results.pop(key) for key in [k for k in results if k.startswith("_")]}
        for method, result in results.items():
            scores = np.asarray(result.pop("scores"), dtype=np.float64)
            assert scores.shape == y_test.shape and np.isfinite(scores).all(), (study, protocol, method)
            values = ndcg_per_query(y_test, scores, qid_test, k=5, empty_value=None)[1][keep_queries]
            assert np.isfinite(values).all()
            result["ndcg"] = np.round(values, 6).tolist()
        out["results"][protocol] = results
        if extra:
            out.setdefault("extra", {})[protocol] = extra
    out["seconds"] = time.perf_counter() - start
    return out


def _test_queries(y_test, qid_test):
    """Sorted test query ids with at least one relevant document, and their mask over all sorted ids."""
    ids, values = ndcg_per_query(y_test, np.zeros(len(y_test)), qid_test, k=5, empty_value=None)
    keep = ~np.isnan(values)
    return ids[keep], keep


# ------------------------------------------------------------------------ summary


def _per_query(study_result, protocol, w, method, *, seeds=None, folds=None):
    """Seed-averaged per-query values over the folds (n_queries,), and per-seed means (n_seeds,).

    ``seeds`` and ``folds`` (default: every one the study ran) restrict the cells, so that two studies
    with different seeds pair query by query on the ones they share.
    """
    cells = [c for c in study_result["cells"] if c["w"] == w and method in c["results"][protocol]
             and (seeds is None or c["seed"] in seeds) and (folds is None or c["fold"] in folds)]
    folds, seeds = sorted({c["fold"] for c in cells}), sorted({c["seed"] for c in cells})
    grid = {(c["fold"], c["seed"]): np.asarray(c["results"][protocol][method]["ndcg"]) for c in cells}
    assert len(grid) == len(folds) * len(seeds), f"missing cells for {protocol} w={w} {method}"
    per_query = np.concatenate([np.mean([grid[f, s] for s in seeds], axis=0) for f in folds])
    per_seed = np.array([np.concatenate([grid[f, s] for f in folds]).mean() for s in seeds])
    return per_query, per_seed


def _ci(values):
    half = stats.t.ppf(0.975, len(values) - 1) * values.std(ddof=1) / np.sqrt(len(values))
    return float(values.mean()), float(half)


def _methods(study_result):
    cell = study_result["cells"][0]["results"][PROTOCOLS[0]]
    return [m for m in (*METHODS, "PAL multiplicative", DLA, IPS_ESTIMATED, IPS_TRUE, ORACLE, LAMBDAMART, OURS)
            if m in cell]


def _variants(study_result):
    """The two-tower variants of a study, each tested against its Single Tower."""
    return [m for m in _methods(study_result) if m in (*VARIANTS, "PAL multiplicative", DLA)]


def _curve(study_result, protocol, w, method):
    """Median over folds and seeds of the learned relative observation curve."""
    curves = [c["results"][protocol][method]["curve"] for c in study_result["cells"] if c["w"] == w]
    return np.median(np.asarray(curves, dtype=np.float64), axis=0)


def _tested(study_result):
    """The methods compared with the study's Single Tower: the two-tower variants, IPS and the oracle."""
    return [m for m in _methods(study_result) if m in (*_variants(study_result), IPS_ESTIMATED, IPS_TRUE, ORACLE)]


def summarise(study_result):
    """Per protocol and w: mean, CI, seed SD per method; paired tests of the variants vs the single tower."""
    summary = {}
    for protocol in PROTOCOLS:
        for w in study_result["weights"]:
            entry = {"methods": {}, "tests": {}}
            values = {}
            for method in _methods(study_result):
                values[method], per_seed = _per_query(study_result, protocol, w, method)
                mean, half = _ci(values[method])
                entry["methods"][method] = {"mean": mean, "ci95": half, "n_queries": len(values[method]),
                                            "seed_sd": float(per_seed.std(ddof=1)) if len(per_seed) > 1 else None}
            variants = _tested(study_result)
            table = paired_significance(values["Single Tower"], {m: values[m] for m in variants},
                                        tests=("t-test", "randomization"), random_state=0)
            for method in variants:
                r = table[method]
                entry["tests"][method] = {"difference": r.mean_difference, "t_pvalue": r.t_pvalue,
                                          "randomization_pvalue": r.randomization_pvalue}
            means = [entry["methods"][m]["mean"] for m in METHODS]
            entry["published_order"] = bool(np.all(np.diff(means) > 0))
            entry["all_above_single"] = bool(all(mean > means[0] for mean in means[1:]))
            summary[protocol, w] = entry
    return summary


def _title(key):
    dataset, trainer = split_key(key)
    return f"{STUDY_NAMES[dataset]}, {TRAINER_NAMES.get(trainer, trainer)}"


def _minutes(result):
    return sum(r["seconds"] for r in result["runs"]) / 60


def _trainer_text(cfg):
    if cfg.get("recipe"):
        return (json.dumps(cfg["recipe"]) + "; variants: "
                + "; ".join(f"{m} {json.dumps(params)} (validation: {rule})"
                            for m, (_, params, rule) in RECIPE.items()))
    if cfg.get("library"):
        return (json.dumps(cfg["library"]) + "; variants: "
                + "; ".join(f"{m} {json.dumps(params)}" for m, (_, params) in LIBRARY.items()))
    return json.dumps(cfg["trainer"])


def _fmt_p(p):
    return f"{p:.3f}" if p >= 0.001 else f"{p:.0e}"


def report(results, machine):
    """The markdown report of every study in ``results``."""
    summaries = {study: summarise(result) for study, result in results.items()}
    lines = [
        "# Debiasing from clicks under two position protocols", "",
        "Do the published gains of the two-tower models (Zhang et al., KDD 2023, as reproduced by "
        "`yng87/unbiased-ltr`: at w = 1 " + ", ".join(f"{k} {v:.3f}" for k, v in PUBLISHED_W1.items())
        + " NDCG@5 on MSLR-WEB30K) come from the click simulation? The same reference trainer "
        "(`studies/debias_protocols.py`, the repository's set-up) is trained on click logs that differ only in "
        "the display-position rule: **(a)** a document's rank in the logging ordering "
        "`w * y + (1 - w) * Uniform(0, y_max)` (`simulate_clicks`, the design's rule); **(b)** the repository's "
        "`argsort(-scores) + 1` in row order, the inverse permutation of the ranks, under which a document's "
        "position (and so its examination probability 1/position) hardly depends on its relevance.", "",
        "Test NDCG@5 on the true labels over the test queries with a relevant document: per query averaged "
        "over seeds, mean ± 95% t-interval over queries; `sd` is the SD over seeds of the mean. p: paired "
        "randomization test (10,000 sign flips) of the variant against the Single Tower over test queries. "
        "\"Published order\": Single < Two Tower < Observation Dropout < Gradient Reversal on the means.", "",
        machine, "", "Notes:", "", *(f"- {note}" for note in NOTES), "",
        *recipe_sections(results),
        *final_table(results, summaries),
    ]
    for study, result in results.items():
        summary = summaries[study]
        weights = result["weights"]
        cfg = result["config"]
        sizes = {p: {k: np.mean([c["sizes"][p][k] for c in result["cells"]]) for k in ("train_rows", "train_clicks")}
                 for p in PROTOCOLS}
        lines += [
            f"## {_title(study)}" + (" (--quick smoke run: not a result)" if result["quick"] else ""), "",
            f"{len(result['folds'])} fold(s) x {len(weights)} values of w x {len(result['seeds'])} seeds "
            f"{result['seeds']} = {len(result['cells'])} cells, {_minutes(result):.1f} min on {cfg['n_jobs']} "
            f"workers in {len(result['runs'])} run(s) (load average at start -> end of each run: "
            + "; ".join(f"{r['load_start']} -> {r['load_end']}" for r in result["runs"])
            + f"; {np.mean([c['seconds'] for c in result['cells']]):.0f} s per cell). "
            f"{cfg['sessions']} result page(s) per training and validation query; training rows per cell after "
            "down-sampling (mean): " + "; ".join(
                f"{p} {s['train_rows']:,.0f} rows, {s['train_clicks']:,.0f} clicks" for p, s in sizes.items())
            + f". Trainer: {_trainer_text(cfg)}.", "",
        ]
        head = ["| method | " + " | ".join(f"w = {w:g}" for w in weights) + " |", "| --- |" + " ---: |" * len(weights)]
        for protocol in PROTOCOLS:
            lines += [f"### {PROTOCOL_NAMES[protocol]}", "", *head]
            for method in _methods(result):
                cells = []
                for w in weights:
                    m = summary[protocol, w]["methods"][method]
                    sd = "" if m["seed_sd"] is None else f" (sd {m['seed_sd']:.3f})"
                    cells.append(f"{m['mean']:.3f} ± {m['ci95']:.3f}{sd}")
                lines.append(f"| {method} | " + " | ".join(cells) + " |")
            lines += ["", "Difference from the Single Tower (p):", "", *head]
            for method in _tested(result):
                cells = [f"{t['difference']:+.3f} ({_fmt_p(t['randomization_pvalue'])})"
                         for t in (summary[protocol, w]["tests"][method] for w in weights)]
                lines.append(f"| {method} | " + " | ".join(cells) + " |")
            order = [f"w = {w:g}: {'yes' if summary[protocol, w]['published_order'] else 'no'}" for w in weights]
            above = sum(summary[protocol, w]["all_above_single"] for w in weights)
            lines += ["", f"Published order: {'; '.join(order)}. All three variants above the Single Tower at "
                      f"{above}/{len(weights)} values of w.", ""]
        lines += ["### Published order, (b) vs (a)", ""]
        for protocol in PROTOCOLS:
            n = sum(summary[protocol, w]["published_order"] for w in weights)
            lines.append(f"- {PROTOCOL_NAMES[protocol]}: the published order at {n}/{len(weights)} values of w.")
        lines += ["", "### Learned observation curve", "",
                  "`exp(o(p) - o(1))` at p = 2 / 5 / 10, the click-odds ratio to position 1 (the relative "
                  "examination probability when clicks are rare; truth 1/p: 0.50 / 0.20 / 0.10), observation tower "
                  "in eval mode (no dropout), median over folds and seeds.", ""]
        curve_methods = [m for m in _methods(result) if m in (*_variants(result), OURS)]
        for protocol in PROTOCOLS:
            lines += [f"{PROTOCOL_NAMES[protocol]}:", "", *head]
            for method in curve_methods:
                cells = [" / ".join(f"{v:.2g}" for v in _curve(result, protocol, w, method)[[1, 4, 9]])
                         for w in weights]
                lines.append(f"| {method} | " + " | ".join(cells) + " |")
            lines.append("")
    return "\n".join(lines)


def plot_curves(results, path):
    """Median learned curves, one panel per study and protocol, at the largest and smallest w."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    positions = np.arange(1, CURVE_POSITIONS + 1)
    fig, axes = plt.subplots(len(results), 2, figsize=(12, 4.2 * len(results)), squeeze=False)
    for row, (study, result) in zip(axes, results.items(), strict=True):
        weights = result["weights"]
        methods = [m for m in _methods(result) if m in (*_variants(result), OURS)]
        for ax, protocol in zip(row, PROTOCOLS, strict=True):
            ax.plot(positions, 1 / positions, "k--", lw=2, label="truth 1/position")
            for j, method in enumerate(methods):
                for w, style in zip((max(weights), min(weights)), ("-", ":"), strict=True):
                    ax.plot(positions, _curve(result, protocol, w, method), style, color=f"C{j}", marker=".",
                            label=f"{method}, w={w:g}")
            ax.set(yscale="log", ylim=(1e-3, 10), xticks=positions[::2], xlabel="display position",
                   ylabel="exp(o(p) - o(1))", title=f"{_title(study)}: {PROTOCOL_NAMES[protocol]}")
            ax.title.set_fontsize(9)
            ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ------------------------------------------------------------- the final table


FINAL_VARIANTS = ("Single Tower", "Two Tower", "PAL multiplicative", "Observation Dropout", "Gradient Reversal",
                  DLA, IPS_ESTIMATED, IPS_TRUE, ORACLE)
TRAINER_ORDER = ("current", "first", "library", "recipe")


def _studies_of(results, dataset):
    """``{trainer: study}`` of one data set, in :data:`TRAINER_ORDER`."""
    found = {split_key(key)[1]: result for key, result in results.items() if split_key(key)[0] == dataset}
    return {t: found[t] for t in (*TRAINER_ORDER, *sorted(set(found) - set(TRAINER_ORDER))) if t in found}


def _order_text(entry, methods):
    means = {m: entry["methods"][m]["mean"] for m in methods}
    return " < ".join(sorted(means, key=means.get))


def recipe_sections(results, w_final=1.0):
    """The click-log recipe against the reference trainer, model selection without labels, estimated propensities."""
    from scipy.stats import kendalltau

    lines = []
    rows, selection, propensity = [], [], []
    for dataset in ("mslr", "mq2008"):
        studies = _studies_of(results, dataset)
        recipe = studies.get("recipe")
        if recipe is None or w_final not in recipe["weights"]:
            continue
        seeds, folds = sorted(recipe["seeds"]), sorted(recipe["folds"])
        for protocol in PROTOCOLS:
            name = f"{STUDY_NAMES[dataset]}, {PROTOCOL_NAMES[protocol]}"
            values = {}
            for trainer in ("current", "first", "library", "recipe"):
                study = studies.get(trainer)
                if study is None or not (set(seeds) <= set(study["seeds"]) and set(folds) <= set(study["folds"])):
                    continue
                methods = [m for m in _methods(study) if m not in (ORACLE, LAMBDAMART, OURS)]
                values[trainer] = {m: _per_query(study, protocol, w_final, m, seeds=seeds, folds=folds)[0]
                                   for m in methods}
            cells = [f"| {name} |"]
            for trainer in ("current", "first", "library", "recipe"):
                by_method = values.get(trainer)
                if by_method is None:
                    cells.append(" |")
                    continue
                best = max(by_method, key=lambda m, by_method=by_method: by_method[m].mean())
                cells.append(f" {by_method['Single Tower'].mean():.3f} / {by_method[best].mean():.3f} ({best}) |")
            if "current" in values:
                ref_single, rec_single = values["current"]["Single Tower"], values["recipe"]["Single Tower"]
                ref_best = max(values["current"].values(), key=np.mean)
                rec_best = max(values["recipe"].values(), key=np.mean)
                for reference, ours in ((ref_single, rec_single), (ref_best, rec_best)):
                    result = paired_significance(reference, {"recipe": ours}, tests=("randomization",),
                                                 random_state=0)["recipe"]
                    below = result.mean_difference < 0 and result.randomization_pvalue < 0.05
                    cells.append(f" {result.mean_difference:+.3f} (p {_fmt_p(result.randomization_pvalue)}), "
                                 f"{'**significantly below**' if below else 'not below'} |")
            else:  # no reference study to pair with (e.g. a --quick run elsewhere)
                cells += [" |", " |"]
            rows.append("".join(cells))
            oracle = _per_query(recipe, protocol, w_final, ORACLE, seeds=seeds, folds=folds)[0]
            rows[-1] += f" {oracle.mean():.3f} |"
            # Model selection on the validation log.
            taus = {key: [] for key in ("val_ips", "val_ips_true", "val_clicks")}
            picked = {key: [] for key in taus}
            for cell in recipe["cells"]:
                if cell["w"] != w_final:
                    continue
                res = cell["results"][protocol]
                truth = np.array([np.mean(res[m]["ndcg"]) for m in SELECTABLE])
                for key in taus:
                    estimate = np.array([res[m][key] for m in SELECTABLE])
                    taus[key].append(kendalltau(estimate, truth).statistic)
                    picked[key].append((truth[np.argmax(estimate)], truth.max(), SELECTABLE[int(np.argmax(estimate))],
                                        SELECTABLE[int(np.argmax(truth))]))
            parts = []
            for key, label in (("val_ips", "IPS-DCG@5, estimated propensities"),
                               ("val_ips_true", "IPS-DCG@5, true propensities"),
                               ("val_clicks", "NDCG@5 of the clicks")):
                chosen = np.array([p[0] for p in picked[key]])
                best = np.array([p[1] for p in picked[key]])
                hits = sum(p[2] == p[3] for p in picked[key])
                parts.append(f"| {name} | {label} | {np.mean(taus[key]):+.2f} | {chosen.mean():.3f} | "
                             f"{best.mean():.3f} | {hits}/{len(chosen)} |")
            selection += parts
            curves = np.array([c["extra"][protocol]["_propensity"]["estimated"] for c in recipe["cells"]
                               if c["w"] == w_final])
            truth = 1 / np.arange(1, CURVE_POSITIONS + 1)
            errors = np.abs(curves[:, :10] / truth[:10] - 1).max(axis=1)
            median = np.median(curves, axis=0)
            propensity.append(f"| {name} | " + " / ".join(f"{median[p - 1]:.3f}" for p in (2, 3, 5, 10))
                              + f" | {np.median(errors):.1%} | {errors.max():.1%} |")
    if not rows:
        return lines
    header = "| data set, positions | " + " | ".join(
        f"{TRAINER_NAMES[t].split(' (')[0].split(',')[0]} ({t}): single / best" for t in
        ("current", "first", "library", "recipe")) + " | recipe single - reference single | recipe best - " \
        "reference best | oracle (true labels) |"
    lines += [
        "## The click-log recipe against the reference trainer", "",
        f"NDCG@5 at w = {w_final:g} on the test queries, per query averaged over the seeds the recipe's study ran "
        "(so that every trainer's values pair query by query), Single Tower and the best model of each trainer "
        "(its name in brackets; the oracle excluded). The two comparisons the recipe must pass: its Single Tower "
        "against the reference trainer's (current version), its best model against the reference trainer's best, "
        "each with the paired randomization p-value over test queries (\"not below\": the difference is >= 0 or "
        "p >= 0.05). The oracle is the recipe's Single Tower trained on the true labels of the same training "
        "queries: the headroom.", "",
        header, "| --- |" + " --- |" * 7,
        *rows, "",
        "## Selecting a model without labels", "",
        "Across the recipe's click-trained models (" + ", ".join(SELECTABLE) + "), per cell (fold and seed): "
        "Kendall's tau between each model's validation estimate on the validation click log and its true test "
        "NDCG@5 (mean over cells), the true test NDCG@5 of the model the estimate selects and of the best model "
        "(means over cells), and how often it selects the best.", "",
        "| data set, positions | validation estimate | Kendall tau | selected model's NDCG@5 | best model's NDCG@5 "
        "| best selected |", "| --- | --- | ---: | ---: | ---: | ---: |", *selection, "",
        "## Estimated propensities", "",
        "Regression EM (`sklearn_ltr.clicks.estimate_propensity_em`, max_position 20, the down-sampled non-clicks "
        "weighted 1 / keep) on each cell's training log: the median estimate over cells at positions 2 / 3 / 5 / 10 "
        "(truth 0.500 / 0.333 / 0.200 / 0.100), and the maximum relative error over positions 1-10, median and "
        "largest over cells.", "",
        "| data set, positions | estimate at 2 / 3 / 5 / 10 | max relative error, 1-10 (median) | (largest) |",
        "| --- | --- | ---: | ---: |", *propensity, "",
    ]
    return lines


def final_table(results, summaries, w_final=1.0):
    """The published row, each trainer's row per data set and protocol at ``w_final``, and the orders at every w.

    ``summaries``: :func:`summarise` of each study of ``results``, by key.
    """
    lines = [
        "## Summary: the published row, the reference trainer (both versions) and the library", "",
        f"NDCG@5 at w = {w_final:g} (mean ± 95% CI over test queries), and below it the difference from the same "
        "trainer's Single Tower with the paired randomization p-value. The published row is MSLR-WEB30K, one "
        "seed, one fold, protocol (b), no CI. \"order\" lists the four published methods by their means, lowest "
        "first (published: Single Tower < Two Tower < Observation Dropout < Gradient Reversal). Two Tower = PAL "
        "additive.", "",
    ]
    head = ["| trainer | " + " | ".join(FINAL_VARIANTS) + " | order |", "| --- |" + " ---: |" * len(FINAL_VARIANTS)
            + " --- |"]
    published = ["| published (yng87/unbiased-ltr, first version) | " + " | ".join(
        f"{PUBLISHED_W1[m]:.3f}" if m in PUBLISHED_W1 else "" for m in FINAL_VARIANTS) + " | "
        + " < ".join(PUBLISHED_W1) + " |"]
    verdicts = []
    for dataset in ("mslr", "mq2008"):
        studies = _studies_of(results, dataset)
        if not studies:
            continue
        summaries_of = {t: summaries[study_key(dataset, t)] for t in studies}
        for protocol in PROTOCOLS:
            lines += [f"### {STUDY_NAMES[dataset]}: {PROTOCOL_NAMES[protocol]}", "", *head,
                      *(published if protocol == "reference" else [])]
            for trainer, summary in summaries_of.items():
                if (protocol, w_final) not in summary:
                    continue
                entry = summary[protocol, w_final]
                cells = []
                for method in FINAL_VARIANTS:
                    if method not in entry["methods"]:
                        cells.append("")
                        continue
                    m = entry["methods"][method]
                    text = f"{m['mean']:.3f} ± {m['ci95']:.3f}"
                    if method in entry["tests"]:
                        t = entry["tests"][method]
                        text += f"<br>{t['difference']:+.3f} (p {_fmt_p(t['randomization_pvalue'])})"
                    cells.append(text)
                lines.append(f"| {TRAINER_NAMES.get(trainer, trainer)} | " + " | ".join(cells) + " | "
                             + _order_text(entry, METHODS) + " |")
            lines.append("")
            for trainer, summary in summaries_of.items():
                weights = studies[trainer]["weights"]
                orders = sum(summary[protocol, w]["published_order"] for w in weights)
                counts = []
                for method in _variants(studies[trainer]):
                    tests = [summary[protocol, w]["tests"][method] for w in weights]
                    up = sum(t["difference"] > 0 and t["randomization_pvalue"] < 0.05 for t in tests)
                    down = sum(t["difference"] < 0 and t["randomization_pvalue"] < 0.05 for t in tests)
                    counts.append(f"{method} above {up}, below {down}")
                verdicts.append(f"- {STUDY_NAMES[dataset]}, {PROTOCOL_NAMES[protocol]}, "
                                f"{TRAINER_NAMES.get(trainer, trainer)}: published order at {orders}/{len(weights)} "
                                f"values of w; significantly (p < 0.05) different from its Single Tower at how many of "
                                f"the {len(weights)} values of w: " + "; ".join(counts) + ".")
    lines += ["### Every w: the published order, and significant differences from the Single Tower", "",
              *verdicts, ""]
    return lines


def plot_final_curves(results, path, w_final=1.0):
    """Learned curves relative to position 1 at ``w_final`` against the truth 1/p: data sets x protocols."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    positions = np.arange(1, CURVE_POSITIONS + 1)
    datasets = [d for d in ("mslr", "mq2008") if _studies_of(results, d)]
    fig, axes = plt.subplots(len(datasets), 2, figsize=(12, 4.4 * len(datasets)), squeeze=False)
    styles = {"current": ":", "first": "--", "library": "-", "recipe": "-."}
    for row, dataset in zip(axes, datasets, strict=True):
        studies = _studies_of(results, dataset)
        for ax, protocol in zip(row, PROTOCOLS, strict=True):
            ax.plot(positions, 1 / positions, "k-", lw=3, alpha=0.4, label="truth 1/position")
            for trainer, result in studies.items():
                if w_final not in result["weights"]:
                    continue
                for j, method in enumerate(FINAL_VARIANTS[1:]):
                    if method in _variants(result):
                        ax.plot(positions, _curve(result, protocol, w_final, method), styles.get(trainer, "-."),
                                color=f"C{j}", marker="." if trainer == "library" else None,
                                label=f"{method} ({trainer})")
            ax.set(yscale="log", ylim=(1e-3, 10), xticks=positions[::2], xlabel="display position",
                   ylabel="learned curve / curve at position 1",
                   title=f"{STUDY_NAMES[dataset]}: {PROTOCOL_NAMES[protocol]}, w = {w_final:g}")
            ax.title.set_fontsize(9)
            ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# --------------------------------------------------------------------------- store


def _normalise_json(value):
    return json.loads(json.dumps(value))


def open_store(json_path):
    """The studies stored so far; studies of the earlier format (keys without a trainer) are migrated."""
    results = json.loads(json_path.read_text()) if json_path.exists() else {}
    for key in list(results):
        if " " not in key:  # the first study's format: "mq2008" was the current version of the trainer
            study = results.pop(key)
            study.setdefault("runs", [{"seconds": 60 * study.pop("minutes"), "load_start": study.pop("load_start"),
                                       "load_end": study.pop("load_end"), "cells": len(study["cells"])}])
            results[study_key(key, "current")] = study
    return results


def save_store(results, json_path):
    """Write the store whole or not at all (a run stopped mid-write keeps the previous file)."""
    write_atomically(json_path, lambda f: f.write(json.dumps(results).encode("utf-8")))


def _load_average():
    return " ".join(f"{load:.2f}" for load in os.getloadavg())


# --------------------------------------------------------------------------- main


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--study", choices=["mq2008", "mslr", "both"], default="both")
    parser.add_argument("--quick", action="store_true",
                        help="tiny smoke run: 1 fold, 1 seed, w in {1, 0}, 3 epochs, small data")
    parser.add_argument("--data-dir", default=os.environ.get("SKLEARN_LTR_DATA",
                                                             Path(__file__).resolve().parents[2] / "shared" / "data"))
    parser.add_argument("--folds", type=int, nargs="+", default=[1, 2, 3, 4, 5], help="MQ2008 folds")
    parser.add_argument("--weights", type=float, nargs="+", default=list(WEIGHTS))
    parser.add_argument("--seeds", type=int, default=None, help="seeds per cell (default: 5 for mq2008, 3 for mslr)")
    parser.add_argument("--mq-sessions", type=int, default=10, help="result pages per MQ2008 query")
    parser.add_argument("--mslr-sessions", type=int, default=1, help="result pages per MSLR-shaped query")
    parser.add_argument("--mslr-queries", type=int, nargs=3, default=[6000, 1000, 1000],
                        help="MSLR-shaped training, validation and test queries")
    parser.add_argument("--data-seed", type=int, default=0, help="seed of the MSLR-shaped data set")
    parser.add_argument("--keep", type=float, default=0.1, help="share of non-clicked training rows kept")
    parser.add_argument("--max-epochs", type=int, default=30)
    parser.add_argument("--patience", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=32, help="rows per batch (the first version used 64)")
    parser.add_argument("--dropout-on", choices=["output", "hidden"], default="output",
                        help="observation dropout on o (repository HEAD) or on its 32 hidden units (first version)")
    parser.add_argument("--no-ours", action="store_true", help="leave out TwoTowerDebiasedRanker")
    parser.add_argument("--library", action="store_true",
                        help="train the library's variants (LIBRARY) instead of the reference trainer")
    parser.add_argument("--recipe", action="store_true",
                        help="train the library's click-log recipe (RECIPE): early stopping on the validation log, "
                             "IPS with estimated propensities, DLA, and the oracle on true labels")
    parser.add_argument("--fresh", action="store_true", help="start the study over instead of resuming it")
    parser.add_argument("--report-only", action="store_true",
                        help="run nothing: rewrite the report and figures from the stored studies")
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--out", default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args(argv)
    if args.quick:
        args.folds, args.weights, args.seeds = args.folds[:1], [1.0, 0.0], 1
        args.max_epochs, args.patience, args.mq_sessions = 3, 2, 2
        args.mslr_queries = [300, 100, 100]
    return args


def _settings(args, study):
    """The configuration of a study: what a resumed run must share with the stored cells."""
    # One set-up for the library's networks: the context row of the reference studies ("ours") and
    # the library's variants share it.
    network = {"hidden_sizes": (64, 32), "max_position": 120, "lr": 1e-3, "weight_decay": 1e-5,
               "observation_lr": 1e-2, "max_epochs": 2 if args.quick else 20, "batch_size": 32}
    return _normalise_json({
        "sessions": args.mq_sessions if study == "mq2008" else args.mslr_sessions, "keep": args.keep,
        "n_jobs": args.n_jobs,
        "trainer": {"max_epochs": args.max_epochs, "patience": args.patience, "batch_size": args.batch_size,
                    "dropout_on": args.dropout_on},
        "lambdamart": {"n_estimators": 20 if args.quick else 100, "learning_rate": 0.05},
        "ours": None if (args.no_ours or args.library or args.recipe) else network,
        "library": network if args.library else None,
        **({"recipe": {**network, "max_epochs": 3 if args.quick else 30, "n_iter_no_change": 5}}
           if args.recipe else {}),
    })


def _same_settings(stored, new):
    ignore = ("n_jobs",)
    return {k: v for k, v in stored.items() if k not in ignore} == {k: v for k, v in new.items() if k not in ignore}


def run_study(args, dataset, results, json_path):
    """Run the missing cells of one study, saving each finished cell at once (a cut-off run resumes)."""
    key = study_key(dataset, trainer_of(args))
    cfg = _settings(args, dataset)
    seeds = list(range(args.seeds or {"mq2008": 5, "mslr": 3}[dataset]))
    folds, y_max = load_study(args, dataset)
    study = results.get(key)
    if study is not None and (args.fresh or not _same_settings(study["config"], cfg)
                              or study["quick"] != args.quick):
        if not args.fresh:
            raise SystemExit(f"{json_path} holds study {key!r} with other settings ({study['config']!r}); "
                             "pass --fresh to start it over or --out elsewhere.")
        study = None
    if study is None:
        study = results[key] = {"config": cfg, "weights": [], "folds": [], "seeds": [], "quick": args.quick,
                                "runs": [], "test_queries": {}, "cells": []}
    study["config"]["n_jobs"] = args.n_jobs
    study["weights"] = sorted(set(study["weights"]) | set(args.weights), reverse=True)
    study["folds"] = sorted(set(study["folds"]) | set(folds))
    study["seeds"] = sorted(set(study["seeds"]) | set(seeds))
    study["test_queries"].update({str(f): _test_queries(*folds[f]["test"][1:])[0].tolist() for f in folds})
    done = {(c["fold"], c["w"], c["seed"]) for c in study["cells"]}
    tasks = [(fold, w, seed) for fold in folds for w in args.weights for seed in seeds if (fold, w, seed) not in done]
    print(f"{key}: {len(done)} cells stored, {len(tasks)} to run", flush=True)
    load_start, start = _load_average(), time.perf_counter()
    try:
        cells = Parallel(n_jobs=args.n_jobs, verbose=5, return_as="generator_unordered")(
            delayed(run_cell)(dataset, fold, w, seed, folds[fold], y_max, cfg) for fold, w, seed in tasks)
        for cell in cells:
            study["cells"].append(cell)
            save_store(results, json_path)
    finally:
        study["runs"].append({"seconds": time.perf_counter() - start, "load_start": load_start,
                              "load_end": _load_average(),
                              "cells": len(study["cells"]) - len(done)})
        save_store(results, json_path)


def main(argv=None):
    args = parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    json_path = out / "debias_protocols.json"
    results = open_store(json_path)
    for dataset in [] if args.report_only else (["mq2008", "mslr"] if args.study == "both" else [args.study]):
        run_study(args, dataset, results, json_path)
    machine = (f"({platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, torch "
               f"{torch.__version__}, CPU only, 1 thread per worker"
               + ("; **--quick smoke run: not a result**" if args.quick else "") + ".)")
    (out / "debias_protocols.md").write_text(report(results, machine))
    plot_curves(results, out / "debias_protocols_curves.png")
    plot_final_curves(results, out / "debias_protocols_final.png")
    print((out / "debias_protocols.md").read_text())


if __name__ == "__main__":
    main()

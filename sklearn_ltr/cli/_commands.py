"""The ``train``, ``predict`` and ``evaluate`` commands; each takes the parsed arguments and returns 0.

Results go to standard output (``train``'s summary, ``predict``'s scores with ``--out -``,
``evaluate``'s table or JSON), progress bars and warnings to standard error, user errors
are raised as :class:`~sklearn_ltr.cli._errors.CLIError`.

The commands that write a file (``train --out``, ``predict --out``) check before any work
that the output can be written and is none of their inputs (data files, their ``.query``
sizes, the model, the positions), and write it atomically
(:func:`~sklearn_ltr.cli._output.write_atomically`): an error or Ctrl-C leaves no fragment
and the previous file intact. ``evaluate`` writes nothing but standard output.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import warnings

import numpy as np

from sklearn_ltr.cli import _data_files, _progress
from sklearn_ltr.cli._clicks import click_log, make_click_model
from sklearn_ltr.cli._data_files import align_features, data_file_inputs, read_ranking, read_rows_of_numbers
from sklearn_ltr.cli._errors import CLIError
from sklearn_ltr.cli._metrics import empty_queries, empty_query_note, metric_values, parse_metrics
from sklearn_ltr.cli._model_files import load_model, save_model
from sklearn_ltr.cli._models import MODELS, estimator_errors, fit_model, imputes, resolve_preprocessing, settable_params
from sklearn_ltr.cli._output import check_output_path, refuse_input_as_output, write_scores
from sklearn_ltr.cli._params import parse_params
from sklearn_ltr.cli._propensities import IPS_METRICS, click_log_inputs, wants_click_log
from sklearn_ltr.cli._query_input import file_features, model_input, reads_query_column
from sklearn_ltr.exceptions import FeatureDriftWarning

__all__ = ["convert", "evaluate", "model_scores", "predict", "train"]

#: ``evaluate --metrics`` default on a labelled file (on a click log: ``IPS_METRICS``).
_EVALUATE_METRICS = "ndcg@1,ndcg@5,ndcg@10,map@10"

#: The metric ``train`` reports on its files.
NDCG10 = parse_metrics("ndcg@10", command="train")


def _ndcg10(estimator, data, name, option, empty):
    """NDCG@10 of the freshly trained model on a file; a model that scores NaN is an error, and is not saved."""
    with estimator_errors(f"scoring {option} {data.path!r} with the trained {name} model"):
        scores = estimator.predict(data.X, groups=data.groups)
    if not np.isfinite(scores).all():
        raise CLIError(f"the trained {name} model scores rows of {option} {data.path!r} as NaN or infinite; it is "
                       f"not saved. Check the features for huge values, or lower the learning rate.")
    (value,) = metric_values(NDCG10, data.y, scores, data.groups, empty=empty,
                             where=f"{option} {data.path!r}").values()
    return value


def train(args):
    """``sklearn-ltr train``: fit a ranker on a file and save it (see ``sklearn-ltr train --help``)."""
    spec = MODELS[args.model]
    refuse_input_as_output(args.out, "--out", [*data_file_inputs("--train", args.train, args.format),
                                               *data_file_inputs("--valid", args.valid, args.format),
                                               (f"--positions {args.positions!r}", args.positions)])
    check_output_path(args.out, "model file")
    params = parse_params(args.param, settable_params(spec), model=spec.name)
    if not spec.clicks and (args.positions or args.simulate_clicks is not None):
        raise CLIError(f"--positions and --simulate-clicks are for --model two-tower, not {spec.name}.")
    if args.simulate_clicks is not None and args.simulate_clicks < 1:
        raise CLIError(f"--simulate-clicks needs a positive number of sessions per query; got {args.simulate_clicks}.")
    if not 0 <= args.logging_quality <= 1:
        raise CLIError(f"--logging-quality must be in [0, 1]; got {args.logging_quality}.")
    click_model_name, eta = getattr(args, "click_model", None), getattr(args, "eta", None)
    if args.simulate_clicks is None and (click_model_name is not None or eta is not None):
        raise CLIError("--click-model and --eta choose how --simulate-clicks N clicks; add --simulate-clicks N.")
    click_model = make_click_model(click_model_name or "pbm", eta) if args.simulate_clicks is not None else None
    data = read_ranking(args.train, args.format, missing=args.missing_values)
    valid = read_ranking(args.valid, args.format, missing=args.missing_values) if args.valid else None
    if valid is not None:  # a sparse file may lack the other's last features: pad both to the wider one
        n_features = max(data.X.shape[1], valid.X.shape[1])
        data = align_features(data, n_features, against=f"--valid {args.valid!r}")
        valid = align_features(valid, n_features, against=f"--train {args.train!r}")
    preprocessing = resolve_preprocessing(spec, args.preprocessing,
                                          missing=any(rows is not None and rows.n_missing for rows in (data, valid)))
    for option, rows in (("--train", data), ("--valid", valid)):
        if rows is not None:
            _data_files.check_features(rows, spec.cls(), option=option, model_name=spec.name,
                                       imputed=imputes(preprocessing))
    print(f"train {data.describe()}", flush=True)
    if valid is not None:
        print(f"valid {valid.describe()}", flush=True)
    rows = data
    if spec.clicks:
        rows = click_log(data, positions_path=args.positions, simulate=args.simulate_clicks, w=args.logging_quality,
                         click_model=click_model, random_state=args.seed)
        print(f"two-tower: {rows.description}", flush=True)
    estimator, report = fit_model(spec, params, rows, valid, preprocessing=preprocessing,
                                  impute_strategy=args.impute_strategy,
                                  early_stopping=not args.no_early_stopping, seed=args.seed, threads=args.threads,
                                  progress=_progress.progress_wanted(args.progress), desc=f"train {spec.name}")
    files = {"train": (data, "--train"), **({"valid": (valid, "--valid")} if valid is not None else {})}
    scores = {f"{key}_ndcg@10": _ndcg10(estimator, part, spec.name, option, args.empty_queries)
              for key, (part, option) in files.items()}
    save_model(args.out, estimator, model=spec.name, n_features=int(data.X.shape[1]),
               list_context=spec.list_context, params=params, seed=args.seed,
               train_file=os.path.abspath(args.train), valid_file=args.valid and os.path.abspath(args.valid),
               empty_query_rule=args.empty_queries, **report, **scores)
    ran = ", ".join(f"{key.replace('_', ' ')} {value}" for key, value in report.items()
                    if key not in ("fit_seconds", "preprocessing", "settings", "impute_strategy", "resumed_from_epoch")
                    and value is not None)
    if report["preprocessing"] != "none":
        ran += f"; preprocessing {report['preprocessing']}"
        if imputes(report["preprocessing"]):
            ran += f" (missing values: {report['impute_strategy']}, with indicator columns)"
    print(_trained_line(spec, report, ran))
    print(f"settings: {report['settings']}")
    print("NDCG@10: " + ", ".join(f"{key.split('_')[0]} {value:.4f}" for key, value in scores.items()))
    note = empty_query_note(NDCG10, 0, 0, args.empty_queries, counts=[
        (key, int(empty_queries(part.y, part.groups).sum()), part.n_queries) for key, (part, _) in files.items()])
    if note:
        print(f"* {note}")
    print(f"saved model to {args.out}")
    return 0


def _trained_line(spec, report, ran):
    """``trained NAME (CLASS) in S s (...)``; a fit resumed from a checkpoint says from which epoch."""
    resumed = report.get("resumed_from_epoch")
    if resumed is None:
        return f"trained {spec.name} ({spec.estimator}) in {report['fit_seconds']:.1f} s ({ran})"
    epochs = report["epochs"]
    if epochs > resumed:
        trained = f"trained epoch{'s' if epochs > resumed + 1 else ''} " + (
            f"{resumed + 1}-{epochs}" if epochs > resumed + 1 else f"{epochs}")
    else:
        trained = "trained no further epoch (the checkpoint's fit had ended)"
    return (f"resumed {spec.name} ({spec.estimator}) from epoch {resumed} of the checkpoint; {trained} in "
            f"{report['fit_seconds']:.1f} s ({ran})")


def model_scores(model, data, model_path):
    """The model's finite scores of ``data``; the estimator's errors (see ``ESTIMATOR_ERRORS``) are user errors."""
    with estimator_errors(f"scoring {data.path!r} with model {model_path!r}"), _drift_on_stderr(data.path):
        X, kwargs = model_input(model.estimator, data.X, data.groups, model_name=f"model {model_path!r}")
        scores = np.asarray(model.estimator.predict(X, **kwargs), dtype=np.float64)
    if scores.shape != data.y.shape:
        raise CLIError(f"model {model_path!r} returned {scores.size:,} scores for the {len(data.y):,} rows of "
                       f"{data.path!r}; is the model file damaged?")
    if not np.isfinite(scores).all():
        bad = np.flatnonzero(~np.isfinite(scores))
        raise CLIError(f"model {model_path!r} scores {len(bad):,} of the {len(scores):,} rows of {data.path!r} as "
                       f"NaN or infinite (the first: row {bad[0] + 1}); nothing is written. Do the features hold "
                       f"NaN or huge values?")
    return scores


@contextlib.contextmanager
def _drift_on_stderr(path):
    """Show a :class:`~sklearn_ltr.exceptions.FeatureDriftWarning` of scoring ``path`` as one warning line on stderr.

    Other warnings keep Python's handling.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("always", FeatureDriftWarning)
        show = warnings.showwarning

        def showwarning(message, category, filename, lineno, file=None, line=None):
            if not issubclass(category, FeatureDriftWarning):
                return show(message, category, filename, lineno, file, line)
            print(f"sklearn-ltr: warning: {path!r}: {message} (Features are numbered from 0 here: feature j is "
                  f"feature j + 1 of the file; the values are those the ranker sees, after the model's "
                  f"preprocessing.)", file=sys.stderr, flush=True)
            return None

        warnings.showwarning = showwarning
        yield


def _read_for_model(path, fmt, model, model_path, *, require_groups, missing):
    reads_ids = reads_query_column(model.estimator)
    data = read_ranking(path, fmt, require_groups=require_groups or model.list_context or reads_ids, missing=missing)
    _data_files.check_features(data, model.estimator, option="--data", model_name=f"model {model_path!r}")
    return align_features(data, file_features(model.estimator, model.n_features), model_name=f"model {model_path!r}")


def predict(args):
    """``sklearn-ltr predict``: one score per row of a file, in file order."""
    refuse_input_as_output(args.out, "--out", [(f"--model {args.model!r}", args.model),
                                               *data_file_inputs("--data", args.data, args.format)])
    check_output_path(args.out, "scores file")
    model = load_model(args.model)
    data = _read_for_model(args.data, args.format, model, args.model, require_groups=False,
                           missing=args.missing_values)
    write_scores(args.out, model_scores(model, data, args.model))
    return 0


def evaluate(args):
    """``sklearn-ltr evaluate``: ranking metrics of a model (or of a scores file) on a labelled file or a click log."""
    clicks = wants_click_log(args)
    metrics = parse_metrics(args.metrics or (IPS_METRICS if clicks else _EVALUATE_METRICS), click_log=clicks)
    if (args.model is None) == (args.scores is None):
        raise CLIError("evaluate needs exactly one of --model MODEL (score the file with it) and --scores FILE "
                       "(scores written by predict or any other ranker, one per row).")
    if args.model is not None:
        model = load_model(args.model)
        data = _read_for_model(args.data, args.format, model, args.model, require_groups=True,
                               missing=args.missing_values)
        scores, source = model_scores(model, data, args.model), f"model {args.model} ({model.name})"
    else:
        data = read_ranking(args.data, args.format, missing=args.missing_values)
        scores = read_rows_of_numbers(args.scores, len(data.y), what="scores file")
        source = f"scores {args.scores}"
    propensity, log = click_log_inputs(args, data)
    values = metric_values(metrics, data.y, scores, data.groups, empty=args.empty_queries,
                           where=f"--data {args.data!r}", inputs={"propensity": propensity}, clip=args.clip)
    n_empty = int(empty_queries(data.y, data.groups).sum())
    if args.json:
        click_log = {"click_log": {"propensities": args.propensities, "propensity_curve": args.propensity_curve,
                                   "positions": args.positions, "clip": args.clip}} if clicks else {}
        print(json.dumps({"data": args.data, "model": args.model, "scores": args.scores, "rows": len(data.y),
                          "queries": data.n_queries, "empty_queries": n_empty, "empty_query_rule": args.empty_queries,
                          **click_log, "metrics": {m.key: v for m, v in values.items()}}, indent=2, allow_nan=False))
        return 0
    print(f"{data.describe()}; {source}")
    if log:
        print(log)
    width = max(len("metric"), *(len(m.label) for m in values))
    print(f"{'metric':<{width}}  {'value':>8}")
    for metric, value in values.items():
        print(f"{metric.label:<{width}}  {value:>8.4f}")
    note = empty_query_note(list(values), n_empty, data.n_queries, args.empty_queries, click_log=clicks)
    if note:
        print(f"* {note}")
    return 0


def convert(args):
    """``sklearn-ltr convert``: a data file to the memory-mapped on-disk layout, streaming and atomically."""
    from sklearn_ltr.datasets import convert_ranking

    fmt = None if args.format == "auto" else args.format
    _data_files.check_input(args.source)
    if os.path.exists(args.target) and not args.overwrite:
        raise CLIError(f"{args.target!r} exists; pass --overwrite to replace it, or name another folder.")
    if os.path.abspath(args.target) == os.path.abspath(args.source):
        raise CLIError("the layout folder must not be the data file itself.")
    try:
        convert_ranking(args.source, args.target, format=fmt, n_features=args.n_features, overwrite=args.overwrite,
                        missing_values=_data_files.missing_values(args.missing_values))
    except (ValueError, OSError) as err:
        raise _data_files.input_error(args.source, err) from err
    print(f"wrote {args.target}")
    return 0

"""The ``train``, ``predict`` and ``evaluate`` commands; each takes the parsed arguments and returns 0.

Results go to standard output (``train``'s summary, ``predict``'s scores with ``--out -``,
``evaluate``'s table or JSON), progress bars and warnings to standard error, user errors
are raised as :class:`~sklearn_ltr.cli._errors.CLIError`.
"""

from __future__ import annotations

import json
import os

import numpy as np

from sklearn_ltr.cli import _progress
from sklearn_ltr.cli._clicks import click_log
from sklearn_ltr.cli._errors import CLIError
from sklearn_ltr.cli._files import (
    align_features,
    check_output_path,
    load_model,
    parse_params,
    read_ranking,
    read_rows_of_numbers,
    save_model,
    write_scores,
)
from sklearn_ltr.cli._metrics import parse_metrics
from sklearn_ltr.cli._models import MODELS, fit_model, settable_params

__all__ = ["evaluate", "predict", "train"]


def _ndcg10(estimator, data):
    from sklearn_ltr.metrics import ndcg_score

    return ndcg_score(data.y, estimator.predict(data.X, groups=data.groups), data.groups, k=10)


def train(args):
    """``sklearn-ltr train``: fit a ranker on a file and save it (see ``sklearn-ltr train --help``)."""
    spec = MODELS[args.model]
    params = parse_params(args.param, settable_params(spec), model=spec.name)
    if not spec.clicks and (args.positions or args.simulate_clicks is not None):
        raise CLIError(f"--positions and --simulate-clicks are for --model two-tower, not {spec.name}.")
    if args.simulate_clicks is not None and args.simulate_clicks < 1:
        raise CLIError(f"--simulate-clicks needs a positive number of sessions per query; got {args.simulate_clicks}.")
    if not 0 <= args.logging_quality <= 1:
        raise CLIError(f"--logging-quality must be in [0, 1]; got {args.logging_quality}.")
    check_output_path(args.out, "model file")
    data = read_ranking(args.train, args.format)
    valid = read_ranking(args.valid, args.format) if args.valid else None
    if valid is not None:  # a sparse file may lack the other's last features: pad both to the wider one
        n_features = max(data.X.shape[1], valid.X.shape[1])
        data, valid = align_features(data, n_features), align_features(valid, n_features)
    print(f"train {data.describe()}", flush=True)
    if valid is not None:
        print(f"valid {valid.describe()}", flush=True)
    rows = data
    if spec.clicks:
        rows = click_log(data, positions_path=args.positions, simulate=args.simulate_clicks, w=args.logging_quality,
                         random_state=args.seed)
        print(f"two-tower: {rows.description}", flush=True)
    estimator, report = fit_model(spec, params, rows, valid, preprocessing=args.preprocessing,
                                  early_stopping=not args.no_early_stopping, seed=args.seed, threads=args.threads,
                                  progress=_progress.progress_wanted(args.progress), desc=f"train {spec.name}")
    scores = {"train_ndcg@10": _ndcg10(estimator, data)}
    if valid is not None:
        scores["valid_ndcg@10"] = _ndcg10(estimator, valid)
    save_model(args.out, estimator, model=spec.name, n_features=int(data.X.shape[1]),
               list_context=spec.list_context, params=params, seed=args.seed,
               train_file=os.path.abspath(args.train), valid_file=args.valid and os.path.abspath(args.valid),
               **report, **scores)
    ran = ", ".join(f"{key.replace('_', ' ')} {value}" for key, value in report.items()
                    if key not in ("fit_seconds", "preprocessing") and value is not None)
    if report["preprocessing"] != "none":
        ran += f"; preprocessing {report['preprocessing']}"
    print(f"trained {spec.name} ({spec.estimator}) in {report['fit_seconds']:.1f} s ({ran})")
    print("NDCG@10: " + ", ".join(f"{key.split('_')[0]} {value:.4f}" for key, value in scores.items()))
    print(f"saved model to {args.out}")
    return 0


def _scores(bundle, data, model_path):
    try:
        return bundle["estimator"].predict(data.X, groups=data.groups)
    except ValueError as err:
        raise CLIError(f"model {model_path!r} cannot score {data.path!r}: {err}") from err


def _read_for_model(path, fmt, bundle, model_path, *, require_groups):
    data = read_ranking(path, fmt, require_groups=require_groups or bundle.get("list_context", True))
    return align_features(data, bundle["n_features"], model_name=f"model {model_path!r}")


def predict(args):
    """``sklearn-ltr predict``: one score per row of a file, in file order."""
    check_output_path(args.out, "scores file")
    bundle = load_model(args.model)
    data = _read_for_model(args.data, args.format, bundle, args.model, require_groups=False)
    write_scores(args.out, _scores(bundle, data, args.model))
    return 0


def evaluate(args):
    """``sklearn-ltr evaluate``: ranking metrics of a model (or of a scores file) on a labelled file."""
    metrics = parse_metrics(args.metrics)
    if (args.model is None) == (args.scores is None):
        raise CLIError("evaluate needs exactly one of --model MODEL (score the file with it) and --scores FILE "
                       "(scores written by predict or any other ranker, one per row).")
    if args.model is not None:
        bundle = load_model(args.model)
        data = _read_for_model(args.data, args.format, bundle, args.model, require_groups=True)
        scores, source = _scores(bundle, data, args.model), f"model {args.model} ({bundle.get('model')})"
    else:
        data = read_ranking(args.data, args.format)
        scores = read_rows_of_numbers(args.scores, len(data.y), what="scores file")
        source = f"scores {args.scores}"
    if not np.isfinite(scores).all():
        raise CLIError(f"the scores of {source} on {args.data!r} contain NaN or infinite values.")
    values = {metric: metric(data.y, scores, data.groups) for metric in metrics}
    if args.json:
        print(json.dumps({"data": args.data, "model": args.model, "scores": args.scores, "rows": len(data.y),
                          "queries": data.n_queries, "metrics": {m.key: v for m, v in values.items()}}, indent=2))
        return 0
    print(f"{data.describe()}; {source}")
    width = max(len("metric"), *(len(m.label) for m in values))
    print(f"{'metric':<{width}}  {'value':>8}")
    for metric, value in values.items():
        print(f"{metric.label:<{width}}  {value:>8.4f}")
    return 0

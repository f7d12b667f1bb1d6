"""``sklearn-ltr compare``: paired significance tests between saved models and scores files on one labelled file.

Each system is a model file (``--model``, scored as ``evaluate --model`` scores it) or a
scores file (``--scores``, one score per row, as ``evaluate --scores`` reads it), in the
order given; its name is its file stem, made unique with ``-2``, ``-3``, ... The baseline
(``--baseline``, by name or path; default the first system) is compared with every other
system by :func:`sklearn_ltr.metrics.compare_rankings`, one metric at a time, with the same
seed: the printed numbers (or the ``--json`` ones, exactly) are those of the Python API.
``--report`` writes them, with figures, as one self-contained HTML page
(:func:`sklearn_ltr.metrics.write_comparison_report`).

Queries without a relevant document (*empty* queries) follow ``--empty-queries``, as in
``evaluate`` (same choices, same values): ``default`` keeps each metric's convention (1 in NDCG
and MAP, 0 in the others), ``zero`` passes ``empty_value=0.0`` to the metrics that have the
option, ``drop`` compares the other queries only. Both the text and the report end with a
footnote saying how many queries are empty and how they were counted, and the report's
per-query difference plots leave empty queries out instead of counting them as ties.

On a click log (``--propensities`` or ``--propensity-curve``, read by
:mod:`sklearn_ltr.cli._propensities`), the labels are clicks and the default metrics are the
counterfactual ``ips_dcg@10`` and ``ips_ndcg@10``, compared with the same paired tests.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os

import numpy as np

from sklearn_ltr.cli._commands import model_scores
from sklearn_ltr.cli._data_files import align_features, data_file_inputs, read_ranking, read_rows_of_numbers
from sklearn_ltr.cli._errors import CLIError
from sklearn_ltr.cli._metrics import add_empty_queries_option, empty_queries, empty_query_note, parse_metrics
from sklearn_ltr.cli._model_files import load_model
from sklearn_ltr.cli._output import check_output_path, refuse_input_as_output
from sklearn_ltr.cli._propensities import (
    IPS_METRICS,
    add_click_log_options,
    click_log_inputs,
    click_log_paths,
    wants_click_log,
)
from sklearn_ltr.cli._query_input import file_features

__all__ = ["add_parser", "compare"]

DESCRIPTION = """\
Paired significance tests between rankers on the queries of one labelled data file. Each system
is a model saved by train (--model, scored as evaluate scores it) or a scores file (--scores,
one score per row in file order, e.g. written by predict), in the order given; --model and
--scores repeat. A system's name is its file stem (a clash gets -2, -3, ...).

Every system is compared with the baseline (--baseline, default the first) on each metric's
per-query values, differences system minus baseline: the mean difference with a percentile
bootstrap confidence interval, the paired t-test and the randomization (sign-flip) test,
two-sided, with raw p-values and, with --correction (default holm), p-values corrected over the
systems compared. '*' marks the p-values below --alpha (the corrected ones when corrected). The
numbers are those of sklearn_ltr.metrics.compare_rankings with random_state=--seed; --json
prints them exactly. --report writes them, with a plot of each system's sorted per-query
differences and box plots of the per-query values, as one HTML page that loads nothing from
the network (needs matplotlib).

Queries without a relevant document count as in evaluate: NDCG and MAP score them 1
(LightGBM's convention), the other metrics 0; --empty-queries zero counts them as 0 in every
metric, drop leaves them out (the means are then evaluate's with the same option). A footnote
says how many there are; the report's difference plots leave them out rather than count them
as ties, since no ranking changes their value.

On a click log (labels 1 clicked, 0 not), --propensities FILE or --propensity-curve FILE (with
--positions FILE) give each row's examination propensity, and the default metrics become the
counterfactual ips_dcg@10 and ips_ndcg@10 (see evaluate -h): the systems are compared without
relevance labels. A query without a click is an empty query.

Loading a model file (--model) unpickles it, which runs code stored in the file: load model
files only from sources you trust."""

EXAMPLES = """\
examples:
  sklearn-ltr compare --data test.txt --model lambdamart.joblib --model ranknet.joblib
  sklearn-ltr compare --data test.txt --model a.joblib --model b.joblib --scores c.txt \\
      --metrics ndcg@10,map,mrr --baseline a --correction holm --report report.html
  sklearn-ltr compare --data clicks.txt --model a.joblib --model b.joblib \
      --propensity-curve curve.txt --positions clicks.pos"""

_TESTS = (("t-test", "t_pvalue"), ("randomization", "randomization_pvalue"))

#: ``--metrics`` default on a labelled file (on a click log: ``IPS_METRICS``).
_METRICS = "ndcg@10,map,mrr"


class _AppendSystem(argparse.Action):
    """``--model`` and ``--scores`` append ``(option, path)`` to one list: the systems in command-line order."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, [*(getattr(namespace, self.dest, None) or []), (option_string, values)])


def add_parser(commands, *, formatter, model_help, add_common):
    """Add the ``compare`` command to the sub-parsers ``commands`` of ``sklearn-ltr``."""
    parser = commands.add_parser("compare", help="paired significance tests between saved models and/or scores files",
                                 description=DESCRIPTION, epilog=EXAMPLES, formatter_class=formatter)
    parser.add_argument("--data", required=True, metavar="FILE", help="labelled data file")
    parser.add_argument("--model", dest="systems", action=_AppendSystem, default=[], metavar="MODEL",
                        help=f"a system: {model_help}; repeatable")
    parser.add_argument("--scores", dest="systems", action=_AppendSystem, metavar="FILE",
                        help="a system: scores, one per row of --data (e.g. from predict); repeatable")
    parser.add_argument("--metrics", metavar="LIST",
                        help="comma-separated metrics with per-query values (default ndcg@10,map,mrr; on a click log "
                             "ips_dcg@10,ips_ndcg@10)")
    parser.add_argument("--baseline", metavar="NAME", help="the system the others are compared with, by name (file "
                                                           "stem) or path (default: the first)")
    parser.add_argument("--correction", choices=("holm", "bonferroni", "none"), default="holm",
                        help="correction of the p-values over the systems compared (default holm)")
    parser.add_argument("--alpha", type=float, default=0.05, help="significance level of the marks (default 0.05)")
    parser.add_argument("--resamples", type=int, default=10_000, metavar="N",
                        help="sign flips of the randomization test and bootstrap resamples (default 10000)")
    parser.add_argument("--confidence", type=float, default=0.95, metavar="LEVEL",
                        help="confidence level of the bootstrap interval (default 0.95)")
    parser.add_argument("--seed", type=int, default=0, help="random_state of the resampling tests (default 0)")
    add_empty_queries_option(parser)
    add_click_log_options(parser)
    parser.add_argument("--json", action="store_true", help="print the results as JSON (exact values)")
    parser.add_argument("--report", metavar="HTML", help="write an HTML report (tables and figures, no network "
                                                         "access) to this file, whole or not at all")
    add_common(parser)
    return parser


def _names(systems):
    """Unique names of the systems: file stems, a clash numbered ``-2``, ``-3``, ..."""
    names = []
    for _, path in systems:
        stem = os.path.basename(path)
        for suffix in (".gz", ".bz2"):
            stem = stem.removesuffix(suffix)
        stem = os.path.splitext(stem)[0] or stem
        name, n = stem, 1
        while name in names:
            n += 1
            name = f"{stem}-{n}"
        names.append(name)
    return names


def _baseline(wanted, names, systems):
    if wanted is None:
        return names[0]
    if wanted in names:
        return wanted
    for name, (_, path) in zip(names, systems, strict=True):
        if os.path.exists(wanted) and os.path.exists(path) and os.path.samefile(wanted, path):
            return name
    raise CLIError(f"--baseline {wanted!r} names no system; the systems are {', '.join(map(repr, names))} (a file "
                   f"stem, or the path given to --model or --scores).")


def _check_args(args):
    if len(args.systems) < 2:
        raise CLIError(f"compare needs at least two systems (--model MODEL or --scores FILE, repeatable); got "
                       f"{len(args.systems)}.")
    if args.resamples < 1:
        raise CLIError(f"--resamples must be a positive integer; got {args.resamples}.")
    for option, value in (("--alpha", args.alpha), ("--confidence", args.confidence)):
        if not 0 < value < 1:
            raise CLIError(f"{option} must be between 0 and 1 (exclusive); got {value}.")


def _check_report(args):
    """Before any work: matplotlib is there, and ``--report`` can be written and is no input."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise CLIError("--report draws its figures with matplotlib, which is not installed: pip install "
                       "'sklearn-ltr[benchmark]' (or pip install matplotlib).") from None
    inputs = data_file_inputs("--data", args.data, args.format)
    inputs += [(f"{option} {path!r}", path) for option, path in args.systems]
    inputs += click_log_paths(args)
    refuse_input_as_output(args.report, "--report", inputs)
    check_output_path(args.report, "report", option="--report")


def _system_scores(args, names, data):
    """``({name: scores}, {name: description})`` of every system, in command-line order."""
    scores, sources = {}, {}
    for name, (option, path) in zip(names, args.systems, strict=True):
        if option == "--model":
            model = load_model(path)
            n_features = file_features(model.estimator, model.n_features)  # less a query column it counts
            aligned = align_features(dataclasses.replace(data), n_features, model_name=f"model {path!r}")
            scores[name] = model_scores(model, aligned, path)
            sources[name] = {"source": "model", "path": path, "model": model.name}
        else:
            scores[name] = read_rows_of_numbers(path, len(data.y), what="scores file")
            sources[name] = {"source": "scores", "path": path}
    return scores, sources


def _compare_metric(metric, data, scores, baseline, args, propensity):
    from sklearn_ltr.metrics import compare_rankings

    others = {name: values for name, values in scores.items() if name != baseline}
    try:  # the labels or the queries may not suit the tests (fewer than 2 queries, ...)
        options = metric.options(args.empty_queries, clip=args.clip)
        if metric.metric.inputs:  # a counterfactual metric: the click log's propensity of every row
            options["propensity"] = propensity
        return compare_rankings(data.y, scores[baseline], others, data.groups, metric=metric.metric.name,
                                n_resamples=args.resamples, confidence_level=args.confidence,
                                correction=None if args.correction == "none" else args.correction,
                                random_state=args.seed, **options)
    except ValueError as err:
        raise CLIError(f"cannot compare {metric.label} on --data {args.data!r}: {err}") from err


def _drop_empty(data, scores, propensity):
    """``(data, scores, propensity)`` without the rows of the queries that have no relevant document (``drop``)."""
    _, codes = np.unique(data.groups, return_inverse=True)
    keep = ~empty_queries(data.y, data.groups)[codes]
    if not keep.any():
        raise CLIError(f"every query of --data {data.path!r} has no relevant document (no label above 0): "
                       f"--empty-queries drop leaves none to compare.")
    kept = dataclasses.replace(data, X=data.X[keep], y=data.y[keep], groups=data.groups[keep])
    kept_propensity = None if propensity is None else propensity[keep]
    return kept, {name: values[keep] for name, values in scores.items()}, kept_propensity


def _decisive(table, field):
    return field + "_adjusted" if table.correction is not None else field


def _json(args, data, baseline, sources, tables, n_empty, clicks):
    metrics = {}
    for metric, table in tables.items():
        rows = []
        for result in table:
            row = result.to_dict()
            row["significant"] = {test: getattr(result, _decisive(table, field)) < args.alpha
                                  for test, field in _TESTS if test in table.tests}
            rows.append(row)
        metrics[metric.key] = {"label": metric.label, "n_queries": table.n_queries,
                               "baseline_mean": table.baseline_mean, "comparisons": rows}
    first = next(iter(tables.values()))
    return {"data": args.data, "rows": len(data.y), "queries": data.n_queries, "empty_queries": n_empty,
            "empty_query_rule": args.empty_queries, "baseline": baseline,
            "systems": [{"name": name, **source} for name, source in sources.items()],
            "tests": list(first.tests), "resamples": args.resamples, "confidence_level": args.confidence,
            "correction": first.correction, "alpha": args.alpha, "seed": args.seed, "report": args.report,
            **({"click_log": {"propensities": args.propensities, "propensity_curve": args.propensity_curve,
                              "positions": args.positions, "clip": args.clip}} if clicks else {}),
            "metrics": metrics}


def _p_cell(value, marked):
    """A p-value as the tables of :class:`~sklearn_ltr.metrics.SignificanceTable` show it, ``*`` when marked."""
    text = f"{value:.4f}" if value >= 1e-4 else f"{value:.1e}"
    return text + (" *" if marked else "")


def _text_table(metric, table, baseline, alpha):
    """Lines of one metric's table: the baseline's mean, then each system's row."""
    suffix = f" ({table.correction})" if table.correction else ""
    head = ["system", "mean", "difference", f"{table.confidence_level:.0%} CI"]
    for test, _ in _TESTS:
        head += [f"{test} p"] + ([f"{test} p{suffix}"] if table.correction else [])
    rows = [head, [baseline, f"{table.baseline_mean:.4f}", "(baseline)"]]
    for r in table:
        row = [str(r.system), f"{r.mean:.4f}", f"{r.mean_difference:+.4f}", f"[{r.ci_low:+.4f}, {r.ci_high:+.4f}]"]
        for _, field in _TESTS:
            raw = getattr(r, field)
            row.append(_p_cell(raw, table.correction is None and raw < alpha))
            if table.correction:
                adjusted = getattr(r, field + "_adjusted")
                row.append(_p_cell(adjusted, adjusted < alpha))
        rows.append(row)
    widths = [max(len(row[i]) for row in rows if i < len(row)) for i in range(len(head))]
    lines = [f"{metric.label} over {table.n_queries:,} queries"]
    for row in rows:
        # Means and differences right-aligned, names, intervals and p-values (a '*' after some) left-aligned.
        cells = [c.rjust(w) if i in (1, 2) else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths, strict=False))]
        lines.append("  ".join(cells).rstrip())
    return lines


def _print_text(args, data, baseline, sources, tables, log):
    first = next(iter(tables.values()))
    described = ", ".join(f"{name} ({source['source']} {source['path']}"
                          + (f", {source['model']})" if "model" in source else ")")
                          for name, source in sources.items())
    print(f"{data.describe()}")
    if log:
        print(log)
    print(f"systems: {described}; baseline {baseline}")
    corrected = (f"; p-values {first.correction.capitalize()}-corrected over {len(first)} system"
                 f"{'s' if len(first) > 1 else ''}" if first.correction else "")
    print(f"tests: paired t-test, randomization ({args.resamples} sign flips, seed {args.seed}), "
          f"{args.confidence:.0%} bootstrap CI{corrected}; * p < {args.alpha:g}")
    for metric, table in tables.items():
        print()
        print("\n".join(_text_table(metric, table, baseline, args.alpha)))


def _write_report(args, data, baseline, tables, empty, note):
    """The HTML report; the empty queries are marked where the tables still hold them (not with drop)."""
    from sklearn_ltr.metrics import write_comparison_report

    # A metric that leaves empty queries undefined has dropped them already: nothing to mark then.
    marked = empty if all(table.n_queries == empty.size for table in tables.values()) else None
    try:
        write_comparison_report(list(tables.values()), args.report, baseline_name=baseline,
                                title=f"Ranker comparison on {os.path.basename(args.data)}",
                                description=f"{data.describe()}; baseline {baseline}", alpha=args.alpha,
                                empty_queries=None if args.empty_queries == "drop" else marked,
                                note=None if note is None else f"* {note}")
    except OSError as err:
        raise CLIError(f"cannot write report {args.report!r}: {err.strerror or err}; nothing was written (a "
                       f"previous file is left as it was).") from err


def compare(args):
    """``sklearn-ltr compare``: significance tests between models and scores files (``sklearn-ltr compare -h``)."""
    _check_args(args)
    clicks = wants_click_log(args)
    metrics = parse_metrics(args.metrics or (IPS_METRICS if clicks else _METRICS), command="compare", click_log=clicks)
    names = _names(args.systems)
    baseline = _baseline(args.baseline, names, args.systems)
    if args.report is not None:
        _check_report(args)
    data = read_ranking(args.data, args.format, missing=args.missing_values)
    scores, sources = _system_scores(args, names, data)
    propensity, log = click_log_inputs(args, data)
    empty = empty_queries(data.y, data.groups)
    compared, compared_scores, compared_propensity = (
        _drop_empty(data, scores, propensity) if args.empty_queries == "drop" else (data, scores, propensity))
    tables = {metric: _compare_metric(metric, compared, compared_scores, baseline, args, compared_propensity)
              for metric in metrics}
    note = empty_query_note(list(tables), int(empty.sum()), data.n_queries, args.empty_queries, click_log=clicks)
    if args.report is not None:
        _write_report(args, data, baseline, tables, empty, note)
    if args.json:
        print(json.dumps(_json(args, data, baseline, sources, tables, int(empty.sum()), clicks), indent=2,
                         allow_nan=False))
    else:
        _print_text(args, data, baseline, sources, tables, log)
        if note:
            print(f"\n* {note}")
        if args.report is not None:
            print(f"\nwrote report to {args.report}")
    return 0

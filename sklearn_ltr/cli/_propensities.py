"""``evaluate`` and ``compare`` on a click log: the examination propensity of every data row.

The data file's labels are then clicks (1 clicked, 0 shown and not clicked), and the
counterfactual metrics ``ips_dcg[@k]`` and ``ips_ndcg[@k]``
(:func:`sklearn_ltr.metrics.ips_dcg_score`, :func:`sklearn_ltr.metrics.ips_ndcg_score`) weight
each click by its clipped inverse propensity. The propensities come in one of two ways:

1. ``--propensities FILE``: one examination propensity in (0, 1] per data row, in file order.
2. ``--propensity-curve FILE``: one propensity per display position (line 1: position 1, ...),
   e.g. estimated from the log; each row's position is its line in ``--positions FILE`` (one
   1-based rank per data row, as ``train --model two-tower --positions`` reads it) or, without
   it, its rank within its query in file order (the rows of a query in the order shown).

``--clip TAU`` is the smallest propensity kept (default 0.05, as in training: weights at most 20).
"""

from __future__ import annotations

import numpy as np

from sklearn_ltr.cli._data_files import _number_lines, check_input, read_rows_of_numbers
from sklearn_ltr.cli._errors import CLIError
from sklearn_ltr.clicks import PROPENSITY_CLIP

__all__ = ["IPS_METRICS", "add_click_log_options", "click_log_inputs", "click_log_paths", "wants_click_log"]

#: ``--metrics`` default when the data file is a click log (propensities given).
IPS_METRICS = "ips_dcg@10,ips_ndcg@10"


def add_click_log_options(parser):
    """The click-log options of ``evaluate`` and ``compare``: one spelling, one meaning."""
    group = parser.add_argument_group(
        "click log", "the labels of --data are clicks (0/1); these give each row's examination propensity for the "
                     "counterfactual metrics ips_dcg[@k] and ips_ndcg[@k] (the default --metrics then)")
    group.add_argument("--propensities", metavar="FILE",
                       help="examination propensity in (0, 1] of every data row, one per line")
    group.add_argument("--propensity-curve", metavar="FILE",
                       help="propensity of each display position, one per line (line 1: position 1); a row's position "
                            "comes from --positions, or is its rank within its query in file order")
    group.add_argument("--positions", metavar="FILE",
                       help="with --propensity-curve: display position (1-based rank) of every data row, one per line")
    group.add_argument("--clip", type=float, default=PROPENSITY_CLIP, metavar="TAU",
                       help=f"smallest propensity kept before inverting (default {PROPENSITY_CLIP:g}: weights at most "
                            f"{1 / PROPENSITY_CLIP:g})")


def wants_click_log(args):
    """Whether the command was given a click log's propensities (checking the options' combination)."""
    if args.propensities is not None and (args.propensity_curve is not None or args.positions is not None):
        raise CLIError("--propensities gives every row's propensity; it excludes --propensity-curve and --positions "
                       "(which compute it from each row's display position).")
    if args.positions is not None and args.propensity_curve is None:
        raise CLIError("--positions needs --propensity-curve FILE: the examination propensity of each position "
                       "(one per line, line 1 for position 1), e.g. estimated from the click log.")
    if not 0 < args.clip <= 1:
        raise CLIError(f"--clip must be in (0, 1] (the smallest propensity kept); got {args.clip:g}.")
    return args.propensities is not None or args.propensity_curve is not None


def click_log_paths(args):
    """``[(option and path, path)]`` of the click-log files given: inputs that no output may overwrite."""
    return [(f"{option} {path!r}", path) for option, path in
            (("--propensities", args.propensities), ("--propensity-curve", args.propensity_curve),
             ("--positions", args.positions)) if path is not None]


def _read_curve(path):
    """The propensity of each position 1, 2, ... from a curve file: finite numbers in (0, 1], one per line."""
    check_input(path, "propensity curve")
    curve = []
    for number, fields in _number_lines(path, "propensity curve"):
        try:
            (value,) = (float(field) for field in fields)
        except ValueError:
            raise CLIError(f"propensity curve {path!r}, line {number}: expected one number (the propensity of "
                           f"position {len(curve) + 1}), got {' '.join(fields)[:40]!r}.") from None
        if not 0 < value <= 1:
            raise CLIError(f"propensity curve {path!r}, line {number}: {value:g} is not an examination probability "
                           f"in (0, 1]" + (" (an inverse-propensity weight? give 1 / weight)" if value > 1 else "")
                           + ".")
        curve.append(value)
    if not curve:
        raise CLIError(f"propensity curve {path!r} has no values; give one propensity per display position.")
    return np.asarray(curve)


def _check_propensities(values, path):
    bad = np.flatnonzero((values <= 0) | (values > 1))
    if bad.size:
        value = values[bad[0]]
        hint = " (an inverse-propensity weight? give 1 / weight)" if value > 1 else ""
        raise CLIError(f"propensities file {path!r}, value {bad[0] + 1}: {value:g} is not an examination probability "
                       f"in (0, 1]{hint}.")
    return values


def click_log_inputs(args, data):
    """``(propensity per row, description)`` of ``data``'s click log; ``(None, None)`` without click-log options."""
    if not wants_click_log(args):
        return None, None
    labels = np.unique(data.y)
    if not np.isin(labels, (0, 1)).all():
        shown = ", ".join(f"{v:g}" for v in labels[:6]) + (", ..." if len(labels) > 6 else "")
        raise CLIError(f"the click-log options need clicks as the labels of --data {data.path!r} (1 clicked, 0 shown "
                       f"and not clicked); it has labels {shown}.")
    n_rows = len(data.y)
    if args.propensities is not None:
        propensity = _check_propensities(read_rows_of_numbers(args.propensities, n_rows, what="propensities file"),
                                         args.propensities)
        source = f"propensities from {args.propensities!r}"
    else:
        curve = _read_curve(args.propensity_curve)
        if args.positions is not None:
            positions = read_rows_of_numbers(args.positions, n_rows, what="positions file", integer=True)
            where = f"--positions {args.positions!r}"
        else:
            from sklearn_ltr._groups import QueryGroups

            positions = QueryGroups(data.groups).positions + 1
            where = "the rank of each row within its query in file order"
        if positions.max() > curve.size:
            raise CLIError(f"propensity curve {args.propensity_curve!r} gives {curve.size} positions, but {where} "
                           f"has position {int(positions.max())}; give a propensity for every position shown.")
        propensity = curve[positions - 1]
        source = f"propensities from curve {args.propensity_curve!r} at positions from {where}"
    description = (f"click log: {n_rows:,} impressions, {int(data.y.sum()):,} clicks; {source}; weights "
                   f"1 / max(propensity, {args.clip:g})")
    return propensity, description

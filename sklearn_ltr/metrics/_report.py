"""A self-contained HTML report of a ranker comparison, and its figures.

:func:`write_comparison_report` turns the :class:`~sklearn_ltr.metrics.SignificanceTable` of
one or more metrics (from :func:`~sklearn_ltr.metrics.compare_rankings`, one per metric, the
same systems in the same order) into one HTML page: the table of each metric, a figure per
system of its per-query differences from the baseline, sorted (as IR papers show them), and
the distribution of every system's per-query values. The page needs nothing but itself: its
style is inline and its figures are PNG images embedded as ``data:`` URIs, drawn by matplotlib
(an optional dependency) on figures of its own, without pyplot. :func:`plot_comparison` draws
the same figures through pyplot, for a notebook or a script.
"""

from __future__ import annotations

import base64
import html
import inspect
import io

import numpy as np

from sklearn_ltr._atomic import write_atomically
from sklearn_ltr.utils._optional import import_optional

__all__ = ["plot_comparison", "write_comparison_report"]

_WHAT = "the comparison report"
_BETTER, _WORSE, _TIED, _MEAN = "#2f9e44", "#e03131", "#868e96", "#1971c2"
_PANEL = (3.9, 2.9)  # inches per metric panel
_COLUMNS = 3  # panels per row

_STYLE = """
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif;
       color: #212529; background: #fff; margin: 0; }
main { max-width: 1180px; margin: 0 auto; padding: 24px 32px 48px; }
h1 { font-size: 1.7em; margin: 0.2em 0 0.3em; }
h2 { font-size: 1.3em; margin: 1.6em 0 0.5em; border-bottom: 1px solid #dee2e6; padding-bottom: 0.2em; }
h2 .sub { font-weight: normal; color: #6c757d; font-size: 0.8em; }
p.settings, p.description { color: #495057; margin: 0.3em 0; }
table.comparison { border-collapse: collapse; font-variant-numeric: tabular-nums; margin: 0.6em 0; }
table.comparison th, table.comparison td { padding: 4px 12px; text-align: right; border-bottom: 1px solid #e9ecef; }
table.comparison th:first-child { text-align: left; }
table.comparison thead th { border-bottom: 2px solid #adb5bd; background: #f8f9fa; }
table.comparison tr.baseline { color: #495057; background: #f8f9fa; }
td.significant { font-weight: 700; color: #1864ab; }
td.significant::after { content: " *"; }
.positive { color: #2b8a3e; }
.negative { color: #c92a2a; }
p.note { color: #6c757d; font-size: 0.9em; max-width: 60em; }
figure { margin: 1.2em 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #e9ecef; }
figcaption { color: #495057; font-size: 0.92em; margin-top: 0.3em; }
footer { color: #868e96; font-size: 0.85em; margin-top: 3em; }
"""


#: What the report reads of a table besides its rows. The report is below the table in the import
#: graph (``SignificanceTable.to_html`` calls it), so it knows a table by these attributes, as
#: scikit-learn's HTML display knows an estimator by ``get_params``, rather than by importing the class.
_TABLE_ATTRIBUTES = ("baseline_values", "values", "metric", "tests", "correction", "n_queries")


def _format_p(p):
    """A p-value as the text and HTML tables print it: 4 decimals, scientific notation below 1e-4."""
    if p is None:
        return "-"
    return f"{p:.4f}" if p >= 1e-4 else f"{p:.1e}"


def _is_table(obj):
    return all(hasattr(obj, name) for name in _TABLE_ATTRIBUTES)


def _as_tables(tables):
    """A list of tables with per-query values, the same systems in the same order; or an error."""
    tables = [tables] if _is_table(tables) else list(tables)
    if not tables:
        raise ValueError("tables is empty; pass the SignificanceTable of at least one metric.")
    for table in tables:
        if not _is_table(table):
            raise TypeError(f"tables must hold SignificanceTable objects (from compare_rankings); got "
                            f"{type(table).__name__}.")
        if table.values is None or table.baseline_values is None:
            raise ValueError("a SignificanceTable without per-query values cannot be plotted; use the table that "
                             "compare_rankings or paired_significance returns.")
    systems = [result.system for result in tables[0]]
    for table in tables[1:]:
        if [result.system for result in table] != systems:
            raise ValueError(f"the tables compare different systems ({systems!r} and "
                             f"{[r.system for r in table]!r}); pass tables of the same systems in the same order.")
    return tables


def _label(table):
    """Display name of a table's metric: ``"NDCG@10"``, ``"MAP"``; ``"value"`` for per-query values."""
    if table.metric is None:
        return "value"
    name, at, k = table.metric.partition("@")
    return name.upper() + at + k


def _grid(fig, n):
    columns = min(n, _COLUMNS)
    rows = -(-n // columns)
    axes = fig.subplots(rows, columns, squeeze=False).ravel()
    for ax in axes[n:]:
        ax.set_visible(False)
    return axes[:n]


def _figure_size(n):
    columns, rows = min(n, _COLUMNS), -(-n // _COLUMNS)
    return (_PANEL[0] * columns, _PANEL[1] * rows + 0.5)


def _check_empty(empty_queries, tables):
    """``empty_queries`` as a boolean array of one entry per query of every table, or None."""
    if empty_queries is None:
        return None
    empty = np.asarray(empty_queries)
    if empty.dtype != bool or empty.ndim != 1:
        raise ValueError(f"empty_queries must be a 1-D boolean array, one entry per query compared; got an array of "
                         f"dtype {empty.dtype} and shape {empty.shape}.")
    for table in tables:
        if table.n_queries != empty.size:
            raise ValueError(f"empty_queries has {empty.size} entries, but the {_label(table)} table compares "
                             f"{table.n_queries} queries; give one entry per query, in the tables' query order.")
    return empty if empty.any() else None


def _draw_differences(fig, tables, j, baseline_name, empty=None):
    """Panel per metric: system ``j``'s per-query differences from the baseline, sorted, as bars.

    Queries without a relevant document (``empty``) are left out of the bars and of the
    better/worse/tied counts: no ranking changes their value, so every system scores them
    alike by convention, which is no tie between the rankings.
    """
    system = str(tables[0][j].system)
    for ax, table in zip(_grid(fig, len(tables)), tables, strict=True):
        every = table.values[j] - table.baseline_values
        d = np.sort(every if empty is None else every[~empty])[::-1]
        colors = np.where(d > 0, _BETTER, np.where(d < 0, _WORSE, _TIED))
        x = np.arange(d.size)
        ax.bar(x, d, width=1.0, color=colors, linewidth=0)
        ax.axhline(0.0, color="#343a40", linewidth=0.8)
        # The mean of the table (every query compared), so that the line and the table agree.
        over = "" if empty is None else f" (all {every.size})"
        ax.axhline(every.mean(), color=_MEAN, linestyle="--", linewidth=1.2, label=f"mean{over} {every.mean():+.4f}")
        better, worse = int((d > 0).sum()), int((d < 0).sum())
        title = f"{_label(table)}: {better} better, {worse} worse, {d.size - better - worse} tied"
        if empty is not None:
            title += f"\n({int(empty.sum())} without a relevant document left out)"
        ax.set_title(title, fontsize=10)
        ax.set_xlim(-0.5, max(d.size, 1) - 0.5)
        ax.set_xlabel(f"{d.size} queries, sorted by difference", fontsize=9)
        ax.set_ylabel(f"{_label(table)} difference", fontsize=9)
        ax.tick_params(labelsize=8)
        ax.legend(loc="upper right", fontsize=8.5, frameon=False)
    fig.suptitle(f"{system} \u2212 {baseline_name}, per query", fontsize=12)


def _horizontal(ax):
    """``boxplot``'s option for horizontal boxes: ``orientation`` from matplotlib 3.10, ``vert`` before."""
    return {"orientation": "horizontal"} if "orientation" in inspect.signature(ax.boxplot).parameters else {
        "vert": False}


def _draw_distributions(fig, tables, baseline_name):
    """Panel per metric: a horizontal box plot of each system's per-query values, baseline first."""
    names = [str(baseline_name), *(str(result.system) for result in tables[0])]
    for ax, table in zip(_grid(fig, len(tables)), tables, strict=True):
        data = [table.baseline_values, *table.values]
        positions = np.arange(len(data), 0, -1)  # baseline on top
        parts = ax.boxplot(data, positions=positions, **_horizontal(ax), widths=0.6, showmeans=True, patch_artist=True,
                           meanprops={"marker": "D", "markerfacecolor": _MEAN, "markeredgecolor": _MEAN,
                                      "markersize": 5},
                           medianprops={"color": "#343a40"}, flierprops={"markersize": 3, "alpha": 0.5})
        for k, box in enumerate(parts["boxes"]):
            box.set_facecolor("#e9ecef" if k == 0 else "#d0ebff")
        ax.set_yticks(positions)
        ax.set_yticklabels(names, fontsize=9)
        ax.set_title(f"{_label(table)} per query (\u25c6 mean)", fontsize=10)
        ax.set_xlabel(_label(table), fontsize=9)
        ax.tick_params(axis="x", labelsize=8)
        ax.grid(axis="x", color="#e9ecef")
        ax.set_axisbelow(True)
    fig.suptitle("Distribution of the per-query values", fontsize=12)


def _draw_all(new_figure, tables, baseline_name, empty=None):
    """``[(kind, system, figure)]``: a difference figure per system, then the distributions."""
    size = _figure_size(len(tables))
    size_distributions = (size[0], size[1] + 0.25 * len(tables[0]))
    drawn = []
    for j, result in enumerate(tables[0]):
        fig = new_figure(size)
        _draw_differences(fig, tables, j, baseline_name, empty)
        drawn.append(("differences", result.system, fig))
    fig = new_figure(size_distributions)
    _draw_distributions(fig, tables, baseline_name)
    drawn.append(("distributions", None, fig))
    return drawn


def plot_comparison(tables, *, baseline_name="baseline", empty_queries=None):
    """Draw the figures of a comparison with matplotlib's pyplot: per-query differences and distributions.

    One figure per system compared with the baseline, with a panel per metric: the
    per-query differences *system minus baseline*, sorted from the largest gain to the
    largest loss (bars above 0: queries where the system is better), and their mean;
    then one figure of box plots of every system's per-query values, baseline first.

    Parameters
    ----------
    tables : SignificanceTable or sequence of SignificanceTable
        The result of :func:`compare_rankings` (or :func:`paired_significance`) for one
        metric, or for several metrics of the same systems in the same order.
    baseline_name : str, default="baseline"
        The baseline's name in titles and labels.
    empty_queries : array-like of bool, default=None
        One entry per query compared (in the tables' query order: sorted query ids for
        :func:`compare_rankings`), True for a query without a relevant document. Every
        system scores such a query alike by the metric's convention (1 for NDCG and MAP, 0
        for MRR, ...), so the difference figures leave these queries out and count them
        apart, never as ties; the means and box plots keep them, as the tables do.

    Returns
    -------
    figures : list of matplotlib.figure.Figure
        The difference figure of each system, in the tables' order, then the
        distributions. They are pyplot figures: ``plt.show()`` shows them,
        ``plt.close(fig)`` releases one.

    Raises
    ------
    ImportError
        When matplotlib is not installed (``pip install 'sklearn-ltr[benchmark]'``).
    ValueError
        When ``tables`` is empty, lacks per-query values or holds tables of different systems,
        or ``empty_queries`` is not one boolean per query compared.

    See Also
    --------
    write_comparison_report : The same figures and the tables in one HTML page.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> from sklearn_ltr.metrics import paired_significance, plot_comparison
    >>> table = paired_significance([0.2, 0.5, 0.4, 0.6], {"new": [0.3, 0.7, 0.4, 0.5]},
    ...                             tests="t-test")
    >>> figures = plot_comparison(table, baseline_name="old")
    >>> len(figures), figures[0].get_suptitle()
    (2, 'new − old, per query')
    >>> plt.close("all")
    """
    tables = _as_tables(tables)
    empty = _check_empty(empty_queries, tables)
    plt = import_optional("matplotlib.pyplot", "plot_comparison")
    return [fig for _, _, fig in _draw_all(lambda size: plt.figure(figsize=size, layout="constrained"),
                                           tables, baseline_name, empty)]


def _png(fig):
    """``data:`` URI of the figure as a PNG image (rendered by matplotlib's Agg canvas)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, metadata={"Software": None})
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _cell(field, value, text=None, css=None):
    classes = f' class="{css}"' if css else ""
    return (f'<td data-field="{field}" data-value="{value!r}"{classes}>'
            f"{html.escape(text if text is not None else f'{value:.4f}')}</td>")


def _sign(value):
    return "positive" if value > 0 else "negative" if value < 0 else None


def _pvalue_columns(table):
    """``[(field, title, decisive)]``: the p-value columns, and whether each decides significance."""
    columns = []
    for test, field in (("t-test", "t_pvalue"), ("randomization", "randomization_pvalue")):
        if test in table.tests:
            columns.append((field, f"{test} p", table.correction is None))
            if table.correction is not None:
                columns.append((field + "_adjusted", f"{test} p ({table.correction})", True))
    return columns


def _table_html(table, baseline_name, alpha):
    pvalues = _pvalue_columns(table)
    bootstrap = "bootstrap" in table.tests
    head = ["system", "mean", "difference"]
    head += [f"{table.confidence_level:.0%} CI of the difference"] if bootstrap else []
    head += [title for _, title, _ in pvalues]
    rows = [f"<tr>{''.join(f'<th>{html.escape(title)}</th>' for title in head)}</tr>"]
    rows.append(f'<tr class="baseline" data-system="{html.escape(str(baseline_name))}">'
                f"<th>{html.escape(str(baseline_name))}</th>{_cell('mean', table.baseline_mean)}"
                f'<td colspan="{len(head) - 2}" style="text-align:left">baseline</td></tr>')
    for result in table:
        cells = [_cell("mean", result.mean),
                 _cell("mean_difference", result.mean_difference, f"{result.mean_difference:+.4f}",
                       _sign(result.mean_difference))]
        if bootstrap:
            cells.append(f'<td class="ci">[<span data-field="ci_low" data-value="{result.ci_low!r}">'
                         f"{result.ci_low:+.4f}</span>, <span data-field=\"ci_high\" "
                         f'data-value="{result.ci_high!r}">{result.ci_high:+.4f}</span>]</td>')
        for field, _, decisive in pvalues:
            value = getattr(result, field)
            cells.append(_cell(field, value, _format_p(value), "significant" if decisive and value < alpha else None))
        name = html.escape(str(result.system))
        rows.append(f'<tr data-system="{name}"><th>{name}</th>{"".join(cells)}</tr>')
    body = "\n".join(rows[1:])
    return (f'<table class="comparison" data-metric="{html.escape(str(table.metric))}">\n'
            f"<thead>{rows[0]}</thead>\n<tbody>\n{body}\n</tbody>\n</table>")


def _settings(table, baseline_name, alpha):
    tests = {"t-test": "paired t-test", "randomization": f"randomization test ({table.n_resamples:,} sign flips)",
             "bootstrap": f"percentile bootstrap ({table.n_resamples:,} resamples of the queries)"}
    text = (f"Baseline: <b>{html.escape(str(baseline_name))}</b>. Tests: "
            f"{', '.join(tests[test] for test in table.tests)}. ")
    if table.correction is not None:
        text += (f"p-values {table.correction.capitalize()}-corrected over the {len(table)} "
                 f"system{'s' if len(table) > 1 else ''} compared with the baseline (raw ones beside them). ")
    return text + f"<b>*</b> marks p &lt; {alpha:g}{' after correction' if table.correction else ''}."


def _empty_note(tables, empty):
    """The footnote on queries without a relevant document: how many, how the tables count them, the plots."""
    counted = []
    for table in tables:
        values = np.unique(table.baseline_values[empty])
        counted.append(f"{_label(table)} {values[0]:g}" if values.size == 1 else f"{_label(table)} as it defines")
    return (f"The difference plots leave out the {int(empty.sum()):,} of {empty.size:,} queries that have no "
            f"relevant document (no label above 0): every system scores them alike, by the metric's convention "
            f"({', '.join(counted)} in the tables), so they are neither better, worse nor tied.")


def _page(tables, baseline_name, title, description, alpha, *, empty_queries=None, note=None):
    """The HTML page, as a str, after checking the arguments."""
    tables = _as_tables(tables)
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1); got {alpha!r}.")
    empty = _check_empty(empty_queries, tables)
    first = tables[0]
    parts = [f"<h1>{html.escape(title)}</h1>"]
    if description:
        parts.append(f'<p class="description">{html.escape(description)}</p>')
    parts.append(f'<p class="settings">{_settings(first, baseline_name, alpha)}</p>')
    for table in tables:
        parts.append(f'<section class="metric"><h2>{html.escape(_label(table))} '
                     f'<span class="sub">over {table.n_queries:,} queries</span></h2>')
        parts.append(_table_html(table, baseline_name, alpha))
        parts.append("</section>")
    parts.append('<p class="note">Differences are <i>system &minus; baseline</i> over the same queries: a positive '
                 "difference means the system scores higher.</p>")
    if empty is not None:
        parts.append(f'<p class="note empty-queries">{html.escape(_empty_note(tables, empty))}</p>')
    if note:
        parts.append(f'<p class="note">{html.escape(note)}</p>')
    figure = import_optional("matplotlib.figure", _WHAT).Figure
    drawn = _draw_all(lambda size: figure(figsize=size, layout="constrained"), tables, baseline_name, empty)
    parts.append('<section class="figures"><h2>Per-query differences from the baseline</h2>')
    for kind, system, fig in drawn:
        if kind == "distributions":
            parts.append('</section>\n<section class="figures"><h2>Distributions</h2>')
            alt, caption = "box plots of the per-query values", (
                "Per-query values of every system: the box spans the middle half of the queries, the line is the "
                "median, \u25c6 the mean.")
            parts.append(f'<figure class="distributions"><img alt="{alt}" src="{_png(fig)}">'
                         f"<figcaption>{html.escape(caption)}</figcaption></figure>")
        else:
            name = html.escape(str(system))
            caption = (f"{system} \u2212 {baseline_name}: one bar per query, sorted from the largest gain to the "
                       "largest loss; the dashed line is the mean difference.")
            parts.append(f'<figure class="differences" data-system="{name}"><img alt="per-query differences of '
                         f'{name}" src="{_png(fig)}"><figcaption>{html.escape(caption)}</figcaption></figure>')
    parts.append("</section>")
    parts.append("<footer>Written by sklearn-ltr (sklearn_ltr.metrics.write_comparison_report).</footer>")
    body = "\n".join(parts)
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{html.escape(title)}</title>\n<style>{_STYLE}</style>\n</head>\n<body>\n<main>\n{body}\n"
            f"</main>\n</body>\n</html>\n")


def write_comparison_report(tables, path, *, baseline_name="baseline", title="Ranker comparison",
                            description=None, alpha=0.05, empty_queries=None, note=None):
    """Write a comparison of rankers as one self-contained HTML page.

    The page holds, for each metric, the table of :func:`compare_rankings`: every system's
    mean, its difference from the baseline with the bootstrap confidence interval, the
    t-test and randomization p-values (raw, and corrected when the tables were computed
    with a ``correction``), the significant ones marked; then one figure per system of its
    per-query differences from the baseline, sorted, and box plots of every system's
    per-query values (see :func:`plot_comparison`). It loads nothing from the network:
    the style is inline and the figures are PNG images embedded in the page. Each table
    cell carries its exact value in a ``data-value`` attribute. The file is written whole
    or not at all (a temporary file renamed over ``path``).

    Parameters
    ----------
    tables : SignificanceTable or sequence of SignificanceTable
        The result of :func:`compare_rankings` for one metric, or a sequence of them for
        several metrics of the same systems in the same order.
    path : str or path-like
        The HTML file to write.
    baseline_name : str, default="baseline"
        The baseline's name in the tables and figures.
    title : str, default="Ranker comparison"
        The page's title.
    description : str or None, default=None
        A line under the title, e.g. the data set compared on.
    alpha : float, default=0.05
        Significance level: p-values below it are marked (the corrected ones when there
        is a correction).
    empty_queries : array-like of bool, default=None
        One entry per query compared, True for a query without a relevant document: the
        difference figures leave these out rather than count them as ties (see
        :func:`plot_comparison`), and a footnote says how many there are and how each
        table counts them.
    note : str or None, default=None
        A footnote under the tables, e.g. the convention the values were computed with.

    Raises
    ------
    ImportError
        When matplotlib is not installed (``pip install 'sklearn-ltr[benchmark]'``).
    ValueError
        When ``tables`` is empty, lacks per-query values or holds tables of different
        systems, ``alpha`` is not in (0, 1), or ``empty_queries`` is not one boolean per
        query compared.
    OSError
        When the file cannot be written; a previous file is then left as it was.

    See Also
    --------
    SignificanceTable.to_html : The same page for the table of one metric.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> import numpy as np
    >>> from sklearn_ltr.metrics import compare_rankings, write_comparison_report
    >>> rng = np.random.default_rng(0)
    >>> qid = np.repeat(np.arange(40), 8)
    >>> y = rng.integers(0, 3, size=qid.size)
    >>> baseline, better = y + rng.normal(size=(2, qid.size)) * [[2.0], [1.0]]
    >>> tables = [compare_rankings(y, baseline, {"better": better}, qid, metric=m, k=10,
    ...                            n_resamples=1000, random_state=0) for m in ("ndcg", "map")]
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     write_comparison_report(tables, Path(tmp, "report.html"), baseline_name="old")
    ...     page = Path(tmp, "report.html").read_text()
    >>> page.count('<figure class="differences"'), "http" in page
    (1, False)
    """
    page = _page(tables, baseline_name, title, description, alpha, empty_queries=empty_queries,
                 note=note).encode("utf-8")
    write_atomically(path, lambda f: f.write(page))

"""plot_comparison's figures name the baseline, and a missing matplotlib names the function that needs it."""

import sys

import matplotlib
import pytest

from sklearn_ltr.metrics import paired_significance, plot_comparison

matplotlib.use("Agg")


@pytest.fixture
def table():
    return paired_significance([0.2, 0.5, 0.4, 0.6], {"new": [0.3, 0.7, 0.4, 0.5]}, tests="t-test")


def _names(figures):
    differences, distributions = figures
    return differences.get_suptitle(), [t.get_text() for t in distributions.axes[0].get_yticklabels()]


@pytest.mark.parametrize(("options", "name"), [({}, "baseline"), ({"baseline_name": "BM25"}, "BM25")])
def test_the_figures_name_the_baseline(table, options, name):
    import matplotlib.pyplot as plt

    figures = plot_comparison(table, **options)
    try:
        assert _names(figures) == (f"new \u2212 {name}, per query", [name, "new"])
    finally:
        for figure in figures:
            plt.close(figure)


def test_the_figures_are_sized_and_laid_out_for_their_panels(table):
    """One metric, one system: the difference figure and the box plots (a quarter inch taller per system)."""
    import matplotlib.pyplot as plt

    from sklearn_ltr.metrics._report import _figure_size

    figures = plot_comparison(table)
    try:
        width, height = _figure_size(1)
        assert [tuple(f.get_size_inches()) for f in figures] == [(width, height), (width, height + 0.25)]
        assert {type(f.get_layout_engine()).__name__ for f in figures} == {"ConstrainedLayoutEngine"}
    finally:
        for figure in figures:
            plt.close(figure)


def test_without_matplotlib_the_error_names_plot_comparison(table, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)  # import fails as if not installed
    with pytest.raises(ImportError, match=r"^plot_comparison needs the 'matplotlib\.pyplot' package"):
        plot_comparison(table)

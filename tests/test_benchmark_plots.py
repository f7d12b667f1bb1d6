"""benchmarks/plot_results.py: the docs' figures and CSV tables come from the stored results.

Quality's are in benchmarks/results, those of two one-off studies (the loss comparison and the debiasing
study) in studies/results.

The script is run into a temporary folder; its CSV tables must equal the committed ones
(so the tables on the benchmarks page are what the stored reports say), every figure must
be a real PNG, and a missing or inconsistent results file must fail with a message.
"""

import importlib.util
import shutil
import struct
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
STUDY_RESULTS = ROOT / "studies" / "results"
TABLES = ("quality_ndcg.csv", "dasalc_ablation.csv", "losses_mq2008.csv", "debias_ndcg.csv", "debias_observation.csv")
FIGURES = ("quality_ndcg.png", "dasalc_ablation.png", "losses_mq2008.png", "debias_ndcg.png")
# Inputs of the script (the reports written by the bench_*.py scripts).
REPORTS = ("quality.json", "quality.md", "losses_mq2008.md", "debias.md")


def _stored(name):
    """The stored copy of a report, table or figure: quality's in benchmarks/, the studies' in studies/."""
    return RESULTS / name if name.startswith(("quality", "dasalc")) else STUDY_RESULTS / name


@pytest.fixture(scope="module")
def plot_results():
    spec = importlib.util.spec_from_file_location("plot_results", ROOT / "benchmarks" / "plot_results.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _png_size(path):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path.name} is not a PNG"
    width, height = struct.unpack(">II", data[16:24])  # the IHDR chunk
    return width, height


def test_stored_figures_and_tables_are_reproduced(plot_results, tmp_path, capsys):
    assert plot_results.main(["--out", str(tmp_path)]) == 0
    written = sorted(path.name for path in tmp_path.iterdir())
    assert written == sorted(TABLES + FIGURES)
    for name in TABLES:
        assert (tmp_path / name).read_text() == _stored(name).read_text(), name
    for name in FIGURES:
        width, height = _png_size(tmp_path / name)
        assert (width, height) == _png_size(_stored(name)), name
        assert width >= 600 and height >= 300
    assert capsys.readouterr().out.count("wrote ") == len(TABLES) + len(FIGURES)


def test_the_docs_show_every_figure_and_table():
    page = (ROOT / "docs" / "benchmarks.rst").read_text()
    for name in (*TABLES, *FIGURES, "debias_observation_curve.png"):
        assert f"../{_stored(name).relative_to(ROOT).as_posix()}" in page, name
        assert _stored(name).is_file(), name


def test_missing_report_is_a_clear_error(plot_results, tmp_path, capsys):
    for name in REPORTS:
        shutil.copy(_stored(name), tmp_path / name)
    (tmp_path / "debias.md").unlink()
    assert plot_results.main(["--results", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "missing results file" in err and "debias.md" in err
    assert not list(tmp_path.glob("*.png"))


def test_reports_from_different_runs_are_refused(plot_results, tmp_path, capsys):
    for name in REPORTS:
        shutil.copy(_stored(name), tmp_path / name)
    report = (tmp_path / "quality.md").read_text()
    # Change one figure of the markdown report: it no longer agrees with quality.json.
    first = next(line for line in report.splitlines() if line.startswith("|") and "±" in line)
    value = first.split("|")[2].strip().split(" ")[0]
    changed = first.replace(value, f"{float(value) + 0.05:.4f}", 1)
    (tmp_path / "quality.md").write_text(report.replace(first, changed, 1))
    assert plot_results.main(["--results", str(tmp_path)]) == 1
    assert "disagree" in capsys.readouterr().err

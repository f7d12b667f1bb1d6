"""Smoke check of the two-position-protocol study (``studies/bench_debias_protocols.py``): store, resume, summary.

Not in the test suite (the study's results are frozen); run it after changing the study's scripts::

    PYTHONPATH=. python -m pytest studies/smoke_debias_protocols.py

A ``--quick`` run on tiny MSLR-shaped data, the reference trainer and the library's variants,
into a temporary folder: the store holds one study per trainer, the library's rows are trained
on the reference trainer's click logs, a second run resumes (runs no cell twice), and the report
holds the summary table with the published row.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

STUDIES = Path(__file__).resolve().parent
pytest.importorskip("matplotlib")


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(STUDIES))
    try:
        path = STUDIES / "bench_debias_protocols.py"
        spec = importlib.util.spec_from_file_location("bench_debias_protocols", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.path.remove(str(STUDIES))


QUICK = ["--quick", "--study", "mslr", "--n-jobs", "1", "--mslr-queries", "120", "40", "40", "--weights", "1"]


@pytest.fixture(scope="module")
def store(bench, tmp_path_factory):
    out = tmp_path_factory.mktemp("debias_protocols")
    bench.main([*QUICK, "--out", str(out), "--batch-size", "64", "--dropout-on", "hidden", "--no-ours"])
    bench.main([*QUICK, "--out", str(out), "--library"])
    return out


def test_one_study_per_trainer(store, bench):
    results = json.loads((store / "debias_protocols.json").read_text())
    assert set(results) == {"mslr first", "mslr library"}
    first, library = results["mslr first"], results["mslr library"]
    assert first["config"]["trainer"]["batch_size"] == 64 and first["config"]["trainer"]["dropout_on"] == "hidden"
    assert set(library["cells"][0]["results"]["true-rank"]) == set(bench.LIBRARY)
    assert set(first["cells"][0]["results"]["true-rank"]) == {*bench.METHODS, bench.LAMBDAMART}
    # Same (fold, w, seed): the library trained on the very click logs of the reference trainer.
    assert first["cells"][0]["sizes"] == library["cells"][0]["sizes"]
    for cell in library["cells"]:
        for protocol in bench.PROTOCOLS:
            curve = cell["results"][protocol]["PAL multiplicative"]["curve"]
            assert curve[0] == pytest.approx(1.0) and np.isfinite(curve).all()


def test_a_second_run_resumes_without_running_a_cell_twice(store, bench):
    before = json.loads((store / "debias_protocols.json").read_text())
    bench.main([*QUICK, "--out", str(store), "--library"])
    after = json.loads((store / "debias_protocols.json").read_text())
    assert after["mslr library"]["cells"] == before["mslr library"]["cells"]
    assert [r["cells"] for r in after["mslr library"]["runs"]] == [len(before["mslr library"]["cells"]), 0]


def test_other_settings_are_refused_unless_fresh(store, bench):
    with pytest.raises(SystemExit, match="other settings"):
        bench.main([*QUICK, "--out", str(store), "--library", "--keep", "0.2"])


def test_report_holds_the_summary_with_the_published_row(store, bench):
    text = (store / "debias_protocols.md").read_text()
    summary = text[text.index("## Summary"):text.index("\n## MSLR-shaped")]
    assert summary.count("| published (yng87/unbiased-ltr, first version) | 0.322 | 0.347 |  | 0.353 | 0.360 |") == 1
    assert "reference trainer, first version" in summary and "sklearn_ltr" in summary
    assert (store / "debias_protocols_final.png").stat().st_size > 10_000


def test_studies_of_the_first_format_are_migrated(bench, tmp_path):
    path = tmp_path / "debias_protocols.json"
    path.write_text(json.dumps({"mq2008": {"minutes": 2.0, "load_start": "1 1 1", "load_end": "2 2 2", "cells": []}}))
    results = bench.open_store(path)
    assert list(results) == ["mq2008 current"]
    assert results["mq2008 current"]["runs"] == [{"seconds": 120.0, "load_start": "1 1 1", "load_end": "2 2 2",
                                                  "cells": 0}]


def test_trainer_names(bench):
    args = bench.parse_args([])
    assert bench.trainer_of(args) == "current"
    assert bench.trainer_of(bench.parse_args(["--batch-size", "64", "--dropout-on", "hidden"])) == "first"
    assert bench.trainer_of(bench.parse_args(["--library"])) == "library"
    assert bench.trainer_of(bench.parse_args(["--batch-size", "16"])) == "batch16-output"


def _synthetic_study(methods, values, *, extra=None, val=None, seeds=(0, 1)):
    """A one-fold study at w = 1 whose per-query values are ``values[method]`` in every cell."""
    cells = []
    for seed in seeds:
        results = {}
        for protocol in ("true-rank", "reference"):
            results[protocol] = {m: {"ndcg": list(values[m]), "curve": [1.0, 0.5], **(val or {}).get(m, {})}
                                 for m in methods}
        cell = {"fold": 1, "w": 1.0, "seed": seed, "results": results}
        if extra is not None:
            cell["extra"] = {p: extra for p in ("true-rank", "reference")}
        cells.append(cell)
    return {"weights": [1.0], "folds": [1], "seeds": list(seeds), "cells": cells}


def test_recipe_sections_test_the_recipe_against_the_reference(bench):
    rng = np.random.default_rng(0)
    base = rng.uniform(0.2, 0.8, size=200)
    reference = {m: base + 0.01 * i for i, m in enumerate(bench.METHODS)}  # best: Gradient Reversal
    recipe_methods = list(bench.RECIPE)
    below = {m: base - 0.05 for m in recipe_methods}
    level = {m: base + 0.03 for m in recipe_methods}  # best and single at the reference's best
    truth = {m: i for i, m in enumerate(bench.SELECTABLE)}
    # The IPS estimate ranks the models as the truth does, the clicks the other way round.
    val = {m: {"val_ips": t, "val_ips_true": t, "val_clicks": -t} for m, t in truth.items()}
    val[bench.ORACLE] = {"val_ips": 0.0, "val_ips_true": 0.0, "val_clicks": 0.0}
    extra = {"_propensity": {"estimated": (1 / np.arange(1, bench.CURVE_POSITIONS + 1)).tolist()}}
    for recipe_values, verdict in ((below, "**significantly below**"), (level, "not below")):
        values = {**recipe_values}
        for i, m in enumerate(bench.SELECTABLE):  # the selectable models' true NDCG follows `truth`
            values[m] = recipe_values[m] + 1e-3 * i
        results = {"mslr current": _synthetic_study(bench.METHODS, reference),
                   "mslr recipe": _synthetic_study(recipe_methods, values, extra=extra, val=val)}
        text = "\n".join(bench.recipe_sections(results))
        row = next(line for line in text.splitlines() if line.startswith("| MSLR-shaped (make_ranking), (a)"))
        assert row.count(verdict) == 2, row
    selection = [line for line in text.splitlines() if "IPS-DCG@5, estimated propensities" in line]
    assert selection[0].split("|")[3].strip() == "+1.00" and selection[0].endswith("| 2/2 |")
    clicks = next(line for line in text.splitlines() if "NDCG@5 of the clicks" in line)
    assert clicks.split("|")[3].strip() == "-1.00" and clicks.endswith("| 0/2 |")
    estimated = next(line for line in text.splitlines() if line.startswith("| MSLR-shaped (make_ranking), (a)")
                     and "0.500 / 0.333" in line)
    assert estimated.endswith("| 0.0% | 0.0% |")

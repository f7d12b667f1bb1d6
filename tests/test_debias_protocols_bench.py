"""The two-position-protocol study script (``benchmarks/bench_debias_protocols.py``): store, resume, summary.

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

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
pytest.importorskip("matplotlib")


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(BENCHMARKS))
    try:
        path = BENCHMARKS / "bench_debias_protocols.py"
        spec = importlib.util.spec_from_file_location("bench_debias_protocols", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.path.remove(str(BENCHMARKS))


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

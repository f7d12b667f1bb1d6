"""Figures and CSV tables of the stored benchmark results (no benchmark is re-run).

Reads ``benchmarks/results/quality.json`` (falling back to ``quality.md``), as written by
``bench_quality.py``, and the frozen reports of two one-off studies, ``studies/results/losses_mq2008.md``
and ``studies/results/debias.md`` (``studies/bench_losses.py``, ``studies/bench_debias.py``), and writes
next to each report, with matplotlib's Agg backend:

* ``quality_ndcg.png`` / ``quality_ndcg.csv``: test NDCG@1/5/10 per ranker, mean ± std over seeds,
  MQ2008 and OHSUMED side by side;
* ``losses_mq2008.png`` / ``losses_mq2008.csv``: test NDCG@10 ± std per loss, LambdaMART for reference;
* ``dasalc_ablation.png`` / ``dasalc_ablation.csv``: the cumulative DASALC ablation on both datasets;
* ``debias_ndcg.png`` / ``debias_ndcg.csv`` / ``debias_observation.csv``: NDCG@5 against the logging
  policy's quality ``w`` per method (MQ2008 and MSLR-shaped), and the learned observation curves.

``debias_observation_curve.png`` is drawn by ``studies/bench_debias.py`` itself (it needs the full curves, which
the markdown report does not keep). The PNGs carry no date or software version, so re-running this script
on unchanged results rewrites identical files (with the same matplotlib version).

Run: ``python benchmarks/plot_results.py [--results DIR] [--out DIR]`` (needs matplotlib; takes seconds).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import re
import sys
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
# The loss comparison and the debiasing study are one-off studies: their reports and figures are in studies/.
STUDY_RESULTS = Path(__file__).resolve().parents[1] / "studies" / "results"
# Where each report is stored, as the figures name it.
HOMES = {"quality.json": "benchmarks/results", "quality.md": "benchmarks/results",
         "losses_mq2008.md": "studies/results", "debias.md": "studies/results"}
METRICS = ("ndcg@1", "ndcg@5", "ndcg@10", "ndcg@10_paper")
METRIC_NAMES = {"ndcg@1": "NDCG@1", "ndcg@5": "NDCG@5", "ndcg@10": "NDCG@10",
                "ndcg@10_paper": "NDCG@10 (empty queries dropped)"}
DATASET_NAMES = {"mq2008": "MQ2008", "ohsumed": "OHSUMED"}
# The cumulative ablation of bench_quality.py: (step, parameters changed in the selected DASALC configuration).
ABLATION = (
    ("MLP + softmax loss", {"log1p": False, "noise_std": 0.0, "n_attention_layers": 0}),
    ("+ log1p", {"log1p": True, "noise_std": 0.0, "n_attention_layers": 0}),
    ("+ Gaussian noise", {"log1p": True, "n_attention_layers": 0}),
)
DASALC_STEP = "+ self-attention, latent cross (DASALC)"
PNG_METADATA = {"Software": None}  # no matplotlib version in the file (PNGs from Agg carry no date)


class ResultsError(RuntimeError):
    """A results file is missing or does not have the expected content."""


# --------------------------------------------------------------------------------------------------------------
# Reading the markdown reports


def read_results(path):
    if not path.is_file():
        raise ResultsError(f"missing results file {path}: run the benchmark that writes it first "
                           "(see benchmarks/README.md)")
    return path.read_text(encoding="utf-8")


def _cells(line):
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def parse_tables(text):
    """Every markdown table of ``text``: dicts with ``section`` (the last heading above it, '' if none),
    ``caption`` (the last non-empty paragraph line above it), ``header`` and ``rows`` (lists of cells)."""
    tables, section, caption, current = [], "", "", None
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("|"):
            cells = _cells(stripped)
            if current is None:
                current = {"section": section, "caption": caption, "header": cells, "rows": []}
                tables.append(current)
            elif not all(re.fullmatch(r":?-{3,}:?", cell) for cell in cells):
                current["rows"].append(cells)
            continue
        current = None
        if stripped.startswith("#"):
            section, caption = stripped.lstrip("#").strip(), ""
        elif stripped:
            caption = stripped
    return tables


def find_table(tables, source, *, section=None, caption=None, first_header=None):
    """The one table matching a section heading, a caption (a prefix, or a predicate) and the first header cell."""
    def caption_ok(text):
        return caption is None or (caption(text) if callable(caption) else text.startswith(caption))

    found = [t for t in tables
             if (section is None or t["section"].lower() == section.lower()) and caption_ok(t["caption"])
             and (first_header is None or t["header"][0] == first_header)]
    if len(found) != 1:
        raise ResultsError(f"{source}: expected one table (section {section!r}, first column {first_header!r}), "
                           f"found {len(found)}")
    return found[0]


def column(table, name, source):
    try:
        return table["header"].index(name)
    except ValueError:
        raise ResultsError(f"{source}: table {table['header']} has no column {name!r}") from None


def parse_value(cell):
    """'0.6674 ± 0.0107' -> (0.6674, 0.0107); '0.630' -> (0.63, nan); '' -> (nan, nan)."""
    cell = cell.strip().strip("*")
    if not cell:
        return math.nan, math.nan
    mean, _, std = cell.partition("±")
    try:
        return float(mean.replace(",", "")), float(std) if std.strip() else math.nan
    except ValueError:
        raise ResultsError(f"not a number or 'mean ± std': {cell!r}") from None


# --------------------------------------------------------------------------------------------------------------
# The tables


def _mean_std(values):
    return float(np.mean(values)), float(np.std(values))


def quality_from_json(path):
    """{'quality': [(dataset, model, {metric: (mean, std)}, n_runs)], 'ablation': [(dataset, step, {...}, n)]},
    aggregated as bench_quality.py does (population std over seeds)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    grid, final = data["grid"], data["final"]
    quality, ablation = [], []
    datasets = list(dict.fromkeys(r["dataset"] for r in grid))
    models = list(dict.fromkeys(r["model"] for r in grid))
    for dataset in datasets:
        best = {m: max((r for r in grid if r["dataset"] == dataset and r["model"] == m), key=lambda r: r["vali"])
                for m in models}
        for model in models:
            if model == "DASALCRanker":
                ensembles = [r for r in final if r["dataset"] == dataset and r["members"]]
                if not ensembles:
                    raise ResultsError(f"{path}: no DASALC ensemble runs for {dataset!r}")
                singles = [r["member_test"][0] for r in ensembles]
                members = [t for r in ensembles for t in r["member_test"]]
                groups = [("DASALCRanker", singles),
                          (f"DASALC-ens ({ensembles[0]['members']} seeds)", [r["test"] for r in ensembles]),
                          (f"(DASALCRanker, all {len(members)} members)", members)]
            else:
                runs = [best[model]] + [r for r in final if r["dataset"] == dataset and r["model"] == model]
                groups = [(model, [r["test"] for r in runs])]
            for name, tests in groups:
                quality.append((dataset, name, {m: _mean_std([t[m] for t in tests]) for m in METRICS}, len(tests)))
        dasalc = best["DASALCRanker"]["params"]
        for step, change in ABLATION:
            tests = [r["test"] for r in final if r["dataset"] == dataset and not r["members"]
                     and r["model"] == "DASALCRanker" and r["params"] == {**dasalc, **change}]
            if not tests:
                raise ResultsError(f"{path}: no ablation runs for {dataset!r}, step {step!r}")
            ablation.append((dataset, step, {m: _mean_std([t[m] for t in tests]) for m in METRICS}, len(tests)))
        singles = [r["member_test"][0] for r in final if r["dataset"] == dataset and r["members"]]
        ablation.append((dataset, DASALC_STEP, {m: _mean_std([t[m] for t in singles]) for m in METRICS},
                         len(singles)))
    return {"quality": quality, "ablation": ablation}


def quality_from_markdown(text, source):
    """The same as ``quality_from_json`` from ``quality.md`` (4 decimals; run counts unknown: 0)."""
    tables = parse_tables(text)
    datasets = [t["section"] for t in tables if t["header"][0] == "model"]
    quality, ablation = [], []
    for dataset in datasets:
        table = find_table(tables, source, section=dataset, first_header="model")
        for row in table["rows"]:
            values = {m: parse_value(row[column(table, METRIC_NAMES[m], source)]) for m in METRICS}
            quality.append((dataset, row[0], values, 0))
        table = find_table(tables, source, section=dataset, first_header="step")
        for row in table["rows"]:
            values = {m: parse_value(row[column(table, METRIC_NAMES[m], source)]) for m in ("ndcg@5", "ndcg@10")}
            ablation.append((dataset, row[0], values, 0))
    return {"quality": quality, "ablation": ablation}


def check_quality(from_json, text, source):
    """The JSON's aggregates must agree with the markdown report written by the same run."""
    from_md = quality_from_markdown(text, source)
    for key in ("quality", "ablation"):
        md = {(d, name): values for d, name, values, _ in from_md[key]}
        js = {(d, name): values for d, name, values, _ in from_json[key]}
        if set(md) != set(js):
            raise ResultsError(f"{source} and quality.json list different rows ({key}): {sorted(set(md) ^ set(js))}")
        for row, values in md.items():
            for metric, (mean, std) in values.items():
                if abs(mean - js[row][metric][0]) > 6e-5 or abs(std - js[row][metric][1]) > 6e-5:
                    raise ResultsError(f"{source} and quality.json disagree on {row} {metric}: "
                                       f"{mean} ± {std} vs {js[row][metric]} (files from different runs?)")


def load_quality(results):
    md_path, json_path = results / "quality.md", results / "quality.json"
    if json_path.is_file():
        quality = quality_from_json(json_path)
        if md_path.is_file():
            check_quality(quality, md_path.read_text(encoding="utf-8"), md_path)
        return quality, json_path
    return quality_from_markdown(read_results(md_path), md_path), md_path


def load_losses(results):
    source = results / "losses_mq2008.md"
    table = find_table(parse_tables(read_results(source)), source, first_header="loss")
    rows = []
    for row in table["rows"]:
        values = {name: parse_value(row[column(table, name, source)])
                  for name in ("vali NDCG@10", "test NDCG@1", "test NDCG@5", "test NDCG@10", "time (s)")}
        lr = row[column(table, "lr", source)]
        rows.append((row[0].strip("*").strip(), lr, values))
    return rows, source


def load_debias(results):
    """{dataset: (weights, {method: [NDCG@5 per w]})}, {dataset: (weights, {method: [curve cell per w]})}."""
    source = results / "debias.md"
    tables = parse_tables(read_results(source))
    datasets = list(dict.fromkeys(t["section"] for t in tables if t["header"][0] == "method"))
    if not datasets:
        raise ResultsError(f"{source}: no per-dataset tables (### sections) found")
    ndcg, curves = {}, {}
    for dataset in datasets:
        table = find_table(tables, source, section=dataset, first_header="method",
                           caption=lambda text: not text.startswith("Learned"))
        weights = [float(cell.split("=")[1]) for cell in table["header"][1:]]
        ndcg[dataset] = (weights, {row[0]: [parse_value(cell)[0] for cell in row[1:]] for row in table["rows"]})
        table = find_table(tables, source, section=dataset, first_header="method", caption="Learned observation")
        curves[dataset] = (weights, {row[0]: row[1:] for row in table["rows"]})
    return ndcg, curves, source


# --------------------------------------------------------------------------------------------------------------
# CSV and figures


def _fmt(mean_std, digits=4):
    mean, std = mean_std
    if math.isnan(mean):
        return ""
    return f"{mean:.{digits}f}" if math.isnan(std) else f"{mean:.{digits}f} ± {std:.{digits}f}"


def write_csv(path, header, rows):
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)
    return path


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcdefaults()  # the same figures whatever the user's matplotlibrc says
    plt.rcParams.update({"font.size": 9, "axes.titlesize": 10, "legend.fontsize": 8, "axes.grid": True,
                         "grid.alpha": 0.3, "savefig.dpi": 100})
    return plt


def _save(fig, path, source):
    fig.text(0.995, 0.005, f"data: {HOMES[source.name]}/{source.name}", ha="right", va="bottom", fontsize=6,
             color="0.4")
    fig.savefig(path, metadata=PNG_METADATA)
    fig.clf()
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path


def _name(dataset):
    return DATASET_NAMES.get(dataset.lower(), dataset)


def plot_quality(quality, source, out):
    plt = _pyplot()
    rows = [(d, name, v, n) for d, name, v, n in quality["quality"] if not name.startswith("(")]
    datasets = list(dict.fromkeys(d for d, *_ in rows))
    models = list(dict.fromkeys(name for _, name, *_ in rows))
    metrics = ("ndcg@1", "ndcg@5", "ndcg@10")
    colors = dict(zip(models, plt.get_cmap("tab10").colors, strict=False))
    markers = dict(zip(models, "osD^vP", strict=False))
    fig, axes = plt.subplots(1, len(datasets), figsize=(9, 3.6), squeeze=False)
    width = 0.7 / max(len(models) - 1, 1)
    for ax, dataset in zip(axes[0], datasets, strict=True):
        for i, model in enumerate(models):
            values = next((v for d, name, v, _ in rows if d == dataset and name == model), None)
            if values is None:
                continue
            x = np.arange(len(metrics)) - 0.35 + i * width
            ax.errorbar(x, [values[m][0] for m in metrics], yerr=[values[m][1] for m in metrics], fmt=markers[model],
                        color=colors[model], capsize=3, ms=5, label=model)
        ax.set_xticks(range(len(metrics)), [METRIC_NAMES[m] for m in metrics])
        ax.set_xlim(-0.6, len(metrics) - 0.4)
        ax.set_title(f"{_name(dataset)} Fold 1, test set")
        ax.grid(axis="x", visible=False)
    runs = {n for *_, n in rows}
    axes[0][0].set_ylabel("NDCG, mean ± std over seeds" if runs == {0} else
                          f"NDCG, mean ± std over {'/'.join(map(str, sorted(runs)))} seeds")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", bbox_to_anchor=(0.5, 0.02), ncol=len(models), frameon=False)
    fig.tight_layout(rect=(0, 0.09, 1, 1))
    png = _save(fig, out / "quality_ndcg.png", source)
    header = ["dataset", "model", *[METRIC_NAMES[m] for m in METRICS], "runs"]
    csv_rows = [[_name(d), name, *[_fmt(v[m]) for m in METRICS], n or ""] for d, name, v, n in quality["quality"]]
    return png, write_csv(out / "quality_ndcg.csv", header, csv_rows)


def plot_ablation(quality, source, out):
    plt = _pyplot()
    rows = quality["ablation"]
    datasets = list(dict.fromkeys(d for d, *_ in rows))
    fig, axes = plt.subplots(1, len(datasets), figsize=(9, 3.4), squeeze=False)
    labels = {"MLP + softmax loss": "MLP +\nsoftmax loss", "+ log1p": "+ log1p",
              "+ Gaussian noise": "+ Gaussian\nnoise", DASALC_STEP: "+ self-attention,\nlatent cross\n(= DASALC)"}
    for ax, dataset in zip(axes[0], datasets, strict=True):
        steps = [(name, v) for d, name, v, _ in rows if d == dataset]
        x = np.arange(len(steps))
        for metric, marker, shift in (("ndcg@5", "o", -0.06), ("ndcg@10", "s", 0.06)):
            ax.errorbar(x + shift, [v[metric][0] for _, v in steps], yerr=[v[metric][1] for _, v in steps],
                        fmt=f"{marker}-", capsize=3, ms=5, label=METRIC_NAMES[metric])
        ax.set_xticks(x, [labels.get(name, name) for name, _ in steps], fontsize=8)
        ax.set_title(f"DASALC ablation (cumulative), {_name(dataset)} test set")
        ax.set_xlim(-0.4, len(steps) - 0.6)
        ax.grid(axis="x", visible=False)
    axes[0][0].set_ylabel("NDCG, mean ± std over 3 seeds")
    axes[0][0].legend(loc="best")
    fig.tight_layout()
    png = _save(fig, out / "dasalc_ablation.png", source)
    csv_rows = [[_name(d), name, _fmt(v["ndcg@5"]), _fmt(v["ndcg@10"])] for d, name, v, _ in rows]
    return png, write_csv(out / "dasalc_ablation.csv", ["dataset", "step", "NDCG@5", "NDCG@10"], csv_rows)


def plot_losses(losses, source, out):
    plt = _pyplot()
    reference = [row for row in losses if row[1] == ""]
    trained = sorted((row for row in losses if row[1] != ""), key=lambda row: row[2]["test NDCG@10"][0])
    fig, ax = plt.subplots(figsize=(6.6, 4.2))
    y = np.arange(len(trained))
    ax.errorbar([v["test NDCG@10"][0] for *_, v in trained], y, xerr=[v["test NDCG@10"][1] for *_, v in trained],
                fmt="o", capsize=3, ms=5, color="tab:blue", label="RankNetRanker 46-64-32-1 with this loss")
    for name, _, values in reference:
        mean, std = values["test NDCG@10"]
        ax.axvline(mean, color="tab:red", lw=1.2, label=f"{name.split(' (')[0]} (reference), ± std shaded")
        if not math.isnan(std):
            ax.axvspan(mean - std, mean + std, color="tab:red", alpha=0.12, lw=0)
    ax.set_yticks(y, [f"{name} (lr {lr})" for name, lr, _ in trained])
    ax.set_xlabel("test NDCG@10, mean ± std over 3 seeds")
    ax.set_title("Ranking losses, same network, MQ2008 Fold 1")
    ax.grid(axis="y", visible=False)
    fig.legend(*ax.get_legend_handles_labels(), loc="lower center", bbox_to_anchor=(0.5, 0.025), ncol=2,
               frameon=False, fontsize=7)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    png = _save(fig, out / "losses_mq2008.png", source)
    header = ["loss", "lr", "vali NDCG@10", "test NDCG@1", "test NDCG@5", "test NDCG@10", "time (s)"]
    csv_rows = [[name, lr, _fmt(v["vali NDCG@10"]), _fmt(v["test NDCG@1"]), _fmt(v["test NDCG@5"]),
                 _fmt(v["test NDCG@10"]), _fmt(v["time (s)"], 0)] for name, lr, v in losses]
    return png, write_csv(out / "losses_mq2008.csv", header, csv_rows)


def plot_debias(ndcg, curves, source, out):
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(ndcg), figsize=(10, 3.9), squeeze=False)
    baselines = {"Linear": ("0.6", "v"), "Debiased Linear": ("0.3", "^"), "LambdaMART (clicks)": ("tab:brown", "x")}
    two_tower = dict(zip(("PAL additive", "PAL multiplicative", "Observation Dropout", "Gradient Reversal"),
                         ("tab:blue", "tab:orange", "tab:green", "tab:purple"), strict=True))
    for ax, (dataset, (weights, methods)) in zip(axes[0], ndcg.items(), strict=True):
        for method, values in methods.items():
            if method in baselines:
                color, marker = baselines[method]
                style = {"color": color, "marker": marker, "ls": "--", "lw": 1}
            elif method == "Single Tower":
                style = {"color": "black", "marker": "o", "lw": 2}
            else:
                style = {"color": two_tower.get(method), "marker": "o", "lw": 1.3}
            ax.plot(weights, values, ms=4, label=method, **style)
        ax.set_xticks(sorted(weights))
        ax.set_xlabel("w: logging policy (0 = random order, 1 = sorted by relevance)")
        ax.set_title(f"{dataset}: test NDCG@5 (true labels), mean of 3 seeds")
    axes[0][0].set_ylabel("NDCG@5")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", bbox_to_anchor=(0.5, 0.02), ncol=4, frameon=False)
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    png = _save(fig, out / "debias_ndcg.png", source)
    weights = next(iter(ndcg.values()))[0]
    header = ["dataset", "method", *[f"w = {w:g}" for w in weights]]
    table = write_csv(out / "debias_ndcg.csv", header, [[d, m, *[f"{x:.3f}" for x in v]]
                                                         for d, (_, rows) in ndcg.items() for m, v in rows.items()])
    curve = write_csv(out / "debias_observation.csv", header, [[d, m, *cells] for d, (_, rows) in curves.items()
                                                              for m, cells in rows.items()])
    return png, table, curve


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path,
                        help="folder of every stored report (default: benchmarks/results for quality, "
                             "studies/results for the loss comparison and the debiasing study)")
    parser.add_argument("--out", type=Path,
                        help="folder for the figures and CSVs (default: each beside the report it draws)")
    args = parser.parse_args(argv)
    results = args.results or RESULTS
    studies = args.results or STUDY_RESULTS
    try:
        quality, quality_source = load_quality(results)
        losses, losses_source = load_losses(studies)
        ndcg, curves, debias_source = load_debias(studies)
    except ResultsError as error:
        print(f"plot_results.py: {error}", file=sys.stderr)
        return 1
    for folder in {args.out or results, args.out or studies}:
        folder.mkdir(parents=True, exist_ok=True)
    written = [*plot_quality(quality, quality_source, args.out or results),
               *plot_ablation(quality, quality_source, args.out or results),
               *plot_losses(losses, losses_source, args.out or studies),
               *plot_debias(ndcg, curves, debias_source, args.out or studies)]
    for path in written:
        print(f"wrote {path} ({path.stat().st_size / 1024:.0f} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

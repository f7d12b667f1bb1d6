"""Exports to search engines: each format's scores against ``predict``, per model and data set.

For each model (LambdaMART without NaN, with NaN, behind a StandardScaler; a linear RankNet; an MLP RankNet)
and data set (MQ2008 Fold 1: train -> test; MQ2007-agg: S1-S3 -> S5, NaN for NULL), every format of
:data:`sklearn_ltr.export.EXPORT_FORMATS` that takes the model is written and scored on the test rows, as
float32 features (what an engine holds), by XGBoost itself (``xgboost-json``) or by the evaluator written from
the format's documentation (``tests/engine_evaluators.py``, the evaluators the tests use). The table gives the
max |score - predict| (``predict`` on the same float32 rows; Elasticsearch's native model on the float64 rows,
as it compares doubles), the fraction of queries whose documents the two scores order identically (ties kept in
row order), the pairs that the export orders against ``predict`` although ``predict`` separates them by more than
1e-5, or the format's refusal.

Run: ``PYTHONPATH=. python benchmarks/bench_export.py`` (writes ``benchmarks/results/export.md``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from _common import data_dir, machine

import sklearn_ltr  # noqa: F401  (before torch and lightgbm: it sets their OpenMP threads' wait policy)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the evaluators and data helpers the tests use

RESULTS = ROOT / "benchmarks" / "results" / "export.md"

EVALUATED = {
    "xgboost-json": "XGBoost 3 (Booster.predict)",
    "ltr-plugin-xgboost": "plugin model/xgboost+json evaluator",
    "ranklib": "RankLib evaluator",
    "ltr-plugin-ranklib": "plugin model/ranklib (RankLib evaluator)",
    "elasticsearch-ltr": "Elasticsearch trained-model evaluator (float64)",
    "solr-trees": "Solr MultipleAdditiveTreesModel evaluator",
    "ltr-plugin-linear": "plugin model/linear evaluator",
    "solr-linear": "Solr LinearModel evaluator",
    "solr-neural": "Solr NeuralNetworkModel evaluator",
}


def _models(has_nan):
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from sklearn_ltr import LambdaMARTRanker, RankNetRanker

    def lambdamart():
        return LambdaMARTRanker(n_estimators=100, num_leaves=31, random_state=0, n_jobs=2)

    models = [("LambdaMART" + (" (NaN in training)" if has_nan else ""), lambdamart(), "groups"),
              ("StandardScaler + LambdaMART", make_pipeline(StandardScaler(), lambdamart()),
               "lambdamartranker__groups")]
    if not has_nan:  # RankNet takes no NaN
        models += [("linear RankNet", RankNetRanker(hidden_sizes=(), max_epochs=5, random_state=0, device="cpu"),
                    "groups"),
                   ("MLP RankNet (32, 16), batch norm, tanh",
                    RankNetRanker(hidden_sizes=(32, 16), batch_norm=True, activation="tanh", max_epochs=5,
                                  random_state=0, device="cpu"), "groups")]
    return models


def _scores(name, document, X32, X64, tmp):
    import engine_evaluators as ev

    if name == "xgboost-json":
        return ev.xgboost_scores(document, X32, tmp)
    if name == "ltr-plugin-xgboost":
        return ev.plugin_scores(document, X32)
    if name == "ranklib":
        return ev.ranklib_scores(document, X32)
    if name == "ltr-plugin-ranklib":
        return ev.ranklib_scores(document["model"]["body"]["model"]["model"]["definition"], X32)
    if name == "elasticsearch-ltr":
        return ev.elasticsearch_scores(document, X64)
    if name == "ltr-plugin-linear":
        return ev.plugin_linear_scores(document, X32)
    return ev.solr_scores(document, X32)


def main():
    import tempfile
    import warnings

    import torch
    import xgboost
    from export_helpers import max_diff, mq2007_agg, mq2008, pairs_swapped_beyond, same_order_fraction

    from sklearn_ltr.exceptions import FeatureDriftWarning
    from sklearn_ltr.export import EXPORT_FORMATS, export

    torch.set_num_threads(2)
    warnings.simplefilter("ignore", FeatureDriftWarning)  # the table compares scores, not the test rows
    data = data_dir("mq2008").parent
    sets = [("MQ2008 Fold 1 test", mq2008(data)), ("MQ2007-agg S5 (NaN)", mq2007_agg(data))]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for data_name, ((X, y, qid), (X_test, _, qid_test)) in sets:
            has_nan = bool(np.isnan(X).any())
            X32 = X_test.astype(np.float32)
            for model_name, model, groups_key in _models(has_nan):
                model.fit(X, y, **{groups_key: qid})
                expected32, expected64 = model.predict(X32), model.predict(X_test)
                for name in EVALUATED:
                    try:
                        document = export(model, name)
                    except (TypeError, ValueError) as err:
                        if isinstance(err, TypeError) or "exports a linear" in str(err):
                            continue  # the format does not take this kind of model
                        reason = str(err).split("missing values: ", 1)[-1].split(". ")[0]
                        rows.append((data_name, model_name, name, f"refused: {reason}"))
                        continue
                    elastic = name == "elasticsearch-ltr" and "Scaler" not in model_name
                    expected = expected64 if elastic else expected32
                    scores = _scores(name, document, X32, X_test if elastic else X32, Path(tmp))
                    rows.append((data_name, model_name, name,
                                 f"{max_diff(scores, expected):.1e}",
                                 f"{same_order_fraction(scores, expected, qid_test):.4f}",
                                 str(pairs_swapped_beyond(scores, expected, qid_test, 1e-5))))
                    print(rows[-1], flush=True)
    lines = [
        "# Exports to search engines: scores against predict",
        "",
        f"Test rows as float32 features; models trained on the matching training rows (MQ2008 Fold 1 train; "
        f"MQ2007-agg S1-S3). LambdaMART: 100 trees of 31 leaves; RankNet: 5 epochs. Scored by XGBoost "
        f"{xgboost.__version__} (xgboost-json) or by the evaluator written from each format's documentation "
        f"(tests/engine_evaluators.py); Elasticsearch's native model on the float64 rows for a ranker alone "
        f"(it compares doubles with LightGBM's own thresholds). {machine('lightgbm', 'torch', cpus=False)}.",
        "",
        "Columns: max |score - predict|; the fraction of test queries whose documents the export orders exactly "
        "as predict (ties in row order); the pairs of documents the export orders against predict although "
        "predict's scores differ by more than 1e-5.",
        "",
        "| data | model | format (scored by) | max abs diff | same order | pairs swapped beyond 1e-5 |",
        "| --- | --- | --- | ---: | ---: | ---: |",
    ]
    for row in rows:
        data_name, model_name, name, *values = row
        fmt = f"{name} ({EVALUATED[name]})"
        if len(values) == 1:
            lines.append(f"| {data_name} | {model_name} | {fmt} | {values[0]} | | |")
        else:
            lines.append(f"| {data_name} | {model_name} | {fmt} | " + " | ".join(values) + " |")
    lines += ["", f"Formats in the registry not in this table: "
              f"{', '.join(n for n in EXPORT_FORMATS if n not in EVALUATED)} (see benchmarks/results/onnx.md)."]
    RESULTS.write_text("\n".join(lines) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()

"""Elasticsearch's native model by two routes: ``to_elasticsearch_ltr`` against eland's transform of the XGBoost export.

eland (Elastic's Python client) writes Elasticsearch trained models from XGBoost rankers. Here LambdaMART is
exported with :func:`~sklearn_ltr.export.to_xgboost_json`, loaded as an ``xgboost.XGBRanker`` and transformed by
eland (``eland.ml.transformers.get_model_transformer(...).transform()``), and both definitions are scored by the
Elasticsearch evaluator of the tests (``tests/engine_evaluators.py``) on float32 rows: MQ2008 Fold 1 test,
MQ2007-agg S5 (NaN), and rows on every threshold of two models built to have thresholds between adjacent float32
values. eland reads XGBoost's text dump, whose split conditions are 9-digit decimals: read back as doubles, they
are close to the float32 conditions but not equal, so a feature value exactly on a condition may go the other way;
``to_elasticsearch_ltr`` writes LightGBM's own float64 thresholds.

eland 9 needs pandas < 3: run it where eland is installed, or with eland on ``PYTHONPATH``
(``pip install --no-deps --target DIR eland elasticsearch elastic-transport sniffio``):
``PYTHONPATH=.:DIR python benchmarks/bench_export_eland.py`` (writes ``benchmarks/results/export_eland.md``).
"""

from __future__ import annotations

import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
from _common import data_dir

import sklearn_ltr  # noqa: F401  (before torch and lightgbm: it sets their OpenMP threads' wait policy)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the evaluators and data helpers the tests use
RESULTS = ROOT / "benchmarks" / "results" / "export_eland.md"


def _eland_request(ranker, names, folder):
    import xgboost
    from eland.ml.transformers import get_model_transformer

    from sklearn_ltr.export import to_xgboost_json

    path = Path(folder) / "model.json"
    to_xgboost_json(ranker, path, feature_names=names)
    model = xgboost.XGBRanker()
    model.load_model(path)
    ensemble = get_model_transformer(model, feature_names=names).transform().to_dict()
    extractors = [{"query_extractor": {"feature_name": name, "query": {}}} for name in names]
    return {"body": {"inference_config": {"learning_to_rank": {"feature_extractors": extractors}},
                     "definition": {"trained_model": ensemble}}}


def main():
    import eland
    from engine_evaluators import elasticsearch_scores
    from export_helpers import (
        adjacent_float32_model,
        fit_lambdamart,
        integer_model,
        max_diff,
        mq2007_agg,
        mq2008,
        rows_on_thresholds,
        same_order_fraction,
    )

    from sklearn_ltr.export import to_elasticsearch_ltr

    warnings.simplefilter("ignore")
    data = data_dir("mq2008").parent
    cases = []
    for label, ((X, y, qid), (X_test, _, qid_test)) in [("MQ2008 Fold 1 test", mq2008(data)),
                                                         ("MQ2007-agg S5 (NaN)", mq2007_agg(data))]:
        cases.append((label, fit_lambdamart(X, y, qid, n_estimators=100, num_leaves=31), X_test.astype(np.float32),
                      qid_test))
    for label, make in [("rows on every threshold (integer features)", integer_model),
                        ("rows on every threshold (adjacent float32 values)", adjacent_float32_model)]:
        X, ranker = make()
        rows = rows_on_thresholds(X, ranker.booster_, np.random.default_rng(0))
        cases.append((label, ranker, rows, np.zeros(len(rows), dtype=int)))
    lines = ["# Elasticsearch's native model: to_elasticsearch_ltr and eland's transform of the XGBoost export", "",
             f"eland {eland.__version__}; LambdaMART (100 trees of 31 leaves on the data sets). Scored by the "
             "Elasticsearch evaluator of the tests on float32 rows; rows off: scores more than 1e-5 from predict.",
             "", "| rows | route | max abs diff from predict | rows off | same order |",
             "| --- | --- | ---: | ---: | ---: |"]
    with tempfile.TemporaryDirectory() as folder:
        for label, ranker, rows, qid in cases:
            names = [f"f{i}" for i in range(rows.shape[1])]
            expected = ranker.predict(rows)
            for route, request in [("to_elasticsearch_ltr", to_elasticsearch_ltr(ranker, feature_names=names)),
                                   ("eland (XGBRanker of to_xgboost_json)", _eland_request(ranker, names, folder))]:
                scores = elasticsearch_scores(request, rows)
                off = int(np.sum(np.abs(scores - expected) > 1e-5))
                order = f"{same_order_fraction(scores, expected, qid):.4f}" if qid.any() else ""
                lines.append(f"| {label} | {route} | {max_diff(scores, expected):.1e} | {off} of {len(rows):,} | "
                             f"{order} |")
                print(lines[-1], flush=True)
    RESULTS.write_text("\n".join(lines) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()

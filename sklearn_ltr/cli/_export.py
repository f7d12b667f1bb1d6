"""``sklearn-ltr export``: a saved model written in one of :data:`sklearn_ltr.export.EXPORT_FORMATS`."""

from __future__ import annotations

import inspect
import json

from sklearn_ltr.cli._errors import CLIError
from sklearn_ltr.cli._model_files import load_model
from sklearn_ltr.cli._output import check_output_path, refuse_input_as_output, write_atomically
from sklearn_ltr.export import EXPORT_FORMATS

__all__ = ["add_parser", "export_model"]

DESCRIPTION = """\
Write a saved model in a serving format: ONNX, XGBoost's JSON model, or what a search engine
loads (the Elasticsearch / OpenSearch LTR plugins' model/xgboost+json, model/ranklib and
model/linear with their feature set, Solr's feature and model stores, Elasticsearch's native
learning-to-rank trained model). The search-engine files hold the request bodies with their
method and path; upload them with curl (see the user guide's "Serving in a search engine").
A format that cannot express the model exactly refuses it and says why."""

EXAMPLES = """\
examples:
  sklearn-ltr export --model model.joblib --format xgboost-json --out model.json
  sklearn-ltr export --model model.joblib --format elasticsearch-ltr --feature-names title,body --out es.json"""


def add_parser(commands, *, formatter, model_help, add_common):
    """Add the ``export`` command to the sub-parsers ``commands`` of ``sklearn-ltr``."""
    lines = [f"  {name}: {entry.target} (takes {entry.models})" for name, entry in EXPORT_FORMATS.items()]
    parser = commands.add_parser("export", help="write a saved model for a search engine, XGBoost or ONNX",
                                 description=DESCRIPTION + "\n\nformats:\n" + "\n".join(lines), epilog=EXAMPLES,
                                 formatter_class=formatter)
    parser.add_argument("--model", required=True, metavar="MODEL", help=model_help)
    parser.add_argument("--format", dest="export_format", required=True, choices=list(EXPORT_FORMATS),
                        metavar="FORMAT", help=f"one of {', '.join(EXPORT_FORMATS)}")
    parser.add_argument("--out", required=True, metavar="FILE", help="the file to write (whole or not at all)")
    parser.add_argument("--feature-names", metavar="LIST",
                        help="comma-separated feature names in the model's feature order (default: the names it "
                             "was fitted with, else f0, f1, ...)")
    parser.add_argument("--name", metavar="NAME", help="the model's name (id) in the engine's store")
    add_common(parser, data_format=False)


def _content(document):
    """The bytes of an exported document: an ONNX model, JSON, or text."""
    if hasattr(document, "SerializeToString"):
        return document.SerializeToString()
    if isinstance(document, str):
        return document.encode("utf-8")
    return json.dumps(document, indent=1).encode("utf-8")


def export_model(args):
    """``sklearn-ltr export``: the model of ``--model`` in ``--format``, written to ``--out``."""
    refuse_input_as_output(args.out, "--out", [(f"--model {args.model!r}", args.model)])
    check_output_path(args.out, "exported model")
    entry = EXPORT_FORMATS[args.export_format]
    saved = load_model(args.model)
    options, parameters = {}, inspect.signature(entry.write).parameters
    if args.feature_names is not None:
        if "feature_names" not in parameters:
            raise CLIError(f"--format {entry.name} takes no --feature-names.")
        options["feature_names"] = [name.strip() for name in args.feature_names.split(",")]
    if args.name is not None:
        key = next((key for key in ("model_name", "model_id") if key in parameters), None)
        if key is None:
            raise CLIError(f"--format {entry.name} takes no --name.")
        options[key] = args.name
    try:
        document = entry.write(saved.estimator, None, **options)
    except (TypeError, ValueError) as err:
        raise CLIError(f"cannot export {args.model!r} as {entry.name}: {err}") from err
    content = _content(document)
    write_atomically(args.out, lambda file: file.write(content), what="exported model")
    print(f"wrote {args.out} ({entry.name}: {entry.target})")
    return 0

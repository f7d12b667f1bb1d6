"""What the Elasticsearch / OpenSearch LTR plugins' uploads share: the feature set and the model's request bodies."""

from __future__ import annotations

import json

__all__ = ["plugin_upload", "write_json"]


def write_json(document, path):
    """Write ``document`` as JSON to ``path`` (when not None); return it."""
    if path is not None:
        with open(path, "w", encoding="utf-8") as file:
            json.dump(document, file)
    return document


def plugin_upload(model_type, definition, *, model_name, featureset, feature_names, feature_templates=None):
    """The LTR plugins' two request bodies: the feature set, and the model created against it.

    ``feature_templates`` maps each feature name to its query template (mustache, parameter
    ``keywords``); a feature without one gets a placeholder ``match`` on a field of its name.
    """
    templates = dict(feature_templates or {})
    unknown = sorted(set(templates) - set(feature_names))
    if unknown:
        raise ValueError(f"feature_templates names features the model does not take: {unknown}.")
    features = [{"name": name, "params": ["keywords"], "template_language": "mustache",
                 "template": templates.get(name, {"match": {name: "{{keywords}}"}})} for name in feature_names]
    return {
        "featureset": {"method": "POST", "path": f"_ltr/_featureset/{featureset}",
                       "body": {"featureset": {"name": featureset, "features": features}}},
        "model": {"method": "POST", "path": f"_ltr/_featureset/{featureset}/_createmodel",
                  "body": {"model": {"name": model_name, "model": {"type": model_type, "definition": definition}}}},
    }

"""Every public name has a docstring with an example that runs as a doctest.

Public names are the ``__all__`` of the package and of its public subpackages, the
public names of :mod:`sklearn_ltr.base`, and the command line's ``main``. Classes and
functions need an ``Examples`` section with at least one ``>>>`` line that is not
skipped; the doctest run of the package (``--doctest-modules``) then executes it.
Public methods of estimators (``fit``, ``predict``, ``score``) are covered by their
class's example.

Constants (``LOSSES``, ``__version__``, the ``ndcg_scorer`` instance, ...) cannot
carry a docstring of their own: the docstring of a public module that exports them
must hold a ``>>>`` line that uses them. Their description is a ``#:`` comment, which
autodoc reads.
"""

import importlib
import inspect
import io
import re
import warnings

import pytest

PUBLIC_MODULES = [
    "sklearn_ltr",
    "sklearn_ltr.base",
    "sklearn_ltr.metrics",
    "sklearn_ltr.losses",
    "sklearn_ltr.datasets",
    "sklearn_ltr.clicks",
    "sklearn_ltr.preprocessing",
    "sklearn_ltr.rankers",
    "sklearn_ltr.nn",
    "sklearn_ltr.utils",
    "sklearn_ltr.utils.estimator_checks",
    "sklearn_ltr.utils.persistence",
    "sklearn_ltr.inspection",
    "sklearn_ltr.model_selection",
    "sklearn_ltr.export",
    "sklearn_ltr.exceptions",
]
# Public names outside an ``__all__``: (module, name).
EXTRA_NAMES = [("sklearn_ltr.cli", "main")]

_SECTION = re.compile(r"^[ \t]*(?P<title>[A-Z][A-Za-z ]+?)[ \t]*\n[ \t]*-{3,}[ \t]*$", re.MULTILINE)


class _Missing:
    """Stands for a public name that cannot be imported; its test fails with the reason."""

    def __init__(self, reason):
        self.reason = reason


def _is_documentable(obj):
    """Classes and functions carry their own docstring; anything else is a constant."""
    return inspect.isclass(obj) or inspect.isroutine(obj) or isinstance(obj, _Missing)


def _collect():
    """``(public path, object, exporting modules)``, each object once, at its first public path."""
    found = {}
    pairs = []
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        names = getattr(module, "__all__", None)
        assert names is not None, f"{module_name} has no __all__"
        pairs += [(module_name, name) for name in names]
    pairs += EXTRA_NAMES
    for module_name, name in pairs:
        try:
            obj = getattr(importlib.import_module(module_name), name)
        except (ImportError, AttributeError) as err:  # reported by the test, not at collection
            obj = _Missing(f"{type(err).__name__}: {err}")
        # Constants are keyed by exporting module too: the same str or dict may be exported twice.
        key = id(obj) if _is_documentable(obj) else (module_name, name)
        if key in found:
            found[key][2].append(module_name)
        else:
            found[key] = (f"{module_name}.{name}", obj, [module_name])
    return list(found.values())


PUBLIC = _collect()
CALLABLES = [(path, obj) for path, obj, _ in PUBLIC if _is_documentable(obj)]
CONSTANTS = [(path, modules) for path, obj, modules in PUBLIC if not _is_documentable(obj)]


def _sections(doc):
    """Map each numpydoc section title of a cleaned docstring to its body."""
    matches = list(_SECTION.finditer(doc))
    return {
        m["title"].strip(): doc[m.end() : matches[i + 1].start() if i + 1 < len(matches) else len(doc)]
        for i, m in enumerate(matches)
    }


def _runnable_example_lines(text):
    return [line.strip() for line in text.splitlines() if line.strip().startswith(">>>") and "+SKIP" not in line]


def test_public_names_found():
    paths = {path for path, _, _ in PUBLIC}
    # A few names every version has: guards against an empty parametrisation.
    for expected in ("sklearn_ltr.ndcg_score", "sklearn_ltr.metrics.average_precision_score",
                     "sklearn_ltr.losses.LOSSES", "sklearn_ltr.cli.main"):
        assert expected in paths
    assert len(CALLABLES) > 30


@pytest.mark.parametrize("path, obj", CALLABLES, ids=[path for path, _ in CALLABLES])
def test_docstring_has_runnable_example(path, obj):
    if isinstance(obj, _Missing):
        pytest.fail(f"{path} cannot be imported: {obj.reason}")
    doc = obj.__doc__  # the object's own docstring: a class without one has None, not its base's
    assert doc and doc.strip(), f"{path} has no docstring"
    sections = _sections(inspect.cleandoc(doc))
    assert "Examples" in sections, f"{path}: no 'Examples' section (sections: {sorted(sections)})"
    lines = _runnable_example_lines(sections["Examples"])
    assert lines, f"{path}: the Examples section has no '>>>' line that runs (all missing or +SKIP)"


@pytest.mark.parametrize("path, modules", CONSTANTS, ids=[path for path, _ in CONSTANTS])
def test_constant_used_in_module_example(path, modules):
    name = path.rsplit(".", 1)[1]
    pattern = re.compile(rf"(?<![\w.]){re.escape(name)}\b|\.{re.escape(name)}\b")
    for module_name in modules:
        doc = importlib.import_module(module_name).__doc__ or ""
        if any(pattern.search(line) for line in _runnable_example_lines(doc)):
            return
    pytest.fail(f"{path}: no '>>>' line of the docstring of {' or '.join(modules)} uses {name}")


# Numpydoc checks whose failure shows up in the Sphinx build or in the rendered page:
# GL06 unknown section, GL07 sections out of order, PR02 documented parameter that does
# not exist, PR10 missing space around a parameter's colon, SS01 no summary.
_NUMPYDOC_CHECKS = {"GL06", "GL07", "PR02", "PR10", "SS01"}


@pytest.mark.parametrize("path, obj", CALLABLES, ids=[path for path, _ in CALLABLES])
def test_numpydoc_format(path, obj):
    if isinstance(obj, _Missing):
        pytest.fail(f"{path} cannot be imported: {obj.reason}")
    validate = pytest.importorskip("numpydoc.validate").validate
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numpydoc's own parse warnings surface as GL06 below
        errors = validate(f"{obj.__module__}.{obj.__qualname__}")["errors"]
    errors = [f"{code}: {message}" for code, message in errors if code in _NUMPYDOC_CHECKS]
    assert not errors, f"{path}:\n" + "\n".join(errors)


# docutils knows neither Sphinx's roles (:func:, :math:, ...) nor its directives
# (seealso, only, autosummary); those messages are not problems of the docstring.
_SPHINX_ONLY = re.compile(r"Unknown interpreted text role|Unknown directive type|No (role|directive) entry")


def _rst_warnings(text):
    """Warnings and errors docutils reports on reStructuredText ``text``."""
    publish_doctree = pytest.importorskip("docutils.core").publish_doctree
    stream = io.StringIO()
    publish_doctree(text, settings_overrides={"report_level": 2, "halt_level": 5, "warning_stream": stream})
    messages = [line for line in stream.getvalue().splitlines() if re.search(r"\((WARNING|ERROR|SEVERE)/", line)]
    return [line for line in messages if not _SPHINX_ONLY.search(line)]


@pytest.mark.parametrize("path, obj", CALLABLES, ids=[path for path, _ in CALLABLES])
def test_docstring_renders_without_rst_warnings(path, obj):
    """The page numpydoc makes of the docstring parses cleanly (indentation, inline markup, lists)."""
    if isinstance(obj, _Missing):
        pytest.fail(f"{path} cannot be imported: {obj.reason}")
    get_doc_object = pytest.importorskip("numpydoc.docscrape_sphinx").get_doc_object
    what = "class" if inspect.isclass(obj) else "function"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        text = str(get_doc_object(obj, what=what, config={"show_class_members": False}))
    problems = _rst_warnings(text)
    assert not problems, f"{path}:\n" + "\n".join(problems)


@pytest.mark.parametrize("module_name", PUBLIC_MODULES)
def test_module_docstring_renders_without_rst_warnings(module_name):
    doc = importlib.import_module(module_name).__doc__
    assert doc and doc.strip(), f"{module_name} has no docstring"
    problems = _rst_warnings(inspect.cleandoc(doc))
    assert not problems, f"{module_name}:\n" + "\n".join(problems)

"""The package's layout rules: modules stay small (``tools/module_sizes.py``)."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _module_sizes():
    spec = importlib.util.spec_from_file_location("module_sizes", ROOT / "tools" / "module_sizes.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_lines_of_code_exclude_docstrings_comments_and_blank_lines():
    source = '"""Module docstring\\nover two lines."""\n\n# a comment\nx = 1  # trailing\n\n\ndef f():\n' \
             '    """Docstring."""\n    return (1,\n            2)\n'
    assert _module_sizes().lines_of_code(source) == 4  # x = 1, def f, and the two lines of the return


def test_no_module_over_400_lines_of_code(capsys):
    assert _module_sizes().main([str(ROOT / "sklearn_ltr"), "--limit", "400", "--top", "3"]) == 0, \
        capsys.readouterr().out

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


def _acyclic_check(imports):
    """The ``acyclic_modules`` contract (tools/import_contracts.py) on a hand-made graph of package ``p``."""
    grimp = __import__("pytest").importorskip("grimp")
    spec = importlib.util.spec_from_file_location("import_contracts", ROOT / "tools" / "import_contracts.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    graph = grimp.ImportGraph()
    for name in ("p", "p.a", "p.b", "p.c", "p.sub", "p.sub.d", "numpy"):
        graph.add_module(name, is_squashed=name == "numpy")
    for importer, imported, line in imports:
        graph.add_import(importer=importer, imported=imported, line_number=line, line_contents="import ...")
    contract = module.AcyclicModulesContract("no circles", {}, {"root": "p"})
    return contract.check(graph, verbose=False)


def test_acyclic_contract_keeps_a_graph_without_circles():
    check = _acyclic_check([("p", "p.a", 1), ("p.a", "p.b", 2), ("p", "p.b", 3), ("p.b", "numpy", 4),
                            ("p.sub.d", "p.a", 5)])
    assert check.kept and check.metadata["circles"] == []


def test_acyclic_contract_names_each_circle_once_with_its_lines():
    # a -> b -> c -> a (three modules) and sub.d <-> sub (a package's __init__ is a module too).
    check = _acyclic_check([("p.a", "p.b", 2), ("p.b", "p.c", 7), ("p.c", "p.a", 11), ("p.sub.d", "p.sub", 3),
                            ("p.sub", "p.sub.d", 1), ("p", "p.a", 1)])
    assert not check.kept
    assert check.metadata["circles"] == [
        "p.a -> p.b (l.2) -> p.c (l.7) -> p.a (l.11)",
        "p.sub -> p.sub.d (l.1) -> p.sub (l.3)",
    ]

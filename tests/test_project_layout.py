"""The layout rules: modules stay small (``tools/module_sizes.py``), the contracts of tools/import_contracts.py,
and tests/ mirroring the package."""

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


def _contracts():
    __import__("pytest").importorskip("importlinter")
    spec = importlib.util.spec_from_file_location("import_contracts", ROOT / "tools" / "import_contracts.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _script_folders(tmp_path, benchmark_source):
    """A benchmarks/ folder with a shared module and one script of ``benchmark_source``, and a studies/ folder."""
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "studies").mkdir()
    (tmp_path / "benchmarks" / "_common.py").write_text("def data_dir():\n    return None\n")
    (tmp_path / "benchmarks" / "bench_other.py").write_text("def _helper():\n    return 1\n")
    (tmp_path / "benchmarks" / "bench_x.py").write_text(benchmark_source)
    (tmp_path / "studies" / "study_y.py").write_text("def load():\n    return 2\n")
    return {"source": str(tmp_path / "benchmarks")}


def test_folder_contract_refuses_every_way_of_importing_a_study(tmp_path):
    contracts = _contracts()
    kept = "import sys\nfrom pathlib import Path\n\nfrom _common import data_dir\n" \
           "RESULTS = Path(__file__).parents[1] / 'studies' / 'results'  # reading results is no import\n"
    options = {**_script_folders(tmp_path, kept), "forbidden": [str(tmp_path / "studies")]}
    assert contracts.FolderImportsContract("c", {}, options).check(None, verbose=False).kept
    for source in ("import study_y\n", "from studies.study_y import load\n",
                   "def f():\n    from study_y import load\n",  # inside a function, after a sys.path change
                   "import sys\nsys.path.insert(0, '../studies')\n",
                   "import importlib.util\nimportlib.util.spec_from_file_location('y', 'studies/study_y.py')\n"):
        (tmp_path / "benchmarks" / "bench_x.py").write_text(source)
        check = contracts.FolderImportsContract("c", {}, options).check(None, verbose=False)
        assert not check.kept, source
        assert "bench_x.py" in check.metadata["broken"][0]


def test_scripts_share_helpers_only_through_the_shared_module(tmp_path):
    contracts = _contracts()
    options = {**_script_folders(tmp_path, "from _common import data_dir\n"), "shared": ["_common"]}
    assert contracts.SharedHelpersContract("c", {}, options).check(None, verbose=False).kept
    (tmp_path / "benchmarks" / "bench_x.py").write_text("from bench_other import _helper\n")
    check = contracts.SharedHelpersContract("c", {}, options).check(None, verbose=False)
    assert not check.kept
    assert "imports _helper from bench_other" in check.metadata["broken"][0]


def test_every_script_of_benchmarks_and_studies_is_in_its_readme():
    for folder in ("benchmarks", "studies"):
        readme = (ROOT / folder / "README.md").read_text(encoding="utf-8")
        missing = [path.name for path in sorted((ROOT / folder).glob("*.py")) if path.name not in readme]
        assert not missing, f"{folder}/README.md does not name {missing}"


def test_tests_mirror_the_package():
    """Each folder of tests/ is named after a subpackage of sklearn_ltr, and test file names are unique.

    Unique names because the test folders are not packages: pytest imports each file by its bare name.
    """
    tests = ROOT / "tests"
    subpackages = {path.parent.name for path in (ROOT / "sklearn_ltr").glob("*/__init__.py")}
    folders = {path.name for path in tests.iterdir() if path.is_dir() and path.name != "__pycache__"}
    assert folders and folders <= subpackages, sorted(folders - subpackages)
    names = [path.name for path in tests.rglob("test_*.py")]
    assert len(names) == len(set(names)), sorted({name for name in names if names.count(name) > 1})
    assert not list(tests.glob("*/__init__.py")) and not list(tests.glob("*/conftest.py"))

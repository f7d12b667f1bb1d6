"""Custom import-linter contracts of the package (``contract_types`` in ``pyproject.toml``).

``public_only`` contracts (see ``[tool.importlinter]`` in ``pyproject.toml``) check that every
module of ``source`` imports, from the rest of ``root``, only modules none of whose names
after the root starts with an underscore (``sklearn_ltr.datasets`` yes,
``sklearn_ltr.datasets._formats`` or ``sklearn_ltr._groups`` no). Its own descendants are
free, and ``allowed`` lists the private modules it may import, each for a stated reason.

``acyclic_modules`` contracts check that no module of ``root`` takes part in an import
circle: no chain of imports leads from a module back to itself. import-linter's own
``acyclic_siblings`` squashes packages, so at the top of the package it also reports the
circles between whole sub-packages (``utils`` holds both the bottom and the contract suite);
this one looks at modules (a package's ``__init__`` is one), where a circle is a bug. Imports
inside functions count: deferring an import does not break a circle.

``folder_imports`` and ``shared_helpers`` contracts cover folders of scripts, which are not packages
(``benchmarks/``, ``studies/``): no script of ``source`` imports from the ``forbidden`` folders, and the
scripts of ``source`` import from each other only its ``shared`` modules.
"""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

from importlinter import Contract, ContractCheck, fields, output


def _is_private(module, root):
    parts = module.split(".")[len(root.split(".")):]
    return any(part.startswith("_") and not part.startswith("__") for part in parts)


class PublicImportsContract(Contract):
    """``source`` may import only public modules of ``root`` (besides ``allowed`` and its own)."""

    type_name = "public_only"

    source = fields.StringField()
    root = fields.StringField()
    allowed = fields.ListField(subfield=fields.StringField(), required=False)

    def check(self, graph, verbose):
        source, root = str(self.source), str(self.root)
        allowed = {str(module) for module in (self.allowed or [])}
        importers = {source} | graph.find_descendants(source)
        broken = []
        for importer in sorted(importers):
            for imported in sorted(graph.find_modules_directly_imported_by(importer)):
                if not imported.startswith(root + ".") or imported == source or imported.startswith(source + "."):
                    continue
                if _is_private(imported, root) and imported not in allowed:
                    broken.append((importer, imported))
        return ContractCheck(kept=not broken, metadata={"broken": broken})

    def render_broken_contract(self, check):
        for importer, imported in check.metadata["broken"]:
            output.print_error(f"{importer} imports the private module {imported}.", bold=False)
            output.new_line()


def _chain_text(graph, chain):
    """``a -> b (l.3) -> a (l.7)``: the chain, each import with its line in the importer (as import-linter)."""
    text = chain[0]
    for importer, imported in itertools.pairwise(chain):
        lines = sorted(detail["line_number"] for detail in graph.get_import_details(importer=importer,
                                                                                     imported=imported))
        text += f" -> {imported}" + (f" (l.{', '.join(map(str, lines))})" if lines else "")
    return text


class AcyclicModulesContract(Contract):
    """No module of ``root`` imports itself through a chain of imports."""

    type_name = "acyclic_modules"

    root = fields.StringField()

    def check(self, graph, verbose):
        root = str(self.root)
        modules = {root} | graph.find_descendants(root)
        circles = {}  # the modules of a circle -> the circle, from its first module in sorted order
        for importer in sorted(modules):
            for imported in sorted(graph.find_modules_directly_imported_by(importer) & modules):
                back = graph.find_shortest_chain(importer=imported, imported=importer)
                if back is not None:
                    circle = (importer, *back)
                    members = frozenset(circle)
                    circles[members] = min(circles.get(members, circle), circle)
        rendered = [_chain_text(graph, circle) for circle in sorted(circles.values())]
        return ContractCheck(kept=not rendered, metadata={"circles": rendered})

    def render_broken_contract(self, check):
        for circle in check.metadata["circles"]:
            output.print_error(f"Import circle: {circle}", bold=False)
            output.new_line()


# --------------------------------------------------------------------------------------------------------------
# Script folders (benchmarks/, studies/): folders of scripts, not packages, which import each other by bare
# name (a script's own folder is first on sys.path). import-linter's graph holds only packages, so these
# contracts read the scripts' imports themselves, every ``import`` and ``from ... import`` in a file
# (inside functions too), and the sys.path entries and file paths the scripts load modules from.

REPOSITORY = Path(__file__).resolve().parents[1]
# Calls that put a folder on sys.path or load a module from a file: a string naming a forbidden folder in
# their arguments loads code from it.
_PATH_CALLS = {"insert", "append", "extend"}  # of sys.path
_LOADERS = {"spec_from_file_location", "run_path", "SourceFileLoader", "import_module"}


def _shown(path):
    """``path`` relative to the repository where it lies in it."""
    return path.relative_to(REPOSITORY).as_posix() if path.is_relative_to(REPOSITORY) else str(path)


def _scripts(folder):
    return sorted(path for path in folder.rglob("*.py") if "__pycache__" not in path.parts)


def _strings(node):
    return {child.value for child in ast.walk(node) if isinstance(child, ast.Constant) and isinstance(child.value, str)}


def _script_imports(path):
    """``(line, module, names)`` of every import of ``path``; a loader call is ``(line, "<loads>", strings)``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, ()) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module, tuple(alias.name for alias in node.names)))
        elif isinstance(node, ast.Call):
            name = getattr(node.func, "attr", getattr(node.func, "id", None))
            on_path = name in _PATH_CALLS and getattr(getattr(node.func, "value", None), "attr", None) == "path"
            if on_path or name in _LOADERS:
                found.append((node.lineno, "<loads>", tuple(sorted(_strings(node)))))
    return found


class FolderImportsContract(Contract):
    """No script under the folder ``source`` imports from, or loads code out of, the folders ``forbidden``.

    Folders are relative to the repository. A module of a forbidden folder is caught under its package name
    (``studies.x``) and under its bare name (``import x`` after putting the folder on ``sys.path``); a
    ``sys.path`` entry or file loader whose arguments name a forbidden folder is caught too. A bare name that
    is also a module of ``source`` itself is that module.
    """

    type_name = "folder_imports"

    source = fields.StringField()
    forbidden = fields.ListField(subfield=fields.StringField())

    def check(self, graph, verbose):
        source = REPOSITORY / str(self.source)
        own = {path.stem for path in _scripts(source)}
        broken = []
        for folder in (REPOSITORY / str(name) for name in self.forbidden):
            modules = {path.stem for path in _scripts(folder)} - own
            for script in _scripts(source):
                for line, module, names in _script_imports(script):
                    where = f"{_shown(script)}:{line}"
                    if module == "<loads>":
                        if any(folder.name in Path(text).parts or text.split(".")[0] in {folder.name, *modules}
                               for text in names):
                            broken.append(f"{where} loads code from {folder.name}/ ({', '.join(names)})")
                    elif module.split(".")[0] in {folder.name, *modules}:
                        broken.append(f"{where} imports {module}, a module of {folder.name}/")
        return ContractCheck(kept=not broken, metadata={"broken": broken})

    def render_broken_contract(self, check):
        for line in check.metadata["broken"]:
            output.print_error(line, bold=False)
            output.new_line()


class SharedHelpersContract(Contract):
    """The scripts of the folder ``source`` import from each other only the modules ``shared``.

    A script that needs another script's helper finds it in a shared module instead: no script imports
    another script (``import bench_x``, ``from bench_x import _helper``).
    """

    type_name = "shared_helpers"

    source = fields.StringField()
    shared = fields.ListField(subfield=fields.StringField())

    def check(self, graph, verbose):
        source = REPOSITORY / str(self.source)
        scripts = {path.stem for path in _scripts(source)}
        allowed = {str(name) for name in self.shared}
        broken = []
        for script in _scripts(source):
            for line, module, names in _script_imports(script):
                parts = module.split(".")
                top = parts[1] if parts[0] == source.name and len(parts) > 1 else parts[0]
                if top in scripts and top not in allowed and top != script.stem:
                    what = f"{', '.join(names)} from {module}" if names else module
                    broken.append(f"{_shown(script)}:{line} imports {what}, another "
                                  f"script of {source.name}/ (shared modules: {', '.join(sorted(allowed))})")
        return ContractCheck(kept=not broken, metadata={"broken": broken})

    def render_broken_contract(self, check):
        for line in check.metadata["broken"]:
            output.print_error(line, bold=False)
            output.new_line()

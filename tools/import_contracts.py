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
"""

from __future__ import annotations

import itertools

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

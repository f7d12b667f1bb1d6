"""A custom import-linter contract: a package imports only the public modules of its library.

``public_only`` contracts (see ``[tool.importlinter]`` in ``pyproject.toml``) check that every
module of ``source`` imports, from the rest of ``root``, only modules none of whose names
after the root starts with an underscore (``sklearn_ltr.datasets`` yes,
``sklearn_ltr.datasets._formats`` or ``sklearn_ltr._groups`` no). Its own descendants are
free, and ``allowed`` lists the private modules it may import, each for a stated reason.
"""

from __future__ import annotations

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

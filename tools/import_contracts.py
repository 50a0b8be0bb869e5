"""A custom import-linter contract: modules that may import ONLY the listed modules.

    [[tool.importlinter.contracts]]
    type = "allowed"
    source_modules = ["obook._kernels"]
    allowed_modules = ["numpy", "numba", "llvmlite"]

Every module in (or under) ``source_modules`` may import only itself, its own package's
modules and (the descendants of) ``allowed_modules``; ``include_external_packages = true``
is needed for external imports to be seen. Registered in pyproject.toml under
``contract_types``; ``lint-imports`` finds this file because it puts the working directory
on ``sys.path``.
"""

from __future__ import annotations

from importlinter import Contract, ContractCheck, fields, output


def _under(module: str, parents) -> bool:
    return any(module == p or module.startswith(p + ".") for p in parents)


class AllowedImportsContract(Contract):
    type_name = "allowed"

    source_modules = fields.ListField(subfield=fields.StringField())
    allowed_modules = fields.ListField(subfield=fields.StringField())

    def check(self, graph, verbose: bool) -> ContractCheck:
        sources = list(self.source_modules)  # type: ignore[arg-type]
        allowed = list(self.allowed_modules) + sources  # type: ignore[operator]
        bad = []
        for source in sources:
            for module in sorted({source} | graph.find_descendants(source)):
                for imported in sorted(graph.find_modules_directly_imported_by(module)):
                    if not _under(imported, allowed):
                        lines = graph.get_import_details(importer=module, imported=imported)
                        where = ", ".join(str(d["line_number"]) for d in lines) or "?"
                        bad.append(f"{module} imports {imported} (line {where})")
        return ContractCheck(kept=not bad, metadata={"bad": bad})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for line in check.metadata["bad"]:
            output.print_error(line)
            output.new_line()

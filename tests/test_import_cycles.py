"""No import circles in `desktop_app`, `engine` or `benchmarks`.

A circle works only as long as its modules happen to be imported in one order, and it hides
which module depends on which. Every import statement counts, at the top of a module or
inside a function (a lazy import still closes the circle, only later); imports under
`if TYPE_CHECKING:` do not, as they never run. The graph is read from the source with `ast`:
nothing is imported, and the test takes a fraction of a second.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("desktop_app", "engine", "benchmarks")


def module_names(root: Path = ROOT) -> dict[str, bool]:
    """Every module of the checked packages by dotted name -> whether it is a package."""
    modules: dict[str, bool] = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            if is_package:
                parts.pop()
            modules[".".join(parts)] = is_package
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _statements(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Import statements anywhere in `tree`, except under `if TYPE_CHECKING:`."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def imports_of(source: str, module: str, is_package: bool, modules: dict[str, bool]
               ) -> set[str]:
    """The modules among `modules` that `source` (module `module`) imports: `import a.b`
    names `a.b`; `from a import b` names `a.b` when that is a module, else `a`."""
    package = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()
    for node in _statements(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
            continue
        base = node.module or ""
        if node.level:
            anchor = package.split(".")[:len(package.split(".")) - (node.level - 1)]
            base = ".".join([*anchor, base] if base else anchor)
        for alias in node.names:
            found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base)
    return {name for name in found if name in modules and name != module}


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> the modules of the checked packages it imports."""
    modules = module_names(root)
    graph: dict[str, set[str]] = {}
    for name, is_package in modules.items():
        path = root.joinpath(*name.split("."))
        path = path / "__init__.py" if is_package else path.with_suffix(".py")
        graph[name] = imports_of(path.read_text(encoding="utf-8"), name, is_package, modules)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of `graph` (first module repeated at the end), or None."""
    try:
        TopologicalSorter(graph).prepare()
    except CycleError as exc:
        return list(exc.args[1])
    return None


def test_every_import_statement_counts_except_type_checking_ones():
    modules = {"pkg": True, "pkg.a": False, "pkg.b": False, "pkg.c": False, "pkg.d": False}
    source = (
        "from typing import TYPE_CHECKING\n"
        "import pkg.b\n"
        "if TYPE_CHECKING:\n"
        "    from pkg.d import Thing\n"
        "def later():\n"
        "    from . import c\n"
        "    from pkg import helper\n")
    assert imports_of(source, "pkg.a", False, modules) == {"pkg.b", "pkg.c", "pkg"}
    assert find_cycle({"pkg.a": {"pkg.b"}, "pkg.b": {"pkg.c"}, "pkg.c": set()}) is None
    cycle = find_cycle({"pkg.a": {"pkg.b"}, "pkg.b": {"pkg.c"}, "pkg.c": {"pkg.a"}})
    assert cycle is not None and set(cycle) == {"pkg.a", "pkg.b", "pkg.c"}


def test_no_import_cycles():
    graph = import_graph()
    assert {"engine.project", "desktop_app.bridge", "benchmarks.run"} <= set(graph)
    cycle = find_cycle(graph)
    assert cycle is None, "import circle: " + " -> ".join(cycle or [])

"""The layout says what each file does: unique names, and architecture.md's table true."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("engine", "desktop_app")


def _modules() -> list[Path]:
    return sorted(p.relative_to(ROOT) for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")
                  if p.name not in ("__init__.py", "__main__.py"))


def test_no_two_files_share_a_name():
    by_stem: dict[str, list[str]] = defaultdict(list)
    for path in _modules():
        by_stem[path.stem].append(str(path))
    shared = {stem: paths for stem, paths in by_stem.items() if len(paths) > 1}
    assert not shared, f"one name, several files: {shared}"


def test_the_architecture_table_names_every_file_and_only_those():
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## Where each job lives", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"^\| `([^`]+\.py)` \| \S", section, flags=re.M))
    actual = {str(p) for p in _modules()}
    assert not actual - listed, f"files the table leaves out: {sorted(actual - listed)}"
    assert not listed - actual, f"files the table names that do not exist: " \
                                f"{sorted(listed - actual)}"


def test_services_reach_the_tables_only_through_the_store():
    """A service orchestrates; the SQL is `engine.store`'s (one place to read a table, and
    one to change when a table changes). No service names a table or builds a statement."""
    import ast

    statements = {"select", "insert", "update", "delete", "func", "text", "and_", "or_"}
    found = []
    for path in sorted((ROOT / "engine" / "services").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom) or node.module is None:
                continue
            names = {a.name for a in node.names}
            if node.module == "engine.store.schema" or (
                    node.module.startswith("sqlalchemy") and names & statements):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.module} "
                             f"{sorted(names)}")
    assert not found, "services reading tables directly:\n" + "\n".join(found)


# The sizes that keep the house readable (the facade thin, the bridge a runner, no engine file
# doing several jobs): a file past its limit is a sign that something in it wants a home of
# its own.
LIMITS = {"engine/project.py": 100, "desktop_app/bridge.py": 300}
ENGINE_FILE_LIMIT = 450


def test_the_facade_the_bridge_and_every_engine_file_stay_within_their_size():
    """Checked on the real tree, it fails as soon as one file grows past its limit."""
    sizes = {str(p.relative_to(ROOT)): len(p.read_text(encoding="utf-8").splitlines())
             for p in (ROOT / "engine").rglob("*.py")}
    sizes["desktop_app/bridge.py"] = len(
        (ROOT / "desktop_app" / "bridge.py").read_text(encoding="utf-8").splitlines())
    over = {path: lines for path, lines in sizes.items()
            if lines > LIMITS.get(path, ENGINE_FILE_LIMIT)}
    assert not over, f"over their limit (lines): {over}"

"""What a view may take from the engine (docs/architecture.md, "What a view may import").

A view renders; it imports only the engine's types and pure functions (data classes, enums
and constants, errors, helpers that do no I/O and hold no project) and reaches everything
else (opening, reading or writing a project, loading a model, reading a file, starting work)
through the bridge and the controllers. Both checks read the views' source with `ast`, so
an import inside a function or under `TYPE_CHECKING` counts as much as one at the top.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VIEWS = ROOT / "desktop_app" / "views"

# The engine names a view may import, by module: types and pure functions only.
ALLOWED: dict[str, frozenset[str]] = {
    "engine": frozenset({"__version__"}),
    "engine.add_file": frozenset({"ImportChoices"}),
    "engine.browse": frozenset({"FILTER_ALL", "FILTER_TEXT", "SORT_IMPORT", "SORT_TEXT",
                                "SORT_PUBLIC_ID", "RowQuery", "order_by_notes"}),
    "engine.dedup.row_clusters": frozenset({"CANONICAL", "Cluster", "Member"}),
    "engine.encoding.backends": frozenset({"AUTO", "BACKENDS"}),
    "engine.errors": frozenset({"DuplensError", "InputError", "ProjectError", "ModelError",
                                "Cancelled", "DiskFull"}),
    "engine.estimation.estimators": frozenset({"Estimate", "Figure"}),
    # the words of the recall floor: pure functions of an estimate's figures
    "engine.estimation.floor_words": frozenset({"below_floor_words", "floor_hint"}),
    "engine.io": frozenset({"TablePreview"}),
    "engine.pair_metrics": frozenset({"ThresholdCurve"}),
    "engine.progress": frozenset({"Progress"}),
    "engine.review.calibration": frozenset({"DEFAULT_THRESHOLD", "ENOUGH_OF_EACH",
                                            "Calibration", "ProjectThreshold", "BY_HAND",
                                            "CALIBRATED", "format_threshold"}),
    # the words of a model's default threshold (About): a JSON file read, nothing loaded
    "engine.encoding.model_threshold": frozenset({"recorded_by_name"}),
    # which backend a new project gets here, in words (About): the CPU's flags read, the
    # measured defaults looked up, nothing loaded
    "engine.encoding.backend_choice": frozenset({"why_default"}),
    "engine.review.diff": frozenset({"Span", "word_diff"}),
    "engine.review.histogram": frozenset({"Histogram"}),
    "engine.review.layout": frozenset({"EmbeddingMap"}),
    # warm_up only imports the stop-word list; the search panel runs it in a job
    "engine.review.overlap": frozenset({"Overlap", "overlap", "warm_up"}),
    # the services' data classes and constants, never the services themselves
    "engine.services.asking": frozenset({"AskedPair"}),
    "engine.services.documents": frozenset({"DocumentPair"}),
    "engine.services.exports": frozenset({"ALL", "DEDUPLICATED", "ONLY_CLUSTERS"}),
    "engine.services.measuring": frozenset({"DrawnPair", "Measurement"}),
    # the words of a fine-tuning result: pure functions of its AP change
    "engine.training.ap_change": frozenset({"APChange", "BETTER", "NO_CHANGE", "WORSE",
                                            "claim", "evidence", "interval_text"}),
    "engine.training": frozenset({"fast_form"}),        # for fast_form.describe (words)
    "engine.training.fast_form": frozenset({"describe"}),
    "engine.training.pairs": frozenset({"PairSummary"}),
    "engine.training.second_opinion": frozenset({"SecondOpinion"}),
    "engine.training.objectives": frozenset({"DEFAULT_OBJECTIVE", "OBJECTIVES",
                                             "get_objective"}),
    "engine.training.session": frozenset({"FinetuneReport", "finetune_stages"}),
    "engine.training.split": frozenset({"DEFAULT_HELD_OUT"}),
    "engine.training.trainer": frozenset({"TrainingOptions"}),
}

# Behaviour a view still calls itself, each with why it is not behind a controller.
EXCEPTIONS: dict[tuple[str, str, str], str] = {
    ("import_dialog.py", "engine.io", "preview_table"):
        "reads the first rows of the file being chosen (nothing of a project), in a job "
        "on the table pool; its home is the import controller",
    ("settings_dialog.py", "engine.encoding.model_spec", "available_devices"):
        "a probe of this computer (the devices torch sees), no project, as Settings opens",
    ("settings_dialog.py", "engine.encoding.executors", "ray_available"):
        "a probe of this computer (is Ray installed), no project, as Settings opens",
    ("settings_dialog.py", "engine.encoding.backends", "available_backends"):
        "a probe of this computer (installed backends, the CPU's bf16 units), no project",
    ("settings_dialog.py", "engine.encoding.backend_choice", "default_backend"):
        "names what Automatic picks on this computer's CPU, no project",
    ("settings_dialog.py", "engine.encoding.backends", "missing_modules"):
        "says which packages a backend lacks here, no project",
}

# Views that submit jobs of their own (`bridge.run`), each with why: all of them only read.
OWN_JOBS: dict[str, str] = {
    "import_dialog.py": "the preview of the file being chosen (reads the file, not the "
                        "project)",
    "imports_dialog.py": "the list of imports (reads); taking one out goes through the "
                         "window and the import controller",
    "items_view.py": "the table's row order, a slice of ids at a time as it is read (reads)",
    "search_panel.py": "the overlap's stop words warmed up (no project); the search itself "
                       "is the bridge's",
}


def engine_imports(tree: ast.AST) -> list[tuple[int, str, str | None]]:
    """(line, module, name) of every engine import; name None for `import engine.x`."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and (
                node.module == "engine" or node.module.startswith("engine.")):
            found += [(node.lineno, node.module, alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, None) for alias in node.names
                      if alias.name == "engine" or alias.name.startswith("engine.")]
    return found


def runs_jobs(tree: ast.AST) -> list[int]:
    """Lines where the view calls `….bridge.run(…)` or `bridge.run(…)` itself."""
    lines = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "run" and "bridge" in ast.unparse(node.func.value)):
            lines.append(node.lineno)
    return lines


def forbidden_imports(name: str, source: str) -> list[str]:
    problems = []
    for line, module, imported in engine_imports(ast.parse(source)):
        if imported is not None and (imported in ALLOWED.get(module, ())
                                     or (name, module, imported) in EXCEPTIONS):
            continue
        what = f"import {module}" if imported is None else f"from {module} import {imported}"
        problems.append(f"desktop_app/views/{name}:{line}: {what} (not a type or pure "
                        f"function on the allowlist: reach it through a controller)")
    return problems


def views() -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(VIEWS.glob("*.py"))}


def test_views_import_only_engine_types_and_pure_functions():
    problems = [p for name, source in views().items()
                for p in forbidden_imports(name, source)]
    assert not problems, "\n".join(problems)


def test_only_the_listed_views_run_jobs_of_their_own():
    problems = [f"desktop_app/views/{name}:{line}: runs a job itself; put the engine call "
                f"in a controller" for name, source in views().items() if name not in OWN_JOBS
                for line in runs_jobs(ast.parse(source))]
    assert not problems, "\n".join(problems)


def test_every_exception_is_still_needed():
    """An exception whose import or job is gone is taken off its list, so the lists say
    what is there."""
    sources = views()
    used = {(name, imported) for name, source in sources.items()
            for _line, _module, imported in engine_imports(ast.parse(source))}
    listed = {(name, imported) for name, _module, imported in EXCEPTIONS}
    assert listed <= used, listed - used
    assert all(runs_jobs(ast.parse(sources[name])) for name in OWN_JOBS)


def top_level_names(module: str) -> set[str]:
    """What `module` defines, assigns or imports at its top level, and its submodules."""
    path = ROOT.joinpath(*module.split("."))
    if path.is_dir():
        names = {p.stem for p in path.glob("*.py")}
        path = path / "__init__.py"
    else:
        names, path = set(), path.with_suffix(".py")
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        if isinstance(node, ast.FunctionDef) and node.name == "__getattr__":
            # a module's lazy attributes (`engine.__version__`): the names it answers
            names |= {c.value for c in ast.walk(node)
                      if isinstance(c, ast.Constant) and isinstance(c.value, str)}
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:   # NAME = … and A, B = …
                elts = target.elts if isinstance(target, ast.Tuple) else [target]
                names |= {t.id for t in elts if isinstance(t, ast.Name)}
        elif isinstance(node, ast.ImportFrom):
            names |= {a.asname or a.name for a in node.names}
    return names


def test_the_allowlist_names_what_the_engine_has():
    """A name renamed or moved in the engine is taken off the list (or follows it)."""
    missing = {module: sorted(names - top_level_names(module))
               for module, names in ALLOWED.items()}
    assert not {m: n for m, n in missing.items() if n}, missing


def test_the_check_names_the_file_and_the_module():
    source = ("from engine.review.overlap import overlap\n"
              "def f():\n    from engine.project import Project\n    import engine.store\n")
    assert forbidden_imports("some_view.py", source) == [
        "desktop_app/views/some_view.py:3: from engine.project import Project (not a type or "
        "pure function on the allowlist: reach it through a controller)",
        "desktop_app/views/some_view.py:4: import engine.store (not a type or pure function "
        "on the allowlist: reach it through a controller)"]
    assert forbidden_imports("import_dialog.py", "from engine.io import preview_table\n") == []
    assert forbidden_imports("items_view.py", "from engine.io import preview_table\n")
    assert runs_jobs(ast.parse("self.bridge.run(lambda job: job.project.rows.count())\n"))

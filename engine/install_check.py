"""`duplens selfcheck`: prove that an installed (often frozen) Duplens works end to end.

An installer is built on a CI runner where nobody opens the window, so the build must check
itself: load the bundled model, import a spreadsheet into a new project, search it, cut
duplicate clusters and export them. Each step checks what a user would see (the paraphrase
comes back first, the two paraphrases form one cluster), not just that nothing raised, so a
bundle with a broken tokenizer or a missing model file fails here rather than on a user's
machine. The window's part lives in `desktop_app.window_check`: the engine stays Qt-free.
"""

from __future__ import annotations

import csv
import os
import platform
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from engine import __version__

# Two paraphrase pairs among unrelated questions: the model must put each pair together.
SAMPLE = [
    ("c1", "How do I learn Python quickly?"),
    ("c2", "What is the capital of Australia?"),
    ("c3", "How can I brew great coffee at home?"),
    ("c4", "What is the fastest way to learn Python?"),
    ("c5", "Why do cats purr?"),
    ("c6", "How do I change a flat tyre on my car?"),
    ("c7", "Which city is the capital of Australia?"),
    ("c8", "What are the health benefits of green tea?"),
]
QUERY, EXPECTED_TOP = "best way to learn python fast", "c1 c4"
PAIRS = ({"c1", "c4"}, {"c2", "c7"})
THRESHOLD = 0.75


class SelfCheckFailed(AssertionError):
    """A step ran but gave a wrong answer."""


@dataclass
class SelfCheckReport:
    """What ran and how long each step took, in order."""

    facts: dict[str, str] = field(default_factory=dict)
    timings: list[tuple[str, float]] = field(default_factory=list)

    @contextmanager
    def step(self, name: str, say: Callable[[str], None]) -> Iterator[None]:
        start = time.perf_counter()
        yield
        seconds = time.perf_counter() - start
        self.timings.append((name, seconds))
        say(f"ok   {name:34} {seconds:7.2f} s")


def environment_facts() -> dict[str, str]:
    """Version, platform and whether this is a frozen build, for the check's header."""
    return {
        "duplens": __version__,
        "python": platform.python_version(),
        "platform": f"{platform.system()} {platform.machine()}",
        "frozen": "yes" if getattr(sys, "frozen", False) else "no",
    }


def write_sample(folder: Path) -> Path:
    """The check's spreadsheet, written here so it needs no data file in the bundle."""
    path = folder / "selfcheck.csv"
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["id", "question"])
        writer.writerows(SAMPLE)
    return path


def run_engine_checks(workdir: Path, say: Callable[[str], None], device: str = "auto",
                      encoder=None):
    """Run the engine steps in `workdir`; returns (report, encoder, project path).

    The loaded encoder is handed back so the window check can reuse it instead of loading
    the model a second time; tests pass their session's encoder in for the same reason.
    """
    from engine.encoding.loading import load_encoder
    from engine.encoding.model_spec import available_devices, pick_device, resolve_model
    from engine.project import Project

    report = SelfCheckReport()
    report.facts.update(environment_facts())
    for key, value in report.facts.items():
        say(f"{key:9} {value}")

    with report.step("import torch", say):
        import torch

        devices = available_devices()
    say(f"torch     {torch.__version__} (devices: {', '.join(devices)})")
    spec = resolve_model(None)
    say(f"model     {spec.location}")
    if encoder is None:
        chosen = pick_device(device)
        with report.step(f"load model on {chosen}", say):
            encoder = load_encoder(None, device=chosen, batch_size=32)

    with report.step("fast single queries", say):
        runtime = encoder.prepare_fast_queries()
    why = encoder.query_fallback_reason
    say(f"queries   {runtime}" + (f" ({why})" if why else ""))
    if encoder.device == "cpu" and os.environ.get("DUPLENS_FAST_QUERIES", "1") != "0":
        # onnxruntime is a dependency and the bundles ship it: torch here means the export
        # or its check failed, and every keystroke would take twice as long.
        _expect(runtime == "onnxruntime", f"single queries fell back to torch: {why}")

    sheet = write_sample(workdir)
    project_path = workdir / "selfcheck.duplens"
    with Project.open(project_path, create=True) as project:
        project.model.attach(encoder, is_default=True)
        with report.step(f"import and encode {len(SAMPLE)} rows", say):
            imported = project.rows.import_table(sheet, ["question"], id_column="id")
            project.vectors.encode()
        _expect(imported.rows_imported == len(SAMPLE),
                f"imported {imported.rows_imported} rows, not {len(SAMPLE)}")
        with report.step("search", say):
            hits = project.search(QUERY, k=3)
        top_two = " ".join(sorted(str(h.id) for h in hits[:2]))
        _expect(top_two == EXPECTED_TOP,
                f"search {QUERY!r} found {[str(h.id) for h in hits]}, not {EXPECTED_TOP}")
        with report.step("duplicate clusters", say):
            clusters = project.clusters.cut(THRESHOLD)
        found = [{str(m.id) for m in c.members} for c in clusters]
        _expect(all(pair in found for pair in PAIRS),
                f"clusters at {THRESHOLD} were {found}, expected {PAIRS}")
        out = workdir / "clusters.csv"
        with report.step("export clusters", say):
            rows = project.exports.clusters(out, clusters, THRESHOLD)
        with out.open(encoding="utf-8-sig", newline="") as fh:
            exported = list(csv.DictReader(fh))
        _expect(len(exported) == rows and rows >= 4 and "cluster_id" in exported[0],
                f"the export holds {len(exported)} rows ({rows} reported)")
    return report, encoder, project_path


def _expect(condition: bool, message: str) -> None:
    if not condition:
        raise SelfCheckFailed(message)


WindowCheck = Callable[[Path, object, SelfCheckReport, Callable[[str], None]], None]


def main(device: str = "auto", window_check: WindowCheck | None = None,
         say: Callable[[str], None] = print, encoder=None) -> int:
    """Run every check in a temporary folder; 0 when all pass, 1 (with the reason) if not.

    `window_check(project_path, encoder, report, say)` is injected by the launcher, like the
    window itself, so this module never imports Qt.
    """
    import tempfile
    import traceback

    started = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory(prefix="duplens-selfcheck-") as tmp:
            report, encoder, project_path = run_engine_checks(Path(tmp), say, device, encoder)
            if window_check is None:
                say("skip window (no window in this command line)")
            else:
                window_check(project_path, encoder, report, say)
    except SelfCheckFailed as exc:
        say(f"FAILED: {exc}")
        return 1
    except Exception:  # noqa: BLE001 - a broken bundle shows here first: print all of it
        say(f"FAILED with an error:\n{traceback.format_exc()}")
        return 1
    say(f"selfcheck passed in {time.perf_counter() - started:.1f} s")
    return 0

"""`ImportController`: a spreadsheet into the open project, then its new rows encoded and
placed in the clusters; and an import taken back out.

The steps are the engine's one sequence for adding a file (`engine.add_file`, which the
command line runs too), run as one job on the bridge's changes pool, after any model load and
never beside another import, with throttled progress ("reading", then "encoding") for the
status bar and a handle that stops this job only. Once the project's clusters were ever
reviewed, the new rows are placed in them at the threshold their ids were recorded at, so
they take their clusters' ids as part of this import. Resuming runs the encoding step alone,
for what a stopped import left. Removing an import (File → Imports…) is a job on the
same pool. Before a new project is made for a file, the file is checked on that pool too
(`engine.importer.check_table`): a file the import would refuse then creates nothing.
Re-encoding the long texts an earlier version read from their start (`engine.reread`, the
Model menu) is the same kind of job on the same pool, with the same progress and Cancel.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from PySide6.QtCore import QObject, Signal

from desktop_app.bridge import EngineBridge, project_info
from desktop_app.job_runner import Job, JobHandle, Pool
from engine.add_file import CHANGES_SAID, ImportChoices

if TYPE_CHECKING:
    from engine.encoding.encode_job import EncodeReport
    from engine.importer import ImportReport

# "import" is a keyword, hence the functional form. `import` is None when only encoding ran.
# `reread`: how many texts read from their start were read again (None: not a re-encode);
# `read_from_start`: how many are left so (None: not counted, nothing read again).
EncodingResult = TypedDict("EncodingResult", {
    "import": "ImportReport | None", "encode": "EncodeReport", "cancelled": bool,
    "info": dict, "device": str, "changes": dict, "reread": "int | None",
    "read_from_start": "int | None"})


def import_and_encode(choices: ImportChoices | None, job: Job, encode_on: str = "local"
                      ) -> EncodingResult:
    """The job: add `choices`' file (`engine.add_file`: import, encode, place the new rows;
    None: only encode what an earlier import left), encoding on `encode_on` (Settings →
    Encode on: "local", "ray" or "ray=ADDRESS"). Stopped while reading, nothing of the file
    is kept (`Cancelled`); stopped while encoding, the rows and what was encoded stay and
    the result says `cancelled`. The model is said ready as soon as the encoding ends."""
    from engine.add_file import add_file, finish_encoding
    from engine.encoding.executors import close_executor, executor_for

    project = job.project

    def encoded(_report: EncodeReport) -> None:
        job.model_ready(project.model.encoder().device)

    executor = executor_for(encode_on) if encode_on != "local" else None
    try:
        if choices is None:
            added = finish_encoding(project, executor=executor, progress=job.progress,
                                    cancel=job.token, on_encoded=encoded)
        else:
            added = add_file(project, choices, executor=executor, progress=job.progress,
                             cancel=job.token, on_encoded=encoded)
    finally:
        close_executor(executor)
    return {"import": added.imported, "encode": added.encoded, "cancelled": added.cancelled,
            "info": project_info(project), "device": project.model.encoder().device,
            "changes": added.changes, "reread": None, "read_from_start": None}


def reread(job: Job) -> EncodingResult:
    """The job behind Model → Re-encode long texts: the texts an earlier version read from
    their start only, read again whole (`engine.reread`); stopped, what was read stays and
    the rest waits (running it again, or Resume encoding, finishes it)."""
    from engine.reread import count_read_from_start, reread_long_texts

    project = job.project
    stale = count_read_from_start(project)
    report = reread_long_texts(project, progress=job.progress, cancel=job.token)
    job.model_ready(project.model.encoder().device)
    return {"import": None, "encode": report, "cancelled": report.cancelled,
            "info": project_info(project), "device": project.model.encoder().device,
            "changes": {}, "reread": stale,
            "read_from_start": count_read_from_start(project)}


def remove_import(batch: int, job: Job) -> dict:
    """The job behind File → Imports… → Remove: the import's rows out, clusters placed again
    where they were recorded (their ids follow the rules)."""
    project = job.project
    removed = project.rows.remove_import(batch)
    project.clusters.follow_imports(progress=job.progress, cancel=job.token)
    return {"batch": batch, "rows": removed, "info": project_info(project)}


def summary(result: EncodingResult) -> str:
    """One line for the status bar about a finished import, encoding or re-encode, with
    what was read in several windows."""
    return _summary(result) + windows_said(result["encode"])


def windows_said(encoded: EncodeReport | None) -> str:
    """"; 3 texts are longer than one window; each was read whole (41 windows)", or ""."""
    if encoded is None or not encoded.windowed:
        return ""
    texts = "1 text is" if encoded.windowed == 1 else f"{encoded.windowed:,} texts are"
    return (f"; {texts} longer than one window; each was read whole "
            f"({encoded.windows:,} windows)")


def _summary(result: EncodingResult) -> str:
    report, encoded = result["import"], result["encode"]
    if result.get("reread") is not None:
        if result["cancelled"]:
            return (f"Re-encoding stopped: {encoded.remaining:,} texts still to encode "
                    f"(Re-encode long texts or Resume encoding finishes it)")
        return f"Re-encoded {result['reread']:,} long texts read from their start before"
    if report is None:
        return (f"Stopped: {encoded.remaining:,} texts still to encode" if result["cancelled"]
                else f"Encoded {encoded.encoded:,} texts")
    if report.already_imported:
        return f"{report.file_name}: already imported with these columns; nothing added"
    if result["cancelled"]:
        return (f"Stopped: {report.rows_imported:,} rows kept, {encoded.remaining:,} texts "
                f"still to encode (they are encoded on the next import)")
    said = "".join(f", {result['changes'][kind]:,} {what}" for kind, what in CHANGES_SAID.items()
                   if result.get("changes", {}).get(kind))
    return (f"{report.file_name}: {report.rows_imported:,} rows imported, "
            f"{report.rows_empty:,} empty skipped, {report.exact_duplicates:,} exact "
            f"duplicates{said}")


class ImportController(QObject):
    """Starts imports and resumed encodings; reports them by signal on the GUI thread."""

    progressed = Signal(object)     # engine.progress.Progress, whole (rate, eta_seconds)
    finished = Signal(object)       # EncodingResult (possibly stopped while encoding)
    stopped = Signal()              # stopped while reading: nothing of the file was kept
    failed = Signal(str, str)       # message, details (a traceback for a bug)
    removed = Signal(object)        # {"batch", "rows", "info"}: an import taken back out
    rereadStopped = Signal()        # a re-encode stopped before it began: nothing changed

    def __init__(self, bridge: EngineBridge, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.bridge = bridge
        self.encode_on = "local"    # Settings → Encode on

    def start(self, choices: ImportChoices) -> JobHandle:
        """Import `choices.path` into the open project, then encode and index its rows."""
        return self._run(choices)

    def check(self, choices: ImportChoices, *, on_done: Callable[[], object],
              on_failed: Callable[[str, str], object],
              on_cancelled: Callable[[], object]) -> JobHandle:
        """Check `choices`' file as the import would, with no project (one may be open: it is
        not touched), before a project is made for it: `on_done` when it can be imported,
        else `on_failed` with the import's one line."""

        def work(job: Job) -> None:
            from engine.importer import check_table

            check_table(choices.path, choices.text_columns, **choices.reader_options(),
                        progress=job.progress, cancel=job.token)

        return self.bridge.run(work, pool=Pool.CHANGES, on_done=lambda _: on_done(),
                               on_failed=on_failed, on_cancelled=on_cancelled,
                               on_progress=self.progressed.emit)

    def resume(self) -> JobHandle:
        """Encode what an earlier, stopped import left."""
        return self._run(None)

    def _run(self, choices: ImportChoices | None) -> JobHandle:
        encode_on = self.encode_on
        return self.bridge.run(lambda job: import_and_encode(choices, job, encode_on),
                               pool=Pool.CHANGES,
                               on_done=self.finished.emit, on_failed=self.failed.emit,
                               on_cancelled=self.stopped.emit,
                               on_progress=self.progressed.emit)

    def reread(self) -> JobHandle:
        """Read again whole the long texts an earlier version read from their start."""
        return self.bridge.run(reread, pool=Pool.CHANGES, on_done=self.finished.emit,
                               on_failed=self.failed.emit,
                               on_cancelled=self.rereadStopped.emit,
                               on_progress=self.progressed.emit)

    def remove(self, batch: int) -> JobHandle:
        """Take import `batch` back out of the open project (asked and confirmed before)."""
        return self.bridge.run(lambda job: remove_import(batch, job), pool=Pool.CHANGES,
                               on_done=self.removed.emit, on_failed=self.failed.emit,
                               on_progress=self.progressed.emit)

    @staticmethod
    def title(choices: ImportChoices | None) -> str:
        """What the status bar says while an import or a resumed encoding runs."""
        return f"Importing {Path(choices.path).name}…" if choices else "Encoding the rest…"

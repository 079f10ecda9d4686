"""`ImportController`: a spreadsheet into the open project, then its new rows encoded and
placed in the clusters; and an import taken back out.

Both steps run as one job on the bridge's jobs pool, after any model load and never beside
another import, with throttled progress ("reading", then "encoding") for the status bar and
a handle that stops this job only. Once the project's clusters were ever reviewed, the job
then cuts them again at the threshold their ids were recorded at (`follow_imports`), so the
new rows take their clusters' ids as part of this import. Resuming runs the encoding step
alone, for what a stopped import left. Removing an import (File → Imports…) is a job on the
same pool.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from PySide6.QtCore import QObject, Signal

from desktop_app.bridge import EngineBridge, project_info
from desktop_app.job_runner import Job, JobHandle, Pool

if TYPE_CHECKING:
    from engine.encoding.encode_job import EncodeReport
    from engine.importer import ImportReport


@dataclass(frozen=True)
class ImportChoices:
    """What the user picked in the import dialog: passed as is to `ImportController.start`."""

    path: str
    text_columns: list[str]
    id_column: str | None = None
    sheet: str | None = None
    encoding: str | None = None     # None: as detected
    delimiter: str | None = None    # None: as detected


# "import" is a keyword, hence the functional form. `import` is None when only encoding ran.
EncodingResult = TypedDict("EncodingResult", {
    "import": "ImportReport | None", "encode": "EncodeReport", "cancelled": bool,
    "info": dict, "device": str, "changes": dict})

# How a finished import says what its rows did to the clusters (`ClusterIds.changes_since`).
CHANGES_SAID = {"joined": "rows joined existing clusters", "new": "rows in new clusters",
                "merged": "rows in merged clusters", "split": "rows split off",
                "left": "rows left their clusters"}


def import_and_encode(choices: ImportChoices | None, job: Job, encode_on: str = "local"
                      ) -> EncodingResult:
    """The job: read `choices`' file (None: nothing to read), then encode what is missing,
    on `encode_on` (Settings → Encode on: "local", "ray" or "ray=ADDRESS").
    Stopped while reading, nothing of the file is kept (`Cancelled`); stopped while
    encoding, the rows and what was encoded stay and the result says `cancelled`."""
    from engine.encoding.executors import close_executor, executor_for

    project = job.project
    report = None
    if choices is not None:
        report = project.rows.import_table(
            choices.path, list(choices.text_columns), id_column=choices.id_column,
            sheet=choices.sheet, encoding=choices.encoding, delimiter=choices.delimiter,
            progress=job.progress, cancel=job.token)
    executor = executor_for(encode_on) if encode_on != "local" else None
    try:
        encoded = project.vectors.encode(progress=job.progress, cancel=job.token,
                                         executor=executor)
    finally:
        close_executor(executor)
    device = project.model.encoder().device
    job.model_ready(device)
    changes: dict[str, int] = {}
    if report is not None and not report.already_imported and not encoded.cancelled:
        changes = _place_new_rows(project, report.source_id, job)
    return {"import": report, "encode": encoded, "cancelled": encoded.cancelled,
            "info": project_info(project), "device": device, "changes": changes}


def _place_new_rows(project, batch: int, job: Job) -> dict[str, int]:
    """Cut again where the ids were recorded; how many rows changed cluster, by kind ({} when
    no cut was ever recorded, or when stopped: the next cut places them)."""
    from engine.errors import Cancelled

    try:
        if project.clusters.follow_imports(progress=job.progress, cancel=job.token) is None:
            return {}
    except Cancelled:
        return {}
    changes: dict[str, int] = {}
    for change in project.ids.changes_since(batch).values():
        changes[change.change] = changes.get(change.change, 0) + 1
    return changes


def remove_import(batch: int, job: Job) -> dict:
    """The job behind File → Imports… → Remove: the import's rows out, clusters placed again
    where they were recorded (their ids follow the rules)."""
    project = job.project
    removed = project.rows.remove_import(batch)
    project.clusters.follow_imports(progress=job.progress, cancel=job.token)
    return {"batch": batch, "rows": removed, "info": project_info(project)}


def summary(result: EncodingResult) -> str:
    """One line for the status bar about a finished import or encoding."""
    report, encoded = result["import"], result["encode"]
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

    def __init__(self, bridge: EngineBridge, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.bridge = bridge
        self.encode_on = "local"    # Settings → Encode on

    def start(self, choices: ImportChoices) -> JobHandle:
        """Import `choices.path` into the open project, then encode and index its rows."""
        return self._run(choices)

    def resume(self) -> JobHandle:
        """Encode what an earlier, stopped import left."""
        return self._run(None)

    def _run(self, choices: ImportChoices | None) -> JobHandle:
        encode_on = self.encode_on
        return self.bridge.run(lambda job: import_and_encode(choices, job, encode_on),
                               pool=Pool.JOBS,
                               on_done=self.finished.emit, on_failed=self.failed.emit,
                               on_cancelled=self.stopped.emit,
                               on_progress=self.progressed.emit)

    def remove(self, batch: int) -> JobHandle:
        """Take import `batch` back out of the open project (asked and confirmed before)."""
        return self.bridge.run(lambda job: remove_import(batch, job), pool=Pool.JOBS,
                               on_done=self.removed.emit, on_failed=self.failed.emit,
                               on_progress=self.progressed.emit)

    @staticmethod
    def title(choices: ImportChoices | None) -> str:
        """What the status bar says while the job runs."""
        return f"Importing {Path(choices.path).name}…" if choices else "Encoding the rest…"

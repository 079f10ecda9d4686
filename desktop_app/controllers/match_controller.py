"""`MatchController`: File → Check a file against this project.

The check reads the file with the import dialog's choices and looks every row up in the
project without adding anything (`engine.services.matching`). The analyst's verdicts
("Duplicate of this" / "New") are kept with the results; "Add the new rows" imports the
file as an import does and stores every verdict as a labelled pair, since a row of the file
only becomes a project row, one a pair can name, once it is added.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal

from desktop_app.controllers.import_controller import ImportChoices, import_and_encode
from desktop_app.job_runner import Job, JobHandle, Pool

if TYPE_CHECKING:
    from desktop_app.bridge import EngineBridge
    from engine.services.matching import MatchResult

DUPLICATE, NEW = 1, 0


class MatchController(QObject):
    """Runs the check, the export and the adding of a checked file's rows."""

    progressed = Signal(object)     # engine.progress.Progress
    checked = Signal(object)        # MatchResult
    exported = Signal(str)          # the file written
    added = Signal(object)          # {"import", "encode", ..., "verdicts_stored"}
    failed = Signal(str, str)       # message, details

    def __init__(self, bridge: EngineBridge, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.bridge = bridge
        self.encode_on = "local"
        self.choices: ImportChoices | None = None
        self.result: MatchResult | None = None
        self.verdicts: dict[int, int] = {}     # file row number → DUPLICATE / NEW

    @staticmethod
    def title(choices: ImportChoices) -> str:
        return f"Checking {Path(choices.path).name} against the project…"

    def check(self, choices: ImportChoices) -> JobHandle:
        """Look every row of `choices.path` up in the open project (nothing is added)."""
        self.choices, self.result, self.verdicts = choices, None, {}

        def work(job: Job) -> MatchResult:
            return job.project.matching.check_file(
                choices.path, list(choices.text_columns), id_column=choices.id_column,
                sheet=choices.sheet, encoding=choices.encoding, delimiter=choices.delimiter,
                progress=job.progress, cancel=job.token)

        return self.bridge.run(work, pool=Pool.JOBS, on_done=self._checked,
                               on_failed=self.failed.emit, on_progress=self.progressed.emit)

    def _checked(self, result: MatchResult) -> None:
        self.result = result
        self.checked.emit(result)

    def set_verdict(self, row: int, verdict: int | None) -> None:
        """The analyst's answer for file row `row` against its best match (None: none)."""
        if verdict is None:
            self.verdicts.pop(row, None)
        else:
            self.verdicts[row] = verdict

    def export(self, path: str) -> JobHandle:
        """Write the checked rows with their matches (`MatchResult.frame`) to `path`."""
        result = self.result

        def work(_job: Job) -> str:
            from engine.io import export_table

            export_table(result.frame(), path)
            return path

        return self.bridge.run(work, pool=Pool.REVIEW, on_done=self.exported.emit,
                               on_failed=self.failed.emit)

    def add(self) -> JobHandle:
        """Import the checked file into the project, encode it, then store the verdicts."""
        choices, encode_on = self.choices, self.encode_on
        best = {r.row: r.matches[0].item_id for r in self.result.rows if r.matches}
        verdicts = [(row, best[row], label) for row, label in self.verdicts.items()
                    if row in best]

        def work(job: Job) -> dict:
            outcome = import_and_encode(choices, job, encode_on)
            report = outcome["import"]
            stored = job.project.matching.store_verdicts(report.source_id, verdicts) \
                if report is not None and report.source_id is not None else 0
            return {**outcome, "verdicts_stored": stored}

        return self.bridge.run(work, pool=Pool.JOBS, on_done=self.added.emit,
                               on_failed=self.failed.emit, on_progress=self.progressed.emit)

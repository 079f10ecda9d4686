"""`MatchController`: File → Check a file against this project.

The check reads the file with the import dialog's choices and looks every row up in the
project without adding anything (`engine.services.matching`). The analyst's verdicts
("Duplicate of this" / "New") are kept in the project as they are given (off the GUI
thread), so closing the results loses nothing and a later check of the same file shows them
again; "Add the new rows" imports the file as an import does, and the import turns every
verdict into a verdict on a pair of project rows, since a row of the file only becomes a
project row, one a pair can name, once it is added.

Once the active model's second opinion is offered, the row on screen can be shown with its
suggestion on the row and its best match (`ask_opinion`, `opinionReady`), scored off the
GUI thread by the `SecondOpinionController`; accepting it is a verdict like any other.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal

from desktop_app.controllers.import_controller import import_and_encode
from desktop_app.controllers.second_opinion_controller import SecondOpinionController
from desktop_app.job_runner import Job, JobHandle, Pool
from engine.add_file import ImportChoices

if TYPE_CHECKING:
    from desktop_app.bridge import EngineBridge
    from engine.services.matching import FileRow, MatchResult
    from engine.store.pending_verdicts import PendingVerdict

DUPLICATE, NEW = 1, 0


class MatchController(QObject):
    """Runs the check, the export and the adding of a checked file's rows."""

    progressed = Signal(object)     # engine.progress.Progress
    checked = Signal(object)        # MatchResult
    exported = Signal(str)          # the file written
    added = Signal(object)          # {"import", "encode", ..., "verdicts_stored"}
    failed = Signal(str, str)       # message, details
    opinionReady = Signal(int, float)   # file row, the second opinion's probability
    opinionFailed = Signal(int, str)    # file row, why it has no second opinion

    def __init__(self, bridge: EngineBridge, parent: QObject | None = None, *,
                 threshold: Callable[[], float | None] = lambda: None,
                 opinion: SecondOpinionController | None = None) -> None:
        super().__init__(parent)
        self.bridge = bridge
        self.opinion = opinion or SecondOpinionController(bridge, self)
        self.encode_on = "local"
        self.choices: ImportChoices | None = None
        self.result: MatchResult | None = None
        self.verdicts: dict[int, int] = {}     # file row number → DUPLICATE / NEW
        self._rows: dict[int, FileRow] = {}
        # The window's threshold when the analyst chose one, else None: the project's.
        self._threshold = threshold

    @staticmethod
    def title(choices: ImportChoices) -> str:
        return f"Checking {Path(choices.path).name} against the project…"

    def check(self, choices: ImportChoices) -> JobHandle:
        """Look every row of `choices.path` up in the open project (nothing is added)."""
        self.choices, self.result, self.verdicts, self._rows = choices, None, {}, {}
        threshold = self._threshold()

        def work(job: Job) -> MatchResult:
            return job.project.matching.check_file(
                choices.path, list(choices.text_columns), id_column=choices.id_column,
                sheet=choices.sheet, encoding=choices.encoding, delimiter=choices.delimiter,
                threshold=threshold, progress=job.progress, cancel=job.token)

        return self.bridge.run(work, pool=Pool.CHANGES, on_done=self._checked,
                               on_failed=self.failed.emit, on_progress=self.progressed.emit)

    def _checked(self, result: MatchResult) -> None:
        self.result = result
        self.verdicts = dict(result.verdicts)
        self._rows = {r.row: r for r in result.rows}
        self.checked.emit(result)

    def set_verdict(self, row: int, verdict: int | None) -> None:
        """The analyst's verdict on file row `row` against its best match (None: none),
        kept in the project at once, on the review pool (in order)."""
        if verdict is None:
            self.verdicts.pop(row, None)
        else:
            self.verdicts[row] = verdict
        kept = self._pending([(row, verdict)])
        result = self.result
        if kept and result is not None and result.can_keep:
            self.bridge.run(lambda job: job.project.matching.keep_verdicts(
                result.sha256, result.file_name, kept), pool=Pool.REVIEW)

    def ask_opinion(self, row: int) -> None:
        """The second opinion on file row `row` and its best match, to `opinionReady`
        (nothing when none is offered or the row matched nothing)."""
        r = self._rows.get(row)
        if r is None or not r.matches:
            return
        self.opinion.ask("match", r.text, r.matches[0].text,
                         lambda p: self.opinionReady.emit(row, p),
                         lambda message: self.opinionFailed.emit(row, message))

    def _pending(self, verdicts: list[tuple[int, int | None]]) -> list[PendingVerdict]:
        """Verdicts on each row's best match (rows with no match are left out)."""
        from engine.store.pending_verdicts import PendingVerdict

        out = []
        for row, verdict in verdicts:
            r = self._rows.get(row)
            if r is not None and r.matches:
                out.append(PendingVerdict(row, r.text, r.matches[0].item_id, verdict))
        return out

    def export(self, path: str) -> JobHandle:
        """Write the checked rows with their matches and a `verdict` column
        (`MatchResult.frame`) to `path`."""
        result, verdicts = self.result, dict(self.verdicts)

        def work(_job: Job) -> str:
            from engine.io import export_table

            export_table(result.frame(verdicts), path)
            return path

        return self.bridge.run(work, pool=Pool.REVIEW, on_done=self.exported.emit,
                               on_failed=self.failed.emit)

    def add(self) -> JobHandle:
        """Import the checked file into the project and encode it; the import turns the
        verdicts into verdicts on pairs of project rows. They are all written again first, in
        the same job, so none still queued on the review pool can miss the import."""
        choices, encode_on, result = self.choices, self.encode_on, self.result
        verdicts = self._pending(list(self.verdicts.items()))

        def work(job: Job) -> dict:
            if verdicts:
                job.project.matching.keep_verdicts(result.sha256, result.file_name, verdicts)
            outcome = import_and_encode(choices, job, encode_on)
            report = outcome["import"]
            return {**outcome,
                    "verdicts_stored": report.verdicts_adopted if report is not None else 0}

        return self.bridge.run(work, pool=Pool.CHANGES, on_done=self.added.emit,
                               on_failed=self.failed.emit, on_progress=self.progressed.emit)

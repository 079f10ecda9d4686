"""A spreadsheet added to a project, start to end: its rows imported, the new texts encoded
and indexed, the new rows placed in the recorded clusters, and what changed.

The sequence spans four services (rows, model, vectors, clusters and their ids), and every
way of adding a file runs it: `duplens import`, `duplens match --add`, the window's import
and its Check a file → Add. Written once here, they cannot drift apart (they once did:
`match --add` left the new rows out of the clusters until the next cut). It imports only
light modules at the top, as the command line's modules must (`duplens --help` loads no
third-party package). Each caller keeps
only what is its own: how it reports progress and results, and what it does before (the
window stores a checked file's verdicts first) or after (the command line prepares the
torch-free form for its next search).

`finish_encoding` is the same sequence without a file: what a stopped import left is encoded
(the window's Resume encoding, `duplens encode`); no import of its own, so nothing to place.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from engine.errors import Cancelled
from engine.progress import CancelToken, ProgressCallback, no_progress

if TYPE_CHECKING:  # pragma: no cover
    from engine.encoding.encode_job import EncodeReport
    from engine.encoding.encoder import Executor
    from engine.importer import ImportReport
    from engine.project import Project


# How the command line and the window say what an import's rows did to the clusters, by kind
# of change (`ClusterIds.changes_since`).
CHANGES_SAID = {"joined": "rows joined existing clusters", "new": "rows in new clusters",
                "merged": "rows in merged clusters", "split": "rows split off",
                "left": "rows left their clusters",
                "canonical": "clusters led by another row"}


@dataclass(frozen=True)
class ModelChoice:
    """A model asked for by name before encoding (the command line's `--model`, `--device`,
    `--backend` and `--batch-size`); `ActiveModel.choose` applies it. None and "auto"
    leave each to the project."""

    model: str | None = None
    device: str = "auto"
    backend: str | None = None
    batch_size: int = 64


@dataclass(frozen=True)
class ImportChoices:
    """Which file, which of its columns hold the text and name the rows, and how it is read
    (None: as detected): what the import dialog and the command line's reader options pick.
    """

    path: str | os.PathLike[str]
    text_columns: list[str]
    id_column: str | None = None
    sheet: str | None = None
    encoding: str | None = None     # None: as detected
    delimiter: str | None = None    # None: as detected
    quoting: bool | None = None     # whether '"' quotes fields; None: as detected

    def reader_options(self) -> dict:
        """The reading options as `Rows.import_table` (and the readers) take them."""
        return {"id_column": self.id_column, "sheet": self.sheet, "encoding": self.encoding,
                "delimiter": self.delimiter, "quoting": self.quoting}


@dataclass
class FileAdded:
    """What adding a file did. `imported` is None when no file was read (`finish_encoding`),
    `encoded` None when encoding was not asked for. `placed_at` is the threshold the
    clusters were cut again at (None: no cut was ever recorded, the import added nothing, or
    encoding stopped), `changes` the rows per kind of cluster change this import made
    (`ClusterIds.changes_since`: joined, new, merged, split, left; canonical, one row per
    cluster another row leads now), and `placing_stopped`
    whether the user stopped the placing (the next cut places the rows)."""

    imported: ImportReport | None
    encoded: EncodeReport | None = None
    placed_at: float | None = None
    changes: dict[str, int] = field(default_factory=dict)
    placing_stopped: bool = False

    @property
    def cancelled(self) -> bool:
        """Stopped while encoding: the rows and what was encoded are kept."""
        return self.encoded is not None and self.encoded.cancelled

    @property
    def added_rows(self) -> bool:
        """Whether this file brought rows of its own (not a file imported before)."""
        return (self.imported is not None and not self.imported.already_imported
                and self.imported.source_id is not None)


def add_file(project: Project, choices: ImportChoices, *, encode: bool = True,
             model: ModelChoice | None = None, executor: Executor | None = None,
             progress: ProgressCallback = no_progress, cancel: CancelToken | None = None,
             on_imported: Callable[[ImportReport], object] | None = None,
             on_encoded: Callable[[EncodeReport], object] | None = None) -> FileAdded:
    """Import `choices`' file, then (with `encode`) choose the model `model` asks for (None:
    the project's own, by its preferences), encode and index what is missing on `executor`
    (None: this thread), and place the file's new rows in the clusters whose ids were
    recorded (`Clusters.follow_imports`).

    Stopped while reading, nothing of the file is kept and `Cancelled` is raised. Stopped
    while encoding, the rows and what was encoded stay and the result says `cancelled`.
    Stopped while placing, the clusters stay as they were (`placing_stopped`). The hooks run
    between the steps: `on_imported` once the rows are in (the command line prints its
    summary there), `on_encoded` once the encoding ended (the window says the model is
    ready)."""
    report = project.rows.import_table(choices.path, list(choices.text_columns),
                                       **choices.reader_options(), progress=progress,
                                       cancel=cancel)
    if on_imported is not None:
        on_imported(report)
    added = FileAdded(report)
    if not encode:
        return added
    added.encoded = _encode(project, model, executor, progress, cancel, on_encoded)
    if added.added_rows and not added.cancelled:
        _place(project, added, progress, cancel)
    return added


def finish_encoding(project: Project, *, model: ModelChoice | None = None,
                    executor: Executor | None = None,
                    progress: ProgressCallback = no_progress,
                    cancel: CancelToken | None = None,
                    on_encoded: Callable[[EncodeReport], object] | None = None) -> FileAdded:
    """Encode and index what the project lacks (what a stopped import left), as `add_file`
    does after its import; nothing is imported, so nothing is placed."""
    added = FileAdded(None)
    added.encoded = _encode(project, model, executor, progress, cancel, on_encoded)
    return added


def _encode(project: Project, model: ModelChoice | None, executor: Executor | None,
            progress: ProgressCallback, cancel: CancelToken | None,
            on_encoded: Callable[[EncodeReport], object] | None) -> EncodeReport:
    if model is not None:
        project.model.choose(model.model, device=model.device, backend=model.backend,
                             batch_size=model.batch_size)
    encoded = project.vectors.encode(progress=progress, cancel=cancel, executor=executor)
    if on_encoded is not None:
        on_encoded(encoded)
    return encoded


def _place(project: Project, added: FileAdded, progress: ProgressCallback,
           cancel: CancelToken | None) -> None:
    """Cut again where the ids were recorded, so the new rows take their clusters' ids as
    part of this import; count what changed, by kind."""
    try:
        followed = project.clusters.follow_imports(progress=progress, cancel=cancel)
    except Cancelled:
        added.placing_stopped = True
        return
    if followed is None:
        return
    added.placed_at = followed[0]
    batch = added.imported.source_id if added.imported is not None else None
    if batch is not None:
        added.changes = dict(Counter(c.change for c in
                                     project.ids.changes_since(batch).values()))

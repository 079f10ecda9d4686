"""Errors the user can act on, kept apart from bugs.

Everything derived from `DuplensError` carries a one-line message written for a person
(file name plus what is wrong); the CLI prints it and exits with status 2, the GUI shows
it in a dialog. Any other exception is a bug and is logged with its traceback.
"""

import errno


class DuplensError(Exception):
    """A problem with the user's input or environment, described in one line."""


class InputError(DuplensError):
    """A spreadsheet or labelled file cannot be read as asked (missing, binary, bad column…)."""


class ProjectError(DuplensError):
    """A project file cannot be opened or written (not a project, newer version, read-only…)."""


class ModelError(DuplensError):
    """A model cannot be found or is not a sentence-transformers model."""


class ClusterError(DuplensError):
    """A Ray cluster cannot be used: Ray is not installed, the address is wrong or the
    cluster cannot be reached, or its workers cannot run the model."""


class UntrustedModelLocation(ModelError):
    """A project names a model outside its own `<project>.models/` folder (another folder,
    or a hub name) that the user has not approved for it. A project may come from someone
    else, so the window asks and, if the user agrees, calls
    `engine.model_trust.approve(error.project, error.location)` and tries again; the CLI
    asks for --trust-model-location."""

    def __init__(self, project, location: str, is_hub: bool) -> None:
        self.project = project          # the project file (a Path)
        self.location = location        # the folder (absolute) or the hub name
        self.is_hub = is_hub
        what = "the hub model" if is_hub else "the model folder"
        super().__init__(f"{project.name} asks for {what} {location}, outside its own "
                         f"{project.name}.models folder; it is loaded only once you approve it")


class Cancelled(Exception):
    """Raised inside a job when its `CancelToken` was set; what was committed stays."""


class NeedsUpgrade(ProjectError):
    """A project saved by an older Duplens was opened read-only, so its schema steps could
    not run; a caller that may write (`engine.copy_project`) upgrades it and opens it again."""


class ProjectBusy(ProjectError):
    """Another Duplens process held the project's write lock longer than we wait for it."""


class DiskFull(ProjectError):
    """A write ran out of room ("no space left on device", SQLite's "database or disk is
    full"); the transaction was rolled back, so the project holds what it held before."""

    def __init__(self, where: str) -> None:
        self.where = where
        super().__init__(f"{where}: the disk is full (no space left on device); free some "
                         f"space and run it again (nothing that was saved before is lost)")


BUSY_MESSAGE = ("this project is being written by another Duplens; try again when it "
                "finishes")

_SQLITE_FULL = "database or disk is full"
_SQLITE_BUSY = ("database is locked", "database is busy")


def user_error(exc: BaseException, where: str | None = None) -> DuplensError | None:
    """The one-line error a person can act on hidden in `exc` (a full disk, a project
    another process is writing), or None when `exc` is something else (a bug).

    Looks through SQLAlchemy's wrapper (`.orig`) and the chain of causes, because a full
    disk surfaces wherever the write happened: hnswlib, pandas, torch, sqlite3. `where`
    names the file when the error itself does not.
    """
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        err = todo.pop()
        if err is None or id(err) in seen:
            continue
        seen.add(id(err))
        if isinstance(err, DuplensError):
            return err
        text = str(err).lower()
        if isinstance(err, OSError) and err.errno == errno.ENOSPC or _SQLITE_FULL in text \
                or "no space left on device" in text:
            name = getattr(err, "filename", None)
            return DiskFull(str(name) if name else (where or "a file"))
        if any(busy in text for busy in _SQLITE_BUSY) and "sqlite" in type(err).__module__:
            return ProjectBusy(f"{where or 'the project'}: {BUSY_MESSAGE}")
        todo += [getattr(err, "orig", None), err.__cause__, err.__context__]
    return None

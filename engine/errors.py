"""Errors the user can act on, kept apart from bugs.

Everything derived from `DuplensError` carries a one-line message written for a person
(file name plus what is wrong); the CLI prints it and exits with status 2, the GUI shows
it in a dialog. Any other exception is a bug and is logged with its traceback.
"""


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

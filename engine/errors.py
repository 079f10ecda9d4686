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


class Cancelled(Exception):
    """Raised inside a job when its `CancelToken` was set; what was committed stays."""

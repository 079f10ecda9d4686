"""The one log file the CLI and the window share, in the user's log folder.

Tracebacks of unexpected errors go here, and the user is told its path.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path


def log_path() -> Path:
    """The user's log folder, or `DUPLENS_LOG_DIR` (tests and portable setups use it)."""
    folder = os.environ.get("DUPLENS_LOG_DIR")
    if not folder:
        from platformdirs import user_log_dir

        folder = user_log_dir("Duplens", appauthor=False)
    return Path(folder) / "duplens.log"


def setup_logging() -> Path | None:
    """Send INFO and up to the log file once per process; None when it cannot be written."""
    path = log_path()
    root = logging.getLogger()
    for handler in root.handlers:
        if isinstance(handler, logging.FileHandler) and Path(handler.baseFilename) == path:
            return path
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(path, encoding="utf-8")
    except OSError:
        return None
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    return path

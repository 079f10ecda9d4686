"""The shared log file: in the user's log folder, or where DUPLENS_LOG_DIR says."""

from __future__ import annotations

import logging
from pathlib import Path

from engine.logfile import log_path, setup_logging


def test_the_log_goes_where_the_environment_says(tmp_path, monkeypatch):
    monkeypatch.setenv("DUPLENS_LOG_DIR", str(tmp_path / "logs"))
    path = setup_logging()
    try:
        assert path == log_path() == tmp_path / "logs" / "duplens.log"
        logging.getLogger("duplens").warning("a line for the log")
        assert "a line for the log" in path.read_text("utf-8")
        assert setup_logging() == path            # once per process: no second handler
        handlers = [h for h in logging.getLogger().handlers
                    if isinstance(h, logging.FileHandler) and Path(h.baseFilename) == path]
        assert len(handlers) == 1
    finally:
        for handler in list(logging.getLogger().handlers):
            if isinstance(handler, logging.FileHandler) and Path(handler.baseFilename) == path:
                logging.getLogger().removeHandler(handler)
                handler.close()

"""Where the app's shipped files are: `resources/` beside the packages, or inside a frozen
build (PyInstaller unpacks data files under `sys._MEIPASS`)."""

from __future__ import annotations

import sys
from pathlib import Path

SAMPLE_QUESTIONS = "sample_questions.csv"


def resources_dir() -> Path:
    frozen = getattr(sys, "_MEIPASS", None)
    if frozen:
        return Path(frozen) / "resources"
    return Path(__file__).resolve().parent.parent / "resources"


def sample_questions_path() -> Path:
    """The shipped sample spreadsheet behind "Try it with sample questions"."""
    return resources_dir() / SAMPLE_QUESTIONS


def icon_path() -> Path:
    """The app icon (rendered from resources/icons/duplens.svg by packaging/make_icons.py)."""
    return resources_dir() / "icons" / "duplens.png"


def user_data_dir() -> Path:
    """The user's Duplens data folder (the sample project lives here)."""
    from platformdirs import user_data_dir as platform_data_dir

    return Path(platform_data_dir("Duplens", appauthor=False))

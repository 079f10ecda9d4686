"""Where the window finds Duplens' shipped files (the `duplens_data` package: sample
questions, icons) and the user's data folder."""

from __future__ import annotations

from pathlib import Path

import duplens_data


def resources_dir() -> Path:
    """The folder of the shipped files, wherever Duplens is installed (`duplens_data`)."""
    return duplens_data.path("")


def sample_questions_path() -> Path:
    """The shipped sample spreadsheet behind "Try it with sample questions"."""
    return duplens_data.sample_questions()


def icon_path() -> Path:
    """The app icon (rendered from duplens_data/icons/duplens.svg by packaging/make_icons.py)."""
    return duplens_data.icon()


def user_data_dir() -> Path:
    """The user's Duplens data folder (the sample project lives here)."""
    from platformdirs import user_data_dir as platform_data_dir

    return Path(platform_data_dir("Duplens", appauthor=False))

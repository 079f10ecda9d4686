"""The files Duplens ships beside its code: the sample questions (the start page's "Try it
with sample questions", `selfcheck`'s window check, the int8 OpenVINO calibration) with their
answer key, and the app's icons. See README.md in this folder for what the samples hold.

A package of its own, read through `importlib.resources`, so that the files travel with the
code however Duplens is installed: a checkout, `pip install .` (a wheel carries only
packages and their package data, which is why a plain `resources/` folder was left out), or
a PyInstaller bundle (packaging/duplens.spec collects them). The engine reads the samples
too, so this package imports nothing but the standard library (never Qt).
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

SAMPLE_QUESTIONS = "sample_questions.csv"
SAMPLE_GROUPS = "sample_questions_groups.csv"


def path(name: str) -> Path:
    """A shipped file as a path (the window imports the samples by path, Qt loads the icon
    by path). Every supported install unpacks packages into folders, so the resource is
    a real file; a zipped install is refused here rather than failing later, elsewhere."""
    found = files(__name__).joinpath(name)
    if not isinstance(found, Path):
        raise RuntimeError(f"Duplens' data files must be installed as files, not in an "
                           f"archive ({found})")
    return found


def sample_questions() -> Path:
    """2,254 questions (`id,question,topic`), a third of them in paraphrase groups."""
    return path(SAMPLE_QUESTIONS)


def sample_groups() -> Path:
    """The samples' answer key (`id,group`): two rows are duplicates when they share a group."""
    return path(SAMPLE_GROUPS)


def icon(name: str = "duplens.png") -> Path:
    """One of the app's icons (`icons/`, rendered from duplens.svg by packaging/make_icons.py)."""
    return path(f"icons/{name}")

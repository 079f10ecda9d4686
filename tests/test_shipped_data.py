"""The files Duplens ships (sample questions, their answer key, icons) live in the package
`duplens_data`, so that `pip install .` carries them as an editable install does: the start
page's "Try it with sample questions", `selfcheck`'s window check and the int8 OpenVINO
calibration all read them. (CI also installs the built wheel into a fresh venv outside the
checkout and runs `selfcheck` and an import of the samples: `.ci/run`.)
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import duplens_data

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ["duplens_data/README.md", "duplens_data/sample_questions.csv",
           "duplens_data/sample_questions_groups.csv", "duplens_data/icons/duplens.png",
           "duplens_data/icons/duplens.svg", "duplens_data/icons/duplens.ico",
           "duplens_data/icons/duplens.icns"]


def test_the_shipped_files_are_read_through_the_package():
    with duplens_data.sample_questions().open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 2254 and set(rows[0]) == {"id", "question", "topic"}
    with duplens_data.sample_groups().open(encoding="utf-8", newline="") as fh:
        assert set(next(csv.DictReader(fh))) == {"id", "group"}
    assert duplens_data.icon().read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert duplens_data.path("").resolve() == (ROOT / "duplens_data").resolve()


def test_the_package_imports_nothing_of_the_app_and_no_qt():
    """The engine reads the samples (int8 calibration) and must never import Qt."""
    code = ("import sys, duplens_data; duplens_data.sample_questions(); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('PySide6', 'engine', 'desktop_app', 'torch')))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.stdout.strip() == "[]"


@pytest.mark.slow
def test_a_built_wheel_carries_the_shipped_files_and_the_code_finds_them(tmp_path):
    """Build the wheel as `pip install .` does (from a copy of the source: setuptools writes
    build/ and *.egg-info beside it), then run the code from the unpacked wheel, away from the
    checkout: the calibration questions and the window's sample and icon paths resolve
    inside it."""
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, source / name)
    for package in ("engine", "desktop_app", "duplens_data"):
        shutil.copytree(ROOT / package, source / package,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.duplens"))
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "--no-index", "-q", "-w", str(wheels), str(source)], check=True,
                   capture_output=True, text=True, timeout=600)
    (wheel,) = wheels.glob("duplens-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        assert set(SHIPPED) <= names, sorted(set(SHIPPED) - names)
        archive.extractall(tmp_path / "installed")
    installed = (tmp_path / "installed").resolve()
    code = ("import json, duplens_data\n"
            "from engine.encoding.runtime import calibration_texts\n"
            "from desktop_app.resources import icon_path, sample_questions_path\n"
            "print(json.dumps({'data': str(duplens_data.path('')), 'texts': "
            "len(calibration_texts()), 'sample': str(sample_questions_path()), "
            "'icon': str(icon_path())}))")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = subprocess.run([sys.executable, "-c", code], cwd=elsewhere, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(installed)},
                          timeout=300)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["data"] == str(installed / "duplens_data")   # not the checkout's copy
    assert found["texts"] == 2254
    assert Path(found["sample"]).is_file() and Path(found["icon"]).is_file()
    assert found["sample"].startswith(str(installed))

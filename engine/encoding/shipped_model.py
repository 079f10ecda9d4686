"""The fast form of the bundled model that ships with Duplens, and when it may be used.

Quantising all-MiniLM-L6-v2 to int8 for OpenVINO (`engine.encoding.conversion`) measures
activations on 300 of the shipped sample questions: half a minute on a laptop, which a new
project's first import would wait for. So the result ships in `duplens_data/models/`, made
by `packaging/build_fast_model.py` (which makes the same bytes again from the same
inputs), with a manifest naming what it was made from: the weights' fingerprint, the
backend and export steps, the calibration texts' digest and the versions of the packages
that write the files.

It stands in for the export Duplens would make only when every one of those matches what
is installed: `shipped_export` answers None otherwise, and the export is made in the cache
as before. The manifest also records that the torch-free encoder (`torch_free_encoder`) was
checked against sentence-transformers with this file, so the command line serves it without
torch from the first search.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from engine.encoding.backends import EXPORT_FORMAT, Backend, runtime_versions

SHIPPED_FOLDER = "models/all-MiniLM-L6-v2-openvino-int8"
MANIFEST = "manifest.json"
MANIFEST_FORMAT = 1


def folder() -> Path:
    """Where the shipped export lives (it may be missing: a checkout without it)."""
    import duplens_data

    return duplens_data.path(SHIPPED_FOLDER)


@functools.cache
def manifest() -> dict | None:
    """The shipped export's manifest, None when there is none or it cannot be read."""
    try:
        found = json.loads((folder() / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError, RuntimeError):
        return None
    return found if isinstance(found, dict) and found.get("format") == MANIFEST_FORMAT \
        else None


def shipped_export(weights: str, backend: Backend, calibration: str) -> Path | None:
    """The shipped file to load for `backend` on these weights calibrated on texts of
    digest `calibration`, or None when what ships is not that export (other weights,
    backend, export steps, calibration or package versions) or its files are missing."""
    found = manifest()
    if (found is None or found.get("weights") != weights
            or found.get("backend") != backend.name
            or found.get("export_format") != EXPORT_FORMAT
            or found.get("calibration", {}).get("digest") != calibration
            or found.get("versions") != runtime_versions(backend)):
        return None
    files = found.get("files", {})
    for name, about in files.items():
        path = folder() / name
        if not path.is_file() or path.stat().st_size != about.get("bytes"):
            return None
    entry = found.get("entry")
    return folder() / entry if entry in files else None


def torch_free_checked(export: Path, steps_digest: str) -> bool:
    """Whether `export` is the shipped file and the torch-free encoder was checked with it
    for a model folder whose steps have digest `steps_digest` (`folder_steps.read_steps`)."""
    found = manifest()
    if found is None:
        return False
    try:
        shipped = export.resolve() == (folder() / str(found.get("entry"))).resolve()
    except (OSError, RuntimeError):
        return False
    check = found.get("torch_free_check") or {}
    return shipped and check.get("steps_digest") == steps_digest

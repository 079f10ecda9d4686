"""Model locations outside a project that the user approved for that project.

A project file records where each of its models is. Its own versions live in
`<project>.models/`; anything else (a folder elsewhere on disk, or a hub name, which means
a download) could have been written there by whoever made the file, so loading it needs
the user's consent, once per project. Consents are kept in the user's config folder
(`approved_models.json`), never in the project file, which its sender controls. A model
this user chose themselves is approved as their Duplens records it in the project
(`engine.training.version_folders.location_for`), so their own projects never ask.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from pathlib import Path

CONSENT_FILE = "approved_models.json"
_lock = threading.Lock()


def config_dir() -> Path:
    """The user's Duplens config folder, or `DUPLENS_CONFIG_DIR` (tests, portable setups)."""
    override = os.environ.get("DUPLENS_CONFIG_DIR")
    if override:
        return Path(override).expanduser()
    from platformdirs import user_config_dir

    return Path(user_config_dir("Duplens", appauthor=False))


def consent_file() -> Path:
    return config_dir() / CONSENT_FILE


def location_key(location: str | os.PathLike, is_hub: bool) -> str:
    """How a location is compared and stored: a folder's resolved absolute path, a hub name
    as it is."""
    return str(location) if is_hub else str(Path(location).resolve())


def approved(project: str | os.PathLike) -> set[str]:
    """The locations approved for `project` (keys as `location_key` makes them)."""
    return set(_read().get(_project_key(project), ()))


def is_approved(project: str | os.PathLike, location: str) -> bool:
    return location in approved(project)


def approve(project: str | os.PathLike, location: str) -> bool:
    """Remember that the user agreed to load `location` (a `location_key`) for `project`;
    False when it was approved already. The file is replaced whole, never half-written."""
    with _lock:
        consents = _read()
        key = _project_key(project)
        known = consents.setdefault(key, [])
        if location in known:
            return False
        known.append(location)
        path = consent_file()
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, scratch = tempfile.mkstemp(prefix=f".{CONSENT_FILE}-", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(consents, fh, indent=1, ensure_ascii=False)
            os.replace(scratch, path)
        except BaseException:
            Path(scratch).unlink(missing_ok=True)
            raise
    return True


def _project_key(project: str | os.PathLike) -> str:
    return str(Path(project).resolve())


def _read() -> dict[str, list[str]]:
    """The consents on file; none when the file is missing or unreadable (then nothing
    outside a project is trusted, which is the safe way to be wrong)."""
    try:
        data = json.loads(consent_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: [v for v in vs if isinstance(v, str)] for k, vs in data.items()
            if isinstance(k, str) and isinstance(vs, list)}

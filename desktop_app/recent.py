"""The recent-projects list, kept in QSettings so it survives restarts (organisation Duplens)."""

from __future__ import annotations

import os

from PySide6.QtCore import QSettings

KEY = "recentProjects"
MAX_RECENT = 8


class RecentProjects:
    """Most recent first, no duplicates, at most `MAX_RECENT` paths."""

    def __init__(self, settings: QSettings) -> None:
        self._settings = settings

    def paths(self) -> list[str]:
        value = self._settings.value(KEY, [])
        if isinstance(value, str):      # QSettings returns a lone string for 1-item lists
            value = [value]
        return [str(v) for v in (value or [])][:MAX_RECENT]

    def add(self, path: str) -> None:
        path = _key(path)
        paths = [path, *(p for p in self.paths() if p != path)]
        self._settings.setValue(KEY, paths[:MAX_RECENT])

    def remove(self, path: str) -> None:
        self._settings.setValue(KEY, [p for p in self.paths() if p != _key(path)])


def _key(location: str) -> str:
    """A file's absolute path; a server project's URL as it is (shown without password)."""
    from engine.store.location import looks_like_url, parse_location

    return parse_location(location).display if looks_like_url(location) \
        else os.path.abspath(location)

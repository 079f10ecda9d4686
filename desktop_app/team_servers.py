"""The PostgreSQL servers the analyst opened team projects on, remembered in the app's
settings (host, port, database, user), never with a password.

A password is given each time instead: from PGPASSWORD or ~/.pgpass (libpq reads both, so
nothing is asked then), else typed into the connection dialog and used for that one
connection only.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from PySide6.QtCore import QSettings
from sqlalchemy.engine import URL

from engine.store.location import POSTGRES_DRIVER

KEY = "team/servers"
MAX_SERVERS = 10


@dataclass(frozen=True)
class Server:
    host: str
    port: int = 5432
    database: str = ""
    user: str = ""

    def url(self, password: str | None = None) -> str:
        """The project's URL; with `password` only for connecting, never to remember."""
        return URL.create(POSTGRES_DRIVER, self.user or None, password or None, self.host,
                          self.port, self.database).render_as_string(hide_password=False)

    @property
    def label(self) -> str:
        return f"{self.database} on {self.user + '@' if self.user else ''}{self.host}:{self.port}"

    def password_known(self) -> bool:
        """Whether libpq will find the password by itself: PGPASSWORD, or a ~/.pgpass
        (PGPASSFILE) line matching host, port, database and user."""
        if os.environ.get("PGPASSWORD"):
            return True
        path = Path(os.environ.get("PGPASSFILE") or Path.home() / ".pgpass")
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError:
            return False
        wanted = (self.host, str(self.port), self.database, self.user)
        for line in lines:
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            fields = _pgpass_fields(line)
            if len(fields) == 5 and all(
                    f in ("*", w) for f, w in zip(fields[:4], wanted, strict=True)):
                return True
        return False


def _pgpass_fields(line: str) -> list[str]:
    """A .pgpass line's fields (':' separates, '\\' escapes ':' and '\\')."""
    fields, current, escaped = [], "", False
    for ch in line:
        if escaped:
            current, escaped = current + ch, False
        elif ch == "\\":
            escaped = True
        elif ch == ":":
            fields.append(current)
            current = ""
        else:
            current += ch
    return [*fields, current]


class TeamServers:
    """Most recently used first, no duplicates, at most `MAX_SERVERS`."""

    def __init__(self, settings: QSettings) -> None:
        self._settings = settings

    def servers(self) -> list[Server]:
        try:
            raw = json.loads(str(self._settings.value(KEY, "[]")))
            return [Server(str(s["host"]), int(s["port"]), str(s["database"]), str(s["user"]))
                    for s in raw][:MAX_SERVERS]
        except (ValueError, KeyError, TypeError):
            return []

    def remember(self, server: Server) -> None:
        servers = [server, *(s for s in self.servers() if s != server)][:MAX_SERVERS]
        self._settings.setValue(KEY, json.dumps([asdict(s) for s in servers]))

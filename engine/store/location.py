"""Where a project lives: a `.duplens` file, or a PostgreSQL database named by a URL.

Everything that takes a project accepts either: a path (`questions.duplens`) or a
SQLAlchemy URL (`postgresql+psycopg://analyst@db.example:5432/support_faq`). The password,
when the URL holds one, is kept for connecting only: every form of the location meant to be
shown, logged or remembered (`display`) leaves it out, so it is given again through the URL,
the PGPASSWORD variable or ~/.pgpass (libpq reads both) each time the project is opened.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from engine.errors import InputError

POSTGRES_DRIVER = "postgresql+psycopg"
# Other drivers are not refused silently into a mystery: only psycopg 3 is tested and shipped.
_POSTGRES_SCHEMES = {"postgresql", "postgres", POSTGRES_DRIVER}


@dataclass(frozen=True)
class Location:
    """A parsed project location. `url` may hold a password: never print it, use `display`."""

    url: URL
    path: Path | None     # the project file; None for a server project

    @property
    def is_file(self) -> bool:
        return self.path is not None

    @property
    def dialect(self) -> str:
        return "sqlite" if self.is_file else "postgresql"

    @property
    def name(self) -> str:
        """How messages name the project: the file's name, or the database's."""
        if self.path is not None:
            return self.path.name
        return self.url.database or "postgres"

    @property
    def safe_url(self) -> str:
        """The SQLAlchemy URL without its password."""
        u = self.url   # (URL.set(password=None) would keep the password: None means "as is")
        return URL.create(u.drivername, u.username, None, u.host, u.port, u.database, u.query
                          ).render_as_string(hide_password=False)

    @property
    def display(self) -> str:
        """The location without its password: the file's path, or the URL minus password.

        What to show, log, or remember in a list of recent projects (opening it again asks
        libpq for the password through PGPASSWORD or ~/.pgpass)."""
        return str(self.path) if self.path is not None else self.safe_url


def looks_like_url(location: str | os.PathLike) -> bool:
    """True for "scheme://..." strings; a Windows path ("C:\\x") or a file name is not one."""
    return isinstance(location, str) and "://" in location.split("?", 1)[0]


def parse_location(location: str | os.PathLike) -> Location:
    """A path or a URL as a `Location`; `InputError` for a URL of another kind of database."""
    if not looks_like_url(location):
        path = Path(location)
        return Location(make_url(f"sqlite:///{path.resolve().as_posix()}"), path)
    try:
        url = make_url(str(location))
    except ArgumentError as exc:
        raise InputError(f"{_safe(str(location))}: is not a database URL ({exc})") from exc
    if url.drivername == "sqlite":
        if not url.database or url.database == ":memory:":
            raise InputError(f"{_safe(str(location))}: name a project file, e.g. "
                             f"sqlite:///questions.duplens")
        return parse_location(url.database)
    if url.drivername not in _POSTGRES_SCHEMES:
        raise InputError(
            f"{_safe(str(location))}: Duplens projects live in a .duplens file or in "
            f"PostgreSQL (postgresql+psycopg://user@host:5432/database), not in "
            f"{url.drivername}")
    if not url.database:
        raise InputError(f"{_safe(str(location))}: name the database, e.g. "
                         f"postgresql+psycopg://analyst@db.example:5432/support_faq")
    return Location(url.set(drivername=POSTGRES_DRIVER), None)


def _safe(location: str) -> str:
    """A URL as given, with any password replaced, for error messages."""
    try:
        return make_url(location).render_as_string(hide_password=True)
    except ArgumentError:
        head, sep, rest = location.partition("://")
        if "@" in rest:
            rest = "***@" + rest.split("@", 1)[1]
        return head + sep + rest

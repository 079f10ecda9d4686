"""Moved to `devtools/postgres_server.py` (shared with the benchmarks); this name stays so
that tests written against it keep importing."""

from devtools.postgres_server import *  # noqa: F403

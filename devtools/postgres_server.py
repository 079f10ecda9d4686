"""A private PostgreSQL server for tests and benchmarks: initdb + pg_ctl in a temporary folder.

Debian's (or any) PostgreSQL binaries, listening on 127.0.0.1 only, on a free port, with
fsync off (its data is thrown away). initdb refuses to run as root, so as root the server runs
as the `postgres` user (`runuser -u postgres --`); any other user runs it as themselves.

Why not pytest-postgresql or pgserver: pytest-postgresql starts the same pg_ctl but has no
answer to running as root, which is how CI runs; pgserver bundles its own PostgreSQL 16 (with
pgvector, which `benchmarks/team_index.py` uses through `bin_dir`) but serves on a Unix socket
with trust only, while the tests need TCP on 127.0.0.1 and password logins, as analysts
connect. This module is those few lines, written out.

Roles: `postgres` (superuser, trusted on 127.0.0.1, creates and drops the test databases) and
`analyst` (password `ANALYST_PASSWORD`, SCRAM), who owns each test database as a team's
project database would be owned.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path

ANALYST = "analyst"
ANALYST_PASSWORD = "correct horse battery"   # what a test server's analyst logs in with
SUPERUSER = "postgres"


class NoServer(RuntimeError):
    """No PostgreSQL server can be started here; the message says why."""


def find_bin_dir() -> Path:
    """Where initdb and pg_ctl are: $DUPLENS_PG_BIN, else Debian's newest
    /usr/lib/postgresql/N/bin, else the folder of an `initdb` on PATH."""
    named = os.environ.get("DUPLENS_PG_BIN")
    candidates = [Path(named)] if named else []
    debian = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                    key=lambda p: int(Path(p).parent.parent.name) if
                    Path(p).parent.parent.name.isdigit() else 0)
    candidates += [Path(p).parent for p in reversed(debian)]
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(Path(on_path).parent)
    for folder in candidates:
        if (folder / "initdb").is_file() and (folder / "pg_ctl").is_file():
            return folder
    raise NoServer("no PostgreSQL binaries (initdb, pg_ctl): install the postgresql package "
                   "or set DUPLENS_PG_BIN")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresServer:
    """One throw-away server; `start()`, then `create_database()` per test, `stop()` after."""

    def __init__(self, bin_dir: Path | None = None, *, settings: dict[str, str] | None = None
                 ) -> None:
        self.bin_dir = bin_dir or find_bin_dir()
        self.port = 0
        self.settings = {"fsync": "off", "synchronous_commit": "off",
                         "full_page_writes": "off", "max_connections": "100",
                         **(settings or {})}
        self._root: Path | None = None
        self._as_user: list[str] = []

    # -- life cycle --------------------------------------------------------------------------
    def start(self) -> PostgresServer:
        if os.geteuid() == 0:
            try:
                import pwd

                owner = pwd.getpwnam(SUPERUSER)
            except KeyError as exc:
                raise NoServer("running as root and there is no `postgres` user to run the "
                               "server as (initdb refuses root)") from exc
            if not shutil.which("runuser"):
                raise NoServer("running as root without `runuser` to start the server as "
                               "`postgres`")
            self._as_user = ["runuser", "-u", SUPERUSER, "--"]
        self._root = Path(tempfile.mkdtemp(prefix="duplens-pg-"))
        if self._as_user:
            os.chown(self._root, owner.pw_uid, owner.pw_gid)
        data, log = self._root / "data", self._root / "server.log"
        pwfile = self._root / "superuser-password"   # initdb wants one for scram; unused
        pwfile.write_text("unused\n")
        if self._as_user:
            os.chown(pwfile, owner.pw_uid, owner.pw_gid)
        self._run("initdb", "-D", str(data), "-U", SUPERUSER, "-E", "UTF8",
                  "--locale=C.UTF-8", "--auth-local=trust", "--auth-host=scram-sha-256",
                  f"--pwfile={pwfile}")
        # The superuser is trusted on 127.0.0.1 (it only makes and drops test databases);
        # everyone else logs in with a password.
        hba = data / "pg_hba.conf"
        hba.write_text(f"local all all trust\nhost all {SUPERUSER} 127.0.0.1/32 trust\n"
                       "host all all 127.0.0.1/32 scram-sha-256\n")
        options = " ".join(["-c listen_addresses=127.0.0.1", f"-k {self._root}"]
                           + [f"-c {k}={v}" for k, v in self.settings.items()])
        for _attempt in range(5):   # another process may take the free port before we do
            self.port = free_port()
            try:
                self._run("pg_ctl", "-D", str(data), "-l", str(log), "-w", "-t", "60",
                          "-o", f"{options} -p {self.port}", "start")
                break
            except NoServer:
                if "could not bind" not in log.read_text(errors="replace"):
                    raise
        else:
            raise NoServer(f"could not find a free port; see {log}")
        self.sql(f"CREATE ROLE {ANALYST} LOGIN PASSWORD '{ANALYST_PASSWORD}'")
        return self

    def stop(self) -> None:
        if self._root is None:
            return
        try:
            self._run("pg_ctl", "-D", str(self._root / "data"), "-m", "immediate", "-w",
                      "stop")
        finally:
            shutil.rmtree(self._root, ignore_errors=True)
            self._root = None

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(self, *_exc) -> None:
        self.stop()

    # -- databases ---------------------------------------------------------------------------
    def url(self, database: str, *, user: str = ANALYST, password: str | None = None,
            driver: str = "postgresql+psycopg") -> str:
        auth = f"{user}:{password}" if password else user
        return f"{driver}://{auth}@127.0.0.1:{self.port}/{database}"

    def create_database(self, owner: str = ANALYST) -> str:
        """A new empty database owned by `owner`; returns its name.

        Its collation is ICU's en-US when the server has ICU, as a team's server usually
        sorts (unlike the "C" order of the server's own databases): spaces and punctuation
        then weigh less than letters, which a sort that should match SQLite's has to undo.
        """
        name = f"t_{uuid.uuid4().hex[:12]}"
        create = f"CREATE DATABASE {name} OWNER {owner} TEMPLATE template0 STRATEGY file_copy"
        try:
            self.sql(f"{create} LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.UTF-8'")
        except Exception:   # a server built without ICU
            self.sql(create)
        return name

    def drop_database(self, name: str) -> None:
        self.sql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def sql(self, statement: str, database: str = "postgres") -> list[tuple]:
        """Run one statement as the superuser (autocommit) and return its rows, if any."""
        import psycopg

        with psycopg.connect(host="127.0.0.1", port=self.port, user=SUPERUSER,
                             dbname=database, autocommit=True) as conn:
            cur = conn.execute(statement)
            return cur.fetchall() if cur.description else []

    # -- helpers -----------------------------------------------------------------------------
    def _run(self, tool: str, *args: str) -> None:
        cmd = [*self._as_user, str(self.bin_dir / tool), *args]
        done = subprocess.run(cmd, capture_output=True, text=True, cwd=self._root,
                              env={**os.environ, "LC_ALL": "C.UTF-8"})
        if done.returncode != 0:
            raise NoServer(f"{tool} failed ({done.returncode}): "
                           f"{(done.stderr or done.stdout).strip()[-800:]}")

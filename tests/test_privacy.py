"""Nothing leaves the machine: every entry point, run on a fresh account under strace.

Each run starts with an empty HOME and empty XDG folders, as a new user would, and strace
follows every thread and child process. A run passes when it connected to no address but
this machine's loopback (local sockets are fine) and created, wrote, renamed, linked or
removed no file outside the places Duplens may write: the folder the user works in (the
project, its `.models` folder, exports), the temporary folder, /dev/shm (the index's
scratch file), and Duplens' own cache, log, config and data folders. Any dependency that
records a device id, queues telemetry, or looks up a server shows up here by path or
address, whatever the library's documentation says.

CI runs these (`.ci/run` installs strace and sets DUPLENS_REQUIRE_STRACE=1, so they fail
rather than skip there); elsewhere they skip when strace cannot trace (no ptrace rights).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.required import unavailable
from tests.syscall_trace import Trace, strace_problem, traced

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
PYTHON = sys.executable
# Paraphrase pairs and unrelated pairs of tests/data/questions.csv: enough labelled pairs
# (20) for fine-tuning to start, both verdicts.
SAME = [(f"q{i}", f"q{i + 1}") for i in range(6, 31, 2)]
DIFFERENT = [(f"q{i}", f"q{i + 2}") for i in range(6, 26, 2)]


@pytest.fixture(scope="module", autouse=True)
def needs_strace():
    problem = strace_problem()
    if problem is not None:
        unavailable("STRACE", problem)


class FreshAccount:
    """A new user's empty HOME and XDG folders, the folder they work in, and the places
    Duplens may write there (narrow on purpose: HOME itself is not one of them)."""

    def __init__(self, root: Path) -> None:
        self.home, self.tmp, self.work = root / "home", root / "tmp", root / "work"
        for folder in (self.home, self.tmp, self.work):
            folder.mkdir()
        self.xdg = {"XDG_CACHE_HOME": self.home / ".cache",
                    "XDG_CONFIG_HOME": self.home / ".config",
                    "XDG_DATA_HOME": self.home / ".local" / "share",
                    "XDG_STATE_HOME": self.home / ".local" / "state"}
        # The subprocess sees the packages this test process sees (an extra on PYTHONPATH
        # included), with the source tree first.
        paths = [str(ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.home),
            "TMPDIR": str(self.tmp), "LANG": "C.UTF-8", "PYTHONPATH": os.pathsep.join(paths),
            "QT_QPA_PLATFORM": "offscreen", "XDG_RUNTIME_DIR": str(self.tmp),
            # Python's own bytecode cache would be written beside the source tree: not
            # Duplens' doing, and not what a frozen or pip-installed copy does.
            "PYTHONDONTWRITEBYTECODE": "1",
            **{name: str(path) for name, path in self.xdg.items()},
        }

    def allowed(self) -> list[Path]:
        """Duplens' folders (platformdirs' and Qt's names on Linux: "Duplens" under each
        XDG folder), the work and temporary folders, shared memory and /dev/null."""
        return [self.work, self.tmp, Path("/dev/shm"), Path("/dev/null"),
                *(folder / "Duplens" for folder in self.xdg.values())]

    def run(self, *command: str) -> Trace:
        trace = traced([PYTHON, *command], env=self.env, cwd=self.work)
        assert trace.returncode == 0, f"{command} exited {trace.returncode}:\n{trace.stderr}"
        return trace

    def cli(self, *args: str) -> Trace:
        return self.run("-m", "engine.cli", *args)


def assert_private(trace: Trace, account: FreshAccount, what: str) -> None:
    remote = trace.remote_connections()
    assert not remote, f"{what} connected to {remote}"
    outside = trace.written_outside(account.allowed())
    assert not outside, f"{what} wrote outside Duplens' folders:\n" + "\n".join(outside)


@pytest.fixture
def account(tmp_path) -> FreshAccount:
    return FreshAccount(tmp_path)


def test_selfcheck_with_the_window_sends_and_leaves_nothing(account):
    """The launcher's selfcheck: the bundled model, single queries through ONNX Runtime
    (whose telemetry would write ~/.cache/Microsoft/DeveloperTools), the engine and the
    window."""
    trace = account.run("-c", "import sys; from desktop_app.launcher import main; "
                              "sys.exit(main(['selfcheck']))")
    assert "selfcheck passed" in trace.stdout and "search in the window" in trace.stdout
    assert_private(trace, account, "selfcheck (launcher, window)")
    # It did write where it should: its export cache and its log.
    assert (account.xdg["XDG_CACHE_HOME"] / "Duplens" / "backends").is_dir()
    assert (account.xdg["XDG_STATE_HOME"] / "Duplens" / "log" / "duplens.log").is_file()


def test_engine_selfcheck_sends_and_leaves_nothing(account):
    trace = account.cli("selfcheck", "--no-window")
    assert "selfcheck passed" in trace.stdout
    assert_private(trace, account, "python -m engine.cli selfcheck --no-window")


def test_a_command_line_session_sends_and_leaves_nothing(account):
    """Import a spreadsheet, search it, export duplicates, fine-tune on labelled pairs:
    each command a process of its own, as a user types them."""
    from engine.project import Project

    project = account.work / "questions.duplens"
    steps = [("import", account.cli("import", str(project), str(DATA / "questions.csv"),
                                    "--column", "question", "--id-column", "qid")),
             ("search", account.cli("search", str(project), "learn python fast", "-k", "3"))]
    clusters = account.work / "clusters.csv"
    steps.append(("duplicates", account.cli("duplicates", str(project), "--out",
                                            str(clusters))))
    assert clusters.is_file() and "q6" in clusters.read_text("utf-8-sig")
    with Project.open(project) as opened:   # the labels a reviewer would have set
        item = {r["id"]: r["item_id"] for r in opened.rows.page(0, 100)}
        for pairs, label in ((SAME, 1), (DIFFERENT, 0)):
            for a, b in pairs:
                opened.verdicts.set_verdict(item[a], item[b], label)
    steps.append(("finetune", account.cli("finetune", str(project), "--max-steps", "2",
                                          "--batch-size", "4")))
    assert (account.work / "questions.duplens.models" / "v2").is_dir()
    for what, trace in steps:
        assert_private(trace, account, f"duplens {what}")


def test_the_openvino_backend_sends_and_leaves_nothing(account):
    """`import openvino` alone would write ~/intel/openvino_ga_cid and look up Google
    Analytics' address (openvino-telemetry 2025.2, on by default); NNCF has usage events."""
    if any(importlib.util.find_spec(m) is None for m in ("openvino", "nncf")):
        unavailable("OPENVINO", "OpenVINO is an extra: pip install 'duplens[openvino]'")
    project = account.work / "q.duplens"
    trace = account.cli("import", str(project), str(DATA / "questions.csv"), "--column",
                        "question", "--backend", "openvino-int8")
    assert_private(trace, account, "duplens import --backend openvino-int8")


def test_the_shipped_fast_model_loads_offline(account):
    """A first import with openvino-int8: encoded from the int8 model shipped with Duplens,
    with no connection and nothing calibrated or exported into the cache (the shipped file
    is the one loaded)."""
    if any(importlib.util.find_spec(m) is None for m in ("openvino", "nncf")):
        unavailable("OPENVINO", "OpenVINO is an extra: pip install 'duplens[openvino]'")
    from engine.project import Project

    fast = "openvino-int8"
    project = account.work / "q.duplens"
    trace = account.cli("import", str(project), str(DATA / "questions.csv"), "--column",
                        "question", "--device", "cpu", "--backend", fast)
    assert_private(trace, account, f"duplens import --backend {fast} (the shipped model)")
    with Project.open(project) as opened:
        assert opened.model.row()["fingerprint"].endswith(f"+{fast}")
        assert opened.info()["encoded"] > 0
    cache = account.xdg["XDG_CACHE_HOME"] / "Duplens" / "backends"
    made = sorted(p.name for p in cache.glob(f"{fast}-*")) if cache.is_dir() else []
    assert not made, f"exported into the cache instead of loading the shipped model: {made}"


def test_the_trace_sees_a_connection_and_a_stray_file(account):
    """The check itself: a process that writes into HOME and connects out is caught."""
    stray = account.home / ".cache" / "somebody" / "id"
    code = (f"import os, socket; os.makedirs({str(stray.parent)!r}); "
            f"open({str(stray)!r}, 'w').write('x'); s = socket.socket(); s.setblocking(False)\n"
            f"try: s.connect(('192.0.2.1', 9))\nexcept OSError: pass")
    trace = account.run("-c", code)
    assert trace.remote_connections() == ["connect 192.0.2.1:9 (off the machine)"]
    assert f"openat {stray}" in trace.written_outside(account.allowed())
    assert not any(str(account.work) in w for w in trace.written_outside(account.allowed()))


def test_the_trace_sees_a_lookup_sent_to_a_local_resolver(account):
    """Loopback is not all harmless: a DNS query to a resolver on this machine (systemd-
    resolved listens on 127.0.0.53) goes on to the network from there. A query sent as a
    datagram, a connect to port 53 over TCP, and any other datagram are all caught."""
    # a DNS query for example.com's A record: header (id, flags, one question), name, type
    query = (b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00"
             b"\x07example\x03com\x00\x00\x01\x00\x01")
    code = (f"import socket\n"
            f"u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
            f"u.sendto({query!r}, ('127.0.0.53', 53))\n"
            f"t = socket.socket(); t.setblocking(False)\n"
            f"try: t.connect(('127.0.0.1', 53))\nexcept OSError: pass\n"
            f"b = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
            f"b.sendto(b'beacon', ('127.0.0.1', 9999))")
    trace = account.run("-c", code)
    assert trace.remote_connections() == ["sendto 127.0.0.53:53 (UDP datagram)",
                                          "connect 127.0.0.1:53 (DNS)",
                                          "sendto 127.0.0.1:9999 (UDP datagram)"]


def test_the_trace_sees_a_real_name_lookup_through_a_local_resolver(account, tmp_path):
    """The C library's own lookup (`socket.getaddrinfo`), with /etc/resolv.conf naming
    127.0.0.53 as its one resolver, seen only by this child: a private mount namespace
    (`unshare --mount`, root) binds our file over /etc/resolv.conf. Nothing listens there,
    so the query is refused at once and the lookup fails; the trace must see it tried."""
    resolv = tmp_path / "resolv.conf"
    resolv.write_text("nameserver 127.0.0.53\noptions timeout:1 attempts:1\n")
    probe = subprocess.run(["unshare", "--mount", "--", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        unavailable("MOUNTS", f"cannot make a private mount namespace: {probe.stderr.strip()}")
    lookup = ("import socket\n"
              "try: socket.getaddrinfo('duplens-privacy-check.example', 443)\n"
              "except OSError: pass")
    script = 'mount --bind "$1" /etc/resolv.conf && exec "$2" -c "$3"'
    trace = traced(["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script,
                    "sh", str(resolv), PYTHON, lookup], env=account.env, cwd=account.work)
    assert trace.returncode == 0, trace.stderr
    assert "connect 127.0.0.53:53 (DNS)" in trace.remote_connections(), trace.connections

"""Run a command under `strace -f` and say where it connected and which files it changed.

The privacy tests use it to hold Duplens to "nothing leaves the machine": every network
connection a process (or any child or thread of it) tries, every datagram it sends, and every
file it creates, writes, renames, links or removes, read from the kernel's side rather than
from what the libraries say they do.

Loopback is not all harmless: a name lookup goes to the resolver in /etc/resolv.conf, which
on many machines is a local one (systemd-resolved at 127.0.0.53, dnsmasq at 127.0.0.1) that
then asks the network. So besides any connection off the machine, the trace flags any
connection to port 53 (DNS), whatever the address, and any UDP datagram, whatever the
address (DNS, mDNS and telemetry beacons all travel that way); sockets are told apart by
strace's `--decode-fds=socket` (`3<UDP:[...]>`).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from ipaddress import ip_address
from pathlib import Path

# File changes and connections; chdir so relative paths are read against the right folder.
SYSCALLS = ("open", "openat", "openat2", "creat", "mkdir", "mkdirat", "rename", "renameat",
            "renameat2", "link", "linkat", "symlink", "symlinkat", "unlink", "unlinkat",
            "rmdir", "truncate", "chdir", "connect", "sendto", "sendmsg", "sendmmsg")
_NETWORK = ("connect", "sendto", "sendmsg", "sendmmsg")
DNS_PORT = 53
_WRITE_FLAGS = ("O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC")
_LINE = re.compile(r"^(?P<pid>\d+)\s+(?P<call>\w+)\((?P<args>.*)\)\s+=\s+(?P<ret>-?\d+|\?)")
_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')
_DIRFD = re.compile(r"^(?:AT_FDCWD|-?\d+)<([^>]*)>")
_FAMILY = re.compile(r"sa_family=(AF_INET6?)")
_INET = re.compile(r'inet_addr\("([^"]+)"\)|inet_pton\(AF_INET6?, "([^"]+)"')
_PORT = re.compile(r"sin6?_port=htons\((\d+)\)")
# The socket a call uses, as --decode-fds=socket shows it: `3<UDP:[61132]>`, or once
# connected `4<UDP:[127.0.0.1:49623->127.0.0.53:53]>` (IPv6: `[::1]:53`).
_SOCKET = re.compile(r"^-?\d+<(?P<proto>[\w-]+):\[(?P<info>.*?)\]>")
_PEER = re.compile(r"->\[?(?P<addr>[0-9A-Fa-f:.%]+?)\]?:(?P<port>\d+)$")


@dataclass(frozen=True)
class Connection:
    """A connect or a send the trace saw: the call, the address and port (when the call or
    its socket names them) and the socket's protocol as strace named it (UDP, TCPv6…)."""

    call: str
    address: str | None
    port: int | None
    protocol: str

    def why_flagged(self) -> str | None:
        """Why this could carry data off the machine, or None when it cannot: off-machine
        address, DNS port, or a UDP datagram."""
        if self.protocol.startswith("UDP") and self.call != "connect":
            return "UDP datagram"
        if self.port == DNS_PORT:
            return "DNS"
        if self.address is not None and not ip_address(self.address.split("%")[0]).is_loopback:
            return "off the machine"
        return None

    def __str__(self) -> str:
        where = self.address or "?"
        return f"{self.call} {where}" if self.port is None else f"{self.call} {where}:{self.port}"


@dataclass
class Trace:
    """What a traced run did: every file change (call, absolute path) and every connection
    to an internet address (call, address), whether it succeeded or not."""

    returncode: int
    stdout: str
    stderr: str
    writes: list[tuple[str, str]] = field(default_factory=list)
    connections: list[Connection] = field(default_factory=list)

    def written_outside(self, roots: Sequence[Path]) -> list[str]:
        """Changed paths under none of `roots`, each once, in the order they came. Making
        a folder above a root (~/.cache on the way to ~/.cache/Duplens) is not a change
        outside: the root cannot be made without it."""
        resolved = [str(Path(r).resolve()).rstrip("/") for r in roots]
        outside: list[str] = []
        for call, path in self.writes:
            inside = any(path == r or path.startswith(r + "/") for r in resolved)
            above = call in ("mkdir", "mkdirat") and any(r.startswith(path.rstrip("/") + "/")
                                                          for r in resolved)
            if not (inside or above):
                entry = f"{call} {path}"
                if entry not in outside:
                    outside.append(entry)
        return outside

    def remote_connections(self) -> list[str]:
        """What could carry data off the machine (`Connection.why_flagged`): a connection to
        an address that is not this machine's loopback, any connection to port 53, any UDP
        datagram. Each as "call address[:port] (why)", once, in the order they came."""
        flagged: list[str] = []
        for connection in self.connections:
            why = connection.why_flagged()
            entry = f"{connection} ({why})"
            if why is not None and entry not in flagged:
                flagged.append(entry)
        return flagged


def strace_problem() -> str | None:
    """Why strace cannot trace here (not installed, or no ptrace permission), else None."""
    if shutil.which("strace") is None:
        return "strace is not installed (apt-get install strace)"
    probe = subprocess.run(["strace", "-f", "-qq", "-e", "trace=none", "true"],
                           capture_output=True, text=True, timeout=60)
    if probe.returncode != 0:
        return f"strace cannot trace here: {probe.stderr.strip().splitlines()[-1:]}"
    return None


def traced(command: Sequence[str], *, env: Mapping[str, str], cwd: Path,
           timeout: float = 600) -> Trace:
    """Run `command` under strace (every thread and child) and parse what it did."""
    with tempfile.TemporaryDirectory(prefix="duplens-strace-") as folder:
        log = Path(folder) / "trace.txt"
        strace = ["strace", "-f", "-qq", "--decode-fds=path,socket", "--seccomp-bpf",
                  "-e", "signal=none",
                  "-e", f"trace={','.join(SYSCALLS)}", "-o", str(log)]
        proc = subprocess.run([*strace, *command], env=dict(env), cwd=cwd,
                              capture_output=True, text=True, timeout=timeout)
        trace = Trace(proc.returncode, proc.stdout, proc.stderr)
        _parse(log.read_text("utf-8", errors="replace"), str(cwd), trace)
    return trace


def _parse(text: str, cwd: str, trace: Trace) -> None:
    cwds: dict[str, str] = {}
    unfinished: dict[str, str] = {}
    for line in text.splitlines():
        match = _LINE.match(line)
        if match is None:   # "<unfinished ...>" halves, exits: -f interleaves threads
            line = _join_unfinished(line, unfinished)
            match = _LINE.match(line) if line else None
            if match is None:
                continue
        pid, call, args, ret = match["pid"], match["call"], match["args"], match["ret"]
        here = cwds.get(pid, cwd)
        dirfd = _DIRFD.match(args)
        if dirfd and args.startswith("AT_FDCWD"):
            here = cwds[pid] = dirfd.group(1)
        if call in _NETWORK:
            connection = _connection(call, args)
            if connection is not None:
                trace.connections.append(connection)
            continue
        ok = ret != "?" and int(ret) >= 0
        if not ok:
            continue
        paths = _paths(call, args, here)
        if call == "chdir":
            cwds[pid] = paths[0] if paths else here
            continue
        if call in ("open", "openat", "openat2", "creat"):
            if call != "creat" and not any(flag in args for flag in _WRITE_FLAGS):
                continue
            opened = re.search(r"=\s+\d+<([^>]*)>", line)
            paths = [opened.group(1)] if opened else paths[:1]
        for path in paths:
            trace.writes.append((call, path))


def _connection(call: str, args: str) -> Connection | None:
    """The connect or send in `args`: an internet address it names (its own, or the peer
    its connected socket shows), or any send on a UDP socket. Local (AF_UNIX) and netlink
    sockets are not the network: None."""
    socket = _SOCKET.match(args)
    protocol = socket["proto"] if socket else ""
    address = _INET.search(args)
    port = _PORT.search(args)
    if _FAMILY.search(args) and address:
        return Connection(call, address.group(1) or address.group(2),
                          int(port.group(1)) if port else None, protocol)
    if protocol.startswith(("UDP", "TCP")):
        peer = _PEER.search(socket["info"])
        if peer:
            return Connection(call, peer["addr"], int(peer["port"]), protocol)
        if protocol.startswith("UDP") and call != "connect":
            return Connection(call, None, None, protocol)
    return None


def _paths(call: str, args: str, here: str) -> list[str]:
    """The absolute paths a call names: strings made absolute against their directory fd
    (shown by -y) or the process's working folder."""
    found = []
    # Split at top-level commas to pair each path with the dirfd before it.
    parts = _split_args(args)
    base = here
    for part in parts:
        dirfd = _DIRFD.match(part)
        if dirfd:
            base = dirfd.group(1)
            continue
        string = _STRING.match(part)
        if string:
            found.append(os.path.normpath(os.path.join(base, _unescape(string.group(1)))))
            base = here
    if call in ("link", "linkat", "symlink", "symlinkat"):
        return found[-1:]  # the new name is the change; what it points at is not
    return found


def _split_args(args: str) -> list[str]:
    parts, depth, quoted, current = [], 0, False, []
    i = 0
    while i < len(args):
        ch = args[i]
        if quoted:
            current.append(ch)
            if ch == "\\" and i + 1 < len(args):
                current.append(args[i + 1])
                i += 1
            elif ch == '"':
                quoted = False
        elif ch == '"':
            quoted = True
            current.append(ch)
        elif ch in "{[(<":
            depth += 1
            current.append(ch)
        elif ch in "}])>":
            depth -= 1
            current.append(ch)
        elif ch == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
        i += 1
    if current:
        parts.append("".join(current).strip())
    return parts


def _unescape(text: str) -> str:
    raw = text.encode("latin-1", "backslashreplace").decode("unicode_escape")
    return raw.encode("latin-1", "surrogateescape").decode("utf-8", "surrogateescape")


def _join_unfinished(line: str, unfinished: dict[str, str]) -> str | None:
    """strace -f splits a call that another thread interrupted into "<unfinished ...>" and
    "<... call resumed>"; glue the two halves back into one line (None: not whole yet)."""
    head = re.match(r"^(\d+)\s+(.*) <unfinished \.\.\.>$", line)
    if head:
        unfinished[head.group(1)] = head.group(2)
        return None
    tail = re.match(r"^(\d+)\s+<\.\.\. \w+ resumed>(.*)$", line)
    if tail and tail.group(1) in unfinished:
        return f"{tail.group(1)} {unfinished.pop(tail.group(1))}{tail.group(2)}"
    return None

"""Run a command under `strace -f` and say where it connected and which files it changed.

The privacy tests use it to hold Duplens to "nothing leaves the machine": every network
connection a process (or any child or thread of it) tries, and every file it creates,
writes, renames, links or removes, read from the kernel's side rather than from what the
libraries say they do.
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
            "rmdir", "truncate", "chdir", "connect", "sendto", "sendmsg")
_WRITE_FLAGS = ("O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC")
_LINE = re.compile(r"^(?P<pid>\d+)\s+(?P<call>\w+)\((?P<args>.*)\)\s+=\s+(?P<ret>-?\d+|\?)")
_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')
_DIRFD = re.compile(r"^(?:AT_FDCWD|-?\d+)<([^>]*)>")
_FAMILY = re.compile(r"sa_family=(AF_INET6?)")
_INET = re.compile(r'inet_addr\("([^"]+)"\)|inet_pton\(AF_INET6?, "([^"]+)"')


@dataclass
class Trace:
    """What a traced run did: every file change (call, absolute path) and every connection
    to an internet address (call, address), whether it succeeded or not."""

    returncode: int
    stdout: str
    stderr: str
    writes: list[tuple[str, str]] = field(default_factory=list)
    connections: list[tuple[str, str]] = field(default_factory=list)

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
        """Connections to an address that is not this machine's loopback."""
        return [f"{call} {addr}" for call, addr in self.connections
                if not ip_address(addr.split("%")[0]).is_loopback]


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
        strace = ["strace", "-f", "-qq", "-y", "--seccomp-bpf", "-e", "signal=none",
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
        if call in ("connect", "sendto", "sendmsg"):
            family = _FAMILY.search(args)
            address = _INET.search(args)
            if family and address:
                trace.connections.append((call, address.group(1) or address.group(2)))
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

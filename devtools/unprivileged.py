"""Run a command as a user who is not root: CI's second run of the tests root would pass for
the wrong reason (root reads and writes read-only files), marked `unprivileged`.

    python3 devtools/unprivileged.py --show FOLDER [--show FOLDER]... -- COMMAND...

Root only. Makes the user (`duplens-ci`, with a home of its own) if it is missing, then runs
COMMAND as that user (`runuser`), in a private mount namespace (`unshare --mount`) in which
each --show FOLDER can be reached: a folder on the way there that the user may not pass
(pyenv keeps its Pythons under /root, mode 0700, so a venv's interpreter is out of reach) is
covered, in that namespace only, by an empty tmpfs holding the path down to the real folder.
Nothing changes outside the namespace, which ends with the command; its exit status is this
script's. COMMAND sees the environment given it (`env NAME=value ...`), HOME and TMPDIR
set for the user, and the working folder this script was started in.
"""

from __future__ import annotations

import argparse
import os
import pwd
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

USER = "duplens-ci"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--show", action="append", default=[], type=Path,
                        help="a folder the command must reach (its interpreter, the checkout)")
    parser.add_argument("--user", default=USER)
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given")
    if os.geteuid() != 0:
        parser.error("run as root: it makes the user and the mount namespace")
    if not args.inside:
        ensure_user(args.user)
        again = [sys.executable, str(Path(__file__).resolve()), "--inside", "--user",
                 args.user, *(f"--show={p.resolve()}" for p in args.show), "--", *command]
        return subprocess.run(["unshare", "--mount", "--propagation", "private", "--",
                               *again]).returncode
    reveal(args.show)
    home = pwd.getpwnam(args.user).pw_dir
    os.execvp("runuser", ["runuser", "-u", args.user, "--", "env", f"HOME={home}",
                          "TMPDIR=/tmp", *command])


def ensure_user(user: str) -> None:
    try:
        pwd.getpwnam(user)
    except KeyError:
        subprocess.run(["useradd", "--create-home", "--shell", "/bin/sh", user], check=True)


def reveal(folders: list[Path]) -> None:
    """Make each folder reachable by any user in this (private) mount namespace: cover the
    topmost folder on its way that others may not pass with a tmpfs (once per such folder),
    and bind the real folder back at its own path inside it."""
    covered: dict[Path, Path] = {}   # covered folder -> where its real content is seen now
    for folder in (f.resolve() for f in folders):
        blocker = next((a for a in reversed(folder.parents)
                        if not os.stat(a).st_mode & stat.S_IXOTH), None)
        if blocker is None:
            continue
        if blocker not in covered:
            real = Path(tempfile.mkdtemp(prefix="duplens-reveal-"))
            subprocess.run(["mount", "--bind", str(blocker), str(real)], check=True)
            subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=0755", "tmpfs",
                            str(blocker)], check=True)
            covered[blocker] = real
        inner = folder.relative_to(blocker)
        target = blocker / inner
        target.mkdir(parents=True, exist_ok=True, mode=0o755)
        subprocess.run(["mount", "--bind", str(covered[blocker] / inner), str(target)],
                       check=True)


if __name__ == "__main__":
    sys.exit(main())

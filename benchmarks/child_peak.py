"""Run a command in a fresh Python process and read that process's own peak memory.

`os.wait4`'s ru_maxrss is not the child's own: `subprocess` starts children with vfork, and
Linux keeps the larger of the borrowed (parent's) memory and the child's across exec, so a
child of a 4 GB test runner reports 4 GB whatever it did (seen in the test suite). VmHWM in
/proc belongs to the address space itself, which exec replaces, so the child reads it as it
exits and leaves it in a file.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

# Runs `python -m MODULE ARGS...` or `python -c CODE ARGS...` after arranging that VmHWM
# (kB) is written to a file at exit.
_WRAPPER = (
    "import atexit, runpy, sys\n"
    "out, how, what = sys.argv[1:4]\n"
    "def peak():\n"
    "    with open('/proc/self/status') as s:\n"
    "        kb = next(line.split()[1] for line in s if line.startswith('VmHWM'))\n"
    "    with open(out, 'w') as f:\n"
    "        f.write(kb)\n"
    "atexit.register(peak)\n"
    "sys.argv = [what if how == '-m' else '-c', *sys.argv[4:]]\n"
    "if how == '-m':\n"
    "    runpy.run_module(what, run_name='__main__', alter_sys=True)\n"
    "else:\n"
    "    exec(compile(what, '<string>', 'exec'), {'__name__': '__main__'})\n")


@dataclass(frozen=True)
class ChildRun:
    returncode: int
    stdout: str
    stderr: str
    peak_rss_mib: int
    seconds: float


def run_python(args: list[str], *, env: dict | None = None,
               cwd: str | os.PathLike | None = None) -> ChildRun:
    """`python -m MODULE ...` or `python -c CODE ...` (`args` as after `python`) in a fresh
    process: exit code, stderr, its own peak RSS and wall time."""
    if len(args) < 2 or args[0] not in ("-m", "-c"):
        raise ValueError("args must start with -m MODULE or -c CODE")
    with tempfile.TemporaryDirectory(prefix="duplens-peak-") as folder:
        out = Path(folder) / "peak"
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", _WRAPPER, str(out), *args],
                              capture_output=True, env=env, cwd=cwd)
        seconds = time.perf_counter() - started
        kb = int(out.read_text()) if out.exists() else 0
    return ChildRun(done.returncode, done.stdout.decode(errors="replace"),
                    done.stderr.decode(errors="replace"),
                    round(kb / 1024), round(seconds, 2))


def json_child(module: str, args: list[str]) -> dict:
    """Run `python -m MODULE ARGS...` in a fresh process (so what it measures, memory
    included, is its own) and return the JSON it prints as its last stdout line."""
    import json

    done = subprocess.run([sys.executable, "-m", module, *args],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{module} {' '.join(args)} failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])

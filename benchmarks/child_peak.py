"""Run a command in a fresh Python process and read that process's own peak memory.

`os.wait4`'s ru_maxrss is not the child's own: `subprocess` starts children with vfork, and
Linux keeps the larger of the borrowed (parent's) memory and the child's across exec, so a
child of a 4 GB test runner reports 4 GB whatever it did (seen in the test suite). VmHWM in
/proc belongs to the address space itself, which exec replaces, so the child reads it as it
exits and leaves it in a file.
"""

from __future__ import annotations

import os
import signal
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
    interrupted: bool = False   # sent Ctrl-C (SIGINT) at `stop_after`


def run_python(args: list[str], *, env: dict | None = None,
               cwd: str | os.PathLike | None = None,
               stop_after: float | None = None) -> ChildRun:
    """`python -m MODULE ...` or `python -c CODE ...` (`args` as after `python`) in a fresh
    process: exit code, stderr, its own peak RSS and wall time.

    `stop_after` seconds: if it is still running then, it gets one SIGINT, the Ctrl-C a user
    would press, and is waited for while it stops as it chooses (so a stopped command's
    time includes its own stopping)."""
    if len(args) < 2 or args[0] not in ("-m", "-c"):
        raise ValueError("args must start with -m MODULE or -c CODE")
    interrupted = False
    with tempfile.TemporaryDirectory(prefix="duplens-peak-") as folder:
        out = Path(folder) / "peak"
        started = time.perf_counter()
        child = subprocess.Popen([sys.executable, "-c", _WRAPPER, str(out), *args],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                 cwd=cwd)
        try:
            stdout, stderr = child.communicate(timeout=stop_after)
        except subprocess.TimeoutExpired:
            child.send_signal(signal.SIGINT)
            interrupted = True
            stdout, stderr = child.communicate()
        except BaseException:  # this process was stopped: leave no command running on
            child.kill()
            child.wait()
            raise
        seconds = time.perf_counter() - started
        kb = int(out.read_text()) if out.exists() else 0
    return ChildRun(child.returncode, stdout.decode(errors="replace"),
                    stderr.decode(errors="replace"), round(kb / 1024), round(seconds, 2),
                    interrupted)


def json_child(module: str, args: list[str]) -> dict:
    """Run `python -m MODULE ARGS...` in a fresh process (so what it measures, memory
    included, is its own) and return the JSON it prints as its last stdout line."""
    import json

    done = subprocess.run([sys.executable, "-m", module, *args],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{module} {' '.join(args)} failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])

"""Running `duplens COMMAND ...` in a child process as an analyst does, timed from process
start to exit: what the whole-command benchmarks (import, match) compare with plain
encoding.

The child runs `python -m desktop_app.launcher`, which is what the `duplens` console script
calls, with this checkout on its path and the caller's environment plus `extra`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_cli(args: list[str], extra: dict[str, str] | None = None) -> float:
    """Seconds `duplens ARGS` took, start to exit; raises with its stderr when it fails."""
    return run_cli_output(args, extra)[0]


def python_path() -> str:
    """A child's PYTHONPATH: this repository first, then whatever this process was given (a
    run kept to AVX2 puts its capped copies of OpenVINO there, `benchmarks.mlas_cap`)."""
    return os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)


def run_cli_output(args: list[str], extra: dict[str, str] | None = None
                   ) -> tuple[float, str]:
    """`run_cli`, and what the command wrote on stdout (its `--json`, say)."""
    env = {**os.environ, "PYTHONPATH": python_path(), **(extra or {})}
    return _timed(["-m", "desktop_app.launcher", *args], env)


def timed_python(args: list[str], env: dict[str, str]) -> float:
    """Wall seconds of `python ARGS` in `env`, from starting the process to its exit."""
    return _timed(args, env)[0]


def _timed(args: list[str], env: dict[str, str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, *args], env=env, capture_output=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"python {' '.join(args)} failed ({done.returncode}): "
                           f"{done.stderr.decode(errors='replace')[-2000:]}")
    return seconds, done.stdout.decode(errors="replace")


def command_headline(figure: str, rows: int, result: dict, baseline_is: str, goal: float
                     ) -> dict:
    """The report's headline row of a whole command against plain encoding in the same run
    (`result` as for `command_table`), met when the ratio reaches `goal`."""
    took, bare, ratio = result["command_s"], result["bare_encode_s"], result["ratio"]
    return {"figure": figure, "duplens": f"{took:.1f} s ({rows / took:,.0f} rows/s)",
            "baseline": f"{bare:.1f} s ({rows / bare:,.0f} rows/s)", "baseline_is": baseline_is,
            "ratio": f"{ratio:.2f}×", "goal": f"≥ {goal:g}×", "met": ratio >= goal}


def command_table(title: str, rows: int, result: dict, baseline: str, command: str
                  ) -> dict:
    """The report's table of a whole command against plain encoding in the same run:
    `result`'s "bare_encode_s", "command_s" and "ratio"."""
    bare, took = result["bare_encode_s"], result["command_s"]
    return {"title": title, "columns": ["what", "s", "rows/s", "ratio"],
            "rows": [[baseline, bare, round(rows / bare, 1), "1.00"],
                     [command, took, round(rows / took, 1), f"**{result['ratio']:.2f}**"]]}

"""Start-up time of the frozen Duplens next to the same version run from the dev venv.

    flock /tmp/duplens-cpu.lock python3 packaging/bench_startup.py [--runs 5]

Measures, for each build, the median over --runs of: `duplens --version` (process start and
the CLI), `duplens info PROJECT` (plus SQLite and the engine facade) and the time until the
window of `duplens gui PROJECT` is viewable under Xvfb (xwininfo, as in
benchmarks/window_latency.py). Prints a table with frozen/venv ratios. The frozen build unpacks
nothing at start (onedir), so any gap is import time from the bundle.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from smoke_test import DEFAULT_BINARY, QUESTIONS, ROOT, time_to_window, user_env  # noqa: E402


def timed(cmd: list[str], env: dict, cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, env=env, cwd=cwd, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--frozen", type=Path, default=DEFAULT_BINARY)
    parser.add_argument("--venv", type=Path, default=ROOT / ".venv" / "bin" / "duplens")
    args = parser.parse_args()
    builds = {"frozen": args.frozen.resolve(), "venv": args.venv}
    rows: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="duplens-bench-") as tmp:
        work, home = Path(tmp) / "work", Path(tmp) / "home"
        work.mkdir()
        home.mkdir()
        env = user_env(home)
        project = work / "q.duplens"
        subprocess.run([str(builds["frozen"]), "import", str(project), str(QUESTIONS),
                        "--column", "question", "--id-column", "qid"], env=env, cwd=work,
                       check=True, capture_output=True)
        for name, exe in builds.items():
            version = [timed([str(exe), "--version"], env, work) for _ in range(args.runs)]
            info = [timed([str(exe), "info", str(project)], env, work)
                    for _ in range(args.runs)]
            window = [time_to_window(exe, project, env, work) for _ in range(args.runs)]
            rows[name] = {"--version": statistics.median(version),
                          "info": statistics.median(info),
                          "window": statistics.median(w for w in window if w is not None)
                          if all(w is not None for w in window) else float("nan")}
    print(f"\nmedian of {args.runs} runs, seconds")
    print(f"{'':12}{'frozen':>10}{'venv':>10}{'ratio':>8}")
    for key in ("--version", "info", "window"):
        f, v = rows["frozen"][key], rows["venv"][key]
        print(f"{key:12}{f:10.2f}{v:10.2f}{f / v:8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

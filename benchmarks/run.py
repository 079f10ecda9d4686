"""The benchmark suite: run each benchmark, save its figures, regenerate docs/benchmarks.md.

    python -m benchmarks [--quick] [--only NAME ...] [--list] [--no-report]

Each benchmark is a module `benchmarks/NAME.py` with `run(quick: bool) -> dict`. It runs in
its own process (its memory and imports never colour the next one's timings), and its dict
is saved as benchmarks/results/NAME.json together with the hardware, the command that
reproduces it, the date, library versions, wall time and peak memory. Then
`benchmarks.report` rewrites the generated blocks of docs/benchmarks.md from every JSON file.

`--quick` is a smoke run: every quick benchmark at small sizes, about ten minutes on 2 cores
with bf16 units from a cold cache, longer without (docs/benchmarks.md says what it took).
Its figures are too small to quote, so it writes them to benchmarks/results/quick/ (ignored
by git) and renders no page: a quick run never replaces a recorded result.

The dict holds what was measured. A benchmark module with `present(result, results)` makes
its headline, tables, plots and notes from it when the report renders (so wording lives in
code, and nothing shown can be edited in a results file); otherwise the dict may hold them
itself (all optional; other keys are kept as data):
  "headline": [{"figure", "duplens", "baseline", "baseline_is", "ratio", "goal",
                "met": bool|None}, ...]
      one row each in the summary table (values preformatted strings, units included;
      "baseline_is" says what the baseline was as it ran, e.g. "plain sentence-transformers
      encode, same run");
  "tables":   [{"title", "columns": [...], "rows": [[...], ...]}, ...];
  "plots":    [{"file": "x.png", "title", "xlabel", "ylabel", "logx", "logy",
                "series": [{"label", "x": [...], "y": [...]}], "annotate": [...]}, ...];
  "notes":    ["...", ...];
  "skipped":  "why it could not run here" (nothing else is needed then).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import platform
import resource
import shlex
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.corpus import QUICK_ENV
from benchmarks.registry import BY_NAME, REGISTRY, Benchmark

RESULTS = Path(__file__).resolve().parent / "results"
QUICK_RESULTS = RESULTS / "quick"   # a smoke run's figures: never rendered, never committed




def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m benchmarks", description=__doc__.split("\n\n")[0],
        epilog="benchmarks: " + ", ".join(
            b.name + ("" if b.quick else " (full only)") for b in REGISTRY))
    ap.add_argument("--quick", action="store_true",
                    help="a smoke run: small sizes, the slow benchmarks left out, about ten "
                    "minutes on 2 cores with bf16 units, longer without; figures go to "
                    "benchmarks/results/quick/, not the page")
    ap.add_argument("--only", nargs="+", metavar="NAME", choices=list(BY_NAME),
                    help="run these benchmarks only (named ones run even if full-only)")
    ap.add_argument("--list", action="store_true", help="name the benchmarks and stop")
    ap.add_argument("--no-report", action="store_true",
                    help="do not regenerate docs/benchmarks.md")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--suite-command", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.list:
        for b in REGISTRY:
            print(f"{b.name:18} {b.title}{'' if b.quick else '  (full run only)'}")
        return 0
    if args.one:
        return run_one(BY_NAME[args.one], args.quick, args.suite_command or "")

    command = " ".join(["python -m benchmarks", *map(shlex.quote, sys.argv[1:] if argv is None
                                                      else argv)])
    chosen = ([BY_NAME[n] for n in args.only] if args.only
              else [b for b in REGISTRY if b.quick or not args.quick])
    started = time.perf_counter()
    failed = []
    for b in chosen:
        _say(f"[{b.name}] {b.title}…")
        t0 = time.perf_counter()
        child = [sys.executable, "-m", "benchmarks.run", "--one", b.name,
                 "--suite-command", command, *(["--quick"] if args.quick else [])]
        # A quick run's mark is in the child's environment from its start, so the corpus
        # and every process the benchmark starts see it (benchmarks/corpus.py).
        env = {**os.environ, QUICK_ENV: "1"} if args.quick else None
        code = subprocess.run(child, check=False, env=env).returncode
        if code not in (0, NOT_AVAILABLE):
            failed.append(b.name)
        state = {0: "done", NOT_AVAILABLE: "not available"}.get(code, f"FAILED ({code})")
        _say(f"[{b.name}] {state} in {time.perf_counter() - t0:.0f} s")
    _say(f"suite: {len(chosen)} benchmarks in {time.perf_counter() - started:.0f} s"
         + (f"; failed: {', '.join(failed)}" if failed else ""))
    if not args.no_report and not args.quick:
        from benchmarks import report

        report.main([])
    return 1 if failed else 0


NOT_AVAILABLE = 3


def run_one(bench: Benchmark, quick: bool, suite_command: str) -> int:
    """Run one benchmark in this process and save its JSON (see the module docstring)."""
    module_name, _, function = (bench.runner or f"benchmarks.{bench.name}:run").partition(":")
    if importlib.util.find_spec(module_name) is None:
        _say(f"  {module_name} does not exist yet")
        return NOT_AVAILABLE
    fn = getattr(importlib.import_module(module_name), function, None)
    if fn is None:
        _say(f"  {module_name} has no {function}(quick) yet")
        return NOT_AVAILABLE
    load_before = os.getloadavg()
    date = datetime.now(UTC).isoformat(timespec="seconds")
    t0 = time.perf_counter()
    result = fn(quick)
    wall = time.perf_counter() - t0
    if result is None:  # the benchmark wrote its own results file
        return 0
    folder = QUICK_RESULTS if quick else RESULTS
    path = folder / f"{bench.name}.json"
    if "skipped" in result and path.exists():
        old = json.loads(path.read_text(encoding="utf-8"))
        if "skipped" not in old.get("result", {"skipped": True}):
            _say(f"  skipped here ({result['skipped']}); keeping the measured {path.name}")
            return 0
    record = {
        "benchmark": bench.name, "title": bench.title, "mode": "quick" if quick else "full",
        "command": f"python -m benchmarks{' --quick' if quick else ''} --only {bench.name}",
        "suite_command": suite_command, "date": date, "wall_seconds": round(wall, 1),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "load_average_before": [round(x, 2) for x in load_before],
        "hardware": hardware(), "versions": versions(), "result": result,
    }
    folder.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.part")
    tmp.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)
    _say(f"  written to {path.relative_to(RESULTS.parent.parent)}")
    return 0


def hardware() -> dict:
    """CPU model, cores, memory (and the GPU, when torch sees one) of this machine."""
    found = {"cpu": _cpuinfo("model name") or platform.processor() or platform.machine(),
             "cores": os.cpu_count(), "ram_gib": _ram_gib(), "machine": platform.machine(),
             "os": platform.platform(terse=True)}
    if "torch" in sys.modules:
        import torch

        found["torch_threads"] = torch.get_num_threads()
        if torch.cuda.is_available():
            found["gpu"] = torch.cuda.get_device_name()
    return found


def versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    found = {"python": platform.python_version()}
    for name in ("duplens", "torch", "sentence-transformers", "transformers", "tokenizers",
                 "hnswlib", "numpy", "onnxruntime", "optimum", "openvino"):
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            continue
    return found


def _cpuinfo(key: str) -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(key):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def _ram_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024 ** 2, 1)
    except OSError:
        pass
    return None


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())

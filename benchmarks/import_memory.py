"""Import memory: peak RSS of `duplens import --no-encode` as the CSV grows.

    python -m benchmarks --only import_memory [--quick]

Generates CSVs of 100k, 300k and 1M rows (quick: 10k, 30k, 100k) of distinct question-like
texts in a temporary folder and imports each, rows only, in a fresh process
(`python -m engine.cli import P F --column question --id-column id --no-encode`), reading
that process's own peak RSS (VmHWM, `benchmarks/child_peak.py`). Streaming in chunks should
make the peak flat: the goal is that the biggest file's peak stays within 1.25× the smallest
one's. The peer is what loading the same file with `pandas.read_csv(dtype=str)` costs, also
in a fresh process.

One thing does grow with the file by design: the line numbers of malformed rows (skipped
and reported, and stored with the source). A second table imports files whose rows all
have one field too many, to show what that costs.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from benchmarks.child_peak import run_python

ROOT = Path(__file__).resolve().parents[1]
_WORDS = ("how", "what", "why", "can", "does", "is", "the", "best", "way", "to", "learn",
          "python", "make", "money", "online", "india", "good", "life", "phone", "world")
GROWTH_GOAL = 1.25  # peak RSS of the biggest file / of the smallest


def run(quick: bool) -> dict:
    sizes = [10_000, 30_000, 100_000] if quick else [100_000, 300_000, 1_000_000]
    measured = []
    with tempfile.TemporaryDirectory(prefix="duplens-import-memory-") as tmp:
        folder = Path(tmp)
        idle = _child(["-c", "import engine.cli.dispatch, engine.project"])
        for rows in sizes:
            csv = _write_csv(folder / f"questions_{rows}.csv", rows)
            project = folder / f"import_{rows}.duplens"
            result = _child(["-m", "engine.cli", "import", str(project),
                             str(csv), "--column", "question", "--id-column", "id",
                             "--no-encode"])
            pandas = _child(["-c", "import sys, pandas; "
                             "pandas.read_csv(sys.argv[1], dtype=str)", str(csv)])
            measured.append({"rows": rows, "file_mb": round(csv.stat().st_size / 1e6, 1),
                             "peak_rss_mib": result["peak_rss_mib"],
                             "seconds": result["seconds"],
                             "rows_per_s": round(rows / result["seconds"]),
                             "pandas_peak_rss_mib": pandas["peak_rss_mib"]})
            csv.unlink()
        malformed = []
        for rows in (sizes[0], sizes[-1]):
            csv = _write_csv(folder / f"malformed_{rows}.csv", rows, extra_field=True)
            result = _child(["-m", "engine.cli", "import",
                             str(folder / f"malformed_{rows}.duplens"), str(csv),
                             "--column", "question", "--no-encode"])
            malformed.append({"rows": rows, **result})
            csv.unlink()
    return {"measured": measured, "malformed": malformed,
            "idle_peak_rss_mib": idle["peak_rss_mib"],
            "load_average": [round(x, 2) for x in os.getloadavg()]}


def _write_csv(path: Path, rows: int, extra_field: bool = False) -> Path:
    """Distinct texts of 8-14 words (Quora questions are 11 words on average), so every row
    is a new text and the store does its full work. `extra_field`: every data row but the
    first has one field more than the header, so the reader skips it."""
    with path.open("w", encoding="utf-8", newline="") as out:
        out.write("id,question,topic\n")
        n = len(_WORDS)
        for i in range(rows):
            words = [_WORDS[(i * 7 + k * 13 + i // (k + 1)) % n] for k in range(8 + i % 7)]
            extra = ",extra" if extra_field and i else ""
            out.write(f'{i},"{" ".join(words)} #{i}?",topic {i % 50}{extra}\n')
    return path


def _child(args: list[str]) -> dict:
    """Run `python *args` from the repository root; its own peak RSS and wall time."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), TQDM_DISABLE="1")
    done = run_python(args, env=env, cwd=ROOT)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({done.returncode}): "
                           f"{done.stderr[-2000:]}")
    return {"peak_rss_mib": done.peak_rss_mib, "seconds": done.seconds}


def present(result: dict, results: dict | None = None) -> dict:
    """Headline, tables and notes from the imports measured (benchmarks/report.py)."""
    measured, malformed = result["measured"], result["malformed"]
    idle_mib = result["idle_peak_rss_mib"]
    small, big = measured[0], measured[-1]
    growth = big["peak_rss_mib"] / small["peak_rss_mib"]
    return {
        "headline": [{
            "figure": f"peak RSS, importing a {big['rows']:,}-row CSV (rows only)",
            "duplens": f"{big['peak_rss_mib']} MiB",
            "baseline": f"{big['pandas_peak_rss_mib']} MiB",
            "baseline_is": "pandas.read_csv of the whole file, in a fresh process, same run",
            "ratio": f"{big['pandas_peak_rss_mib'] / big['peak_rss_mib']:.2f}× less",
            "goal": f"≤ {GROWTH_GOAL}× the {small['rows']:,}-row import's peak",
            "met": growth <= GROWTH_GOAL,
        }],
        "tables": [{
            "title": "Rows-only import (`duplens import --no-encode`), each in a fresh process",
            "columns": ["rows", "CSV MB", "peak RSS MiB", "rows/s", "wall s",
                        "pandas.read_csv peak MiB"],
            "rows": [[f"{m['rows']:,}", m["file_mb"], m["peak_rss_mib"],
                      f"{m['rows_per_s']:,}", m["seconds"], m["pandas_peak_rss_mib"]]
                     for m in measured],
        }, {
            "title": "Files whose rows are all malformed (skipped; their line numbers kept)",
            "columns": ["rows", "peak RSS MiB", "wall s"],
            "rows": [[f"{m['rows']:,}", m["peak_rss_mib"], m["seconds"]] for m in malformed],
        }],
        "notes": [
            f"Peak RSS grows {growth:.2f}× from {small['rows']:,} to {big['rows']:,} rows "
            f"({big['rows'] // small['rows']}× the rows); a process that only imports the "
            f"CLI and the engine peaks at {idle_mib} MiB.",
            "Malformed rows are the one thing kept per row: their line numbers, reported and "
            f"stored with the source ({_bytes_per_row(malformed):.0f} bytes each at peak).",
            "Peak RSS is the child's own (VmHWM read as it exits), so neither this runner "
            "nor the pandas run counts. Wall time includes starting Python and importing the "
            "engine.",
            *_load_note(result),
        ],
    }

def _load_note(result: dict) -> list[str]:
    """The load average while measuring, from the result (or the note an older run kept)."""
    load = result.get("load_average")
    if load is not None:
        return [f"Load average while measuring: {', '.join(f'{x:.2f}' for x in load)}."]
    return [n for n in result.get("notes", []) if n.startswith("Load average while")]


def _bytes_per_row(malformed: list[dict]) -> float:
    first, last = malformed[0], malformed[-1]
    grown = (last["peak_rss_mib"] - first["peak_rss_mib"]) * 2**20
    return grown / max(last["rows"] - first["rows"], 1)


if __name__ == "__main__":
    import json

    print(json.dumps(run("--quick" in sys.argv), indent=1))

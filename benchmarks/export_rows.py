"""Export of every row: time and peak RSS of writing a whole project back out as CSV.

    python -m benchmarks --only export_rows [--quick]

For 100k and 1M rows (quick: 10k and 30k) a CSV of distinct question-like texts (the one
`import_memory` writes) is imported rows only (`duplens import --no-encode`, not timed
here). Then, in a fresh process, the project is opened, synthetic clusters are laid over it
(5 consecutive rows out of every 50, the first the canonical, the rest at similarity 0.9:
10% of the rows in a cluster; no vectors are involved, so the cut itself is not measured)
and `project.exports.rows(out.csv, clusters)` writes every row with the added columns.
Time and peak RSS are that process's own (VmHWM, `benchmarks/child_peak.py`), interpreter
start included; the export call alone is timed inside it too. The peer, also in a fresh
process, is pandas: `read_csv(dtype=str)` of the same CSV and `DataFrame.to_csv` of it (the
whole table in memory, then written; to_csv timed alone as well).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.child_peak import run_python
from benchmarks.import_memory import _load_note, _write_csv

ROOT = Path(__file__).resolve().parents[1]
CLUSTER_EVERY, CLUSTER_SIZE = 50, 5


# Issue 27: the whole export within 1.5 times pandas read_csv + to_csv, in bounded memory.
GOAL_TIME_RATIO = 1.5

def run(quick: bool) -> dict:
    sizes = [10_000, 30_000] if quick else [100_000, 1_000_000]
    measured = []
    with tempfile.TemporaryDirectory(prefix="duplens-export-rows-") as tmp:
        folder = Path(tmp)
        for rows in sizes:
            csv = _write_csv(folder / f"questions_{rows}.csv", rows)
            project = folder / f"export_{rows}.duplens"
            _child(["-m", "engine.cli", "import", str(project), str(csv),
                    "--column", "question", "--id-column", "id", "--no-encode"])
            ours = _child(["-m", "benchmarks.export_rows", "export",
                           str(project), str(folder / "out.csv")])
            peer = _child(["-m", "benchmarks.export_rows", "pandas",
                           str(csv), str(folder / "peer.csv")])
            measured.append({"rows": rows, "duplens": ours, "pandas": peer})
            for path in (csv, project, folder / "out.csv", folder / "peer.csv"):
                path.unlink(missing_ok=True)
    return {"measured": measured, "load_average": [round(x, 2) for x in os.getloadavg()]}


def _child(args: list[str]) -> dict:
    """Run `python *args` from the repository root: its own peak RSS, wall time and the JSON
    it printed."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), TQDM_DISABLE="1")
    done = run_python(args, env=env, cwd=ROOT)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({done.returncode}): "
                           f"{done.stderr[-2000:]}")
    lines = done.stdout.strip().splitlines()
    inner = json.loads(lines[-1]) if lines and lines[-1].startswith("{") else {}
    return {"peak_rss_mib": done.peak_rss_mib, "seconds": done.seconds, **inner}


def _export(project_path: str, out: str) -> None:
    from engine.dedup.id_rules import label
    from engine.dedup.row_clusters import Cluster, Member
    from engine.project import Project

    with Project.open(project_path) as project:
        ids = project.rows.order()
        clusters = [
            Cluster(label(n), [Member(int(ids[j]), str(j), j, 1, "", 1.0 if j == start else 0.9,
                                      0)
                        for j in range(start, min(start + CLUSTER_SIZE, len(ids)))])
            for n, start in enumerate(range(0, len(ids), CLUSTER_EVERY), start=1)]
        started = time.perf_counter()
        written = project.exports.rows(out, clusters, 0.9)   # the members are at 0.9
        seconds = time.perf_counter() - started
    print(json.dumps({"written": written, "call_s": round(seconds, 2),
                      "out_mb": round(Path(out).stat().st_size / 1e6, 1)}))


def _pandas(csv: str, out: str) -> None:
    import pandas as pd

    frame = pd.read_csv(csv, dtype=str, keep_default_na=False)
    started = time.perf_counter()
    frame.to_csv(out, index=False, encoding="utf-8-sig")
    print(json.dumps({"written": len(frame),
                      "call_s": round(time.perf_counter() - started, 2)}))


def present(result: dict, results: dict | None = None) -> dict:
    """Headline, table and notes from the exports measured (benchmarks/report.py); runs
    that kept their load average only in a note keep that note."""
    measured = result["measured"]
    big = measured[-1]
    ours, peer = big["duplens"], big["pandas"]
    return {
        "headline": [{
            "figure": f"export every row of a {big['rows']:,}-row project to CSV "
                      f"(peak RSS / wall s)",
            "duplens": f"{ours['peak_rss_mib']} MiB / {ours['seconds']} s",
            "baseline": f"{peer['peak_rss_mib']} MiB / {peer['seconds']} s",
            "baseline_is": "pandas read_csv + to_csv of the same rows (from the CSV the "
                           "project was imported from), each in a fresh process, same run",
            "ratio": f"{peer['peak_rss_mib'] / ours['peak_rss_mib']:.2f}× less memory, "
                     f"{ours['seconds'] / peer['seconds']:.2f}× the time",
            "goal": f"≤ {GOAL_TIME_RATIO}× pandas' time, bounded memory",
            "met": bool(ours["seconds"] <= GOAL_TIME_RATIO * peer["seconds"]
                        and ours["peak_rss_mib"] <= peer["peak_rss_mib"]),
        }],
        "tables": [{
            "title": "Every-row export (`Exports.rows`, 10% of rows in synthetic clusters), "
                     "each in a fresh process",
            "columns": ["rows", "duplens peak RSS MiB", "duplens wall s", "export call s",
                        "out MB", "pandas peak RSS MiB", "pandas wall s", "to_csv s"],
            "rows": [[f"{m['rows']:,}", m["duplens"]["peak_rss_mib"], m["duplens"]["seconds"],
                      m["duplens"]["call_s"], m["duplens"]["out_mb"],
                      m["pandas"]["peak_rss_mib"], m["pandas"]["seconds"],
                      m["pandas"]["call_s"]] for m in measured],
        }],
        "notes": [
            "Clusters are synthetic (5 consecutive rows of every 50, built from the row ids), "
            "so what is measured is the export, not the cut; no vectors are read.",
            "Wall time includes starting Python, importing the engine (or pandas) and, for "
            "pandas, reading the CSV; `export call s` / `to_csv s` time the write alone.",
            *_load_note(result),
        ],
    }


if __name__ == "__main__":
    {"export": _export, "pandas": _pandas}[sys.argv[1]](*sys.argv[2:])

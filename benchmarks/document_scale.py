"""Documents at scale: whole-command imports of thousands of long documents, their peak
memory, the project's size, and plain sentence-transformers on the same windows.

    DUPLENS_SHARED=/work/shared python -m benchmarks --only document_scale [--quick]
    DUPLENS_DOCUMENT_SCALE_SIZES=10000 python -m benchmarks --only document_scale

Sizes: quick (a smoke run) 40 documents, the baseline on 150 of their windows; full 10,000
and 100,000 (`DUPLENS_DOCUMENT_SCALE_SIZES`, comma separated, runs fewer: on 2 cores Duplens
reads about 90 windows a second, so 100,000 documents of 1,000 words, about a million
windows, take hours; the result records which sizes ran).

The documents: paragraphs of the Python 3.11 documentation (Debian's `python3.11-doc`, read
as `benchmarks/document_corpus.py` reads it), drawn uniformly at random (seed 0) until each
document reaches its length, drawn uniformly from 800 to 1,200 words. So no two documents
are near-duplicates, every one is about Python, and their whole-text vectors are close to
one another: the neighbour graph is dense, and every edge touching a long text is rescored
from windows. This is a test of speed, memory and size, not of finding duplicates (the
`documents` benchmark is that).

For each size, in the same run:

- `duplens import P FILE --column text --id-column id`, then `duplens duplicates P --json`,
  each in a fresh process, wall time from start to exit and the process's own peak RSS
  (VmHWM, `benchmarks/child_peak.py`);
- the project's files on disk, per 1,000 documents;
- the baseline: plain sentence-transformers (torch fp32, at its fastest batch size of 16,
  32 or 64) encoding the very windows the project was read in
  (`benchmarks.documents._plain_same_windows`). Where the project holds more than
  `BASELINE_SAMPLE` windows, the baseline encodes that many drawn uniformly from them, and
  the comparison is of rates: windows per second of the whole import command (every
  window, plus reading, indexing and saving) against windows per second of the bare
  encode. The goal is 1.5×.
"""

from __future__ import annotations

import csv
import json
import os
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from benchmarks import document_corpus as dc
from benchmarks.child_peak import run_python

ROOT = Path(__file__).resolve().parents[1]
SEED = 0
QUICK_SIZES = (40,)
FULL_SIZES = (10_000, 100_000)
WORDS = (800, 1_200)
BASELINE_SAMPLE, QUICK_BASELINE_SAMPLE = 20_000, 150
GOAL = 1.5


def run(quick: bool) -> dict:
    from benchmarks.documents import _engine_state, _plain_same_windows, cache_folder

    sizes = QUICK_SIZES if quick else sizes_asked("DUPLENS_DOCUMENT_SCALE_SIZES", FULL_SIZES)
    try:
        package, paragraphs = corpus_paragraphs(cache_folder())
    except dc.CorpusUnavailable as exc:
        return {"skipped": f"the corpus could not be read: {exc}"}
    measured = []
    for done in imported_documents(sizes, paragraphs, "duplens-document-scale-"):
        size, words, project, imported = done.size, done.words, done.project, done.imported
        load_before = done.load_before
        duplicates = _child(["duplicates", str(project), "--json"])
        clusters = json.loads(duplicates.pop("stdout"))
        footprint = sum(f.stat().st_size for f in done.folder.iterdir()
                        if f.name.startswith("documents.duplens"))
        baseline = (_plain_same_windows(str(project), sample=QUICK_BASELINE_SAMPLE, trial=32)
                    if quick else _plain_same_windows(str(project), sample=BASELINE_SAMPLE))
        pieces = baseline["pieces"]
        ours_rate = pieces / imported["seconds"]
        measured.append({
            "documents": size, "words": words, "table_mb": round(table_bytes(words), 1),
            "windows": pieces, "windowed_texts": baseline["windowed_texts"],
            "import": imported, "duplicates": duplicates,
            "clusters": len(clusters),
            "rows_in_clusters": sum(len(c["members"]) for c in clusters),
            "project_bytes": footprint,
            "project_mib_per_1000_documents": round(footprint / 2**20 / size * 1000, 2),
            "baseline": baseline,
            "import_windows_per_second": round(ours_rate, 1),
            "ratio": round(ours_rate / baseline["pieces_per_second"], 3),
            "load_average_before": load_before, "load_average_after": _load()})
    return {"seed": SEED, "sizes_asked": list(sizes), "full_sizes": list(FULL_SIZES),
            "words_per_document": list(WORDS), "baseline_sample": BASELINE_SAMPLE,
            "corpus": {"package": dc.PACKAGE, "version": package.version,
                       "paragraphs": len(paragraphs)},
            "engine": _engine_state(), "cpu": _cpu(), "measured": measured}


def sizes_asked(variable: str, full: tuple[int, ...]) -> tuple[int, ...]:
    """The sizes a full run measures: `variable`'s comma-separated list, else `full`."""
    asked = os.environ.get(variable, "").strip()
    if not asked:
        return full
    return tuple(int(x) for x in asked.split(",") if x.strip())


@dataclass(frozen=True)
class Imported:
    """One size's documents, written and imported by `duplens import` in a fresh process."""

    size: int
    folder: Path
    table: Path            # the CSV imported
    words: dict            # `_write_table`'s spread of lengths
    project: Path
    imported: dict         # `_child`'s seconds and peak of the import
    load_before: list[float]


def imported_documents(sizes: Sequence[int], paragraphs: list[str], prefix: str
                       ) -> Iterator[Imported]:
    """For each size, its documents written and imported into a project in a scratch
    folder, which is there until the next size is asked for."""
    for size in sizes:
        with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
            folder = Path(tmp)
            table, words = _write_table(folder / "documents.csv", paragraphs, size)
            project = folder / "documents.duplens"
            load_before = _load()
            imported = _child(["import", str(project), str(table), "--column", "text",
                               "--id-column", "id"])
            imported.pop("stdout")
            yield Imported(size, folder, table, words, project, imported, load_before)


def corpus_paragraphs(cache: Path) -> tuple[dc.Package, list[str]]:
    """The corpus package and every paragraph of its documents, in order, which the
    documents of this benchmark and of `document_search` are drawn from (raises
    `CorpusUnavailable`)."""
    package = dc.fetch_package(cache)
    docs, _ = dc.read_documents(package.sources)
    return package, [p for d in docs for p in d.paragraphs]


def _write_table(path: Path, paragraphs: list[str], size: int) -> tuple[Path, dict]:
    """`size` documents of random paragraphs (see the module's docstring); the CSV and the
    spread of their lengths in words."""
    rng = np.random.default_rng(SEED)
    lengths = []
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["id", "text"])
        for i in range(size):
            want = int(rng.integers(WORDS[0], WORDS[1] + 1))
            parts, count = [], 0
            while count < want:
                paragraph = paragraphs[int(rng.integers(len(paragraphs)))]
                parts.append(paragraph)
                count += len(paragraph.split())
            lengths.append(count)
            writer.writerow([f"doc{i}", "\n\n".join(parts)])
    spread = np.percentile(lengths, [0, 50, 100])
    return path, {"min": int(spread[0]), "median": int(spread[1]), "max": int(spread[2]),
                  "total": int(sum(lengths)), "file_bytes": path.stat().st_size}


def table_bytes(words: dict) -> float:
    return words["file_bytes"] / 1e6


def _child(args: list[str]) -> dict:
    """`duplens ARGS` in a fresh process: wall seconds, its own peak RSS, its stdout."""
    from benchmarks.console import python_path

    env = dict(os.environ, PYTHONPATH=python_path(), TQDM_DISABLE="1")
    done = run_python(["-m", "desktop_app.launcher", *args], env=env, cwd=ROOT)
    if done.returncode != 0:
        raise RuntimeError(f"duplens {' '.join(args)} failed ({done.returncode}): "
                           f"{done.stderr[-2000:]}")
    return {"seconds": done.seconds, "peak_rss_mib": done.peak_rss_mib,
            "stdout": done.stdout}


def _cpu() -> dict:
    from engine.encoding.cpu_features import cpu_isa, has_bf16_units  # the engine's reading

    return {"cores": os.cpu_count(), "int8_kernels": cpu_isa(), "bf16_units": has_bf16_units()}


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def present(result: dict, results: dict | None = None) -> dict:
    """Headline, table and notes from the sizes measured (benchmarks/report.py)."""
    measured = result["measured"]
    if not measured:
        return {"headline": [], "tables": [], "notes": ["No size was measured."]}
    biggest = measured[-1]
    base = biggest["baseline"]
    headline = [{
        "figure": f"import of {biggest['documents']:,} documents of about 1,000 words "
                  f"({biggest['windows']:,} windows), whole command",
        "duplens": f"{biggest['import']['seconds']:,.0f} s "
                   f"({biggest['import_windows_per_second']:.1f} windows/s)",
        "baseline": f"{base['pieces_per_second']:.1f} windows/s",
        "baseline_is": (f"plain sentence-transformers encoding "
                        f"{base['pieces_encoded']:,} of the same windows "
                        f"(batch {base['batch_size']}), same run"),
        "ratio": f"{biggest['ratio']:.2f}×", "goal": f"≥ {GOAL:g}×",
        "met": biggest["ratio"] >= GOAL}]
    table = {
        "title": "Long documents, imported and clustered as whole commands, each in a fresh "
                 "process",
        "columns": ["documents", "windows", "import s", "import peak MiB", "duplicates s",
                    "duplicates peak MiB", "MiB per 1,000 documents",
                    "plain ST windows/s (encoded)", "ratio"],
        "rows": [[f"{m['documents']:,}", f"{m['windows']:,}",
                  f"{m['import']['seconds']:,.0f}", m["import"]["peak_rss_mib"],
                  f"{m['duplicates']['seconds']:,.1f}", m["duplicates"]["peak_rss_mib"],
                  m["project_mib_per_1000_documents"],
                  f"{m['baseline']['pieces_per_second']:.1f} "
                  f"({m['baseline']['pieces_encoded']:,})",
                  f"{m['ratio']:.2f}×"] for m in measured]}
    ran = [m["documents"] for m in measured]
    missing = [s for s in result["full_sizes"] if s not in ran]
    cpu = result.get("cpu", {})
    notes = [
        "Documents are random paragraphs of the Python documentation, "
        f"{result['words_per_document'][0]:,}–{result['words_per_document'][1]:,} words "
        "each: none is a near-duplicate of another, and their whole-text vectors are close, "
        "so the graph is dense and every edge is rescored from windows (the worst case for "
        "`duplicates`).",
        *[f"{m['documents']:,} documents: {m['clusters']} clusters holding "
          f"{m['rows_in_clusters']} rows (none is a duplicate by construction); "
          f"load average {', '.join(map(str, m['load_average_before']))} before, "
          f"{', '.join(map(str, m['load_average_after']))} after." for m in measured],
        f"Measured on {cpu.get('cores', '?')} cores ({cpu.get('int8_kernels', '?')}, "
        f"{'with' if cpu.get('bf16_units') else 'without'} bf16 units); "
        f"engine {result['engine']['commit']}.",
    ]
    if missing:
        notes.append("Not measured in this run: "
                     + ", ".join(f"{s:,}" for s in missing) + " documents.")
    return {"headline": headline, "tables": [table], "notes": notes}

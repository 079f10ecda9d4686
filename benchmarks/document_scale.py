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
  32 or 64) encoding the very windows the project is read in: the documents cut by the
  engine's own windowing (`engine.encoding.read_whole.cut_whole`, as a checked file's rows
  are), checked after the import against the windows the project stored. Where there are
  more than `BASELINE_SAMPLE` windows, the baseline encodes that many drawn uniformly from
  them, and the comparison is of rates: windows per second of the whole import command
  (every window, plus reading, indexing and saving) against windows per second of the bare
  encode. The goal is 1.5×.

The baseline's sample is timed in two halves, one just before the import and one just
after it (`BaselineHalves`). A virtual machine's speed drifts over an hour: on the Intel
Xeon the same recipe timed at 33 windows a second at the start of a run and at 60 near its
end, so a baseline timed only after the import compared the import with a different
machine. Each half's rate is recorded; the ratio uses the two together.
"""

from __future__ import annotations

import csv
import json
import os
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
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
    from benchmarks.documents import _engine_state, cache_folder

    sizes = QUICK_SIZES if quick else sizes_asked("DUPLENS_DOCUMENT_SCALE_SIZES", FULL_SIZES)
    try:
        package, paragraphs = corpus_paragraphs(cache_folder())
    except dc.CorpusUnavailable as exc:
        return {"skipped": f"the corpus could not be read: {exc}"}
    halves = BaselineHalves(QUICK_BASELINE_SAMPLE if quick else BASELINE_SAMPLE,
                            trial=32 if quick else 256)
    measured = []
    for done in imported_documents(sizes, paragraphs, "duplens-document-scale-",
                                   before=halves.before_import):
        size, words, project, imported = done.size, done.words, done.project, done.imported
        load_before = done.load_before
        baseline = halves.after_import(str(project))
        duplicates = _child(["duplicates", str(project), "--json"])
        clusters = json.loads(duplicates.pop("stdout"))
        footprint = sum(f.stat().st_size for f in done.folder.iterdir()
                        if f.name.startswith("documents.duplens"))
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


def imported_documents(sizes: Sequence[int], paragraphs: list[str], prefix: str, *,
                       before: Callable[[Path], object] | None = None
                       ) -> Iterator[Imported]:
    """For each size, its documents written and imported into a project in a scratch
    folder, which is there until the next size is asked for. `before` is called with the
    written table just before its import starts."""
    for size in sizes:
        with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
            folder = Path(tmp)
            table, words = _write_table(folder / "documents.csv", paragraphs, size)
            project = folder / "documents.duplens"
            if before is not None:
                before(table)
            load_before = _load()
            imported = _child(["import", str(project), str(table), "--column", "text",
                               "--id-column", "id"])
            imported.pop("stdout")
            yield Imported(size, folder, table, words, project, imported, load_before)


@dataclass
class BaselineHalves:
    """Plain sentence-transformers on a uniform sample of the import's windows, timed half
    before the import and half after it (see the module's docstring): one instance per run,
    `before_import` then `after_import` for each size."""

    sample: int
    trial: int
    _model: object = None
    _pending: dict = field(default_factory=dict)

    def _encoder(self):
        if self._model is None:
            self._model = plain_encoder()
        return self._model

    def before_import(self, table: Path) -> None:
        """Cut the table's documents into the engine's windows, draw the sample, choose the
        batch size and time the first half."""
        from engine.encoding.read_whole import cut_whole

        with table.open(newline="", encoding="utf-8") as fh:
            texts = [row["text"] for row in csv.DictReader(fh)]
        encoder = self._encoder()
        pieces = cut_whole(encoder, texts).pieces
        chars = sum(len(p) for p in pieces)
        drawn = np.arange(len(pieces))
        if self.sample < len(pieces):
            drawn = np.sort(np.random.default_rng(SEED).choice(
                len(pieces), size=self.sample, replace=False))
        first, second = [pieces[i] for i in drawn[0::2]], [pieces[i] for i in drawn[1::2]]
        model = encoder.model
        timed = {}
        for batch in (16, 32, 64):
            t0 = time.perf_counter()
            model.encode(first[:self.trial], batch_size=batch, normalize_embeddings=True)
            timed[batch] = time.perf_counter() - t0
        best = min(timed, key=timed.get)
        self._pending = {"pieces": len(pieces), "chars": chars,
                         "second": second, "batch_size": best,
                         "batch_trial_seconds": {str(k): round(v, 2)
                                                 for k, v in timed.items()},
                         "first": (len(first), self._encode(first, best))}

    def after_import(self, project: str) -> dict:
        """Time the second half; the baseline's figures, with the check that the project
        stored the windows the sample was drawn from."""
        import sentence_transformers

        from benchmarks.documents import stored_pieces

        done = self._pending
        second = done.pop("second")
        after = (len(second), self._encode(second, done["batch_size"]))
        stored, texts, windowed = stored_pieces(project)
        before = done["first"]
        encoded, seconds = before[0] + after[0], before[1] + after[1]
        return {
            "pieces": done["pieces"], "pieces_encoded": encoded,
            "texts": texts, "windowed_texts": windowed,
            "same_windows_as_stored": (len(stored) == done["pieces"]
                                       and sum(len(p) for p in stored) == done["chars"]),
            "baseline": f"sentence-transformers {sentence_transformers.__version__}, torch "
                        "fp32, encode(pieces)",
            "batch_size": done["batch_size"],
            "batch_trial_seconds": done["batch_trial_seconds"],
            "seconds": {"encode": round(seconds, 2), "before_import": round(before[1], 2),
                        "after_import": round(after[1], 2)},
            "pieces_per_second": round(encoded / seconds, 1),
            "pieces_per_second_before_import": round(before[0] / before[1], 1),
            "pieces_per_second_after_import": round(after[0] / after[1], 1)}

    def _encode(self, pieces: list[str], batch: int) -> float:
        t0 = time.perf_counter()
        self._encoder().model.encode(pieces, batch_size=batch, normalize_embeddings=True,
                                     convert_to_numpy=True)
        return time.perf_counter() - t0


def plain_encoder():
    """The baseline's model: the bundled one loaded by plain sentence-transformers (torch
    fp32 on the CPU), wrapped only so that the engine's windowing can cut texts for it."""
    from sentence_transformers import SentenceTransformer

    from engine.encoding.encoder import SentenceEncoder
    from engine.encoding.model_spec import default_model_path, resolve_model

    model = SentenceTransformer(str(default_model_path()), device="cpu")
    return SentenceEncoder(model, resolve_model(None), "cpu")


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
    """The engine's reading of the CPU, and the caps of `cpu_classes` it ran under: a run
    under them measures that class, not the CPU as it is."""
    from benchmarks.cpu_classes import CAP_VARIABLES
    from engine.encoding.cpu_features import cpu_isa, has_bf16_units  # the engine's reading

    caps = {k: os.environ[k] for k in CAP_VARIABLES if os.environ.get(k)}
    return {"cores": os.cpu_count(), "int8_kernels": cpu_isa(), "bf16_units": has_bf16_units(),
            **({"caps": caps} if caps else {})}


def _kernels(cpu: dict) -> str:
    """The kernels the engine read, in words."""
    return (f"{cpu.get('int8_kernels', '?')}, "
            f"{'with' if cpu.get('bf16_units') else 'without'} bf16 units")


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
                  f"({biggest['windows']:,} windows), whole command"
                  + (f"; {_kernels(result['cpu'])}" if result.get("cpu") else ""),
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
        *[_halves_note(m) for m in measured if "pieces_per_second_before_import" in
          m["baseline"]],
        *[f"{m['documents']:,} documents: {m['clusters']} clusters holding "
          f"{m['rows_in_clusters']} rows (none is a duplicate by construction); "
          f"load average {', '.join(map(str, m['load_average_before']))} before, "
          f"{', '.join(map(str, m['load_average_after']))} after." for m in measured],
        f"Measured on {cpu.get('cores', '?')} cores ({_kernels(cpu)}); "
        f"engine {result['engine']['commit']}.",
        *([f"Kernels capped: {' '.join(f'{k}={v}' for k, v in cpu['caps'].items())}."]
          if cpu.get("caps") else []),
    ]
    if missing:
        notes.append("Not measured in this run: "
                     + ", ".join(f"{s:,}" for s in missing) + " documents.")
    return {"headline": headline, "tables": [table], "notes": notes}


def _halves_note(m: dict) -> str:
    """How far the machine's speed moved across the import, read from the baseline's two
    halves."""
    base = m["baseline"]
    same = ("the windows it encoded are those the project stored"
            if base.get("same_windows_as_stored")
            else "the windows cut before the import differ from those the project stored")
    return (f"{m['documents']:,} documents: plain sentence-transformers ran at "
            f"{base['pieces_per_second_before_import']:.1f} windows/s on the half of its "
            f"sample timed just before the import and "
            f"{base['pieces_per_second_after_import']:.1f} on the half timed just after; "
            f"{same}.")

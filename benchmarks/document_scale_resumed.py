"""Documents at scale, 100,000: one import of 100,000 long documents, stopped with Ctrl-C
and resumed with `duplens encode`, in sittings, until it is done.

    DUPLENS_DOCUMENT_SCALE_STATE=DIR DUPLENS_DOCUMENT_SCALE_BUDGET_S=4800 \\
        DUPLENS_SHARED=/work/shared python -m benchmarks --only document_scale_resumed

Why sittings: on 2 cores the import of 100,000 documents of about 1,000 words (about 1.1
million windows) takes hours (about 6.4 h at the 47.6 windows a second the Zen 4 read in
`document_scale`'s 10,000), longer than one sitting at the machine. A user in that place
stops the import and runs `duplens encode` later, which resumes where it stopped (texts are
committed chunk by chunk). This benchmark measures exactly that: each run is one sitting,
which resumes the same import in the state folder `DIR` and stops it with one SIGINT after
`DUPLENS_DOCUMENT_SCALE_BUDGET_S` seconds (none: it runs to the end). The import's time is
the sum of its sittings' wall times, each a whole command in a fresh process, so each
resume's own cost (starting, loading the model and the project, stopping) is counted in.
Once the import is done, the run that finished it also times `duplens duplicates --json`.

The documents are `document_scale`'s (the same generator and seed, 800 to 1,200 words of
the Python documentation's paragraphs each), and so is the baseline: plain
sentence-transformers (torch fp32) encoding a uniform sample of the very windows the import
reads, at the batch size (16, 32 or 64) that was fastest when the state was set up. Each
sitting times one slice of that sample just before its command and one just after it, and
the ratio is of rates: windows per second of the import's sittings together against windows
per second of every slice together.

Sittings add up only on the same ground. The state folder records the first sitting's
CPU (model, family, model number, stepping, core count, its vector and matrix flags, and the
`cpu_classes` caps in force), the engine's files (`git rev-parse HEAD:engine`, with nothing
changed) and the versions of torch, transformers, sentence-transformers and OpenVINO. A
sitting on other ground refuses with one line and changes nothing; so a later sitting runs in
a clone at the commit the state names.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks import document_corpus as dc
from benchmarks import document_scale as dsc
from benchmarks.child_peak import run_python

SIZE, QUICK_SIZE = 100_000, 40
SAMPLE, QUICK_SAMPLE = 20_000, 120
SLICE, QUICK_SLICE = 1_000, 30       # windows of the sample timed before and after a sitting
QUICK_BUDGET_S = 8.0                 # a quick run stops its first sitting then, once
STATE_ENV = "DUPLENS_DOCUMENT_SCALE_STATE"
BUDGET_ENV = "DUPLENS_DOCUMENT_SCALE_BUDGET_S"
CUT_CHUNK = 2_000                    # documents cut into windows at a time (memory)
FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "avx_vnni", "amx_bf16",
         "amx_int8", "amx_tile")
STATE, SAMPLE_FILE, TABLE = "state.json", "sample.json", "documents.csv"
PROJECT = "documents.duplens"


def refuse(line: str) -> None:
    """The user's mistake, in one line on stderr, and exit 2: nothing was changed."""
    print(f"document_scale_resumed: {line}", file=sys.stderr)
    raise SystemExit(2)


def run(quick: bool) -> dict:
    from benchmarks.documents import cache_folder

    try:
        _package, paragraphs = dsc.corpus_paragraphs(cache_folder())
    except dc.CorpusUnavailable as exc:
        return {"skipped": f"the corpus could not be read: {exc}"}
    if quick:
        with tempfile.TemporaryDirectory(prefix="duplens-document-scale-resumed-") as tmp:
            folder = Path(tmp)
            state = set_up(folder, paragraphs, QUICK_SIZE, QUICK_SAMPLE)
            state = sitting(folder, state, QUICK_SLICE, QUICK_BUDGET_S)
            while not state["finished"]:
                state = sitting(folder, state, QUICK_SLICE, None)
            return state
    asked = os.environ.get(STATE_ENV, "").strip()
    if not asked:
        refuse(f"{STATE_ENV} must name the state folder of the import's sittings "
               "(made by the first)")
    budget = budget_seconds()
    folder = Path(asked)
    folder.mkdir(parents=True, exist_ok=True)
    state = (load_state(folder) if (folder / STATE).exists()
             else set_up(folder, paragraphs, SIZE, SAMPLE))
    if not state["finished"]:
        state = sitting(folder, state, SLICE, budget)
    return state


def budget_seconds() -> float | None:
    """`BUDGET_ENV`'s seconds for this sitting; unset, it runs to the end."""
    asked = os.environ.get(BUDGET_ENV, "").strip()
    if not asked:
        return None
    try:
        budget = float(asked)
    except ValueError:
        budget = -1.0
    if budget <= 0:
        refuse(f"{BUDGET_ENV} must be a number of seconds above 0, not {asked!r}")
    return budget


# -- the state ------------------------------------------------------------------------------
def load_state(folder: Path) -> dict:
    return json.loads((folder / STATE).read_text(encoding="utf-8"))


def save_state(folder: Path, state: dict) -> None:
    """Atomically: a sitting killed while saving leaves the state before it."""
    part = folder / (STATE + ".part")
    part.write_text(json.dumps(state, indent=1), encoding="utf-8")
    os.replace(part, folder / STATE)


def set_up(folder: Path, paragraphs: list[str], size: int, sample: int) -> dict:
    """The table written, cut into the engine's windows, the baseline's sample drawn (and
    kept, in a random order that its slices are taken in) and its batch size chosen."""
    from benchmarks.documents import _engine_state

    table, words = dsc._write_table(folder / TABLE, paragraphs, size)
    encoder = _baseline_encoder()
    pieces = windows_of(encoder, table)
    chars = sum(len(p) for p in pieces)
    rng = np.random.default_rng(dsc.SEED)
    drawn = rng.permutation(len(pieces))[:sample]
    kept = [pieces[int(i)] for i in drawn]
    (folder / SAMPLE_FILE).write_text(json.dumps(kept), encoding="utf-8")
    trial = kept[:min(256, len(kept))]
    timed = {}
    for batch in (16, 32, 64):
        t0 = time.perf_counter()
        encoder.model.encode(trial, batch_size=batch, normalize_embeddings=True)
        timed[batch] = time.perf_counter() - t0
    state = {"documents": size, "words": words, "windows": len(pieces), "chars": chars,
             "seed": dsc.SEED, "words_per_document": list(dsc.WORDS),
             "baseline_sample": len(kept), "slices_taken": 0,
             "batch_size": min(timed, key=timed.get),
             "batch_trial_seconds": {str(k): round(v, 2) for k, v in timed.items()},
             "ground": ground(), "engine": _engine_state(), "sittings": [],
             "finished": False}
    save_state(folder, state)
    return state


def windows_of(encoder, table: Path) -> list[str]:
    """The table's documents cut into the windows the import reads, `CUT_CHUNK` documents at
    a time (cutting is per text, so the chunks change nothing but the memory)."""
    import csv

    from engine.encoding.read_whole import cut_whole

    with table.open(newline="", encoding="utf-8") as fh:
        texts = [row["text"] for row in csv.DictReader(fh)]
    pieces: list[str] = []
    for start in range(0, len(texts), CUT_CHUNK):
        pieces.extend(cut_whole(encoder, texts[start:start + CUT_CHUNK]).pieces)
    return pieces


_ENCODER = None


def _baseline_encoder():
    """Plain sentence-transformers' model, as `document_scale`'s baseline loads it (one per
    process)."""
    global _ENCODER
    if _ENCODER is None:
        _ENCODER = dsc.plain_encoder()
    return _ENCODER


# -- the ground sittings must share ---------------------------------------------------------
def ground() -> dict:
    """What a sitting's timing depends on besides the import itself (see the docstring)."""
    from benchmarks.cpu_classes import CAP_VARIABLES

    info: dict[str, str] = {}
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    for line in text.split("\n\n")[0].splitlines():
        key, _, value = line.partition(":")
        info[key.strip()] = value.strip()
    flags = set(info.get("flags", "").split())
    return {"cpu": {"model_name": info.get("model name", "?"),
                    "family": info.get("cpu family", "?"), "model": info.get("model", "?"),
                    "stepping": info.get("stepping", "?"), "cores": os.cpu_count(),
                    "flags": [f for f in FLAGS if f in flags],
                    "caps": {k: os.environ[k] for k in CAP_VARIABLES if os.environ.get(k)}},
            "engine_tree": _git("rev-parse", "HEAD:engine"),
            "engine_changed": _git("status", "--porcelain", "--", "engine").splitlines(),
            "versions": _versions()}


def _versions() -> dict:
    """The libraries whose speed the import and the baseline depend on, as the runner
    records them (a missing one: None)."""
    from benchmarks.run import versions

    found = versions()
    return {name: found.get(name) for name in
            ("torch", "transformers", "sentence-transformers", "openvino")}


def _git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=dsc.ROOT, capture_output=True, text=True,
                          check=False)
    return done.stdout.rstrip() if done.returncode == 0 else "?"


def differences(first: dict, now: dict) -> list[str]:
    """Where `now` is not the first sitting's ground, in words (none: the same)."""
    out = []
    for key, value in first["cpu"].items():
        if now["cpu"].get(key) != value:
            out.append(f"CPU {key} {now['cpu'].get(key)!r}, not {value!r}")
    if now["engine_tree"] != first["engine_tree"]:
        out.append(f"engine files {now['engine_tree'][:12]}, not {first['engine_tree'][:12]}")
    if now["engine_changed"] != first["engine_changed"]:
        out.append("engine files changed in the working tree: "
                   + ", ".join(now["engine_changed"]))
    for name, value in first["versions"].items():
        if now["versions"].get(name) != value:
            out.append(f"{name} {now['versions'].get(name)}, not {value}")
    return out


# -- one sitting ----------------------------------------------------------------------------
def sitting(folder: Path, state: dict, slice_size: int, budget: float | None) -> dict:
    """Time a slice of the baseline, resume the import for up to `budget` seconds, time
    another slice; record it all in the state. The import done, `duplens duplicates`."""
    differs = differences(state["ground"], ground())
    if differs:
        refuse(f"this sitting is not on the first sitting's ground ({'; '.join(differs)}); "
               f"its time would not add up. Run it where the state in {folder} was begun.")
    project = folder / PROJECT
    command = (["encode", str(project)] if project.exists()
               else ["import", str(project), str(folder / TABLE), "--column", "text",
                     "--id-column", "id"])
    before = _baseline_slice(folder, state, slice_size)
    load_before = dsc._load()
    started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    done = _child(command, budget)
    load_after = dsc._load()
    after = _baseline_slice(folder, state, slice_size)
    progress = stored_so_far(project) if project.exists() else {"texts": 0, "windows": 0}
    state["sittings"].append({
        "started": started, "command": command[0], "budget_s": budget,
        "seconds": done["seconds"], "peak_rss_mib": done["peak_rss_mib"],
        "exit": done["exit"], "interrupted": done["interrupted"],
        "said": done["said"], "encoded_after": progress,
        "baseline_before": before, "baseline_after": after,
        "load_average_before": load_before, "load_average_after": load_after,
        "commit": _git("rev-parse", "--short", "HEAD")})
    if done["exit"] == 0:
        _finish(folder, state)
    save_state(folder, state)
    return state


def _child(command: list[str], budget: float | None) -> dict:
    """`duplens COMMAND` in a fresh process, stopped with one SIGINT after `budget`
    seconds; exit 130 is a stop that kept what it did, anything else but 0 a failure."""
    from benchmarks.console import python_path

    env = dict(os.environ, PYTHONPATH=python_path(), TQDM_DISABLE="1")
    done = run_python(["-m", "desktop_app.launcher", *command], env=env, cwd=dsc.ROOT,
                      stop_after=budget)
    if done.returncode not in (0, 130):
        raise RuntimeError(f"duplens {' '.join(command)} failed ({done.returncode}): "
                           f"{done.stderr[-2000:]}")
    said = [line for line in done.stderr.splitlines() if line.startswith("stopped:")]
    return {"seconds": done.seconds, "peak_rss_mib": done.peak_rss_mib,
            "exit": done.returncode, "interrupted": done.interrupted,
            "said": said[-1] if said else None, "stdout": done.stdout}


def _baseline_slice(folder: Path, state: dict, size: int) -> dict:
    """The next `size` windows of the sample, encoded by plain sentence-transformers; after
    the sample's end, from its start again (said in the record)."""
    sample = json.loads((folder / SAMPLE_FILE).read_text(encoding="utf-8"))
    start = state["slices_taken"] * size % len(sample)
    pieces = (sample + sample)[start:start + min(size, len(sample))]
    model = _baseline_encoder().model
    t0 = time.perf_counter()
    model.encode(pieces, batch_size=state["batch_size"], normalize_embeddings=True,
                 convert_to_numpy=True)
    seconds = time.perf_counter() - t0
    state["slices_taken"] += 1
    return {"windows": len(pieces), "seconds": round(seconds, 2),
            "windows_per_second": round(len(pieces) / seconds, 1),
            "reused": state["slices_taken"] * size > len(sample)}


def stored_so_far(project: Path) -> dict:
    """Texts the import has encoded so far and the windows they were read in, read from the
    project's SQLite file (read-only)."""
    import sqlite3

    from engine.store.schema import embeddings, text_windows

    conn = sqlite3.connect(f"file:{project}?mode=ro", uri=True)
    try:
        texts = conn.execute(f"SELECT count(*) FROM {embeddings.name}").fetchone()[0]
        windowed, spans = conn.execute(
            f"SELECT count(*), coalesce(sum(length(spans)), 0) "
            f"FROM {text_windows.name}").fetchone()
    finally:
        conn.close()
    # A windowed text's spans are (start, end) int32 pairs; a short text is one window.
    return {"texts": int(texts), "windows": int(spans) // 8 + int(texts) - int(windowed)}


def _finish(folder: Path, state: dict) -> None:
    """The import is done: its windows checked against those cut at set-up, then
    `duplens duplicates --json` timed, and the project's size."""
    from benchmarks.documents import stored_pieces

    project = folder / PROJECT
    stored, texts, windowed = stored_pieces(str(project))
    duplicates = dsc._child(["duplicates", str(project), "--json"])
    clusters = json.loads(duplicates.pop("stdout"))
    footprint = sum(f.stat().st_size for f in folder.iterdir()
                    if f.name.startswith(PROJECT))
    state.update(finished=True, texts=texts, windowed_texts=windowed,
                 same_windows_as_stored=(len(stored) == state["windows"]
                                         and sum(len(p) for p in stored) == state["chars"]),
                 duplicates=duplicates, clusters=len(clusters),
                 rows_in_clusters=sum(len(c["members"]) for c in clusters),
                 project_bytes=footprint,
                 project_mib_per_1000_documents=round(
                     footprint / 2**20 / state["documents"] * 1000, 2))


# -- the figures ----------------------------------------------------------------------------
def totals(state: dict) -> dict:
    """The import's sittings together and the baseline's slices together."""
    sittings = state["sittings"]
    seconds = sum(s["seconds"] for s in sittings)
    windows = sittings[-1]["encoded_after"]["windows"] if sittings else 0
    slices = [x for s in sittings for x in (s["baseline_before"], s["baseline_after"])]
    base_windows = sum(x["windows"] for x in slices)
    base_seconds = sum(x["seconds"] for x in slices)
    ours = windows / seconds if seconds else 0.0
    base = base_windows / base_seconds if base_seconds else 0.0
    return {"seconds": seconds, "windows": windows, "windows_per_second": ours,
            "baseline_windows": base_windows, "baseline_windows_per_second": base,
            "ratio": ours / base if base else 0.0,
            "peak_rss_mib": max((s["peak_rss_mib"] for s in sittings), default=0)}


def present(result: dict, results: dict | None = None) -> dict:
    """Headline, the sittings' table and notes (benchmarks/report.py)."""
    t = totals(result)
    done = result["finished"]
    cpu = result["ground"]["cpu"]
    n = len(result["sittings"])
    figure = (f"import of {result['documents']:,} documents of about 1,000 words "
              f"({result['windows']:,} windows), one `duplens import` stopped with Ctrl-C "
              f"and resumed with `duplens encode`: {n} sitting{'' if n == 1 else 's'}"
              + ("" if done else f"; **under way**: {t['windows']:,} of "
                 f"{result['windows']:,} windows so far, and their rate"))
    headline = [{
        "figure": figure,
        "duplens": f"{t['seconds']:,.0f} s ({t['windows_per_second']:.1f} windows/s)",
        "baseline": f"{t['baseline_windows_per_second']:.1f} windows/s",
        "baseline_is": (f"plain sentence-transformers encoding {t['baseline_windows']:,} "
                        f"of the same windows (batch {result['batch_size']}), timed just "
                        "before and just after each sitting"),
        "ratio": f"{t['ratio']:.2f}×", "goal": f"≥ {dsc.GOAL:g}×",
        "met": (t["ratio"] >= dsc.GOAL) if done else None}]
    rows = []
    previous = 0
    for i, s in enumerate(result["sittings"], 1):
        windows = s["encoded_after"]["windows"]
        rows.append([i, s["started"][:16].replace("T", " "), f"duplens {s['command']}",
                     "none" if s["budget_s"] is None else f"{s['budget_s']:,.0f}",
                     f"{s['seconds']:,.0f}", s["peak_rss_mib"],
                     f"{s['encoded_after']['texts']:,}", f"{windows:,}",
                     f"{(windows - previous) / s['seconds']:.1f}",
                     f"{s['baseline_before']['windows_per_second']:.1f} / "
                     f"{s['baseline_after']['windows_per_second']:.1f}"])
        previous = windows
    table = {"title": "The import's sittings, each a whole command in a fresh process",
             "columns": ["sitting", "started", "command", "budget s", "wall s", "peak MiB",
                         "texts encoded after", "windows after", "windows/s in it",
                         "plain ST windows/s before / after"],
             "rows": rows}
    notes = [
        f"Documents: `document_scale`'s generator (seed {result['seed']}), "
        f"{result['words_per_document'][0]:,}–{result['words_per_document'][1]:,} words each, "
        f"{result['words']['total']:,} words in all.",
        "A sitting's time is its command's wall time, start to exit: loading the model and "
        "the project again, and stopping after the current batch, are counted in.",
        f"Ground: {cpu['model_name']} (family {cpu['family']}, model {cpu['model']}), "
        f"{cpu['cores']} cores, flags {', '.join(cpu['flags']) or 'none of note'}"
        + (f"; caps {' '.join(f'{k}={v}' for k, v in cpu['caps'].items())}"
           if cpu["caps"] else "")
        + f"; engine {result['engine']['commit']}. Every sitting checked it was the same.",
        f"Peak memory of any sitting: {t['peak_rss_mib']:,} MiB."]
    if done:
        notes.append(
            f"`duplens duplicates --json` after the import: "
            f"{result['duplicates']['seconds']:,.0f} s, peak "
            f"{result['duplicates']['peak_rss_mib']:,} MiB; {result['clusters']} clusters "
            f"holding {result['rows_in_clusters']} rows (none is a duplicate by "
            f"construction). The project: {result['project_mib_per_1000_documents']} MiB "
            "per 1,000 documents. "
            + ("The windows it stored are those the baseline's sample was drawn from."
               if result["same_windows_as_stored"]
               else "The windows it stored differ from those cut at set-up."))
    else:
        notes.append("Not finished: the ratio is of the windows encoded so far, against "
                     "their sittings' time; the index's last save, the clusters' placing "
                     "and `duplens duplicates` are still to come, so it is not the goal's "
                     "figure yet.")
    return {"headline": headline, "tables": [table], "notes": notes}

"""Scale and footprint: a 1M-item project's file size, time to open and answer the first
search, peak memory while open and while importing.

    python -m benchmarks.scale_1m [--quick] [--items N] [--import-rows 20000]
    python -m benchmarks --only scale_1m [--quick]   (the suite; --quick: 5k items, one
                                   round of warm opens only, 2,000 rows imported)

How the big project is made (benchmark-only, `build_project`, not a product path): a CSV of
N rows goes through the real importer; the rows are the 43,944 distinct Quora questions,
repeated with a row suffix (" [copy k]") so every row is a distinct text. Their vectors are
written straight into the store (`add_embeddings`) instead of being encoded: encoding 1M
real rows would take about 45 minutes on this 2-core CPU. The first 43,944 vectors are the
real embeddings of those questions; the others are noisy copies of them (benchmarks/
corpus.py: Gaussian noise, σ per row uniform in [0.01, 0.05], renormalised). Then the
product builds its index from the stored vectors (`project.vectors.index()`: hnswlib, M=32,
ef_construction=200, every core) and saves it into the file. The built project is cached
under benchmarks/results/tmp/ (ignored by git) and reused by the next run.

What is measured, each in a fresh process so memory figures are the product's alone:
- open: the model is loaded first (the window loads it before any project opens), then the
  clock runs over `Project.open`, loading the saved index (the side file beside the project,
  or the blobs: checksum, hnswlib load; then the stamp check) and the first search (one
  real question not in the project, top 10).
- two routes, timed alternately in the same minutes so their ratio holds on a shared
  machine: "side file" (the product: `index.side_file`) and "blobs" (the route before it,
  still taken when the side file does not match: the child turns side files off for this
  process by making `side_file.side_path` answer None, as for a server project). The very
  first open after the side file is missing (an old project) is timed on its own: it takes
  the blob route and writes the side file.
- cold and warm: cold opens run right after `sync; echo 3 > /proc/sys/vm/drop_caches`
  (root only; otherwise none are reported), warm ones right after an open of the same route.
  Each figure carries the load average (`os.getloadavg`) at its start.
- reconcile: in one process, the full check of the index against every embedding id
  that a matching stamp lets opening skip (`engine.index.reconcile`), and the stamp check.
- peak RSS (VmHWM from /proc/self/status) while open, after the first search.
- save: in the last open's process, the index is saved again while a thread ticks every
  1 ms; the longest gap between ticks is how long the save held the GIL (a window freeze).
- import: peak RSS of a real import (parse + store + encode + index) of `--import-rows`
  questions, in its own process. That is not the 1M import; the build's peak RSS (import
  of N rows, vectors stored, index built, no encoding) is reported beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from benchmarks import corpus
from benchmarks.child_peak import json_child
from benchmarks.data import write_questions_csv

ITEMS_FULL = 1_000_000
ITEMS_QUICK = 5_000
IMPORT_ROWS, QUICK_IMPORT_ROWS = 20_000, 2_000
OPENS = 3            # rounds of opens (a quick run: one)
GOAL_OPEN_S = 3.0
GOAL_RSS_GIB = 4.0
BUILDER_VERSION = 1  # bump when build_project changes what it writes
RESULTS = Path(__file__).resolve().parent / "results"
ENCODE_NOTE = ("vectors written straight into the store: encoding 1M real rows would take "
               "about 45 min on this 2-core CPU")


# -- building the project (benchmark-only) ---------------------------------------------------
def base_rows(without_queries: bool = False) -> list[int]:
    """Positions (in `corpus.questions()`) of the questions that stay distinct once Duplens
    normalises them (a few differ only in case or spacing); `without_queries`: none of the
    1,000 query questions (`corpus.query_and_pool`), for benchmarks that search for them."""
    from engine.text import normalise

    seen: set[str] = set()
    keep = []
    questions = corpus.questions()
    last = len(corpus.query_and_pool()[1]) if without_queries else len(questions)
    for i, q in enumerate(questions[:last]):
        key = normalise(q)
        if q.strip() and key not in seen:
            seen.add(key)
            keep.append(i)
    return keep


def row_texts(n: int, base: list[int]) -> list[str]:
    """N distinct row texts: the real questions, then copies with a row suffix."""
    real = corpus.questions()
    m = len(base)
    return [real[base[i % m]].strip() + ("" if i < m else f" [copy {i // m}]")
            for i in range(n)]


def row_vectors(real: np.ndarray, start: int, stop: int, seed: int = 0) -> np.ndarray:
    """Vectors of rows start..stop (`real`: the embeddings of the base rows): real ones,
    then noisy copies (as corpus.py makes them, but per block, so the builder never holds
    all N vectors at once)."""
    rng = np.random.default_rng([seed, start])
    rows = np.arange(start, stop)
    out = real[rows % len(real)].copy()
    copies = rows >= len(real)
    if copies.any():
        sigma = rng.uniform(*corpus.NOISE_SIGMA, size=(int(copies.sum()), 1)).astype(np.float32)
        noisy = out[copies] + sigma * rng.standard_normal((int(copies.sum()), out.shape[1]),
                                                           dtype=np.float32)
        out[copies] = noisy / np.linalg.norm(noisy, axis=1, keepdims=True)
    return out


def build_project(path: Path, n: int, *, block: int = 50_000,
                  without_queries: bool = False) -> dict:
    """Write an N-row project at `path` (see the module docstring); returns build timings.
    `without_queries`: the query questions are in no row (see `base_rows`)."""
    from sqlalchemy import select

    from engine.project import Project
    from engine.store.embeddings import add_embeddings
    from engine.store.schema import texts as texts_table

    base = base_rows(without_queries)
    texts = row_texts(n, base)
    queries, pool = corpus.query_and_pool()  # the split the other benchmarks cache
    real = np.concatenate([corpus.embed(pool), corpus.embed(queries)])[base]
    timings = {}
    src = path.with_suffix(".csv")
    write_questions_csv(src, texts)
    path.unlink(missing_ok=True)
    with Project.open(path, create=True) as project:
        project.model.attach(corpus.encoder(), is_default=True)
        t0 = time.perf_counter()
        report = project.rows.import_table(src, ["question"])
        timings["import_rows_s"] = round(time.perf_counter() - t0, 1)
        if report.new_texts != n:
            raise SystemExit(f"expected {n} distinct texts, got {report.new_texts}")
        model_id = int(project.model.row()["id"])
        with project.store.read() as conn:
            # The importer need not give texts ids in row order: each row's vector goes to
            # its own text's id.
            id_of = dict(conn.execute(select(texts_table.c.text, texts_table.c.id)).all())
        if len(id_of) != n:
            raise SystemExit(f"expected {n} texts in the project, found {len(id_of)}")
        t0 = time.perf_counter()
        for start in range(0, n, block):
            stop = min(start + block, n)
            with project.store.write() as conn:
                add_embeddings(conn, model_id, [id_of[t] for t in texts[start:stop]],
                               row_vectors(real, start, stop), [False] * (stop - start))
        del id_of
        timings["store_vectors_s"] = round(time.perf_counter() - t0, 1)
        t0 = time.perf_counter()
        project.vectors.index()                  # built from the stored vectors, then saved
        timings["index_build_and_save_s"] = round(time.perf_counter() - t0, 1)
    src.unlink()
    timings["build_peak_rss_mib"] = peak_rss_mib()
    return timings


def project_path(n: int, without_queries: bool = False) -> Path:
    """Where the built N-item project is cached (it may not be there yet)."""
    from engine.encoding.model_spec import resolve_model

    tag = resolve_model(None).fingerprint.split(":")[-1][:10]
    kind = "-noq" if without_queries else ""
    return corpus.CACHE / f"scale-{n}{kind}-v{BUILDER_VERSION}-{tag}.duplens"


def cached_project(n: int, without_queries: bool = False) -> tuple[Path, dict | None]:
    """The built N-item project (built now unless cached); its build timings when built."""
    path = project_path(n, without_queries)
    info = path.with_suffix(".build.json")
    if path.exists() and info.exists():
        return path, json.loads(info.read_text())
    corpus.CACHE.mkdir(parents=True, exist_ok=True)
    _say(f"  building a {n:,}-item project (cached in {path.parent})…")
    built = _child(["--build", str(path), "--items", str(n),
                    *(["--without-queries"] if without_queries else [])])
    info.write_text(json.dumps(built))
    return path, built


# -- measuring, each in its own process -----------------------------------------------------
def measure_open(path: Path, save: bool = False, blobs: bool = False,
                 reconcile_too: bool = False) -> dict:
    """Open `path`, load its index and answer one search; then, with `reconcile_too`, time a
    full reconcile (and, with `save`, saving the index again). `blobs`: this process never
    uses a side file (the route before side files)."""
    from engine.encoding.loading import load_encoder
    from engine.index.persist import current_change_count
    from engine.index.reconcile import reconcile
    from engine.project import Project

    if blobs:
        from engine.index import side_file

        side_file.side_path = lambda conn, model_id: None
    queries, _ = corpus.query_and_pool()
    encoder = load_encoder(None, device="cpu", batch_size=64)
    encoder.encode_query("warm-up")
    rss_model = current_rss_mib()
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    project = Project.open(path)
    project.model.attach(encoder, is_default=True)
    t1 = time.perf_counter()
    index = project.vectors.index()
    t2 = time.perf_counter()
    hits = project.search(queries[0], k=10)
    t3 = time.perf_counter()
    out = {"open_s": round(t1 - t0, 3), "index_load_s": round(t2 - t1, 3),
           "first_search_s": round(t3 - t2, 3), "total_s": round(t3 - t0, 3),
           "hits": len(hits), "items": len(index), "reconciled_on_open": bool(project.notices),
           "route": project.vectors.index_source(), "load_avg_1m": round(load, 2),
           "rss_after_model_mib": rss_model, "peak_rss_open_mib": peak_rss_mib()}
    if not reconcile_too:
        project.close()
        return out
    model_id = project.model.id()
    t0 = time.perf_counter()
    with project.store.read() as conn:
        count = current_change_count(conn, model_id, index)
    out["stamp_check_s"] = round(time.perf_counter() - t0, 4)
    out["stamp_matched"] = count is not None
    t0 = time.perf_counter()
    changed = reconcile(project.store, index, model_id).changed
    out["full_reconcile_s"] = round(time.perf_counter() - t0, 3)
    out["full_reconcile_changed"] = changed
    if save:
        out.update(_save_stall(project))
    project.close()
    return out


def _save_stall(project) -> dict:
    """Save the index again while a thread ticks every 1 ms: its longest gap is how long
    the save kept Python (a window's GUI thread) from running."""
    import threading

    gaps: list[float] = []
    stop = threading.Event()

    def tick() -> None:
        last = time.perf_counter()
        while not stop.is_set():
            time.sleep(0.001)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    ticker = threading.Thread(target=tick)
    ticker.start()
    time.sleep(0.05)
    t0 = time.perf_counter()
    project.vectors.save_index()
    seconds = time.perf_counter() - t0
    stop.set()
    ticker.join()
    return {"save_s": round(seconds, 2), "save_longest_stall_ms": round(max(gaps) * 1000, 1)}


def measure_import(rows: int) -> dict:
    """Peak RSS and time of a real import (parse + store + encode + index) of `rows`."""
    import tempfile

    from engine.encoding.loading import load_encoder
    from engine.project import Project

    texts = corpus.questions()[:rows]
    encoder = load_encoder(None, device="cpu", batch_size=64)
    rss_model = current_rss_mib()
    with tempfile.TemporaryDirectory(prefix="duplens-scale-") as tmp:
        src = Path(tmp) / "rows.csv"
        write_questions_csv(src, texts)
        t0 = time.perf_counter()
        with Project.open(Path(tmp) / "import.duplens", create=True) as project:
            project.model.attach(encoder, is_default=True)
            project.rows.import_table(src, ["question"])
            project.vectors.encode()
        seconds = time.perf_counter() - t0
    return {"rows": len(texts), "seconds": round(seconds, 1),
            "rss_after_model_mib": rss_model, "peak_rss_mib": peak_rss_mib()}


def peak_rss_mib() -> int:
    """This process's peak resident memory (VmHWM; ru_maxrss where /proc is missing)."""
    found = _status_kib("VmHWM:")
    if found is None:
        found = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(found / 1024)


def current_rss_mib() -> int:
    found = _status_kib("VmRSS:")
    return round(found / 1024) if found is not None else 0


def _status_kib(key: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(key):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def _child(args: list[str]) -> dict:
    """Run this module with `args` in a fresh process; its last stdout line is JSON."""
    return json_child("benchmarks.scale_1m", args)


def _file_sizes(path: Path) -> dict:
    import sqlite3

    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        index_bytes = con.execute("SELECT coalesce(sum(size), 0) FROM indexes").fetchone()[0]
        vector_bytes = con.execute(
            "SELECT coalesce(sum(length(vector)), 0) FROM embeddings").fetchone()[0]
    finally:
        con.close()
    return {"file_mib": round(path.stat().st_size / 2 ** 20),
            "index_blob_mib": round(index_bytes / 2 ** 20),
            "embedding_vectors_mib": round(vector_bytes / 2 ** 20)}


# -- the benchmark --------------------------------------------------------------------------
def _drop_caches() -> bool:
    """Empty the OS page cache (root only): the next open reads the disk."""
    try:
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
        return True
    except OSError:
        return False


def _open_child(path: Path, route: str, *extra: str) -> dict:
    return _child(["--measure-open", str(path), *(["--blobs"] if route == "blobs" else []),
                   *extra])


def run(quick: bool, items: int | None = None, import_rows: int | None = None) -> dict:
    from engine.index.side_file import folder_for

    n = items or (ITEMS_QUICK if quick else ITEMS_FULL)
    import_rows = import_rows or (QUICK_IMPORT_ROWS if quick else IMPORT_ROWS)
    path, built = cached_project(n)
    sizes = _file_sizes(path)
    first = None
    if not any(folder_for(path).glob("hnsw-*.bin")):
        _say("  first open without a side file (blob route, writes it)…")
        first = _open_child(path, "side file")
    opens: list[dict] = []
    for i in range(1 if quick else OPENS):
        for route in ("side file", "blobs"):
            for temp in ("cold", "warm"):
                if temp == "cold" and (quick or not _drop_caches()):
                    continue
                _say(f"  round {i + 1}: {route}, {temp}…")
                opens.append({"round": i + 1, "cache": temp, "asked": route,
                              **_open_child(path, route)})
    _say("  reconcile and save, in one more warm open…")
    last = _open_child(path, "side file", "--reconcile", "--save")
    _say(f"  importing {import_rows:,} real questions to measure its memory…")
    imported = _child(["--measure-import", str(import_rows)])

    def median(route: str, temp: str) -> float | None:
        got = [o["total_s"] for o in opens if o["asked"] == route and o["cache"] == temp]
        return round(statistics.median(got), 3) if got else None

    med = {(r, t): median(r, t) for r in ("side file", "blobs") for t in ("cold", "warm")}
    return {
        "items": n, "data": f"{corpus.NOISE_NOTE}; rows are the real questions repeated with "
                            f"a row suffix; {ENCODE_NOTE}",
        "file": sizes, "build": built, "first_open": first, "opens": opens, "last": last,
        "open_total_s_median": med[("side file", "warm")],
        "open_total_s_median_cold": med[("side file", "cold")],
        "medians": {f"{r}, {t}": v for (r, t), v in med.items()},
        "peak_rss_open_mib": max(o["peak_rss_open_mib"] for o in [*opens, last]),
        "full_reconcile_s": last["full_reconcile_s"],
        "stamp_check_s": last["stamp_check_s"],
        "import": imported,
    }


def present(result: dict, results: dict | None = None) -> dict:
    """Headline, tables and notes from the opens measured (benchmarks/report.py)."""
    n, sizes, built = result["items"], result["file"], result["build"]
    opens, first, last = result["opens"], result["first_open"], result["last"]
    imported = result["import"]
    med = {tuple(k.split(", ")): v for k, v in result["medians"].items()}
    rss = result["peak_rss_open_mib"]
    warm, cold = med[("side file", "warm")], med[("side file", "cold")]
    rounds = len({o["round"] for o in opens})
    blob_route = ("the same project opened by the blob route (the index read from the "
                  "project file, as an old, copied or server project opens), same run")
    headline = [
        {"figure": f"open a {n:,}-item project and answer the first search (warm cache)",
         "duplens": f"{warm:.2f} s (median of {rounds})",
         "baseline": f"{med[('blobs', 'warm')]:.2f} s", "baseline_is": blob_route,
         "ratio": f"{med[('blobs', 'warm')] / warm:.1f}× faster",
         "goal": f"< {GOAL_OPEN_S:.0f} s", "met": warm < GOAL_OPEN_S},
        {"figure": f"peak memory while a {n:,}-item project is open (model loaded)",
         "duplens": f"{rss:,} MiB", "baseline": "—", "ratio": "—",
         "goal": f"< {GOAL_RSS_GIB:.0f} GiB", "met": rss < GOAL_RSS_GIB * 1024},
    ]
    if cold is not None:
        headline.insert(1, {
            "figure": f"open a {n:,}-item project and answer the first search (cold cache)",
            "duplens": f"{cold:.2f} s (median of {rounds})",
            "baseline": f"{med[('blobs', 'cold')]:.2f} s", "baseline_is": blob_route,
            "ratio": f"{med[('blobs', 'cold')] / cold:.1f}× faster",
            "goal": f"< {GOAL_OPEN_S:.0f} s", "met": cold < GOAL_OPEN_S})
    rows = [[o["round"], o["asked"], o["cache"], o["route"], o["index_load_s"],
             o["first_search_s"], o["total_s"], o["peak_rss_open_mib"], o["load_avg_1m"]]
            for o in opens]
    if first is not None:
        rows.insert(0, ["first", "side file (none yet)", "as found", first["route"],
                        first["index_load_s"], first["first_search_s"], first["total_s"],
                        first["peak_rss_open_mib"], first["load_avg_1m"]])
    return {
        "headline": headline,
        "tables": [{"title": f"{n:,}-item project ({sizes['file_mib']:,} MiB file, index "
                             f"{sizes['index_blob_mib']:,} MiB); routes alternated",
                    "columns": ["round", "route asked", "cache", "route taken",
                                "index load s", "first search s", "total s",
                                "peak RSS MiB", "load avg"], "rows": rows},
                   {"title": "what a matching stamp saves on open",
                    "columns": ["check", "seconds"],
                    "rows": [["stamp check (content change count, embedding count)",
                              last["stamp_check_s"]],
                             ["full reconcile with every embedding id (skipped)",
                              last["full_reconcile_s"]]]},
                   {"title": "saving the index (after an import or a deletion; blob and "
                             "side file)",
                    "columns": ["seconds", "longest stall of a 1 ms ticker thread, ms"],
                    "rows": [[last.get("save_s"), last.get("save_longest_stall_ms")]]},
                   {"title": "memory during an import (parse + store + encode + index)",
                    "columns": ["what", "rows", "peak RSS MiB"],
                    "rows": [[f"real import of {imported['rows']:,} questions (not the 1M "
                              f"import)", imported["rows"], imported["peak_rss_mib"]],
                             [f"building the {n:,}-item project (import, vectors stored, "
                              f"index built and saved; no encoding)", n,
                              (built or {}).get("build_peak_rss_mib", "?")]]}],
        "notes": [ENCODE_NOTE + "; the built project is cached between runs.",
                  "Cold: after sync and drop_caches; warm: right after an open of the same "
                  "route. Load average (1 min) beside each open: the machine is shared."],
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help=f"{ITEMS_QUICK:,} items")
    ap.add_argument("--items", type=int)
    ap.add_argument("--import-rows", type=int)
    ap.add_argument("--build", help=argparse.SUPPRESS)
    ap.add_argument("--without-queries", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--measure-open", help=argparse.SUPPRESS)
    ap.add_argument("--measure-import", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--save", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--blobs", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--reconcile", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.build:
        print(json.dumps(build_project(Path(args.build), args.items,
                                       without_queries=args.without_queries)))
        return
    if args.measure_open:
        print(json.dumps(measure_open(Path(args.measure_open), save=args.save,
                                      blobs=args.blobs, reconcile_too=args.reconcile)))
        return
    if args.measure_import:
        print(json.dumps(measure_import(args.measure_import)))
        return
    result = run(args.quick, args.items, args.import_rows)
    from benchmarks.run import QUICK_RESULTS, hardware, versions

    record = {"benchmark": "scale_1m", "title": "Scale and footprint (1M items)",
              "command": "python -m benchmarks.scale_1m "
              + " ".join(sys.argv[1:] if argv is None else argv),
              "date": datetime.now(UTC).isoformat(timespec="seconds"),
              "hardware": hardware(), "versions": versions(), "result": result}
    folder = QUICK_RESULTS if args.quick else RESULTS   # a smoke run's, as benchmarks.run
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "scale_1m.json").write_text(json.dumps(record, indent=1) + "\n",
                                          encoding="utf-8")
    print(json.dumps(result, indent=1))


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()

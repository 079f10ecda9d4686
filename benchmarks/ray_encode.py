"""Encoding on Ray: rows/s against the number of workers, beside local encoding.

    python -m benchmarks --only ray_encode [--quick]
    python -m benchmarks.ray_encode [--rows 10000] [--workers 1 2 4 8 16] [--gpu-workers 1]

Same texts (distinct Quora questions), same model (the bundled all-MiniLM-L6-v2), batch
size 64, one process driving everything, one configuration after the other:
- plain `SentenceTransformer.encode` (normalised; all cores, and one torch thread but in a
  quick run);
- Duplens' import pipeline encoding in this thread (`project.vectors.encode`, `LocalExecutor`);
- the same pipeline on a local Ray (`RayExecutor`, started once with every core) with N CPU
  actors of one CPU and one torch thread each, for each N of `--workers`, and (with CUDA)
  one or more GPU actors (fp16, as local CUDA encoding);
- the same Ray import into a PostgreSQL project (a team's), with 1 and 2 workers (--quick: 1), on a
  private server (`devtools/postgres_server.py`; left out where none can start);
- the writer, on SQLite and on PostgreSQL: the same pipeline fed precomputed vectors
  (planning, commits of 2,048 rows, HNSW indexing on the job's one indexing thread), i.e.
  what the driver sustains when encoders are not the limit; the same without indexing; the
  commits alone; and hnswlib's indexing alone on one thread, so the notes can say which of
  the database and the indexing thread bounds each writer.
Each Ray job's CPU is read from /proc while it runs (`benchmarks/ray_cpu.py`): each
worker's share of a core and rows per CPU second, and the driver's share.
Each Ray run reports the job's rows/s (actor start and model loads included) and the
steady rate (from its first result to its last). The goal: each added worker adds at least
0.8x one worker's steady rate until the writer or the cores bound it; the notes say which.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.data import write_questions_csv

BATCH = 64
ROWS_QUICK, ROWS_FULL = 1_000, 10_000
GOAL_GAIN = 0.8


def default_workers() -> list[int]:
    """1, 2, 4, … up to the machine's cores."""
    counts, n = [], 1
    while n <= (os.cpu_count() or 1):
        counts.append(n)
        n *= 2
    return counts


def run(quick: bool) -> dict:
    """The suite's entry point (benchmarks/run.py)."""
    import torch

    from benchmarks.data import quora_questions

    texts = quora_questions(ROWS_QUICK if quick else ROWS_FULL)
    gpus = 1 if torch.cuda.is_available() else 0
    if quick:   # a smoke run: plain encoding on every core only, one team worker
        return measure(texts, default_workers(), gpus, team_workers=1, one_thread_too=False)
    return measure(texts, default_workers(), gpus)


def measure(texts: list[str], workers: list[int], gpu_workers: int = 0,
            team_workers: int = 2, one_thread_too: bool = True) -> dict:
    import torch
    from sentence_transformers import SentenceTransformer

    from benchmarks.ray_cpu import CpuSampler, supported
    from engine.encoding.encoder import SentenceEncoder
    from engine.encoding.model_spec import default_model_path, load_model, resolve_model
    from engine.encoding.ray_cluster import connect
    from engine.encoding.ray_executor import RayExecutor

    spec = resolve_model(None)
    rows: list[dict] = []
    threads = torch.get_num_threads()
    for n_threads in (threads, 1) if one_thread_too else (threads,):
        # The whole job (load the model, encode every text) and then the steady rate (the
        # same texts again, the model warm), at each thread count: the report compares
        # Ray with the faster of them, whole job with whole job and steady with steady.
        torch.set_num_threads(n_threads)
        t0 = time.perf_counter()
        plain = SentenceTransformer(str(default_model_path()), device="cpu")
        plain.encode(texts, batch_size=BATCH, normalize_embeddings=True)
        job = time.perf_counter() - t0
        t0 = time.perf_counter()
        plain.encode(texts, batch_size=BATCH, normalize_embeddings=True)
        seconds = time.perf_counter() - t0
        rows.append({**_row(f"plain sentence-transformers encode, {n_threads} torch "
                            "thread(s)", len(texts), seconds),
                     "torch_threads": n_threads, "job_seconds": round(job, 2),
                     "job_rows_per_s": round(len(texts) / job, 1)})
        del plain
    torch.set_num_threads(threads)

    encoder = SentenceEncoder(load_model(spec, "cpu"), spec, "cpu", BATCH)
    with tempfile.TemporaryDirectory(prefix="duplens-ray-bench-") as tmp, \
            _postgres() as server:
        src = write_questions_csv(Path(tmp) / "questions.csv", texts)
        local = _pipeline(Path(tmp) / "local.duplens", src, encoder, None)
        rows.append(_row(f"Duplens pipeline, this thread ({threads} torch threads)",
                         len(texts), local["seconds"], local["steady"]))
        vectors = local.pop("vectors")

        session = connect(None, num_cpus=os.cpu_count())
        try:
            ray_rows = []
            stores = [("SQLite", lambda n: Path(tmp) / f"ray{n}.duplens", workers)]
            if server is not None:     # the team project: 1 and 2 workers suffice to compare
                stores.append(("PostgreSQL", server.new_project,
                               [n for n in workers if n <= team_workers]))
            for store, location, counts in stores:
                for n in counts:
                    executor = RayExecutor(workers=n, use_gpus=False)
                    with CpuSampler() as cpu:
                        got = _pipeline(location(n), src, encoder, executor)
                    got.pop("vectors")
                    name = f"Duplens on Ray, {n} CPU worker(s) x 1 thread"
                    ray_rows.append({**_row(name if store == "SQLite" else
                                            f"{name}, into PostgreSQL", len(texts),
                                            got["seconds"], got["steady"]),
                                     "workers": n, "device": "cpu", "store": store,
                                     **({"cpu": cpu.summary(got["window"][2],
                                                            *got["window"][:2])}
                                        if supported() else {})})
            if gpu_workers:
                gpu_encoder = SentenceEncoder(encoder.model, spec, "cpu", 256)
                executor = RayExecutor(workers=gpu_workers, use_gpus=True)
                got = _pipeline(Path(tmp) / "gpu.duplens", src, gpu_encoder, executor)
                got.pop("vectors")
                ray_rows.append({**_row(f"Duplens on Ray, {gpu_workers} GPU worker(s), fp16, "
                                        f"batch 256", len(texts), got["seconds"],
                                        got["steady"]),
                                 "workers": gpu_workers, "device": "cuda", "store": "SQLite"})
        finally:
            session.close()
        rows += ray_rows
        targets = [("SQLite", lambda what: Path(tmp) / f"{what}.duplens")]
        if server is not None:
            targets.append(("PostgreSQL", lambda _what: server.new_project()))
        for store, location in targets:
            rows += _writer_rows(store, location, src, encoder, vectors, len(texts))
        seconds = _index_only(vectors, encoder.dim)
        rows.append(_row("hnswlib indexing alone (the job's one indexing thread)",
                         len(texts), seconds))
    return {"rows": len(texts), "threads": threads, "cores": os.cpu_count(),
            "configurations": rows}


def _writer_rows(store: str, location, src: Path, encoder, vectors: dict, n: int
                 ) -> list[dict]:
    """The writer's ceiling on one store: the pipeline fed precomputed vectors (the whole
    job without encoding: plan, commit, index), the same without indexing, the commits
    alone. `location(what)` gives a new project's path or URL."""
    writer = _pipeline(location("writer"), src, encoder, _Precomputed(vectors))
    rows = [_row(f"{store} writer: pipeline fed precomputed vectors (plan, commit, index)",
                 n, writer["seconds"])]
    planned = _without_index(location("plan"), src, encoder, vectors)
    rows.append(_row(f"{store} writer without indexing (plan, commit)", n, planned))
    commits = _commit_only(location("commit"), src, encoder, vectors)
    rows.append(_row(f"{store} commits alone (2,048 rows per transaction)", n, commits))
    return rows


def _index_only(by_text: dict[str, np.ndarray], dim: int) -> float:
    """Seconds for the job's indexing alone: every vector added to an empty index on one
    hnswlib thread, in chunks of one commit, as the job's indexing thread adds them."""
    from engine.encoding.encode_job import CHUNK_TEXTS
    from engine.index.hnsw import HnswIndex
    from engine.services.vectors import INDEX_THREADS

    vectors = np.stack(list(by_text.values()))
    ids = np.arange(len(vectors), dtype=np.int64)
    index = HnswIndex(dim)
    t0 = time.perf_counter()
    for start in range(0, len(ids), CHUNK_TEXTS):
        index.add(ids[start:start + CHUNK_TEXTS], vectors[start:start + CHUNK_TEXTS],
                  threads=INDEX_THREADS)
    return time.perf_counter() - t0


class _Server:
    """A private PostgreSQL server (`devtools.postgres_server`) handing out empty team
    projects, one database each."""

    def __init__(self, server) -> None:
        self.server = server

    def new_project(self, _what=None) -> str:
        from devtools.postgres_server import ANALYST_PASSWORD

        return self.server.url(self.server.create_database(), password=ANALYST_PASSWORD)


@contextlib.contextmanager
def _postgres():
    """A `_Server`, or None (the PostgreSQL rows are left out) where none can start."""
    from devtools.postgres_server import NoServer, PostgresServer

    try:
        import psycopg  # noqa: F401 - the server's client, needed before one is started
    except ImportError:
        print("ray_encode: no PostgreSQL rows: psycopg is not installed", flush=True)
        yield None
        return
    try:
        server = PostgresServer().start()
    except NoServer as exc:
        print(f"ray_encode: no PostgreSQL rows: {exc}", flush=True)
        yield None
        return
    try:
        yield _Server(server)
    finally:
        server.stop()


def _row(name: str, n: int, seconds: float, steady: float | None = None) -> dict:
    row = {"name": name, "rows": n, "seconds": round(seconds, 2),
           "rows_per_s": round(n / seconds, 1), "load_average": _load()}
    if steady is not None:
        row["steady_rows_per_s"] = round(steady, 1)
    return row


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _pipeline(location: Path | str, src: Path, encoder, executor) -> dict:
    """Import (not timed), then `project.vectors.encode` on `executor` (timed): seconds, the steady
    rate from the first result to the last, and the stored vectors by text."""
    from engine.project import Project
    from engine.store import embeddings as embedding_store
    from engine.store.items import texts_by_id

    marks: list[tuple[float, int]] = []

    def progress(p) -> None:
        if p.done:
            marks.append((time.perf_counter(), p.done))

    with Project.open(location, create=True) as project:
        project.model.attach(encoder, is_default=True)
        project.rows.import_table(src, ["question"])
        t0 = time.perf_counter()
        try:
            project.vectors.encode(progress=progress, executor=executor)
        finally:
            if executor is not None:
                executor.close()
        seconds = time.perf_counter() - t0
        with project.store.read() as conn:
            model_id = project.model.id()
            by_text = {}
            for ids, vecs in embedding_store.iter_embeddings(conn, model_id, encoder.dim):
                texts = texts_by_id(conn, ids.tolist())
                by_text.update({texts[int(t)]: v for t, v in zip(ids, vecs, strict=True)})
    (t_first, n_first), (t_last, n_last) = marks[0], marks[-1]
    steady = (n_last - n_first) / (t_last - t_first) if t_last > t_first else None
    return {"seconds": seconds, "steady": steady, "vectors": by_text,
            "window": (t_first, t_last, n_last - n_first)}


class _Precomputed:
    """An executor that hands back vectors computed before: the pipeline without encoding."""

    def __init__(self, by_text: dict[str, np.ndarray]) -> None:
        self.by_text = by_text

    def map(self, encoder, batches):
        from engine.encoding.encoder import EncodedBatch

        for batch in batches:
            yield EncodedBatch(batch.text_ids, np.stack([self.by_text[t] for t in batch.texts]),
                               [False] * len(batch.texts))

    def close(self) -> None:
        pass


def _without_index(location: Path | str, src: Path, encoder,
                   by_text: dict[str, np.ndarray]) -> float:
    """Seconds for the job fed precomputed vectors with no index to feed: planning
    (tokenising for the sort) and the chunk commits, which is what one database writer does."""
    from engine.encoding.encode_job import encode_missing
    from engine.project import Project

    with Project.open(location, create=True) as project:
        project.model.attach(encoder, is_default=True)
        project.rows.import_table(src, ["question"])
        model_id = project.model.id()
        return _timed(lambda: encode_missing(project.store, encoder, model_id,
                                             executor=_Precomputed(by_text)))


def _commit_only(location: Path | str, src: Path, encoder,
                 by_text: dict[str, np.ndarray]) -> float:
    """Seconds to store every vector in transactions of one chunk each, nothing else."""
    from engine.encoding.encode_job import CHUNK_TEXTS
    from engine.project import Project
    from engine.store.embeddings import add_embeddings, missing_text_ids
    from engine.store.items import texts_by_id

    with Project.open(location, create=True) as project:
        project.model.attach(encoder, is_default=True)
        project.rows.import_table(src, ["question"])
        model_id = project.model.id()
        with project.store.read() as conn:
            ids = missing_text_ids(conn, model_id)
            texts = texts_by_id(conn, ids)
        vectors = np.stack([by_text[texts[t]] for t in ids])
        t0 = time.perf_counter()
        for start in range(0, len(ids), CHUNK_TEXTS):
            part = slice(start, start + CHUNK_TEXTS)
            with project.store.write() as conn:
                add_embeddings(conn, model_id, ids[part], vectors[part],
                               [False] * len(ids[part]))
        return time.perf_counter() - t0


def present(result: dict, results: dict | None = None) -> dict:
    """Headline, tables, plot and notes from the configurations measured
    (benchmarks/report.py). Ray is compared with the faster plain configuration, steady rate
    with steady rate and whole job with whole job."""
    rows = result["configurations"]
    cores = result.get("cores") or 2
    ray_rows = [r for r in rows if "workers" in r]
    plains = [r for r in rows if r["name"].startswith("plain sentence-transformers encode")]
    plain = max(plains, key=lambda r: r["rows_per_s"])
    plain_threads = plain.get("torch_threads") or _threads_in(plain["name"])
    rate = {r["name"]: r["rows_per_s"] for r in rows}
    writer = rate["SQLite writer: pipeline fed precomputed vectors (plan, commit, index)"]
    cpu_rows = [r for r in ray_rows if r["device"] == "cpu" and r["store"] == "SQLite"]
    one = next((r["steady_rows_per_s"] for r in cpu_rows if r["workers"] == 1), None)
    gains = []
    for prev, cur in zip(cpu_rows, cpu_rows[1:] if one else [], strict=False):
        added = cur["workers"] - prev["workers"]
        gain = (cur["steady_rows_per_s"] - prev["steady_rows_per_s"]) / (added * one)
        gains.append({"from": prev["workers"], "to": cur["workers"], "gain": round(gain, 2)})
    notes = [f"{result['rows']} distinct Quora questions, batch {BATCH}, {cores} cores; the "
             f"local Ray was started with {cores} CPUs; the driver (planning, commits, "
             f"indexing) shares the machine with the workers.",
             "Plain encode: " + "; ".join(
                 f"{r.get('torch_threads') or _threads_in(r['name'])} torch thread(s) "
                 f"{r['rows_per_s']:,.0f} rows/s with the model warm"
                 + (f", {r['job_rows_per_s']:,.0f} rows/s as a whole job (model load "
                    "included)" if r.get("job_rows_per_s") else "") for r in plains)
             + f"; the faster ({plain_threads} thread(s)) is the baseline."]
    notes += _writer_notes(rate)
    for g in gains:
        bound = ""
        if g["gain"] < GOAL_GAIN:
            top = next(r for r in cpu_rows if r["workers"] == g["to"])
            if top["steady_rows_per_s"] >= 0.8 * writer:
                bound = " (bound by the writer)"
            elif g["to"] + 1 > cores:
                bound = (f" (bound by the cores: {g['to']} workers and the driver on "
                         f"{cores} cores)")
        notes.append(f"{g['from']} -> {g['to']} workers: each added worker adds "
                     f"{g['gain']:.2f}x one worker's steady rate{bound}.")
    notes += _cpu_notes(ray_rows, cores)
    headline = []
    best = max(cpu_rows, key=lambda r: r["steady_rows_per_s"], default=None)
    if best is not None:
        counts = " and ".join(str(r.get("torch_threads") or _threads_in(r["name"]))
                              for r in plains)
        faster = (f"plain sentence-transformers encode, the faster of {counts} torch "
                  f"threads ({plain_threads}), same texts, same run")
        headline.append({
            "figure": f"Ray, {best['workers']} CPU worker(s): steady rows/s (first result to "
                      "last)",
            "duplens": f"{best['steady_rows_per_s']:,.0f} rows/s",
            "baseline": f"{plain['rows_per_s']:,.0f} rows/s",
            "baseline_is": faster + ", model warm (its steady rate)",
            "ratio": f"{best['steady_rows_per_s'] / plain['rows_per_s']:.2f}×",
            "goal": f"each added worker adds ≥ {GOAL_GAIN:g}× one worker's steady rate",
            "met": all(g["gain"] >= GOAL_GAIN for g in gains) if gains else None})
        timed_whole = [r for r in plains if r.get("job_rows_per_s")]
        whole = max(timed_whole, key=lambda r: r["job_rows_per_s"], default=None)
        job = whole["job_rows_per_s"] if whole else None
        faster_job = (f"plain sentence-transformers, the faster whole job of {counts} torch "
                      f"threads ({whole.get('torch_threads') if whole else '?'}), same texts, "
                      "same run, model load included")
        headline.append({
            "figure": f"Ray, {best['workers']} CPU worker(s): whole job rows/s (workers "
                      "started, models loaded, encode, store, index)",
            "duplens": f"{best['rows_per_s']:,.0f} rows/s",
            "baseline": f"{job:,.0f} rows/s" if job else "not measured in this run",
            "baseline_is": (faster_job if job else
                            "plain sentence-transformers' whole job (model load included): "
                            "not measured in this run"),
            "ratio": f"{best['rows_per_s'] / job:.2f}×" if job else "—",
            "goal": "", "met": None})
    columns = ["configuration", "rows/s (job)", "rows/s (steady)", "load average"]
    def job_and_steady(r: dict) -> list[str]:
        if r in plains:   # its timed encode is a second pass: the steady rate
            job = r.get("job_rows_per_s")
            return [f"{job:,.0f}" if job else "", f"{r['rows_per_s']:,.0f}"]
        steady = r.get("steady_rows_per_s")
        return [f"{r['rows_per_s']:,.0f}", f"{steady:,.0f}" if steady else ""]

    table = [[r["name"], *job_and_steady(r), " ".join(f"{x:.2f}" for x in r["load_average"])]
             for r in rows]
    tables = [{"title": "Encoding on Ray (same texts, one after the other); plain encode's "
                        "job includes loading the model, its steady rate is a second pass "
                        "with the model warm",
               "columns": columns, "rows": table}]
    with_cpu = [r for r in ray_rows if "cpu" in r]
    if with_cpu:
        tables.append({"title": "Where the CPU went during each Ray job (/proc)",
                       "columns": ["configuration", "wall s", "driver: share of a core",
                                   "each worker: share of a core",
                                   "each worker: rows per CPU second"],
                       "rows": [[r["name"], f"{r['cpu']['wall_s']:.1f}",
                                 f"{r['cpu']['driver_core_share']:.2f}",
                                 " ".join(f"{w['core_share']:.2f}" for w in r["cpu"]["workers"]),
                                 " ".join(f"{w['rows_per_cpu_s'] or 0:,.0f}"
                                          for w in r["cpu"]["workers"])]
                                for r in with_cpu]})
    plots = [{"file": "ray_encode.png", "title": "Encoding on Ray: rows/s against workers",
              "xlabel": "CPU workers (1 thread each)", "ylabel": "rows/s (steady)",
              "series": [{"label": "Ray CPU workers", "x": [r["workers"] for r in cpu_rows],
                          "y": [r["steady_rows_per_s"] for r in cpu_rows]},
                         {"label": "the writer", "x": [r["workers"] for r in cpu_rows],
                          "y": [writer] * len(cpu_rows)}]}] if cpu_rows else []
    return {"headline": headline, "plots": plots, "notes": notes, "tables": tables}


def _threads_in(name: str) -> int:
    """"plain sentence-transformers encode, 2 torch thread(s)" -> 2 (runs that did not
    record the count apart from the name)."""
    import re

    found = re.search(r"(\d+) torch thread", name)
    return int(found.group(1)) if found else 0


def _writer_notes(rate: dict[str, float]) -> list[str]:
    """Each store's writer ceiling, and what bounds it: the database (planning and commits)
    or the one indexing thread (hnswlib alone). The job overlaps indexing with the next
    chunk's commit, so the slower of the two sets its pace (on busy cores the two also
    compete, and the whole runs below either alone)."""
    index_alone = rate["hnswlib indexing alone (the job's one indexing thread)"]
    notes = []
    for store in ("SQLite", "PostgreSQL"):
        whole = rate.get(f"{store} writer: pipeline fed precomputed vectors (plan, commit, "
                         f"index)")
        if whole is None:
            continue
        planned = rate[f"{store} writer without indexing (plan, commit)"]
        commits = rate[f"{store} commits alone (2,048 rows per transaction)"]
        slower, faster = sorted((index_alone, planned))
        if faster < 1.15 * slower:
            bound = (f"the database and the single hnswlib indexing thread about equally "
                     f"(each alone {planned:,.0f} and {index_alone:,.0f} rows/s)")
        elif index_alone < planned:
            bound = "the single hnswlib indexing thread"
        else:
            bound = "the database (planning and commits)"
        notes.append(f"The {store} writer sustains {whole:,.0f} rows/s (without indexing "
                     f"{planned:,.0f}, commits alone {commits:,.0f}; hnswlib indexing alone "
                     f"{index_alone:,.0f}): bound by {bound}.")
    return notes


def _cpu_notes(ray_rows: list[dict], cores: int) -> list[str]:
    """The scaling explained by where the CPU went: each worker's share of a core and its
    rows per CPU second, per job."""
    notes = []
    for r in ray_rows:
        if "cpu" not in r:
            continue
        cpu, workers = r["cpu"], r["cpu"]["workers"]
        shares = sum(w["core_share"] for w in workers) + cpu["driver_core_share"]
        each = ", ".join(f"{w['core_share']:.2f}" for w in workers)
        speed = ", ".join(f"{w['rows_per_cpu_s'] or 0:,.0f}" for w in workers)
        notes.append(f"{r['name']}, steady part: the driver used "
                     f"{cpu['driver_core_share']:.2f} of a core, each worker {each} ({speed} "
                     f"rows per CPU second); {shares:.2f} of the {cores} cores in all.")
    by_count = {r["workers"]: r["cpu"] for r in ray_rows
                if "cpu" in r and r["store"] == "SQLite" and r["cpu"]["workers"]}
    if 1 in by_count and 2 in by_count:
        total = {n: sum(w["core_share"] for w in c["workers"]) for n, c in by_count.items()}
        speed = {n: sum(w["rows_per_cpu_s"] for w in c["workers"]) / len(c["workers"])
                 for n, c in by_count.items()}
        load = next(r["load_average"][0] for r in ray_rows if r["workers"] == 2)
        verdict = ("the workers did not get slower per CPU second, so a job's steady rate is "
                   "the CPU its workers get times that speed, and the cores bound the scaling"
                   if speed[2] >= 0.8 * speed[1] else
                   "the workers got slower per CPU second as well as getting less CPU")
        notes.append(f"Why 1 -> 2 workers adds less than a worker: the workers' CPU went from "
                     f"{total[1]:.2f} to {total[2]:.2f} of a core in all (not 2x), their rows "
                     f"per CPU second from {speed[1]:,.0f} to {speed[2]:,.0f}: {verdict}. On "
                     f"{cores} cores the workers share them with the driver and with whatever "
                     f"else runs (load average {load:.1f} here).")
    return notes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=ROWS_FULL)
    ap.add_argument("--workers", type=int, nargs="+", default=default_workers(),
                    help="CPU worker counts to measure (default: 1, 2, 4 … up to the cores)")
    ap.add_argument("--gpu-workers", type=int, default=0,
                    help="GPU workers for one more run (needs CUDA)")
    args = ap.parse_args()
    from benchmarks.data import quora_questions

    result = measure(quora_questions(args.rows), args.workers, args.gpu_workers)
    print(json.dumps({**result, **present(result)}, indent=1))


if __name__ == "__main__":
    main()

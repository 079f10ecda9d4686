"""Team projects: where the index of a project on a PostgreSQL server should live.

    python -m benchmarks --only team_index [--quick]

Two designs, on the same 100k-item project (`--quick`: 5k) on a private server on
127.0.0.1 (`devtools/postgres_server.py`; PostgreSQL 16 with pgvector from the `pgserver`
package when it is installed, else the machine's own PostgreSQL and the local cache only):

- **local cache** (what file projects do): the HNSW index is saved in the project's `blobs`
  table with its stamp; every analyst's Duplens streams it once on open
  (`engine.index.persist.load_index`), checks the stamp against the content change count, and
  searches in memory. Baseline: the same project as a `.duplens` file.
- **pgvector**: the vectors in a `vector(384)` column with pgvector's HNSW index (the
  product's M and ef_construction), each keystroke one `ORDER BY embedding <=> q LIMIT 10`
  query, at the product's query beam (`hnsw.ef_search`) and at pgvector's default (40).

Per design: keystroke p50/p95 over the last 1,000 distinct Quora questions (in no index),
each encoded by the bundled model as the window does (`load_encoder(None)` +
`prepare_fast_queries()`) then its top 10; the same with the hits' rows read from the
project as `Project.search` does; recall@10 against exact search of the same vectors; and
the time to open (from `Store.open` to the first answered search, the encoder already
loaded, as it is the same in every design). Vectors: 42,944 real question embeddings plus
noisy copies (benchmarks/corpus.py).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np
from sqlalchemy import select

from benchmarks import corpus, exact
from engine.store.schema import indexes

K = 10
DIM = 384
N_FULL, N_QUICK = 100_000, 5_000
QUERIES_QUICK = 300
OPEN_RUNS = 3
GOAL_P95_MS = 10.0
PGVECTOR_DEFAULT_EF = 40


def run(quick: bool) -> dict:
    from devtools.postgres_server import ANALYST_PASSWORD, NoServer, PostgresServer
    from engine.encoding.loading import load_encoder

    n = N_QUICK if quick else N_FULL
    queries, pool = corpus.query_and_pool()
    if quick:
        queries = queries[:QUERIES_QUICK]
    real = corpus.embed(pool)
    qvecs = corpus.embed(queries)
    base = corpus.with_noisy_copies(real, n)
    texts = _row_texts(pool, n)
    bin_dir, pgvector_why = _pgvector_binaries()
    settings = {"shared_buffers": "1GB", "maintenance_work_mem": "1GB",
                "max_parallel_maintenance_workers": "1"}
    try:
        server = PostgresServer(bin_dir, settings=settings).start()
    except NoServer as exc:
        return {"skipped": f"no PostgreSQL server can start here: {exc}"}
    encoder = load_encoder(None, device="cpu")
    runtime = encoder.prepare_fast_queries()
    for q in queries[:30]:       # warm-up, not timed
        encoder.encode([q])
    folder = Path(tempfile.mkdtemp(prefix="duplens-team-bench-"))
    file_path = folder / "team.duplens"
    opened = []
    try:
        url = server.url(server.create_database(), password=ANALYST_PASSWORD)
        _say(f"  {n:,} items: filling a file project and a server project…")
        file_fill = _fill(file_path, texts, base)
        server_fill = _fill(url, texts, base)
        ids = server_fill["text_ids"]
        assert np.array_equal(ids, file_fill["text_ids"])
        index, build_s = _index(base, ids)
        for fill in (file_fill, server_fill):
            fill["save_s"] = _save(fill["store"], fill["model"], index)
            fill["store"].close()
        truth = ids[exact.top_k(qvecs, base, K)[0]]
        result = {
            "items": n, "queries": len(queries), "k": K, "query_runtime": runtime,
            "query_ef": index.query_ef(),
            "hnsw_build_seconds": None if build_s is None else round(build_s, 1),
            "server": server.sql("SHOW server_version")[0][0],
            "fill_seconds": {"file": file_fill["fill_s"], "server": server_fill["fill_s"],
                             "index_save_file": file_fill["save_s"],
                             "index_save_server": server_fill["save_s"]},
            "data": f"queries: the last {len(queries):,} distinct Quora questions (in no "
                    f"index); items: {corpus.NOISE_NOTE}",
        }
        del index
        _say("  local cache: opening the project from the file and from the server…")
        designs = {}
        for name, location, fill in (("file", file_path, file_fill),
                                     ("server_cache", url, server_fill)):
            design, search = _local_design(location, fill["model"], encoder, queries[0])
            opened.append(design.pop("store"))
            design["recall_at_10"] = round(_recall(search.found(qvecs), truth), 4)
            designs[name] = (design, search)
        result["index_mb"] = round(designs["server_cache"][0]["index_bytes"] / 1e6, 1)
        if pgvector_why:
            result["pgvector"] = {"skipped": pgvector_why}
        else:
            _say("  pgvector: loading the vectors and building its HNSW index…")
            result["pgvector"] = _pgvector_setup(server, url, base, ids)
            for ef in (index_ef := result["query_ef"], PGVECTOR_DEFAULT_EF):
                design, search = _pgvector_design(url, encoder, queries[0], ef)
                opened.append(design.pop("store"))
                design["recall_at_10"] = round(_recall(search.found(qvecs), truth), 4)
                designs[f"pgvector_ef{ef}"] = (design, search)
            del index_ef
        _say(f"  timing {len(queries):,} keystrokes in each design, in turns…")
        load_before = os.getloadavg()
        timed = _time_keystrokes(encoder, queries, {k: v[1] for k, v in designs.items()})
        result["load_average"] = {"before_keystrokes": [round(x, 2) for x in load_before],
                                  "after": [round(x, 2) for x in os.getloadavg()]}
        result["designs"] = {name: {**design, **timed[name]}
                             for name, (design, _) in designs.items()}
    finally:
        for store in opened:
            store.close()
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)

    return result


# -- the project, filled the way an import and an encode fill it ------------------------------
def _row_texts(pool: list[str], n: int) -> list[str]:
    """A text per vector, each its own after normalisation (a few Quora questions differ
    only in case or spacing, and would share a text id): the real question for the real
    vectors, the question with "(copy i)" for its noisy copies."""
    from engine.text import norm_key

    seen: set[str] = set()
    texts = []
    for i in range(n):
        text = pool[i] if i < len(pool) else f"{pool[i % len(pool)]} (copy {i})"
        if norm_key(text) in seen:
            text = f"{text} (row {i})"
        seen.add(norm_key(text))
        texts.append(text)
    return texts


def _fill(location, texts: list[str], base: np.ndarray) -> dict:
    from engine.store import embeddings as embedding_store
    from engine.store import items as item_store
    from engine.store import sources as source_store
    from engine.store.database import Store
    from engine.text import norm_key

    t0 = time.perf_counter()
    store = Store.open(location, create=True)
    rows = [item_store.NewRow(i + 1, None, t, norm_key(t), {}) for i, t in enumerate(texts)]
    with store.write() as conn:
        source = source_store.add_source(conn, file_name="team.csv", file_path="/team.csv",
                                       sha256="0" * 64, mapping_key="0" * 64, format={},
                                       text_columns=["question"], columns=["question"])
        item_store.add_rows(conn, source, rows)
        keys = item_store.text_ids_for_keys(conn, [r.norm_key for r in rows])
    text_ids = np.array([keys[r.norm_key] for r in rows], dtype=np.int64)
    with store.write() as conn:
        model = embedding_store.get_or_add_model(conn, name="all-MiniLM-L6-v2",
                                              location="default", fingerprint="bench",
                                              dim=base.shape[1], max_seq_length=256)
    for start in range(0, len(base), 2048):   # one commit per chunk, as encoding does
        with store.write() as conn:
            embedding_store.add_embeddings(conn, model, text_ids[start:start + 2048],
                                        base[start:start + 2048], [False] * 2048)
    return {"store": store, "model": model, "text_ids": text_ids,
            "fill_s": round(time.perf_counter() - t0, 1)}


def _index(base: np.ndarray, ids: np.ndarray):
    """The product's HNSW index of the corpus, built once and cached (minutes on 2 cores)."""
    from engine.index.hnsw import HnswIndex, HnswParams

    params = HnswParams()
    digest = hashlib.sha256(base[:: max(1, len(base) // 1000)].tobytes() + ids.tobytes()
                            + repr(params).encode()).hexdigest()[:20]
    cached = corpus.CACHE / f"team-index-{len(base)}-{digest}.bin"
    if cached.exists():
        return HnswIndex.load(str(cached), base.shape[1], params, set()), None
    _say(f"  building the HNSW index of {len(base):,} items (cached afterwards)…")
    index = HnswIndex(base.shape[1], params, capacity=len(base))
    t0 = time.perf_counter()
    index.add(ids, base)
    build_s = time.perf_counter() - t0
    cached.parent.mkdir(parents=True, exist_ok=True)
    index.save(str(cached))
    return index, build_s


def _save(store, model: int, index) -> float:
    from engine.index.persist import save_index
    from engine.store import change_counters

    t0 = time.perf_counter()
    with store.write() as conn:
        save_index(conn, model, index,
                   change_count=change_counters.read(conn, change_counters.CONTENT))
    return round(time.perf_counter() - t0, 2)


# -- design 1: every analyst keeps the index in memory, loaded from the project --------------
class _Searcher:
    """One design's keystroke: `search(vector)` -> the top K text ids; `rows(ids)` reads
    their rows from the project as `Project.search` does (one read transaction)."""

    def __init__(self, search, store) -> None:
        self.search, self.store = search, store

    def rows(self, hits: list[int]) -> None:
        from engine.store import items as item_store

        with self.store.read() as conn:
            item_store.items_for_texts(conn, hits)

    def found(self, qvecs: np.ndarray) -> np.ndarray:
        return np.array([self.search(v) for v in qvecs])


def _local_design(location, model: int, encoder, first_query: str):
    """Open as a project opens (stream the saved index, check its stamp), `OPEN_RUNS`
    times; the Python heap's peak during one load; the searcher of the last open."""
    from engine.index.persist import current_change_count, load_index
    from engine.store.database import Store

    opens = []
    for _ in range(OPEN_RUNS):
        t0 = time.perf_counter()
        store = Store.open(location)
        with store.read() as conn:
            index, why = load_index(conn, model, DIM)
            stamped = current_change_count(conn, model, index)
        index.query(encoder.encode([first_query]), K)
        opens.append(time.perf_counter() - t0)
        assert why == "" and stamped is not None, why
        store.close()
    store = Store.open(location)
    tracemalloc.start()
    with store.read() as conn:
        index, _ = load_index(conn, model, DIM)
        size = conn.execute(select(indexes.c.size).where(indexes.c.model_id == model)
                            ).scalar()
    heap_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    design = {"store": store, "open_s": [round(s, 2) for s in opens],
              "open_median_s": round(statistics.median(opens), 2), "index_bytes": int(size),
              "load_python_heap_peak_mb": round(heap_peak / 1e6, 1)}
    return design, _Searcher(lambda v: index.query(v, K)[0][0].tolist(), store)


# -- design 2: pgvector's HNSW index inside the server ----------------------------------------
def _pgvector_binaries() -> tuple[Path | None, str]:
    """(PostgreSQL bin folder with pgvector, "") or (None, why pgvector is not measured)."""
    try:
        import pgserver  # noqa: F401 - bundles PostgreSQL 16 with pgvector
        import pgvector.psycopg  # noqa: F401 - psycopg adapters for the vector type
    except ImportError as exc:
        return None, f"pgvector is not available ({exc.name} is not installed: " \
                     f'pip install -e ".[bench]")'
    from pgserver._commands import POSTGRES_BIN_PATH

    return Path(POSTGRES_BIN_PATH), ""


def _connect(url: str):
    """A psycopg connection of the analyst, with pgvector's types registered."""
    import psycopg
    from pgvector.psycopg import register_vector
    from sqlalchemy.engine import make_url

    u = make_url(url)
    conn = psycopg.connect(host=u.host, port=u.port, user=u.username, password=u.password,
                           dbname=u.database, autocommit=True)
    register_vector(conn)
    return conn


def _pgvector_setup(server, url: str, base: np.ndarray, ids: np.ndarray) -> dict:
    """The vectors in a vector(384) column (binary COPY) and pgvector's HNSW index on them,
    with the product's M and ef_construction."""
    from sqlalchemy.engine import make_url

    from engine.index.hnsw import HnswParams

    server.sql("CREATE EXTENSION vector", make_url(url).database)
    params = HnswParams()
    with _connect(url) as conn:
        conn.execute(f"CREATE TABLE vectors (text_id integer PRIMARY KEY, "
                     f"embedding vector({base.shape[1]}) NOT NULL)")
        t0 = time.perf_counter()
        with conn.cursor() as cur, cur.copy(
                "COPY vectors (text_id, embedding) FROM STDIN WITH (FORMAT BINARY)") as copy:
            copy.set_types(["int4", "vector"])
            for text_id, vector in zip(ids.tolist(), base, strict=True):
                copy.write_row((text_id, vector))
        load_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        conn.execute(f"CREATE INDEX vectors_hnsw ON vectors USING hnsw "
                     f"(embedding vector_cosine_ops) WITH (m = {params.M}, "
                     f"ef_construction = {params.ef_construction})")
        build_s = time.perf_counter() - t0
        conn.execute("VACUUM ANALYZE vectors")
        index_mb = conn.execute("SELECT pg_relation_size('vectors_hnsw')").fetchone()[0] / 1e6
    return {"load_seconds": round(load_s, 1), "hnsw_build_seconds": round(build_s, 1),
            "index_mb": round(index_mb, 1), "M": params.M,
            "ef_construction": params.ef_construction}


def _pgvector_design(url: str, encoder, first_query: str, ef: int):
    """Open (`Store.open`, a connection, the first query) `OPEN_RUNS` times; the searcher
    on the last connection, at `hnsw.ef_search = ef`."""
    from engine.store.database import Store

    sql = "SELECT text_id FROM vectors ORDER BY embedding <=> %s LIMIT %s"
    opens = []
    for _ in range(OPEN_RUNS):
        t0 = time.perf_counter()
        store = Store.open(url)
        with _connect(url) as conn:
            conn.execute(f"SET hnsw.ef_search = {ef}")
            conn.execute(sql, (encoder.encode([first_query])[0], K)).fetchall()
        opens.append(time.perf_counter() - t0)
        store.close()
    store = Store.open(url)
    conn = _connect(url)
    conn.execute(f"SET hnsw.ef_search = {ef}")
    design = {"store": store, "ef_search": ef, "open_s": [round(s, 2) for s in opens],
              "open_median_s": round(statistics.median(opens), 2)}
    return design, _Searcher(lambda v: [r[0] for r in conn.execute(sql, (v.ravel(), K))],
                             store)


def _time_keystrokes(encoder, queries: list[str], searchers: dict) -> dict:
    """Encode + top K (+ rows) per query and design; the designs take turns in blocks of
    100 queries (order reversed every other block), so a change in the machine's load
    falls on all of them alike."""
    parts = {name: {"encode": [], "search": [], "rows": []} for name in searchers}
    for start in range(0, len(queries), 100):
        names = list(searchers) if (start // 100) % 2 == 0 else list(searchers)[::-1]
        for name in names:
            searcher, into = searchers[name], parts[name]
            for q in queries[start:start + 100]:
                t0 = time.perf_counter()
                vector = encoder.encode([q])
                t1 = time.perf_counter()
                hits = searcher.search(vector)
                t2 = time.perf_counter()
                searcher.rows(hits)
                t3 = time.perf_counter()
                into["encode"].append(t1 - t0)
                into["search"].append(t2 - t1)
                into["rows"].append(t3 - t2)
    out = {}
    for name, p in parts.items():
        enc, srch, rows = (np.asarray(p[k]) * 1000 for k in ("encode", "search", "rows"))
        out[name] = {"keystroke_ms": _pct(enc + srch), "encode_ms": _pct(enc),
                     "search_ms": _pct(srch), "keystroke_with_rows_ms": _pct(enc + srch + rows)}
    return out


# -- figures ----------------------------------------------------------------------------------
def _pct(ms: list[float]) -> dict:
    a = np.asarray(ms)
    p50, p95, p99 = np.percentile(a, [50, 95, 99])
    return {"p50": round(float(p50), 2), "p95": round(float(p95), 2),
            "p99": round(float(p99), 2)}


def _recall(found: np.ndarray, truth: np.ndarray) -> float:
    hits = [len(set(a.tolist()) & set(b.tolist())) for a, b in zip(found, truth, strict=True)]
    return float(np.sum(hits) / truth.size)


LABELS = {"file": "file project (SQLite): HNSW in memory",
          "server_cache": "server project: local HNSW cache of the saved index"}


def present(r: dict, results: dict | None = None) -> dict:
    n = f"{r['items'] // 1000}k"
    d = r["designs"]
    file, cache = d["file"], d["server_cache"]
    pgv = r.get("pgvector", {})
    headline = [{
        "figure": f"team project keystroke p95 (encode + top-10), {n} items, local cache of "
                  "the server's index",
        "duplens": f"{cache['keystroke_ms']['p95']:.1f} ms",
        "baseline": f"{file['keystroke_ms']['p95']:.1f} ms",
        "baseline_is": "a file project (SQLite) of the same items, same run",
        "ratio": f"{cache['keystroke_ms']['p95'] / file['keystroke_ms']['p95']:.2f}× the "
                 "file's",
        "goal": f"≤ {GOAL_P95_MS:g} ms", "met": cache["keystroke_ms"]["p95"] <= GOAL_P95_MS,
    }, {
        "figure": f"team project open to first answer, {n} items ({r['index_mb']:.0f} MB "
                  "index streamed from the server)",
        "duplens": f"{cache['open_median_s']:.2f} s",
        "baseline": f"{file['open_median_s']:.2f} s",
        "baseline_is": "a file project (SQLite) of the same items, same run",
        "ratio": f"{cache['open_median_s'] / file['open_median_s']:.2f}× the file's",
        "goal": "–", "met": None,
    }]
    rows = []
    for name, m in d.items():
        label = LABELS.get(name, f"server project: pgvector HNSW, ef_search {m.get('ef_search')}")
        rows.append([label, _trio(m["keystroke_ms"]), f"{m['search_ms']['p50']:.2f} / "
                     f"{m['search_ms']['p95']:.2f}", _trio(m["keystroke_with_rows_ms"]),
                     f"{m['recall_at_10']:.4f}", f"{m['open_median_s']:.2f}"])
    notes = [f"Server: PostgreSQL {r['server']} on 127.0.0.1. Query runtime: "
             f"{r['query_runtime']}; the product's HNSW query ef at this size: "
             f"{r['query_ef']}. Designs timed in turns, 100 queries at a time"
             + ("; load average (1, 5, 15 min) " + ", ".join(
                 f"{when.replace('_', ' ')} {tuple(v)}" for when, v in r["load_average"].items())
                + ": on 2 cores, other work slows every design alike"
                if "load_average" in r else "") + ".",
             f"Loading the {r['index_mb']:.0f} MB index from the server peaked at "
             f"{cache['load_python_heap_peak_mb']} MB of Python heap (tracemalloc): it "
             "streams through a temporary file, never whole in memory."]
    if "skipped" in pgv:
        notes.append(f"pgvector not measured: {pgv['skipped']}")
    else:
        best = d[f"pgvector_ef{r['query_ef']}"]
        headline.append({
            "figure": f"team project keystroke p95 (encode + top-10), {n} items, pgvector "
                      f"(ef_search {best['ef_search']})",
            "duplens": f"{best['keystroke_ms']['p95']:.1f} ms",
            "baseline": f"{cache['keystroke_ms']['p95']:.1f} ms",
            "baseline_is": "Duplens' local cache of the server's index (the design kept), "
                           "same run; pgvector in PostgreSQL is the alternative measured",
            "ratio": f"{best['keystroke_ms']['p95'] / cache['keystroke_ms']['p95']:.2f}× "
                     "the local cache's",
            "goal": f"≤ {GOAL_P95_MS:g} ms", "met": best["keystroke_ms"]["p95"] <= GOAL_P95_MS,
        })
        notes.append(f"pgvector (M {pgv['M']}, ef_construction {pgv['ef_construction']}, as "
                     f"the product's HNSW): vectors loaded in {pgv['load_seconds']} s "
                     f"(binary COPY), index built in {pgv['hnsw_build_seconds']} s, "
                     f"{pgv['index_mb']} MB"
                     + (f"; hnswlib built the product's in {r['hnsw_build_seconds']} s."
                        if r["hnsw_build_seconds"] is not None else "."))
    return {
        "headline": headline,
        "tables": [{
            "title": f"{n} items, {r['queries']:,} queries: ms p50 / p95 / p99; open = "
                     "Store.open to the first answered search, median of "
                     f"{OPEN_RUNS} (encoder already loaded)",
            "columns": ["design", "keystroke (encode + top 10)", "top 10 alone p50 / p95",
                        "+ rows read from the project", "recall@10", "open s"],
            "rows": rows}],
        "notes": notes,
    }


def _trio(p: dict) -> str:
    return f"{p['p50']:.1f} / {p['p95']:.1f} / {p['p99']:.1f}"


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)

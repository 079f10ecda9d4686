"""Team projects: where the index of a project on a PostgreSQL server should live.

    python -m benchmarks --only team_index [--quick]

Two designs, on the same 100k-item project (`--quick`: 20k) on a private server on
127.0.0.1 (`tests/postgres_server.py`; PostgreSQL 16 with pgvector from the `pgserver`
package when it is installed, else the machine's own PostgreSQL and the local cache only):

- **local cache** (what file projects do): the HNSW index is saved in the project's `blobs`
  table with its stamp; every analyst's Duplens streams it once on open
  (`engine.index.persist.load_index`), checks the stamp against `content_version`, and
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
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

from benchmarks import corpus, exact

K = 10
N_FULL, N_QUICK = 100_000, 20_000
QUERIES_QUICK = 300
OPEN_RUNS = 3
GOAL_P95_MS = 10.0
PGVECTOR_DEFAULT_EF = 40


def run(quick: bool) -> dict:
    from engine.encoding.loading import load_encoder
    from tests.postgres_server import ANALYST_PASSWORD, NoServer, PostgresServer

    n = N_QUICK if quick else N_FULL
    queries, pool = corpus.query_and_pool()
    if quick:
        queries = queries[:QUERIES_QUICK]
    real = corpus.embed(pool)
    qvecs = corpus.embed(queries)
    base = corpus.with_noisy_copies(real, n)
    texts = [pool[i] if i < len(pool) else f"{pool[i % len(pool)]} (copy {i})"
             for i in range(n)]
    bin_dir, pgvector_why = _pgvector_binaries()
    settings = {"shared_buffers": "1GB", "maintenance_work_mem": "1GB",
                "max_parallel_maintenance_workers": "1", "work_mem": "64MB"}
    try:
        server = PostgresServer(bin_dir, settings=settings).start()
    except NoServer as exc:
        return {"skipped": f"no PostgreSQL server can start here: {exc}"}
    encoder = load_encoder(None, device="cpu")
    runtime = encoder.prepare_fast_queries()
    for q in queries[:30]:       # warm-up, not timed
        encoder.encode([q])
    folder = Path(tempfile.mkdtemp(prefix="duplens-team-bench-"))
    try:
        url = server.url(server.create_database(), password=ANALYST_PASSWORD)
        _say(f"  {n:,} items: filling a file project and a server project…")
        file_fill = _fill(folder / "team.duplens", texts, base)
        server_fill = _fill(url, texts, base)
        ids = server_fill["text_ids"]
        assert np.array_equal(ids, file_fill["text_ids"])
        index, build_s = _index(base, ids)
        for fill in (file_fill, server_fill):
            fill["save_s"] = _save(fill["store"], fill["model"], index)
        truth_pos, _ = exact.top_k(qvecs, base, K)
        truth = ids[truth_pos]
        found, _ = index.query(qvecs, K)
        recall_hnsw = _recall(found, truth)
        _say("  timing keystrokes and opens (local cache)…")
        local = {
            "file": _local_design(folder / "team.duplens", file_fill, encoder, queries),
            "server": _local_design(url, server_fill, encoder, queries),
        }
        result = {
            "items": n, "queries": len(queries), "k": K, "query_runtime": runtime,
            "query_ef": index.query_ef(), "hnsw_build_seconds": round(build_s, 1),
            "index_mb": round(server_fill["index_bytes"] / 1e6, 1),
            "recall_at_10_hnsw": round(recall_hnsw, 4),
            "server": server.sql("SHOW server_version")[0][0],
            "local_cache": local,
            "fill_seconds": {"file": file_fill["fill_s"], "server": server_fill["fill_s"],
                             "index_save_file": file_fill["save_s"],
                             "index_save_server": server_fill["save_s"]},
            "data": f"queries: the last {len(queries):,} distinct Quora questions (in no "
                    f"index); items: {corpus.NOISE_NOTE}",
        }
        for fill in (file_fill, server_fill):
            fill["store"].close()
        if pgvector_why:
            result["pgvector"] = {"skipped": pgvector_why}
        else:
            _say("  pgvector: loading vectors and building its HNSW index…")
            result["pgvector"] = _pgvector_design(server, url, base, ids, qvecs, truth,
                                                  encoder, queries, index.query_ef())
    finally:
        server.stop()
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
    result.update(_presentation(result))
    return result


# -- the project, filled the way an import and an encode fill it ------------------------------
def _fill(location, texts: list[str], base: np.ndarray) -> dict:
    from engine.store import items as item_store
    from engine.store import vectors as vector_store
    from engine.store.database import Store
    from engine.text import norm_key

    t0 = time.perf_counter()
    store = Store.open(location, create=True)
    rows = [item_store.NewRow(i + 1, None, t, norm_key(t), {}) for i, t in enumerate(texts)]
    with store.write() as conn:
        source = item_store.add_source(conn, file_name="team.csv", file_path="/team.csv",
                                       sha256="0" * 64, mapping_key="0" * 64, format={},
                                       text_columns=["question"], columns=["question"])
        item_store.add_rows(conn, source, rows)
        keys = item_store.text_ids_for_keys(conn, [r.norm_key for r in rows])
    text_ids = np.array([keys[r.norm_key] for r in rows], dtype=np.int64)
    with store.write() as conn:
        model = vector_store.get_or_add_model(conn, name="all-MiniLM-L6-v2",
                                              location="default", fingerprint="bench",
                                              dim=base.shape[1], max_seq_length=256)
    for start in range(0, len(base), 2048):   # one commit per chunk, as encoding does
        with store.write() as conn:
            vector_store.add_embeddings(conn, model, text_ids[start:start + 2048],
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
        return HnswIndex.load(str(cached), base.shape[1], params, set()), float("nan")
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
    from engine.store import vectors as vector_store

    t0 = time.perf_counter()
    with store.write() as conn:
        save_index(conn, model, index, version=vector_store.content_version(conn))
    return round(time.perf_counter() - t0, 2)


# -- design 1: every analyst keeps the index in memory, loaded from the project --------------
def _local_design(location, fill: dict, encoder, queries: list[str]) -> dict:
    from engine.index.persist import current_version, load_index
    from engine.store import items as item_store
    from engine.store.database import Store

    model, dim = fill["model"], 384
    opens = []
    for _ in range(OPEN_RUNS):
        t0 = time.perf_counter()
        store = Store.open(location)
        with store.read() as conn:
            index, why = load_index(conn, model, dim)
            stamped = current_version(conn, model, index)
        index.query(encoder.encode([queries[0]]), K)
        opens.append(time.perf_counter() - t0)
        assert why == "" and stamped is not None, why
        store.close()
    fill["index_bytes"] = _index_size(location, model)
    tracemalloc.start()
    store = Store.open(location)
    with store.read() as conn:
        index, _ = load_index(conn, model, dim)
    heap_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    search_ms, rows_ms = [], []
    for q in queries:
        t0 = time.perf_counter()
        ids, _ = index.query(encoder.encode([q]), K)
        t1 = time.perf_counter()
        with store.read() as conn:      # as Project.search reads the hits' rows
            item_store.items_for_texts(conn, ids[0].tolist())
        t2 = time.perf_counter()
        search_ms.append((t1 - t0) * 1000)
        rows_ms.append((t2 - t0) * 1000)
    store.close()
    return {"open_s": [round(s, 2) for s in opens],
            "open_median_s": round(statistics.median(opens), 2),
            "load_python_heap_peak_mb": round(heap_peak / 1e6, 1),
            "keystroke_ms": _pct(search_ms), "keystroke_with_rows_ms": _pct(rows_ms)}


def _index_size(location, model: int) -> int:
    from sqlalchemy import select

    from engine.store.database import Store
    from engine.store.schema import indexes

    store = Store.open(location, read_only=True)
    with store.read() as conn:
        size = conn.execute(select(indexes.c.size).where(indexes.c.model_id == model)).scalar()
    store.close()
    return int(size)


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


def _pgvector_design(server, url: str, base: np.ndarray, ids: np.ndarray,
                     qvecs: np.ndarray, truth: np.ndarray, encoder, queries: list[str],
                     product_ef: int) -> dict:
    import psycopg
    from pgvector.psycopg import register_vector
    from sqlalchemy.engine import make_url

    from engine.index.hnsw import HnswParams
    from engine.store import items as item_store
    from engine.store.database import Store

    name = make_url(url).database
    server.sql("CREATE EXTENSION vector", name)
    params = HnswParams()
    dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(dsn, autocommit=True) as conn:
        register_vector(conn)
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
        conn.execute(f"CREATE INDEX ON vectors USING hnsw (embedding vector_cosine_ops) "
                     f"WITH (m = {params.M}, ef_construction = {params.ef_construction})")
        build_s = time.perf_counter() - t0
        conn.execute("VACUUM ANALYZE vectors")
        index_mb = conn.execute("SELECT pg_relation_size(indexrelid) FROM pg_index "
                                "WHERE indrelid = 'vectors'::regclass AND NOT indisprimary"
                                ).fetchone()[0] / 1e6
    sql = "SELECT text_id FROM vectors ORDER BY embedding <=> %s LIMIT %s"
    out = {"load_seconds": round(load_s, 1), "hnsw_build_seconds": round(build_s, 1),
           "index_mb": round(index_mb, 1), "M": params.M,
           "ef_construction": params.ef_construction, "by_ef": []}
    for ef in (product_ef, PGVECTOR_DEFAULT_EF):
        opens = []
        for _ in range(OPEN_RUNS):
            t0 = time.perf_counter()
            store = Store.open(url)
            with psycopg.connect(dsn, autocommit=True) as conn:
                register_vector(conn)
                conn.execute(f"SET hnsw.ef_search = {ef}")
                conn.execute(sql, (encoder.encode([queries[0]])[0], K)).fetchall()
                opens.append(time.perf_counter() - t0)
            store.close()
        store = Store.open(url)
        with psycopg.connect(dsn, autocommit=True) as conn:
            register_vector(conn)
            conn.execute(f"SET hnsw.ef_search = {ef}")
            found = np.array([[r[0] for r in conn.execute(sql, (v, K)).fetchall()]
                              for v in qvecs])
            search_ms, rows_ms = [], []
            for q in queries:
                t0 = time.perf_counter()
                hits = [r[0] for r in conn.execute(sql, (encoder.encode([q])[0], K))]
                t1 = time.perf_counter()
                with store.read() as read:
                    item_store.items_for_texts(read, hits)
                t2 = time.perf_counter()
                search_ms.append((t1 - t0) * 1000)
                rows_ms.append((t2 - t0) * 1000)
        store.close()
        out["by_ef"].append({
            "ef_search": ef, "recall_at_10": round(_recall(found, truth), 4),
            "open_s": [round(s, 2) for s in opens],
            "open_median_s": round(statistics.median(opens), 2),
            "keystroke_ms": _pct(search_ms), "keystroke_with_rows_ms": _pct(rows_ms)})
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


def _presentation(r: dict) -> dict:
    n = f"{r['items'] // 1000}k"
    file, server = r["local_cache"]["file"], r["local_cache"]["server"]
    headline = [{
        "figure": f"team project keystroke p95 (encode + top-10), {n} items, local cache of "
                  "the server's index",
        "duplens": f"{server['keystroke_ms']['p95']:.1f} ms",
        "baseline": f"{file['keystroke_ms']['p95']:.1f} ms (file project)",
        "ratio": f"{server['keystroke_ms']['p95'] / file['keystroke_ms']['p95']:.2f}× the file's",
        "goal": f"≤ {GOAL_P95_MS:g} ms", "met": server["keystroke_ms"]["p95"] <= GOAL_P95_MS,
    }, {
        "figure": f"team project open to first answer, {n} items ({r['index_mb']:.0f} MB "
                  "index streamed from the server)",
        "duplens": f"{server['open_median_s']:.2f} s",
        "baseline": f"{file['open_median_s']:.2f} s (file project)",
        "ratio": f"{server['open_median_s'] / file['open_median_s']:.2f}× the file's",
        "goal": "–", "met": None,
    }]
    rows = [
        ["file project (SQLite), HNSW in memory", _trio(file["keystroke_ms"]),
         _trio(file["keystroke_with_rows_ms"]), f"{r['recall_at_10_hnsw']:.4f}",
         f"{file['open_median_s']:.2f}"],
        ["server project, local HNSW cache", _trio(server["keystroke_ms"]),
         _trio(server["keystroke_with_rows_ms"]), f"{r['recall_at_10_hnsw']:.4f}",
         f"{server['open_median_s']:.2f}"],
    ]
    pgv = r.get("pgvector", {})
    notes = [f"Server: PostgreSQL {r['server']} on 127.0.0.1. Query runtime: "
             f"{r['query_runtime']}. Product HNSW: query ef {r['query_ef']}.",
             f"Loading the {r['index_mb']:.0f} MB index from the server peaked at "
             f"{server['load_python_heap_peak_mb']} MB of Python heap (tracemalloc): it "
             "streams through a temporary file, never whole in memory."]
    if "skipped" in pgv:
        notes.append(f"pgvector not measured: {pgv['skipped']}")
    else:
        for point in pgv["by_ef"]:
            rows.append([f"pgvector HNSW in the server, ef_search {point['ef_search']}",
                         _trio(point["keystroke_ms"]), _trio(point["keystroke_with_rows_ms"]),
                         f"{point['recall_at_10']:.4f}", f"{point['open_median_s']:.2f}"])
        best = pgv["by_ef"][0]
        headline.append({
            "figure": f"team project keystroke p95 (encode + top-10), {n} items, pgvector "
                      f"(ef_search {best['ef_search']})",
            "duplens": f"{best['keystroke_ms']['p95']:.1f} ms",
            "baseline": f"{server['keystroke_ms']['p95']:.1f} ms (local cache)",
            "ratio": f"{best['keystroke_ms']['p95'] / server['keystroke_ms']['p95']:.2f}× "
                     "the local cache's",
            "goal": f"≤ {GOAL_P95_MS:g} ms", "met": best["keystroke_ms"]["p95"] <= GOAL_P95_MS,
        })
        notes.append(f"pgvector {pgv['M']}/{pgv['ef_construction']} (M/ef_construction): "
                     f"vectors loaded in {pgv['load_seconds']} s (binary COPY), index built "
                     f"in {pgv['hnsw_build_seconds']} s, {pgv['index_mb']} MB.")
    return {
        "headline": headline,
        "tables": [{
            "title": f"{n} items, {r['queries']:,} queries: ms p50 / p95 / p99; open = "
                     "Store.open to first answered search, median of "
                     f"{OPEN_RUNS} (encoder already loaded)",
            "columns": ["design", "keystroke (encode + top 10)", "+ rows read from the project",
                        "recall@10", "open s"],
            "rows": rows}],
        "notes": notes,
    }


def _trio(p: dict) -> str:
    return f"{p['p50']:.1f} / {p['p95']:.1f} / {p['p99']:.1f}"


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)

"""Live query latency: what a keystroke costs, at 10k, 100k and 1M items.

    python -m benchmarks --only query_latency [--quick]

For each size, a project of that many rows (the 42,944 real Quora questions that are not
queries, then copies of them with a row suffix; real embeddings, then noisy copies; built
through the importer and cached by `benchmarks.scale_1m.cached_project`, its index built by
the product) is opened and 1,000 real questions that are in no row are searched, timed in
blocks of 100 per path, in one process:

- the window's call: `Project.search(query, 10)` end to end (the query encoded with the
  runtime the window prepares, `prepare_fast_queries`: onnxruntime on a CPU), the HNSW top
  10, and the row lookup that turns hits into rows; this is the keystroke figure;
- the same search with torch queries (`keystroke_search.search`: what a user gets when
  onnxruntime is missing or fails its check), row lookup included;
- encode + HNSW alone (`SentenceEncoder.encode([q])` and `HnswIndex.query`), to show what
  the row lookup adds;
- the baseline: plain `SentenceTransformer.encode(query)` on a model sentence-transformers
  loaded itself, then exact search (a NumPy matrix product over every vector and a partial
  sort) with NumPy's BLAS on the threads it has by default (every core).

Each block is followed by a short pause (not timed), so one runtime's idle threads (torch's
OpenMP pool, OpenBLAS, ONNX Runtime spin for a while after a call) have settled before the
next path's block. Recall@10 compares the HNSW top 10 with exact search of the same query
vectors. The knob the product exposes, `ef` at query time, is swept on each index (search
only) to show the latency/recall trade-off. `--quick`: 5k only, 100 queries.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from benchmarks import corpus

K = 10
SIZES_QUICK = (5_000,)
SIZES_FULL = (10_000, 100_000, 1_000_000)
EF_SWEEP = (16, 32, 64, 128, 256, 512)
GOAL_P95_MS = 10.0
GOAL_RECALL = 0.99
QUICK_QUERIES = 100
BLOCK = 100          # queries per path in a row
PAUSE_S = 0.3        # after each block, untimed: idle runtime threads settle


def run(quick: bool) -> dict:
    from sentence_transformers import SentenceTransformer
    from threadpoolctl import threadpool_info

    from benchmarks import scale_1m
    from engine.encoding.encoder import SentenceEncoder
    from engine.encoding.model_spec import default_model_path
    from engine.index.hnsw import HnswParams
    from engine.keystroke_search import search as keystroke_search
    from engine.project import Project

    queries, pool = corpus.query_and_pool()
    queries = queries[-QUICK_QUERIES:] if quick else queries
    loaded = corpus.encoder()
    plain = SentenceTransformer(str(default_model_path()), device="cpu")
    query_vectors = corpus.embed(queries)
    params = HnswParams()
    sizes = []
    runtime = "torch"
    for n in (SIZES_QUICK if quick else SIZES_FULL):
        path, built = scale_1m.cached_project(n, without_queries=True)
        # As the window has it: single queries through onnxruntime where it can
        # (`prepare_fast_queries`); and torch alone, as without it.
        duplens = SentenceEncoder(loaded.model, loaded.spec, loaded.device)
        runtime = duplens.prepare_fast_queries()
        torch_only = SentenceEncoder(loaded.model, loaded.spec, loaded.device)
        with Project.open(path) as project:
            project.model.attach(duplens, is_default=True)
            _say(f"  {n:,} items: loading the index and the vectors…")
            index = project.vectors.index()
            ids, base = _stored_vectors(project, duplens.dim)
            for q in pool[:30]:  # warm-up on texts that are not queries (not timed)
                project.search(q, K)
                keystroke_search(project.store, torch_only, index, q, K)
                plain.encode(q)
            variants = _variants(project, index, duplens, torch_only, plain, base)
            _say(f"  {n:,} items: timing {len(queries):,} queries per path…")
            measured = _time_queries(queries, variants)
            truth = ids[_exact_top(query_vectors, base)]
            found, _ = index.query(query_vectors, K)
            sweep = [_ef_point(index, params, ef, query_vectors, truth) for ef in EF_SWEEP]
            sizes.append({
                "items": n, "real_items": min(n, len(scale_1m.base_rows(without_queries=True))),
                "project": path.name, "index_build_seconds":
                    (built or {}).get("index_build_and_save_s"),
                "query_ef": index.query_ef(), **measured,
                "recall_at_10": round(_recall(found, truth), 4), "ef_sweep": sweep,
            })
            del index, base, ids
    blas = [i for i in threadpool_info() if i.get("user_api") == "blas"]
    return {
        "queries": len(queries), "k": K, "params": _params(params),
        "query_runtime": runtime, "paths": "project_search",
        "baseline_blas_threads": max((i["num_threads"] for i in blas), default=None),
        "block": BLOCK, "pause_s": PAUSE_S,
        "data": f"queries: the last {len(queries):,} distinct Quora questions (in no row); "
                f"rows: the other real questions, then copies with a row suffix; vectors: "
                f"{corpus.NOISE_NOTE}",
        "sizes": sizes,
    }


def _variants(project, index, duplens, torch_only, plain, base: np.ndarray) -> dict:
    """name -> one keystroke's call on that path (see the module doc)."""
    from engine.keystroke_search import search as keystroke_search

    return {
        "project_search": lambda q: project.search(q, K),
        "project_search_torch": lambda q: keystroke_search(project.store, torch_only, index,
                                                           q, K),
        "encode_hnsw": lambda q: index.query(duplens.encode([q]), K),
        "baseline": lambda q: _exact(plain.encode(q, normalize_embeddings=True), base),
    }


def _params(params) -> dict:
    import dataclasses

    return dataclasses.asdict(params)


def _stored_vectors(project, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """(text ids, vectors) of every stored embedding of the active model: what exact search
    goes over, as a plain sentence-transformers user would hold them in memory."""
    from engine.store.embeddings import iter_embeddings

    ids, parts = [], []
    with project.store.read() as conn:
        for got_ids, vecs in iter_embeddings(conn, project.vectors.model_id(), dim):
            ids.append(np.asarray(got_ids, dtype=np.int64))
            parts.append(np.asarray(vecs, dtype=np.float32))
    return np.concatenate(ids), np.concatenate(parts)


def _exact(vector: np.ndarray, base: np.ndarray) -> np.ndarray:
    scores = base @ vector
    top = np.argpartition(-scores, K)[:K]
    return top[np.argsort(-scores[top])]


def _exact_top(query_vectors: np.ndarray, base: np.ndarray, block: int = 100) -> np.ndarray:
    """Positions (in `base`) of each query's exact top K."""
    out = []
    for start in range(0, len(query_vectors), block):
        scores = query_vectors[start:start + block] @ base.T
        top = np.argpartition(-scores, K, axis=1)[:, :K]
        order = np.argsort(-np.take_along_axis(scores, top, axis=1), axis=1)
        out.append(np.take_along_axis(top, order, axis=1))
    return np.concatenate(out)


def _time_queries(queries: list[str], variants: dict) -> dict:
    """Per-query milliseconds of each path (the whole call), in blocks of BLOCK queries per
    path, the order of the paths alternating, with an untimed pause after each block."""
    times: dict[str, list[float]] = {name: [] for name in variants}
    for start in range(0, len(queries), BLOCK):
        block = queries[start:start + BLOCK]
        names = list(variants) if (start // BLOCK) % 2 == 0 else list(variants)[::-1]
        for name in names:
            call = variants[name]
            for q in block:
                t0 = time.perf_counter()
                call(q)
                times[name].append(time.perf_counter() - t0)
            time.sleep(PAUSE_S)
    return {f"{name}_ms": {"total": _pct(np.asarray(t) * 1000)} for name, t in times.items()}


def _ef_point(index, params, ef: int, query_vectors: np.ndarray, truth: np.ndarray) -> dict:
    """Search-only latency and recall@10 with `ef` at query time (the index is unchanged)."""
    found = []
    times = []
    for vector in query_vectors:
        t0 = time.perf_counter()
        ids, _ = index.query(vector, K, ef=ef)
        times.append(time.perf_counter() - t0)
        found.append(ids[0])
    pct = _pct(np.asarray(times) * 1000)
    return {"ef": ef, "search_p50_ms": pct["p50"], "search_p95_ms": pct["p95"],
            "recall_at_10": round(_recall(np.asarray(found), truth), 4)}


def _pct(ms: np.ndarray) -> dict:
    p50, p95, p99 = np.percentile(ms, [50, 95, 99])
    return {"p50": round(float(p50), 3), "p95": round(float(p95), 3),
            "p99": round(float(p99), 3), "mean": round(float(ms.mean()), 3)}


def _recall(found: np.ndarray, truth: np.ndarray) -> float:
    hits = [len(set(a.tolist()) & set(b.tolist())) for a, b in zip(found, truth, strict=True)]
    return float(np.sum(hits) / truth.size)


def present(result: dict, results: dict | None = None) -> dict:
    """Headline rows, tables and plots for the report (benchmarks/report.py). Runs before
    the keystroke was timed through `Project.search` (no "project_search_ms") timed encode +
    HNSW alone, with the baseline's BLAS on one thread; their rows say so."""
    runtime = result.get("query_runtime", "torch")
    whole = "project_search_ms" in result["sizes"][0]
    plain_is = ("plain sentence-transformers encode + exact NumPy search "
                f"({_blas(result)}), same run")
    what = ("`Project.search` as the window calls it: encode + top-10 + row lookup" if whole
            else "encode + top-10, no row lookup")
    headline, latency_rows, sweep_rows, build_rows = [], [], [], []
    for s in result["sizes"]:
        n, b = s["items"], s["baseline_ms"]
        label = _size_label(n)
        at_goal_size = n >= 1_000_000
        paths = ([(f"Duplens: `Project.search` ({runtime} query + HNSW + rows)",
                   s["project_search_ms"], f"query runtime {runtime}"),
                  ("Duplens: search with torch queries (HNSW + rows)",
                   s["project_search_torch_ms"],
                   "torch only (when onnxruntime is missing or fails its check)"),
                  (f"Duplens: encode + HNSW alone ({runtime} query, no rows)",
                   s["encode_hnsw_ms"], None)] if whole else
                 [(f"Duplens ({runtime} query + HNSW)", s["duplens_ms"],
                   f"query runtime {runtime}"),
                  *([("Duplens (torch query + HNSW)", s["duplens_torch_ms"],
                      "torch only (when onnxruntime is missing or fails its check)")]
                    if "duplens_torch_ms" in s and runtime != "torch" else [])])
        for _name, m, figure in paths:
            if figure is None:
                continue
            ratio = b["total"]["p95"] / m["total"]["p95"]
            headline.append({
                "figure": f"live query p95 ({what}), {label} items, {figure}",
                "duplens": f"{m['total']['p95']:.1f} ms",
                "baseline": f"{b['total']['p95']:.1f} ms", "baseline_is": plain_is,
                "ratio": (f"{ratio:.2f}× faster" if ratio >= 1 else f"{1 / ratio:.2f}× slower"),
                "goal": f"≤ {GOAL_P95_MS:g} ms at 1M",
                "met": (m["total"]["p95"] <= GOAL_P95_MS) if at_goal_size else None})
        headline.append({
            "figure": f"recall@10 vs exact search, {label} items",
            "duplens": f"{s['recall_at_10']:.4f}", "baseline": "1",
            "baseline_is": "exact search of the same query vectors, same run",
            "ratio": f"{s['recall_at_10']:.4f}", "goal": f"≥ {GOAL_RECALL} at 1M",
            "met": (s["recall_at_10"] >= GOAL_RECALL) if at_goal_size else None})
        for name, m, _figure in [*paths, ("plain ST encode + exact search", b, None)]:
            latency_rows.append([
                label, name, _trio(m["total"]),
                f"{m['encode']['p95']:.2f} / {m['search']['p95']:.2f}" if "encode" in m else "",
                f"**{b['total']['p95'] / m['total']['p95']:.2f}×**",
                "1 (exact)" if m is b else f"**{s['recall_at_10']:.4f}**"])
        for point in s["ef_sweep"]:
            sweep_rows.append([label, point["ef"], f"{point['search_p50_ms']:.3f}",
                               f"{point['search_p95_ms']:.3f}", f"{point['recall_at_10']:.4f}"])
        build = s.get("build_seconds", s.get("index_build_seconds"))
        build_rows.append([label, f"{s['real_items']:,}", f"{n - s['real_items']:,}",
                           "" if build is None else build])
    sizes = result["sizes"]
    xs = [s["items"] for s in sizes]
    largest = sizes[-1]
    keystroke = "project_search_ms" if whole else "duplens_ms"
    notes = [result["data"] + ".",
             "Query runtime: the window serves single queries through onnxruntime (a "
             "dependency) when the model runs with torch on the CPU (the same embeddings, "
             "checked on load); torch otherwise. Bulk encoding stays with torch either way."]
    if whole:
        notes += [f"The paths take turns in blocks of {result['block']} queries with an "
                  f"untimed pause of {result['pause_s']} s after each, so one runtime's idle "
                  "threads have settled before the next path's block; the exact search "
                  f"has NumPy's BLAS on the threads it has by default ({_blas(result)}).",
                  "`Project.search` keeps a cache of recent queries; every timed query is "
                  "new to it, so none is answered from the cache."]
    else:
        notes += ["Measured before the keystroke was timed through `Project.search`: encode "
                  "+ HNSW alone, without the row lookup the window's search adds; the paths "
                  "took turns in blocks of 100 queries, NumPy's BLAS on one thread for the "
                  "exact search (fewer threads than a plain user's default)."]
    return {
        "headline": headline,
        "tables": [
            {"title": f"Per query, milliseconds (p50 / p95 / p99 over {result['queries']:,} "
                      "queries); ratio = plain p95 / this path's p95",
             "columns": ["items", "path", "total p50 / p95 / p99",
                         "encode / search p95 (runs that split them)", "plain p95 / this p95",
                         "recall@10"],
             "rows": latency_rows},
            {"title": "ef at query time (the product's: "
                      + ", ".join(f"{_size_label(s['items'])} {s.get('query_ef', '?')}"
                                  for s in sizes) + "): search only, ms",
             "columns": ["items", "ef", "search p50", "search p95", "recall@10"],
             "rows": sweep_rows},
            {"title": "The indexes (build time is informative: in the product the index grows "
                      "during import; empty where the project was cached from an earlier run)",
             "columns": ["items", "real embeddings", "noisy copies", "HNSW build s"],
             "rows": build_rows},
        ],
        "plots": [
            {"file": "query_latency.png",
             "title": f"Live query p95 ({result['queries']:,} real questions)",
             "xlabel": "items in the index", "ylabel": "ms per query (p95)",
             "logx": True, "logy": True,
             "series": [
                 {"label": (f"Duplens: Project.search ({runtime} query, rows included)"
                            if whole else f"Duplens: {runtime} encode + HNSW top-10"),
                  "x": xs, "y": [s[keystroke]["total"]["p95"] for s in sizes]},
                 *([{"label": "Duplens: encode + HNSW alone", "x": xs,
                     "y": [s["encode_hnsw_ms"]["total"]["p95"] for s in sizes]}]
                   if whole else []),
                 {"label": "plain ST: encode + exact search", "x": xs,
                  "y": [s["baseline_ms"]["total"]["p95"] for s in sizes]},
             ]},
            {"file": "query_ef_tradeoff.png",
             "title": f"ef at query time, {_size_label(largest['items'])} items",
             "xlabel": "HNSW search p95, ms", "ylabel": "recall@10",
             "annotate": [f"ef={p['ef']}" for p in largest["ef_sweep"]],
             "series": [{"label": f"HNSW (M={result['params']['M']}, "
                                  f"ef_construction={result['params']['ef_construction']})",
                         "x": [p["search_p95_ms"] for p in largest["ef_sweep"]],
                         "y": [p["recall_at_10"] for p in largest["ef_sweep"]]}]},
        ],
        "notes": notes,
    }


def _blas(result: dict) -> str:
    """How many threads the exact search's BLAS had (runs before it was recorded: one)."""
    n = result.get("baseline_blas_threads", 1)
    return f"BLAS on {n} thread{'s' if n != 1 else ''}"


def _trio(p: dict) -> str:
    return f"{p['p50']:.1f} / **{p['p95']:.1f}** / {p['p99']:.1f}"


def _size_label(n: int) -> str:
    """10k, 100k, 1M; other sizes as they are."""
    for unit, suffix in ((1_000_000, "M"), (1000, "k")):
        if n >= unit and n % unit == 0:
            return f"{n // unit}{suffix}"
    return f"{n:,}"


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)

"""Live query latency: encode one query and find its top 10, at 10k, 100k and 1M items.

    python -m benchmarks --only query_latency [--quick]

Duplens: `SentenceEncoder.encode([query])` (the product's encode path) then `HnswIndex.query`
with the product's `HnswParams`. Baseline: plain `SentenceTransformer.encode(query)` on a
model sentence-transformers loaded itself, then exact search (a NumPy matrix product over
every vector and a partial sort). Both run for each of 1,000 real questions that are in no
index, alternating which goes first, in one process; p50/p95/p99 come from those 1,000.
Recall@10 compares the HNSW top 10 with exact search of the same query vectors. The knob
the product exposes, `ef` at query time, is swept on each index (search only) to show the
latency/recall trade-off.

The 10k index is real question embeddings; 100k and 1M are the 42,944 other real ones plus
noisy copies as index-only rows (see benchmarks/corpus.py). `--quick`: 10k and 100k.
"""

from __future__ import annotations

import dataclasses
import sys
import time

import numpy as np

from benchmarks import corpus, exact

K = 10
SIZES_QUICK = (10_000, 100_000)
SIZES_FULL = (10_000, 100_000, 1_000_000)
EF_SWEEP = (16, 32, 64, 128, 256, 512)
GOAL_P95_MS = 10.0
GOAL_RECALL = 0.99


def run(quick: bool) -> dict:
    from sentence_transformers import SentenceTransformer

    from engine.encoding.encoder import SentenceEncoder
    from engine.encoding.model_spec import default_model_path
    from engine.index.hnsw import HnswIndex, HnswParams

    queries, pool = corpus.query_and_pool()
    loaded = corpus.encoder()
    # As the window has it: single queries through onnxruntime when duplens[onnx] is
    # installed (`prepare_fast_queries`); and torch alone, as without that extra.
    duplens = SentenceEncoder(loaded.model, loaded.spec, loaded.device)
    query_runtime = duplens.prepare_fast_queries()
    torch_only = SentenceEncoder(loaded.model, loaded.spec, loaded.device)
    plain = SentenceTransformer(str(default_model_path()), device="cpu")
    real = corpus.embed(pool)
    query_vectors = corpus.embed(queries)
    params = HnswParams()
    for q in queries[:30]:  # warm-up, not timed
        duplens.encode([q])
        torch_only.encode([q])
        plain.encode(q)

    sizes = []
    for n in (SIZES_QUICK if quick else SIZES_FULL):
        base = corpus.with_noisy_copies(real, n)
        _say(f"  {n:,} items: building the index…")
        index = HnswIndex(base.shape[1], params, capacity=n)
        t0 = time.perf_counter()
        index.add(np.arange(n), base)
        build_s = time.perf_counter() - t0
        _say(f"  {n:,} items: built in {build_s:.0f} s; timing 1,000 queries…")
        measured = _time_queries(queries, _variants(duplens, torch_only, plain, index, base),
                                 index, base)
        truth, _ = exact.top_k(query_vectors, base, K)
        found, _ = index.query(query_vectors, K)
        sweep = [_ef_point(index, params, ef, query_vectors, truth) for ef in EF_SWEEP]
        sizes.append({
            "items": n, "real_items": min(n, len(real)), "noisy_items": max(0, n - len(real)),
            "build_seconds": round(build_s, 1), "query_ef": index.query_ef(), **measured,
            "recall_at_10": round(_recall(found, truth), 4), "ef_sweep": sweep,
        })
        del index, base
    result = {
        "queries": len(queries), "k": K, "params": dataclasses.asdict(params),
        "query_runtime": query_runtime,
        "data": f"queries: the last {len(queries):,} distinct Quora questions (in no index); "
                f"10k: real question embeddings; larger: {corpus.NOISE_NOTE}",
        "sizes": sizes,
    }

    return result


def _time_queries(queries: list[str], variants: dict, index, base: np.ndarray) -> dict:
    """Per-query encode and search times (ms) of each variant: Duplens' encoders (encode +
    HNSW) and the baseline (plain sentence-transformers + exact search).

    The variants take turns in blocks of 100 queries: alternating query by query would
    let one runtime's worker threads, still spinning after its call (torch's OpenMP pool,
    OpenBLAS), slow the next variant's call, which no single user ever sees. NumPy's BLAS
    runs on one thread here for the same reason: its idle workers spin on both cores.
    """
    from threadpoolctl import threadpool_limits

    times = {name: {"encode": [], "search": []} for name in variants}

    def timed(name: str, q: str) -> None:
        encode, search = variants[name]
        t0 = time.perf_counter()
        vector = encode(q)
        t1 = time.perf_counter()
        search(vector)
        t2 = time.perf_counter()
        times[name]["encode"].append(t1 - t0)
        times[name]["search"].append(t2 - t1)

    with threadpool_limits(limits=1, user_api="blas"):
        for start in range(0, len(queries), 100):
            block = queries[start:start + 100]
            names = list(variants) if (start // 100) % 2 == 0 else list(variants)[::-1]
            for name in names:
                for q in block:
                    timed(name, q)
    out = {}
    for name, parts in times.items():
        enc, srch = (np.asarray(parts[k]) * 1000 for k in ("encode", "search"))
        out[f"{name}_ms"] = {"total": _pct(enc + srch), "encode": _pct(enc),
                             "search": _pct(srch)}
    return out


def _variants(duplens, torch_only, plain, index, base: np.ndarray) -> dict:
    """name -> (encode one query, search its vector)."""

    def hnsw(vector):
        return index.query(vector, K)

    def exact(vector):
        scores = base @ vector
        top = np.argpartition(-scores, K)[:K]
        return top[np.argsort(-scores[top])]

    return {
        "duplens": (lambda q: duplens.encode([q]), hnsw),
        "duplens_torch": (lambda q: torch_only.encode([q]), hnsw),
        "baseline": (lambda q: plain.encode(q, normalize_embeddings=True), exact),
    }


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
    """Headline rows, tables and plots for the report (benchmarks/report.py)."""
    headline, latency_rows, sweep_rows, build_rows = [], [], [], []
    for s in result["sizes"]:
        n, d, b = s["items"], s["duplens_ms"], s["baseline_ms"]
        t = s.get("duplens_torch_ms")
        label = _size_label(n)
        ratio = b["total"]["p95"] / d["total"]["p95"]
        at_goal_size = n >= 1_000_000
        runtime = result.get("query_runtime", "torch")
        plain_is = ("plain sentence-transformers encode + exact NumPy search "
                    f"({_blas(result)}), same run")
        headline.append({
            "figure": f"live query p95 (encode + top-10), {label} items, query runtime "
                      f"{runtime}",
            "duplens": f"{d['total']['p95']:.1f} ms", "baseline": f"{b['total']['p95']:.1f} ms",
            "baseline_is": plain_is,
            "ratio": (f"{ratio:.2f}× faster" if ratio >= 1 else f"{1 / ratio:.2f}× slower"),
            "goal": f"≤ {GOAL_P95_MS:g} ms at 1M",
            "met": (d["total"]["p95"] <= GOAL_P95_MS) if at_goal_size else None})
        if t is not None and runtime != "torch":
            t_ratio = b["total"]["p95"] / t["total"]["p95"]
            headline.append({
                "figure": f"live query p95 (encode + top-10), {label} items, torch only "
                          "(when onnxruntime is missing or fails its check)",
                "duplens": f"{t['total']['p95']:.1f} ms",
                "baseline": f"{b['total']['p95']:.1f} ms", "baseline_is": plain_is,
                "ratio": (f"{t_ratio:.2f}× faster" if t_ratio >= 1
                          else f"{1 / t_ratio:.2f}× slower"),
                "goal": f"≤ {GOAL_P95_MS:g} ms at 1M",
                "met": (t["total"]["p95"] <= GOAL_P95_MS) if at_goal_size else None})
        headline.append({
            "figure": f"recall@10 vs exact search, {label} items",
            "duplens": f"{s['recall_at_10']:.4f}", "baseline": "1",
            "baseline_is": "exact search of the same query vectors, same run",
            "ratio": f"{s['recall_at_10']:.4f}", "goal": f"≥ {GOAL_RECALL} at 1M",
            "met": (s["recall_at_10"] >= GOAL_RECALL) if at_goal_size else None})
        rows = [(f"Duplens ({runtime} query + HNSW)", d)]
        if t is not None and runtime != "torch":
            rows.append(("Duplens (torch query + HNSW)", t))
        rows.append(("plain ST encode + exact search", b))
        for name, m in rows:
            latency_rows.append([
                label, name, _trio(m["total"]), f"{m['encode']['p95']:.2f}",
                f"{m['search']['p95']:.2f}",
                f"**{b['total']['p95'] / m['total']['p95']:.2f}×**",
                f"**{s['recall_at_10']:.4f}**" if m is not b else "1 (exact)"])
        for point in s["ef_sweep"]:
            sweep_rows.append([label, point["ef"], f"{point['search_p50_ms']:.3f}",
                               f"{point['search_p95_ms']:.3f}", f"{point['recall_at_10']:.4f}"])
        build_rows.append([label, f"{s['real_items']:,}", f"{s['noisy_items']:,}",
                           s["build_seconds"]])
    sizes = result["sizes"]
    xs = [s["items"] for s in sizes]
    largest = sizes[-1]
    return {
        "headline": headline,
        "tables": [
            {"title": f"Per query, milliseconds (p50 / p95 / p99 over {result['queries']:,} "
                      "queries); ratio = plain p95 / Duplens p95",
             "columns": ["items", "path", "total p50 / p95 / p99", "encode p95",
                         "search p95", "plain p95 / this p95", "recall@10"],
             "rows": latency_rows},
            {"title": "ef at query time (the product's: "
                      + ", ".join(f"{_size_label(s['items'])} {s.get('query_ef', '?')}"
                                  for s in result["sizes"]) + "): search only, ms",
             "columns": ["items", "ef", "search p50", "search p95", "recall@10"],
             "rows": sweep_rows},
            {"title": "The indexes (build time is informative: in the product the index grows "
                      "during import)",
             "columns": ["items", "real embeddings", "noisy copies", "HNSW build s"],
             "rows": build_rows},
        ],
        "plots": [
            {"file": "query_latency.png",
             "title": f"Live query p95 ({result['queries']:,} real questions)",
             "xlabel": "items in the index", "ylabel": "ms per query (p95)",
             "logx": True, "logy": True,
             "series": [
                 {"label": f"Duplens: {result.get('query_runtime', 'torch')} encode + "
                           "HNSW top-10", "x": xs,
                  "y": [s["duplens_ms"]["total"]["p95"] for s in sizes]},
                 *([{"label": "Duplens: torch encode + HNSW top-10", "x": xs,
                     "y": [s["duplens_torch_ms"]["total"]["p95"] for s in sizes]}]
                   if all("duplens_torch_ms" in s for s in sizes) else []),
                 {"label": "Duplens: HNSW search only", "x": xs,
                  "y": [s["duplens_ms"]["search"]["p95"] for s in sizes]},
                 {"label": "plain ST: encode + exact search", "x": xs,
                  "y": [s["baseline_ms"]["total"]["p95"] for s in sizes]},
                 {"label": "exact search only", "x": xs,
                  "y": [s["baseline_ms"]["search"]["p95"] for s in sizes]},
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
        "notes": [result["data"] + ".",
                  "Query runtime: the window serves single queries through onnxruntime (a "
                  "dependency) when the model runs with torch on the CPU (the same "
                  "embeddings, checked on load); torch otherwise. Bulk encoding stays with "
                  "torch either way.",
                  "The paths take turns in blocks of 100 queries, NumPy's BLAS on one "
                  "thread: idle worker threads of one runtime spin and would slow the next "
                  "call of another, which no user of one runtime sees.",
                  "Duplens' `Project.search` adds a SQLite lookup of the hits' rows and a "
                  "query cache on top of the figures here; both are measured with the window "
                  "(keystroke to results) and by the 1M scale benchmark (first search)."],
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

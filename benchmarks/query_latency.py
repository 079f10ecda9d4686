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
EF_SWEEP = (16, 32, 64, 128, 256)
GOAL_P95_MS = 10.0
GOAL_RECALL = 0.99


def run(quick: bool) -> dict:
    from sentence_transformers import SentenceTransformer

    from engine.encoding.models import default_model_path
    from engine.index.hnsw import HnswIndex, HnswParams

    queries, pool = corpus.query_and_pool()
    duplens = corpus.encoder()
    plain = SentenceTransformer(str(default_model_path()), device="cpu")
    real = corpus.embed(pool)
    query_vectors = corpus.embed(queries)
    params = HnswParams()
    for q in queries[:20]:  # warm-up, not timed
        duplens.encode([q])
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
        measured = _time_queries(queries, duplens, plain, index, base)
        truth, _ = exact.top_k(query_vectors, base, K)
        found, _ = index.query(query_vectors, K)
        sweep = [_ef_point(index, params, ef, query_vectors, truth) for ef in EF_SWEEP]
        sizes.append({
            "items": n, "real_items": min(n, len(real)), "noisy_items": max(0, n - len(real)),
            "build_seconds": round(build_s, 1), **measured,
            "recall_at_10": round(_recall(found, truth), 4), "ef_sweep": sweep,
        })
        del index, base
    result = {
        "queries": len(queries), "k": K, "params": dataclasses.asdict(params),
        "data": f"queries: the last {len(queries):,} distinct Quora questions (in no index); "
                f"10k: real question embeddings; larger: {corpus.NOISE_NOTE}",
        "sizes": sizes,
    }
    result.update(_presentation(result))
    return result


def _time_queries(queries: list[str], duplens, plain, index, base: np.ndarray) -> dict:
    """Per-query encode and search times (ms) for Duplens and the baseline, alternating."""
    times = {key: [] for key in ("d_enc", "d_search", "b_enc", "b_search")}

    def ours(q: str) -> None:
        t0 = time.perf_counter()
        vector = duplens.encode([q])
        t1 = time.perf_counter()
        index.query(vector, K)
        t2 = time.perf_counter()
        times["d_enc"].append(t1 - t0)
        times["d_search"].append(t2 - t1)

    def baseline(q: str) -> None:
        t0 = time.perf_counter()
        vector = plain.encode(q, normalize_embeddings=True)
        t1 = time.perf_counter()
        scores = base @ vector
        top = np.argpartition(-scores, K)[:K]
        top[np.argsort(-scores[top])]
        t2 = time.perf_counter()
        times["b_enc"].append(t1 - t0)
        times["b_search"].append(t2 - t1)

    for i, q in enumerate(queries):
        first, second = (ours, baseline) if i % 2 == 0 else (baseline, ours)
        first(q)
        second(q)
    ms = {key: np.asarray(v) * 1000 for key, v in times.items()}
    return {
        "duplens_ms": {"total": _pct(ms["d_enc"] + ms["d_search"]),
                       "encode": _pct(ms["d_enc"]), "search": _pct(ms["d_search"])},
        "baseline_ms": {"total": _pct(ms["b_enc"] + ms["b_search"]),
                        "encode": _pct(ms["b_enc"]), "search": _pct(ms["b_search"])},
    }


def _ef_point(index, params, ef: int, query_vectors: np.ndarray, truth: np.ndarray) -> dict:
    """Search-only latency and recall@10 with `ef` at query time (the index is unchanged)."""
    index.params = dataclasses.replace(params, ef=ef)
    try:
        found = []
        times = []
        for vector in query_vectors:
            t0 = time.perf_counter()
            ids, _ = index.query(vector, K)
            times.append(time.perf_counter() - t0)
            found.append(ids[0])
    finally:
        index.params = params
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


def _presentation(result: dict) -> dict:
    """Headline rows, tables and plots for the report (benchmarks/report.py)."""
    headline, latency_rows, sweep_rows, build_rows = [], [], [], []
    for s in result["sizes"]:
        n, d, b = s["items"], s["duplens_ms"], s["baseline_ms"]
        label = _size_label(n)
        ratio = b["total"]["p95"] / d["total"]["p95"]
        at_goal_size = n >= 1_000_000
        headline.append({
            "figure": f"live query p95 (encode + top-10), {label} items",
            "duplens": f"{d['total']['p95']:.1f} ms", "baseline": f"{b['total']['p95']:.1f} ms",
            "ratio": (f"{ratio:.2f}× faster" if ratio >= 1 else f"{1 / ratio:.2f}× slower"),
            "goal": f"≤ {GOAL_P95_MS:g} ms at 1M",
            "met": (d["total"]["p95"] <= GOAL_P95_MS) if at_goal_size else None})
        headline.append({
            "figure": f"recall@10 vs exact search, {label} items",
            "duplens": f"{s['recall_at_10']:.4f}", "baseline": "1 (exact)",
            "ratio": f"{s['recall_at_10']:.4f}", "goal": f"≥ {GOAL_RECALL} at 1M",
            "met": (s["recall_at_10"] >= GOAL_RECALL) if at_goal_size else None})
        latency_rows.append([
            label, _trio(d["total"]), f"{d['encode']['p95']:.2f}", f"{d['search']['p95']:.2f}",
            _trio(b["total"]), f"{b['encode']['p95']:.2f}", f"{b['search']['p95']:.2f}",
            f"**{ratio:.2f}×**", f"**{s['recall_at_10']:.4f}**"])
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
             "columns": ["items", "Duplens encode + HNSW", "encode p95", "search p95",
                         "plain ST encode + exact", "encode p95", "exact p95", "ratio p95",
                         "recall@10"],
             "rows": latency_rows},
            {"title": f"ef at query time (product default {result['params']['ef']}): "
                      "search only, ms",
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
                 {"label": "Duplens: encode + HNSW top-10", "x": xs,
                  "y": [s["duplens_ms"]["total"]["p95"] for s in sizes]},
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
                  "Duplens' `Project.search` adds a SQLite lookup of the hits' rows and a "
                  "query cache on top of the figures here; both are measured with the window "
                  "(keystroke to results) and by the 1M scale benchmark (first search)."],
    }


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

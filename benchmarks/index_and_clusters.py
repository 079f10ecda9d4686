"""HNSW recall@10 against exact search, and the cost of re-cutting duplicate clusters.

    python -m benchmarks.index_and_clusters [--rows 10000] [--scale 100000]

Recall uses real Quora question embeddings from the default model: each of 1,000 held-out
questions is searched in an index of `--rows` others, with Duplens' HNSW parameters, and
compared with exact (brute-force) cosine search. The clustering figure needs `--scale`
items: the real embeddings are repeated with small Gaussian noise (renormalised) to reach
it, which is said in the output.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from benchmarks.data import quora_questions


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--scale", type=int, default=100_000)
    args = ap.parse_args()

    from engine.dedup.clusters import cut_clusters
    from engine.dedup.graph import build_knn_graph
    from engine.encoding.models import load_model, resolve_model
    from engine.index.hnsw import HnswIndex, HnswParams

    texts = quora_questions(args.rows + 1000)
    model = load_model(resolve_model(None), "cpu")
    vecs = model.encode(texts, batch_size=64, normalize_embeddings=True,
                        convert_to_numpy=True).astype(np.float32)
    base, queries = vecs[:args.rows], vecs[args.rows:]
    params = HnswParams()
    index = HnswIndex(base.shape[1], params)
    t0 = time.perf_counter()
    index.add(np.arange(len(base)), base)
    build_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    found, _ = index.query(queries, 10)
    query_ms = (time.perf_counter() - t0) / len(queries) * 1000
    exact = np.argsort(-(queries @ base.T), axis=1)[:, :10]
    recall = float(np.mean([len(set(a) & set(b)) / 10 for a, b in zip(found, exact,
                                                                         strict=True)]))

    rng = np.random.default_rng(0)
    reps = -(-args.scale // len(base))
    big = np.concatenate([base + rng.normal(scale=0.02, size=base.shape).astype(np.float32)
                          if r else base for r in range(reps)])[:args.scale]
    big /= np.linalg.norm(big, axis=1, keepdims=True)
    big_index = HnswIndex(big.shape[1], params, capacity=len(big))
    t0 = time.perf_counter()
    big_index.add(np.arange(len(big)), big)
    big_build_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    graph = build_knn_graph(big_index, 10)
    graph_s = time.perf_counter() - t0
    cuts = {}
    for threshold in (0.8, 0.85, 0.9):
        t0 = time.perf_counter()
        clusters = cut_clusters(graph, threshold)
        cuts[str(threshold)] = {"seconds": round(time.perf_counter() - t0, 3),
                                "clusters": len(clusters)}
    print(json.dumps({
        "params": params.__dict__, "index_rows": len(base), "queries": len(queries),
        "recall_at_10": round(recall, 4), "query_ms_mean": round(query_ms, 3),
        "build_seconds": round(build_s, 2),
        "scale_items": len(big), "scale_note": "real embeddings repeated with noise 0.02",
        "scale_build_seconds": round(big_build_s, 1), "graph_seconds": round(graph_s, 1),
        "recut_seconds": cuts,
    }, indent=1))


if __name__ == "__main__":
    main()

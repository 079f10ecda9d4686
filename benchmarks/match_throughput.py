"""Match throughput: checking a new file against a large project runs at the speed of
encoding its rows; the searches are a small share.

    python -m benchmarks --only match_throughput [--quick]

Per batch of `BATCH_ROWS` rows, the product's match loop (`engine.services.matching`):
`SentenceEncoder.encode`, `HnswIndex.query` for the k=3 nearest entries in the project's
index, and the look for repeats within the file (`InFileTwins`). The project index is
synthetic: random unit vectors (384 dims) in an `HnswIndex` with the product's parameters,
1M of them (100k with --quick). The store read that turns the hits into rows (`hits_for`)
is not part of this loop (no 1M-row store is built here). Baseline, in the same process:
plain `SentenceTransformer.encode` of the same texts with the same batch size. Texts: real
Quora questions (10,000; 2,000 with --quick).
"""

from __future__ import annotations

import time

import numpy as np

from benchmarks import corpus

K = 3


def run(quick: bool) -> dict:
    from sentence_transformers import SentenceTransformer

    from engine.encoding.models import default_model_path
    from engine.index.hnsw import HnswIndex, HnswParams
    from engine.services.matching import BATCH_ROWS, InFileTwins

    rows = 2_000 if quick else 10_000
    size = 100_000 if quick else 1_000_000
    texts = corpus.questions()[:rows]
    encoder = corpus.encoder()
    plain = SentenceTransformer(str(default_model_path()), device="cpu")

    rng = np.random.default_rng(0)
    index = HnswIndex(encoder.dim, HnswParams(), capacity=size)
    started = time.perf_counter()
    for start in range(0, size, 100_000):
        n = min(100_000, size - start)
        v = rng.standard_normal((n, encoder.dim)).astype(np.float32)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        index.add(np.arange(start, start + n, dtype=np.int64), v)
    build_s = time.perf_counter() - started

    encoder.encode(texts[:64])                 # warm-up, not timed
    plain.encode(texts[:64], batch_size=encoder.batch_size)

    started = time.perf_counter()
    plain.encode(texts, batch_size=encoder.batch_size, normalize_embeddings=True,
                 convert_to_numpy=True, show_progress_bar=False)
    plain_s = time.perf_counter() - started

    twins = InFileTwins(encoder.dim, 0.8)
    encode_s = search_s = twins_s = 0.0
    for start in range(0, rows, BATCH_ROWS):
        batch = texts[start:start + BATCH_ROWS]
        t0 = time.perf_counter()
        vectors = encoder.encode(batch)
        t1 = time.perf_counter()
        index.query(vectors, K)
        t2 = time.perf_counter()
        twins.add(vectors, [str(i) for i in range(start, start + len(batch))])
        t3 = time.perf_counter()
        encode_s, search_s, twins_s = encode_s + t1 - t0, search_s + t2 - t1, twins_s + t3 - t2
    match_s = encode_s + search_s + twins_s
    result = {
        "rows": rows, "index_items": size, "k": K, "batch_rows": BATCH_ROWS,
        "index_build_s": round(build_s, 1),
        "match_rows_per_s": round(rows / match_s, 1),
        "plain_encode_rows_per_s": round(rows / plain_s, 1),
        "match_vs_plain": round(plain_s / match_s, 3),
        "search_share": round(search_s / match_s, 4),
        "in_file_share": round(twins_s / match_s, 4),
    }
    for key, value in result.items():
        print(f"{key}: {value}")
    return result

"""Match throughput: checking a new file against a 1M-item project runs at the speed of
encoding its rows; the searches are a small share.

    python -m benchmarks --only match_throughput [--quick]

The product's whole match path, `project.matching.check_file` (read the CSV, encode each
batch of 1,024 rows, search the project's HNSW index for the k=3 nearest, one store read
per batch to turn hits into rows and fold exact copies, the look for repeats within the
file, the words' overlap), on a CSV of real Quora questions: 10,000 (500 with --quick).
Beside it, in the same process, plain `SentenceTransformer.encode` of the same texts with
the same batch size, timed before and after the match (the machine is shared; the ratio is
against their mean).

The project is benchmarks/scale_1m.py's 1M-item project (its docstring: the 43,944
distinct Quora questions, their real embeddings, then noisy copies of them up to 1M rows,
indexed by the product). Every Quora question of the corpus is in it, so the checked rows
are in the project too: each finds itself (and its noisy copies) — there are no real Quora
questions left outside it. --quick (a smoke run) checks against scale_1m's quick project
(5,000 items) instead, and measures recall on 200 rows.

The shares of the match time in the searches (`HnswIndex.query`), the store read
(`hits_for`) and the in-file check (`InFileTwins.add`) are measured by wrapping those calls.
Recall@3 of the searches at the beam the match uses (`match_ef`), and at other beams, is
measured against exact search (every stored vector, read from the project) on a sample of
the checked rows, beside the time one batch of 1,024 searches takes at that beam.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from benchmarks import corpus
from benchmarks.data import write_questions_csv

K = 3
ITEMS = 1_000_000
RECALL_SAMPLE, QUICK_RECALL_SAMPLE = 500, 200
EF_SWEEP = (32, 64, 128, 256, 512)


def project_path(items: int = ITEMS) -> Path:
    """The cached `items`-item project of scale_1m (built now when absent: long at 1M)."""
    from benchmarks import scale_1m

    cached = sorted(corpus.CACHE.glob(f"scale-{items}-v{scale_1m.BUILDER_VERSION}-*.duplens"))
    if cached:
        return cached[-1]
    return scale_1m.cached_project(items)[0]


class _Timer:
    """Wraps a callable and adds up the seconds spent in it."""

    def __init__(self, fn: Callable) -> None:
        self.fn = fn
        self.seconds = 0.0

    def __call__(self, *args, **kwargs):
        t0 = time.perf_counter()
        try:
            return self.fn(*args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - t0


def exact_top(project, queries: np.ndarray, k: int) -> np.ndarray:
    """The exact k nearest text ids of each query over every stored vector."""
    from engine.store.embeddings import iter_embeddings

    best_ids = np.zeros((len(queries), 0), dtype=np.int64)
    best_sims = np.zeros((len(queries), 0), dtype=np.float32)
    with project.store.read() as conn:
        for ids, vectors in iter_embeddings(conn, project.model.id(), queries.shape[1]):
            sims = queries @ vectors.T
            top = np.argpartition(-sims, k - 1, axis=1)[:, :k]
            best_ids = np.concatenate([best_ids, ids[top]], axis=1)
            best_sims = np.concatenate([best_sims, np.take_along_axis(sims, top, 1)], axis=1)
            keep = np.argsort(-best_sims, axis=1)[:, :k]
            best_ids = np.take_along_axis(best_ids, keep, 1)
            best_sims = np.take_along_axis(best_sims, keep, 1)
    return best_ids


def recall(found: np.ndarray, exact: np.ndarray) -> float:
    hits = sum(len(set(f.tolist()) & set(e.tolist())) for f, e in zip(found, exact,
                                                                         strict=True))
    return hits / exact.size


def run(quick: bool) -> dict:
    from sentence_transformers import SentenceTransformer

    import engine.services.matching as matching
    from benchmarks.scale_1m import ITEMS_QUICK
    from engine.encoding.model_spec import default_model_path
    from engine.project import Project

    rows = 500 if quick else 10_000
    sample = QUICK_RECALL_SAMPLE if quick else RECALL_SAMPLE
    texts = corpus.questions()[:rows]
    encoder = corpus.encoder()
    plain = SentenceTransformer(str(default_model_path()), device="cpu")
    path = project_path(ITEMS_QUICK if quick else ITEMS)

    t0 = time.perf_counter()
    project = Project.open(path)
    project.model.attach(encoder, is_default=True)
    index = project.vectors.index()
    open_s = time.perf_counter() - t0

    encoder.encode(texts[:64])                 # warm-up, not timed
    plain.encode(texts[:64], batch_size=encoder.batch_size)

    def plain_run() -> float:
        started = time.perf_counter()
        plain.encode(texts, batch_size=encoder.batch_size, normalize_embeddings=True,
                     convert_to_numpy=True, show_progress_bar=False)
        return time.perf_counter() - started

    plain_before = plain_run()
    search = index.query = _Timer(index.query)       # the instance the match will use
    encode = encoder.encode = _Timer(encoder.encode)
    store = matching.hits_for = _Timer(matching.hits_for)
    twins_add = matching.InFileTwins.add
    twins = _Timer(twins_add)
    matching.InFileTwins.add = lambda self, *a: twins(self, *a)
    with tempfile.TemporaryDirectory(prefix="duplens-match-") as tmp:
        src = Path(tmp) / "new.csv"
        write_questions_csv(src, texts)
        started = time.perf_counter()
        result = project.matching.check_file(src, ["question"], k=K)
        match_s = time.perf_counter() - started
    matching.InFileTwins.add = twins_add
    matching.hits_for = store.fn
    del index.query, encoder.encode
    plain_after = plain_run()
    plain_s = (plain_before + plain_after) / 2
    found_self = sum(1 for r in result.rows if r.matches and r.matches[0].score > 0.999)

    ef_used = matching.match_ef(index, K)
    sampled = encoder.encode(texts[:sample])
    t0 = time.perf_counter()
    exact = exact_top(project, sampled, K)
    exact_s = time.perf_counter() - t0
    batch = encoder.encode(texts[:matching.BATCH_ROWS])
    sweep = {}
    for ef in sorted({*EF_SWEEP, ef_used, index.query_ef()}):
        found, _ = index.query(sampled, K, ef=ef, threads=os.cpu_count() or 1)
        t0 = time.perf_counter()
        index.query(batch, K, ef=ef, threads=os.cpu_count() or 1)
        sweep[ef] = (round(recall(found, exact), 4),
                     round((time.perf_counter() - t0) * 1000, 1))
    project.close()

    result_out = {
        "rows": len(result.rows), "index_items": len(index), "k": K,
        "batch_rows": matching.BATCH_ROWS, "cores": os.cpu_count(),
        "open_and_index_load_s": round(open_s, 1),
        "match_rows_per_s": round(len(result.rows) / match_s, 1),
        "plain_encode_rows_per_s": round(rows / plain_s, 1),
        "plain_encode_s_before_after": [round(plain_before, 1), round(plain_after, 1)],
        "match_vs_plain": round(plain_s / match_s, 3),
        "encode_share": round(encode.seconds / match_s, 4),
        "search_share": round(search.seconds / match_s, 4),
        "store_share": round(store.seconds / match_s, 4),
        "in_file_share": round(twins.seconds / match_s, 4),
        "rest_share": round(1 - (encode.seconds + search.seconds + store.seconds
                                 + twins.seconds) / match_s, 4),
        "rows_whose_best_match_is_itself": found_self,
        "match_ef": ef_used, "index_default_ef": index.query_ef(),
        "recall_at_3_sample": sample,
        "recall_at_3": sweep[ef_used][0],
        "recall_at_3_by_ef": {str(ef): r for ef, (r, _) in sweep.items()},
        "batch_search_ms_by_ef": {str(ef): ms for ef, (_, ms) in sweep.items()},
        "exact_search_s": round(exact_s, 1),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    for key, value in result_out.items():
        print(f"{key}: {value}")
    return result_out

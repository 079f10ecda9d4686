"""Whether the index may be built with ef_construction 100 instead of 200: a 1M check.

    python -m benchmarks --only ef_construction [--quick]      (--quick: 100,000 items)

Inserting into the HNSW index is most of an import's indexing time, and hnswlib's
ef_construction (the beam each insert searches with) sets it: on 43k real embeddings, 100
took about half of 200's time. The rule, fixed before the run: the product adopts 100 only
if, at 1M items,
- recall@10 of the product's search (`HnswIndex.query` at its own beam, `query_ef`) on
  1,000 held-out real questions stays >= 0.99 against exact search, and
- pair recall at similarity 0.8 stays >= 0.97 against the current build (200): the pairs
  the neighbour graph's search (`knn_search.GRAPH_EF`, `clusters.DEFAULT_NEIGHBOURS`) finds
  for a seeded sample of 20,000 items, with the build of 200 as the reference.

Items: the 42,944 real question embeddings of `corpus.query_and_pool` (the 1,000 queries
are never in the index) followed by noisy copies (`corpus.with_noisy_copies`), as the other
1M benchmarks make them. Both indexes are built by the product's `HnswIndex` with every
core, one after the other in one process, the same vectors in the same order; exact search
(numpy, in chunks) gives the truth for both figures.
"""

from __future__ import annotations

import os
import time

import numpy as np

from benchmarks import corpus
from engine.encoding.gate_rules import exact_top as exact_top_rows
from engine.encoding.gate_rules import recall

ITEMS_FULL, ITEMS_QUICK = 1_000_000, 100_000
CANDIDATE, CURRENT = 100, 200
SAMPLE = 20_000
PAIR_AT = 0.8
MIN_RECALL, MIN_PAIR_RECALL = 0.99, 0.97
K = 10


def exact_top(corpus_vectors: np.ndarray, queries: np.ndarray, k: int
              ) -> tuple[np.ndarray, np.ndarray]:
    """(positions, similarities) of each query's k most similar corpus rows: the gate's
    exact search (`gate_rules.exact_top`), in chunks of queries whose scores take about
    800 MB, since 21,000 queries against 1M rows would take 84 GB at once."""
    chunk = max(1, 200_000_000 // len(corpus_vectors))
    idx = np.concatenate([exact_top_rows(corpus_vectors, queries[s:s + chunk], k)
                          for s in range(0, len(queries), chunk)])
    sim = np.einsum("qd,qkd->qk", queries, corpus_vectors[idx])
    return idx, sim.astype(np.float32)


def pairs_at(rows: np.ndarray, nbr: np.ndarray, sim: np.ndarray, at: float) -> set:
    """Unordered pairs (row, neighbour) at similarity `at` or above, self-pairs left out."""
    keep = (sim >= at) & (nbr != rows[:, None]) & (nbr >= 0)
    a = np.repeat(rows, nbr.shape[1]).reshape(nbr.shape)[keep]
    b = nbr[keep]
    return set(zip(np.minimum(a, b).tolist(), np.maximum(a, b).tolist(), strict=True))


def measure(n: int, sample: int = SAMPLE) -> dict:
    from engine.dedup.knn_search import GRAPH_EF
    from engine.index.hnsw import HnswIndex, HnswParams

    queries_text, pool = corpus.query_and_pool()
    items = corpus.with_noisy_copies(corpus.embed(pool), n)
    queries = corpus.embed(queries_text)
    rng = np.random.default_rng(0)
    rows = np.sort(rng.choice(n, min(sample, n), replace=False))
    truth, _ = exact_top(items, queries, K)
    exact_nbr, exact_sim = exact_top(items, items[rows], K + 1)
    exact_pairs = pairs_at(rows, exact_nbr, exact_sim, PAIR_AT)
    builds = {}
    for ef_c in (CURRENT, CANDIDATE):
        index = HnswIndex(items.shape[1], HnswParams(ef_construction=ef_c), capacity=n)
        started = time.perf_counter()
        index.add(np.arange(n), items)
        seconds = time.perf_counter() - started
        threads = os.cpu_count() or 1
        found, _ = index.query(queries, K, threads=threads)
        nbr, sim = index.query(items[rows], K + 1, ef=GRAPH_EF, threads=threads)
        builds[ef_c] = {"insert_seconds": round(seconds, 1),
                        "ms_per_item_core": round(1000 * seconds * threads / n, 3),
                        "query_ef": index.query_ef(),
                        "recall_at_10": round(recall(found, truth), 4),
                        "_pairs": pairs_at(rows, nbr, sim, PAIR_AT)}
        del index
    current = builds[CURRENT]["_pairs"]
    for b in builds.values():
        mine = b.pop("_pairs")
        b["pairs"] = len(mine)
        b["pair_recall_vs_exact"] = round(len(mine & exact_pairs) / max(1, len(exact_pairs)),
                                          4)
        b["pair_recall_vs_current"] = round(len(mine & current) / max(1, len(current)), 4)
    cand = builds[CANDIDATE]
    adopt = (cand["recall_at_10"] >= MIN_RECALL
             and cand["pair_recall_vs_current"] >= MIN_PAIR_RECALL)
    return {"items": n, "real_items": len(pool), "queries": len(queries),
            "sample": len(rows), "exact_pairs": len(exact_pairs), "threads": os.cpu_count(),
            "builds": {str(k): v for k, v in builds.items()}, "adopt": adopt}


def run(quick: bool) -> dict:
    return measure(ITEMS_QUICK if quick else ITEMS_FULL)


def present(result: dict, results: dict | None = None) -> dict:
    builds = result["builds"]
    cur, cand = builds[str(CURRENT)], builds[str(CANDIDATE)]
    rows = [[f"ef_construction {k}" + (" (the product's)" if k == str(CURRENT) else ""),
             b["insert_seconds"], b["ms_per_item_core"], b["query_ef"],
             f"{b['recall_at_10']:.4f}", f"{b['pair_recall_vs_exact']:.4f}",
             f"{b['pair_recall_vs_current']:.4f}"] for k, b in builds.items()]
    verdict = ("adopted" if result["adopt"] else "not adopted")
    return {"headline": [{"figure": f"Index build, ef_construction {CANDIDATE} at "
                                    f"{result['items']:,} items: {verdict}",
                          "duplens": f"{cand['insert_seconds']:.0f} s, recall@10 "
                                     f"{cand['recall_at_10']:.3f}, pair recall "
                                     f"{cand['pair_recall_vs_current']:.3f}",
                          "baseline": f"{cur['insert_seconds']:.0f} s",
                          "baseline_is": f"ef_construction {CURRENT} (the product's), same "
                                         "vectors, same run",
                          "ratio": f"{cur['insert_seconds'] / cand['insert_seconds']:.2f}×",
                          "goal": f"recall@10 ≥ {MIN_RECALL}, pair recall ≥ "
                                  f"{MIN_PAIR_RECALL}",
                          "met": result["adopt"]}],
            "tables": [{"title": f"{result['items']:,} items ({result['real_items']:,} real "
                                 f"question embeddings, then noisy copies), "
                                 f"{result['threads']} threads; recall@10 over "
                                 f"{result['queries']:,} held-out questions; pairs at "
                                 f"≥ {PAIR_AT} among {result['sample']:,} sampled items "
                                 f"({result['exact_pairs']:,} exact)",
                        "columns": ["build", "insert s", "ms per item per core", "query ef",
                                    "recall@10", "pair recall vs exact",
                                    "pair recall vs 200"],
                        "rows": rows}]}

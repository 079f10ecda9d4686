"""The rules a fast backend's embeddings must keep against float32's before Duplens encodes
with them on its own: the losses allowed, and the figures they are judged by.

One set of rules for both places that judge: the benchmark's quality gate, which chose the
default backend of each CPU class for the bundled model (benchmarks/quality_gate.py,
benchmarks/cpu_classes.py), and the check of a fine-tuned version's fast form on the
project's own texts and pairs (`engine.training.fast_form`). Losses only: a backend that
scores higher than float32 has lost nothing.

The gate judges what an analyst sees, not neighbours six to ten swapping places:

- the STS benchmark's Spearman, at most `STSB_LOSS` lower;
- average precision on labelled pairs, at most `PAIR_AP_LOSS` lower;
- the cut: the duplicate pairs the product's clusters hold at the model's default threshold
  (`engine.dedup.cut`, over exact neighbour graphs), against float32's cut: pair F1 at least
  `MIN_CUT_F1`;
- for labelled duplicates, the partner among the `PARTNER_K` nearest as often as with
  float32, within `PARTNER_LOSS` points.

Recall@10 against float32's exact neighbours and top-1 agreement are reported beside them,
not gating (`K`, `recall`).
"""

from __future__ import annotations

import numpy as np

STSB_LOSS = 0.5      # Spearman x100 on the STS benchmark, at most this much lower
PAIR_AP_LOSS = 0.3   # average precision x100 on labelled pairs, at most this much lower
MIN_CUT_F1 = 0.98    # pair F1 of the cut at the default threshold against float32's cut
# Below this many pairs in float32's cut, one pair crossing the threshold would decide F1
# (with n pairs, one lost gives 2(n-1)/(2n-1) < 0.98 for n < 26): a small project's cut
# may differ by `SMALL_CUT_SLACK` pairs instead.
MIN_CUT_PAIRS = 50
SMALL_CUT_SLACK = 1
PARTNER_K = 5        # a labelled duplicate's partner among this many nearest ...
PARTNER_LOSS = 0.5   # ... at most this many points less often than with float32
K = 10               # recall@K of search: reported, not gating
GRAPH_K = 10         # the neighbours each text keeps in the cut's graph (the product's)
_BLOCK = 2048


def exact_top(corpus: np.ndarray, queries: np.ndarray, k: int = K) -> np.ndarray:
    """The indices of each query's k nearest corpus rows by cosine, best first."""
    sims = queries @ corpus.T
    top = np.argpartition(-sims, k - 1, axis=1)[:, :k]
    order = np.argsort(-np.take_along_axis(sims, top, 1), axis=1)
    return np.take_along_axis(top, order, 1)


def nearest_others(vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Each row's k nearest other rows by cosine, best first, and their similarities:
    exact, in blocks of rows so 20,000 texts need no 20,000-square matrix at once."""
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    n = len(vectors)
    k = min(k, n - 1)
    nbr = np.empty((n, k), dtype=np.int64)
    sim = np.empty((n, k), dtype=np.float32)
    for start in range(0, n, _BLOCK):
        block = vectors[start:start + _BLOCK] @ vectors.T
        rows = np.arange(len(block))
        block[rows, start + rows] = -np.inf
        top = np.argpartition(-block, k - 1, axis=1)[:, :k]
        order = np.argsort(-np.take_along_axis(block, top, 1), axis=1, kind="stable")
        nbr[start:start + len(block)] = np.take_along_axis(top, order, 1)
        sim[start:start + len(block)] = np.take_along_axis(block, nbr[start:start + len(block)],
                                                           1)
    return nbr, sim


def cut_pairs(vectors: np.ndarray, threshold: float, k: int = GRAPH_K) -> set[tuple[int, int]]:
    """The pairs of rows that the product's cut puts in one cluster at `threshold`, over
    the exact `k`-nearest-neighbour graph of `vectors` (normalised rows)."""
    from engine.dedup.cut import cut_clusters
    from engine.dedup.graph import KnnGraph

    nbr, sim = nearest_others(vectors, k)
    graph = KnnGraph.from_dense(np.arange(len(vectors)), nbr, sim)
    pairs: set[tuple[int, int]] = set()
    for cluster in cut_clusters(graph, threshold):
        members = sorted(int(m) for m in cluster.members)
        pairs.update((a, b) for i, a in enumerate(members) for b in members[i + 1:])
    return pairs


def cut_figures(found: set, reference: set) -> dict:
    """What `failures` judges of a cut against float32's: its pair F1, how many pairs are
    in one cut only, and how many float32's holds."""
    return {"cut_f1": pair_f1(found, reference), "cut_differs": len(found ^ reference),
            "reference_cut_pairs": len(reference)}


def pair_f1(found: set, reference: set) -> float:
    """F1 of `found` pairs against `reference` pairs (1.0 when both are empty)."""
    if not found and not reference:
        return 1.0
    both = len(found & reference)
    return 2 * both / (len(found) + len(reference))


def partner_rate(vectors: np.ndarray, pairs: np.ndarray, k: int = PARTNER_K) -> float:
    """Share x100 of labelled duplicates (rows a, b of `pairs`, both directions) whose
    partner is among the k nearest other rows of `vectors`."""
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    if not len(pairs):
        return 100.0
    nbr, _ = nearest_others(vectors, k)
    hits = (nbr[pairs[:, 0]] == pairs[:, 1:2]).any(1).sum() \
        + (nbr[pairs[:, 1]] == pairs[:, 0:1]).any(1).sum()
    return 100 * float(hits) / (2 * len(pairs))


def hnsw_top(corpus: np.ndarray, queries: np.ndarray, k: int = K) -> np.ndarray:
    """The product's search: an HNSW index with Duplens' default parameters."""
    from engine.index.hnsw import HnswIndex

    index = HnswIndex(corpus.shape[1], capacity=len(corpus))
    index.add(np.arange(len(corpus)), corpus)
    found, _ = index.query(queries, k)
    return found


def recall(found: np.ndarray, reference: np.ndarray) -> float:
    """Mean share of each reference row's ids that `found`'s row holds."""
    hits = sum(len(set(f.tolist()) & set(r.tolist())) for f, r in zip(found, reference,
                                                                        strict=True))
    return hits / reference.size


def failures(candidate: dict, reference: dict) -> list[str]:
    """Every gate rule `candidate`'s figures break against `reference`'s (float32's), in
    words; empty when it passes. Figures: "stsb_spearman", "quora_ap", "sample_pairs_ap"
    (x100; any missing is not judged), "cut_f1" (0-1) with "cut_differs" and
    "reference_cut_pairs" (`cut_figures`), "partner_top5" (x100)."""
    failed = []
    if "stsb_spearman" in candidate:
        loss = reference["stsb_spearman"] - candidate["stsb_spearman"]
        if loss > STSB_LOSS + 1e-9:
            failed.append(f"STSb Spearman {loss:.2f} lower than float32 (at most {STSB_LOSS})")
    for key, what in (("quora_ap", "Quora AP"), ("sample_pairs_ap", "sample-pair AP"),
                      ("pair_ap", "pair AP")):
        if key in candidate:
            loss = reference[key] - candidate[key]
            if loss > PAIR_AP_LOSS + 1e-9:
                failed.append(f"{what} {loss:.2f} lower than float32 (at most {PAIR_AP_LOSS})")
    small = candidate.get("reference_cut_pairs", MIN_CUT_PAIRS) < MIN_CUT_PAIRS
    if small and candidate.get("cut_differs", 0) > SMALL_CUT_SLACK:
        failed.append(f"the cut differs from float32's by {candidate['cut_differs']} pairs of "
                      f"{candidate['reference_cut_pairs']} (at most {SMALL_CUT_SLACK} in a cut "
                      f"under {MIN_CUT_PAIRS} pairs)")
    elif not small and candidate.get("cut_f1", 1.0) < MIN_CUT_F1:
        failed.append(f"the cut's pair F1 against float32's {candidate['cut_f1']:.4f} "
                      f"(at least {MIN_CUT_F1})")
    if "partner_top5" in candidate:
        loss = reference["partner_top5"] - candidate["partner_top5"]
        if loss > PARTNER_LOSS + 1e-9:
            failed.append(f"partner in the top {PARTNER_K} {loss:.2f} points less often "
                          f"than float32 (at most {PARTNER_LOSS})")
    return failed

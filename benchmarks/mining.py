"""Duplicate mining: every cluster at threshold 0.8, against sentence-transformers' own tools.

    python -m benchmarks --only mining [--quick]

Duplens runs through its `Project`, as the window does: the rows are imported from a CSV and
their embeddings stored, the project builds its HNSW index from them, then
`project.clusters.graph` (each text's 10 nearest, completed by exact search where a text has
more above 0.75; built once and kept) and `project.clusters.cut(0.8)` (cut, rows,
decisions). Re-clustering at another threshold is `cut(t)` again, which reuses the graph.
The curve times the graph's variants alone on the same index, with a cProfile of each. The
baselines get the same vectors as a tensor:
`paraphrase_mining_embeddings` with its defaults (top 100 per text, 500,000 pairs at most; the
pairs at or above 0.8 are kept) and `community_detection(threshold=0.8,
min_community_size=2)`, Duplens' smallest cluster. A baseline has no graph to keep, so its
re-cluster time is a full rerun.

Pair recall: of the pairs at or above 0.8 by exact search (all pairs, NumPy), the share a
method finds (Duplens: its graph's edges; paraphrase mining: its pairs). Clustered-pair
recall: the share whose two texts end in one cluster.

10k: the first 10,000 distinct Quora questions. 100k: all 43,944 plus noisy copies of their
embeddings (benchmarks/corpus.py) imported as rows "question [copy k]"; the copies make the
100k set far denser in duplicates than real data. `--quick`: 5k only. The 1M run is its own
benchmark, benchmarks/mining_1m.py (full runs only).
"""

from __future__ import annotations

import cProfile
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks import corpus, exact
from benchmarks.data import write_questions_csv

THRESHOLD = 0.8
RECUT_THRESHOLDS = (0.75, 0.85, 0.9, 0.95)
SIZES_QUICK = (5_000,)
SIZES_FULL = (10_000, 100_000)
K_KNOB = 20  # clusters.cut(k=...): more neighbours per text, for the recall it buys
GOAL_SPEEDUP = 10.0
GOAL_RECALL = 0.95
GOAL_RECUT_S = 1.0
# (k, completed) points of the recall/time curve (`_curve`)
CURVE = ((10, False), (5, True), (10, True))


def run(quick: bool) -> dict:
    real_texts, real = _real_corpus()
    sizes = []
    for n in (SIZES_QUICK if quick else SIZES_FULL):
        texts = [real_texts[i % len(real_texts)] + (f" [copy {i // len(real_texts)}]"
                                                    if i >= len(real_texts) else "")
                 for i in range(n)]
        vectors = corpus.with_noisy_copies(real, n)
        _say(f"  {n:,} items: exact pairs at {THRESHOLD}…")
        truth = exact.pairs_above(vectors, THRESHOLD)
        _say(f"  {n:,} items: {len(truth):,} pairs; Duplens…")
        ours = _duplens(texts, vectors, truth)
        bound = {k: _exact_knn_bound(vectors, truth, k) for k in (ours["k"], K_KNOB)}
        _say(f"  {n:,} items: paraphrase_mining_embeddings…")
        mining = _paraphrase_mining(vectors, truth)
        _say(f"  {n:,} items: community_detection…")
        communities = _community_detection(vectors, truth)
        sizes.append({"items": n, "real_items": min(n, len(real)),
                      "noisy_items": max(0, n - len(real)), "exact_pairs": int(len(truth)),
                      "exact_knn_pair_recall": {str(k): v for k, v in bound.items()},
                      "duplens": ours, "paraphrase_mining": mining,
                      "community_detection": communities})
    result = {
        "threshold": THRESHOLD, "k": 10,
        "data": f"10k: real question embeddings; 100k: {corpus.NOISE_NOTE}, imported as rows "
                "'question [copy k]'",
        "sizes": sizes,
    }

    return result


def _real_corpus() -> tuple[list[str], np.ndarray]:
    """Distinct questions (as Duplens normalises them) and their embeddings, in file order."""
    from engine.text import normalise

    queries, pool = corpus.query_and_pool()
    texts = pool + queries
    vectors = np.concatenate([corpus.embed(pool), corpus.embed(queries)])
    seen: set[str] = set()
    keep = []
    for i, t in enumerate(texts):
        key = normalise(t)
        if key and key not in seen:
            seen.add(key)
            keep.append(i)
    return [texts[i] for i in keep], vectors[keep]


def _duplens(texts: list[str], vectors: np.ndarray, truth: np.ndarray) -> dict:
    """The product's path at its default k, then at the k knob's larger value (same index)."""
    from engine.project import Project
    from engine.services.clusters import DEFAULT_NEIGHBOURS
    from engine.store.embeddings import add_embeddings
    from engine.store.items import text_ids_for_keys
    from engine.text import norm_key

    n = len(texts)
    measured = {}
    with tempfile.TemporaryDirectory(prefix="duplens-mining-") as tmp:
        src = Path(tmp) / "rows.csv"
        write_questions_csv(src, texts)
        with Project.open(Path(tmp) / "mining.duplens", create=True) as project:
            project.model.attach(corpus.encoder(), is_default=True)
            project.rows.import_table(src, ["question"])
            model_id = int(project.model.row()["id"])
            with project.store.write() as conn:
                by_key = text_ids_for_keys(conn, [norm_key(t) for t in texts])
                text_ids = np.asarray([by_key[norm_key(t)] for t in texts], dtype=np.int64)
                for start in range(0, n, 20_000):
                    part = slice(start, start + 20_000)
                    add_embeddings(conn, model_id, text_ids[part], vectors[part],
                                   [False] * len(text_ids[part]))
            position = np.full(int(text_ids.max()) + 1, -1, dtype=np.int64)
            position[text_ids] = np.arange(n)
            t0 = time.perf_counter()
            project.vectors.index()
            index_s = time.perf_counter() - t0
            for k in (DEFAULT_NEIGHBOURS, K_KNOB):
                graph, clusters, graph_s, cut_s, recut = time_graph_and_cuts(project, k)
                load = _load()
                measured[k] = {"load_average": load,
                    "k": k, "graph_seconds": round(graph_s, 2), "cut_seconds": round(cut_s, 3),
                    "seconds": round(graph_s + cut_s, 2), "recut_seconds": recut,
                    **_graph_recall(graph, clusters, position, truth, n)}
            curve = _curve(project, position, truth, n)
    ours = measured[DEFAULT_NEIGHBOURS]
    ours["index_seconds"] = round(index_s, 2)
    ours["curve"] = curve
    ours["k_knob"] = measured[K_KNOB]
    return ours


def time_graph_and_cuts(project, k: int) -> tuple[object, list, float, float, dict]:
    """What the product does for "all clusters at 0.8", timed: the neighbour graph, the first
    cut at `THRESHOLD`, then a re-cut at each of `RECUT_THRESHOLDS` from the kept graph."""
    t0 = time.perf_counter()
    graph = project.clusters.graph(k)
    graph_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    clusters = project.clusters.cut(THRESHOLD, k, verdicts=True)
    cut_s = time.perf_counter() - t0
    recut = {}
    for threshold in RECUT_THRESHOLDS:
        t0 = time.perf_counter()
        project.clusters.cut(threshold, k, verdicts=True)
        recut[str(threshold)] = round(time.perf_counter() - t0, 3)
    return graph, clusters, graph_s, cut_s, recut


def _graph_recall(graph, clusters, position: np.ndarray, truth: np.ndarray, n: int) -> dict:
    out = _pair_recall(graph, position, truth, n)
    labels = np.full(n, -1, dtype=np.int64)
    for c, cluster in enumerate(clusters):
        labels[position[[m.text_id for m in cluster.members]]] = c
    return {**out, "clusters": len(clusters),
            "clustered_pair_recall": _clustered_recall(labels, truth, n)}


def _pair_recall(graph, position: np.ndarray, truth: np.ndarray, n: int) -> dict:
    """Of the exact pairs at the threshold, the share the graph holds (its edges)."""
    node = position[graph.ids]
    keep = graph.sims >= THRESHOLD
    found = exact.pair_codes(node[graph.row_of_entries()[keep]], node[graph.indices[keep]], n)
    return {"pairs_found": int(len(found)), "pair_recall": _recall(found, truth)}


def _curve(project, position: np.ndarray, truth: np.ndarray, n: int) -> list[dict]:
    """Recall and build time of the graph's variants on the project's index: the plain
    k-NN graph (search only, what the product built before) and the completed one (search,
    then exact search in the dense neighbourhoods) at several k."""
    from engine.dedup.graph import DEFAULT_FLOOR, build_knn_graph
    from engine.store.embeddings import read_vectors

    index = project.vectors.index()
    model_id = project.vectors.model_id()

    def read(text_ids: np.ndarray) -> np.ndarray:
        with project.store.read() as conn:
            return read_vectors(conn, model_id, index.dim, text_ids)

    points = []
    for k, floor in CURVE:
        profiler = cProfile.Profile()
        t0 = time.perf_counter()
        with profiler:
            graph = build_knn_graph(index, k, floor=DEFAULT_FLOOR if floor else np.inf,
                                    vectors=read)
        seconds = time.perf_counter() - t0
        points.append({"k": k, "completed": floor, "seconds": round(seconds, 2),
                       "load_average": _load(),
                       "entries": int(len(graph.indices)),
                       "profile_s": _profile(profiler),
                       **_pair_recall(graph, position, truth, n)})
        _say(f"    curve k={k} completed={floor}: {points[-1]}")
    return points


def _exact_knn_bound(vectors: np.ndarray, truth: np.ndarray, k: int) -> float:
    """Pair recall of an exact k-NN graph: what any k-neighbour graph can reach at best."""
    n = len(vectors)
    idx, sim = exact.top_k(vectors, vectors, k + 1)
    rows = np.repeat(np.arange(n), idx.shape[1])
    keep = (sim.ravel() >= THRESHOLD) & (idx.ravel() != rows)
    found = exact.pair_codes(rows[keep], idx.ravel()[keep], n)
    return _recall(found, truth)


# Where a graph build's time goes: these functions' cumulative seconds (cProfile).
PROFILED = {"hnswlib knn_query": ("hnsw.py", "query"),
            "vectors read from the store": ("embeddings.py", "read_vectors"),
            "dense neighbourhoods (exact)": ("dense.py", "complete_dense"),
            "rows sorted into the graph": ("graph.py", "from_rows")}


def _profile(profiler: cProfile.Profile) -> dict:
    stats = pstats.Stats(profiler).stats
    out = {}
    for label, (file, name) in PROFILED.items():
        out[label] = round(sum(v[3] for (f, _, fn), v in stats.items()
                               if f.endswith(file) and fn == name), 2)
    return out


def _paraphrase_mining(vectors: np.ndarray, truth: np.ndarray) -> dict:
    import torch
    from sentence_transformers.util import paraphrase_mining_embeddings

    tensor = torch.from_numpy(vectors)
    t0 = time.perf_counter()
    triples = paraphrase_mining_embeddings(tensor)
    seconds = time.perf_counter() - t0
    kept = np.asarray([(i, j) for score, i, j in triples if score >= THRESHOLD],
                      dtype=np.int64).reshape(-1, 2)
    found = exact.pair_codes(kept[:, 0], kept[:, 1], len(vectors))
    return {"seconds": round(seconds, 2), "load_average": _load(), "pairs_found": int(len(found)),
            "pairs_returned": len(triples), "pair_recall": _recall(found, truth),
            "options": "defaults: top_k=100, max_pairs=500000"}


def _community_detection(vectors: np.ndarray, truth: np.ndarray) -> dict:
    import torch
    from sentence_transformers.util import community_detection

    tensor = torch.from_numpy(vectors)
    t0 = time.perf_counter()
    clusters = community_detection(tensor, threshold=THRESHOLD, min_community_size=2)
    seconds = time.perf_counter() - t0
    labels = np.full(len(vectors), -1, dtype=np.int64)
    for c, members in enumerate(clusters):
        labels[np.asarray(members, dtype=np.int64)] = c
    return {"seconds": round(seconds, 2), "load_average": _load(), "clusters": len(clusters),
            "clustered_pair_recall": _clustered_recall(labels, truth, len(vectors)),
            "options": "threshold=0.8, min_community_size=2"}


def _recall(found: np.ndarray, truth: np.ndarray) -> float:
    if not len(truth):
        return 1.0
    return round(float(np.isin(truth, found, assume_unique=True).mean()), 4)


def _clustered_recall(labels: np.ndarray, truth: np.ndarray, n: int) -> float:
    if not len(truth):
        return 1.0
    i, j = truth // n, truth % n
    return round(float(np.mean((labels[i] >= 0) & (labels[i] == labels[j]))), 4)


def present(result: dict, results: dict | None = None) -> dict:
    headline, rows, recut_rows = [], [], []
    for s in result["sizes"]:
        n, d = s["items"], s["duplens"]
        pm, cd = s["paraphrase_mining"], s["community_detection"]
        label = f"{n // 1000}k" if n % 1000 == 0 else f"{n:,}"
        best_name, best = min((("community_detection", cd["seconds"]),
                               ("paraphrase_mining", pm["seconds"])), key=lambda x: x[1])
        speedup = best / d["seconds"]
        at_goal_size = n >= 100_000
        worst_recut = max(d["recut_seconds"].values())
        with_index = d["index_seconds"] + d["seconds"]
        faster_is = (f"{best_name} on the same embeddings (the faster of "
                     "paraphrase_mining_embeddings and community_detection), same run")
        headline += [
            {"figure": f"all clusters at {THRESHOLD}, {label} items (graph + cut; the index "
                       "is built at import, for search)",
             "duplens": f"{d['seconds']:.2f} s", "baseline": f"{best:.2f} s",
             "baseline_is": faster_is,
             "ratio": _speed(speedup), "goal": f"≥ {GOAL_SPEEDUP:g}× at 100k",
             "met": (speedup >= GOAL_SPEEDUP) if at_goal_size else None},
            {"figure": f"all clusters at {THRESHOLD}, {label} items (index build + graph + "
                       "cut)",
             "duplens": f"{with_index:.2f} s", "baseline": f"{best:.2f} s",
             "baseline_is": faster_is,
             "ratio": _speed(best / with_index), "goal": f"≥ {GOAL_SPEEDUP:g}× at 100k",
             "met": (best / with_index >= GOAL_SPEEDUP) if at_goal_size else None},
            {"figure": f"pair recall at {THRESHOLD}, {label} items",
             "duplens": f"{d['pair_recall']:.4f}",
             "baseline": f"{pm['pair_recall']:.4f}",
             "baseline_is": "paraphrase_mining_embeddings on the same embeddings, same run",
             "ratio": f"{d['pair_recall'] / max(pm['pair_recall'], 1e-9):.3f}",
             "goal": f"≥ {GOAL_RECALL} at 100k",
             "met": (d["pair_recall"] >= GOAL_RECALL) if at_goal_size else None},
            {"figure": f"pair recall at {THRESHOLD}, {label} items, k={d['k_knob']['k']} "
                       f"(`clusters.cut(k=...)`)",
             "duplens": f"{d['k_knob']['pair_recall']:.4f} in {d['k_knob']['seconds']:.2f} s",
             "baseline": f"{pm['pair_recall']:.4f} in {pm['seconds']:.2f} s",
             "baseline_is": "paraphrase_mining_embeddings on the same embeddings, same run",
             "ratio": _speed(pm["seconds"] / d["k_knob"]["seconds"]),
             "goal": f"≥ {GOAL_RECALL} at 100k",
             "met": (d["k_knob"]["pair_recall"] >= GOAL_RECALL) if at_goal_size else None},
            {"figure": f"re-cluster at a new threshold, {label} items (slowest of "
                       f"{len(d['recut_seconds'])})",
             "duplens": f"{worst_recut:.3f} s", "baseline": f"{best:.2f} s",
             "baseline_is": f"a full rerun of {best_name} (it keeps nothing between "
                            "thresholds), same run",
             "ratio": _speed(best / max(worst_recut, 1e-9)),
             "goal": f"< {GOAL_RECUT_S:g} s", "met": worst_recut < GOAL_RECUT_S},
        ]
        kk = d["k_knob"]
        bound = s["exact_knn_pair_recall"]
        rows += [
            [label, f"Duplens, k={d['k']} (default): graph + cut",
             f"{d['graph_seconds']:.2f} + {d['cut_seconds']:.2f}",
             f"**{d['seconds']:.2f}**", f"{d['pair_recall']:.4f}",
             f"{d['clustered_pair_recall']:.4f}", d["clusters"]],
            [label, f"Duplens, k={kk['k']}: graph + cut",
             f"{kk['graph_seconds']:.2f} + {kk['cut_seconds']:.2f}", f"{kk['seconds']:.2f}",
             f"{kk['pair_recall']:.4f}", f"{kk['clustered_pair_recall']:.4f}", kk["clusters"]],
            [label, f"bound: exact {d['k']}-NN / {kk['k']}-NN graph", "", "",
             f"{bound[str(d['k'])]:.4f} / {bound[str(kk['k'])]:.4f}", "", ""],
            [label, "paraphrase_mining_embeddings", "", f"{pm['seconds']:.2f}",
             f"{pm['pair_recall']:.4f}", "", ""],
            [label, "community_detection", "", f"{cd['seconds']:.2f}", "",
             f"{cd['clustered_pair_recall']:.4f}", cd["clusters"]],
        ]
        for run in (d, kk):
            recut_rows.append([label, f"k={run['k']}", f"{s['exact_pairs']:,}",
                               f"{d['index_seconds']:.1f}",
                               *[f"{run['recut_seconds'][str(t)]:.3f}"
                                 for t in RECUT_THRESHOLDS]])
    curve_rows = [[f"{s['items'] // 1000}k", p["k"], "yes" if p["completed"] else "no (plain)",
                   f"{p['seconds']:.2f}", f"{p['pair_recall']:.4f}", f"{p['entries']:,}",
                   " / ".join(f"{x:g}" for x in p["load_average"])]
                  for s in result["sizes"] for p in s["duplens"].get("curve", [])]
    sizes = result["sizes"]
    xs = [s["items"] for s in sizes]
    return {
        "headline": headline,
        "tables": [
            {"title": f"All clusters at {THRESHOLD}: seconds and recall of the exact pairs",
             "columns": ["items", "method", "graph + cut s", "total s", "pair recall",
                         "clustered-pair recall", "clusters"],
             "rows": rows},
            {"title": "Re-clustering from the kept graph (`clusters.cut`), seconds; the "
                      "index build (the product builds it during import, for search; the "
                      "summary gives the totals with and without it)",
             "columns": ["items", "graph", "exact pairs ≥ 0.8", "index build s",
                         *[f"re-cut at {t}" for t in RECUT_THRESHOLDS]],
             "rows": recut_rows},
            {"title": f"The graph's recall/time curve at {THRESHOLD} (graph build only, on the "
                      "project's index; completed = dense neighbourhoods searched exactly "
                      "above the floor 0.75)",
             "columns": ["items", "k", "completed", "build s", "pair recall",
                         "graph entries", "load average after"],
             "rows": curve_rows},
        ],
        "plots": [{
            "file": "mining.png", "title": f"All duplicate clusters at {THRESHOLD}",
            "xlabel": "items", "ylabel": "seconds", "logx": True, "logy": True,
            "series": [
                {"label": "Duplens: kNN graph + cut", "x": xs,
                 "y": [s["duplens"]["seconds"] for s in sizes]},
                {"label": "Duplens: re-cut (slowest)", "x": xs,
                 "y": [max(s["duplens"]["recut_seconds"].values()) for s in sizes]},
                {"label": "paraphrase_mining_embeddings", "x": xs,
                 "y": [s["paraphrase_mining"]["seconds"] for s in sizes]},
                {"label": "community_detection", "x": xs,
                 "y": [s["community_detection"]["seconds"] for s in sizes]},
            ]}],
        "notes": [result["data"] + ".",
                  "The graph holds each text's k nearest, mirrored, and every pair at or above "
                  "the floor 0.75 inside the neighbourhoods where a text's k-th neighbour is "
                  "still above it (exact search there): its pair recall is no longer bounded "
                  "by k. The bound row is the pair recall of a plain exact k-NN graph, what "
                  "the product reached before.",
                  "Clustered-pair recall is lower than pair recall for both greedy methods by "
                  "design: a member joins one centre's cluster, so two texts above the "
                  "threshold can end in different clusters."],
    }


def _speed(ratio: float) -> str:
    """"3.2× faster" or "2.5× slower": a ratio of times as words."""
    return f"{ratio:.1f}× faster" if ratio >= 1 else f"{1 / ratio:.1f}× slower"


def _load() -> list[float]:
    """The load average when a figure was taken: other work on the machine slows it."""
    return [round(x, 2) for x in os.getloadavg()]


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)

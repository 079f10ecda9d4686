"""Duplicate mining at 1M items: the completed graph and a cut, recall estimated on a sample.

    python -m benchmarks --only mining_1m          (full runs only; not part of --quick)
    python -m benchmarks.mining_1m [--sample 2000] [--baseline-sizes 20000,40000,80000]

The project is scale_1m's cached 1M-item project (benchmarks/scale_1m.py: the 43,944 real
question embeddings, then noisy copies of them, imported as rows "question [copy k]", index
built by the product), the same kind of data as mining.py's 100k set but with about 22
copies of each question instead of 1.3. It is copied first (the graph is stored into the
project file; scale_1m measures that file's size). In a fresh process (so its peak RSS is
the product's): the saved index is loaded, then `project.clusters.graph()` and
`project.clusters.cut(0.8)` are timed as in mining.py, then the re-cuts.

Pair recall against exact search, estimated: `--sample` texts drawn uniformly at random;
for each, every other text at 0.8 or above among all 1M by blocked matrix products (the
truth), and the ones its graph row holds. The ratio of the sums estimates the pair recall
(each pair is drawn through either of its texts with the same chance); its standard error
is the ratio estimator's, over sampled texts.

Baselines: paraphrase_mining_embeddings (defaults) and community_detection(threshold=0.8,
min_community_size=2) cannot run on 1M vectors here in reasonable time (their cost grows
with n²: every pair is scored), so each is timed on random samples of the 1M vectors of
growing size; the exponent b of time ∝ nᵇ is fitted to those times (least squares in
log-log) and the largest sample's time extrapolated to 1M with it; the n² extrapolation is
given beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks import corpus, scale_1m
from benchmarks.child_peak import json_child
from benchmarks.mining import THRESHOLD, time_graph_and_cuts

ITEMS = 1_000_000
SAMPLE = 2000
BASELINE_SIZES = (20_000, 40_000, 80_000)
GOAL_RECALL = 0.95
GOAL_SPEEDUP = 10.0
_BLOCK = 50_000   # rows of the exact search's matrix products (2,000 x 50,000 scores)


def run(quick: bool, sample: int = SAMPLE,
        baseline_sizes: tuple[int, ...] = BASELINE_SIZES) -> dict:
    path = scale_1m.project_path(ITEMS)
    if not path.exists():
        path, _ = scale_1m.cached_project(ITEMS)
    index_build_s = _ensure_index(path)
    with tempfile.TemporaryDirectory(prefix="duplens-mining-1m-", dir=corpus.CACHE) as tmp:
        work = Path(tmp) / "mining.duplens"
        _say(f"  copying the {ITEMS:,}-item project…")
        shutil.copyfile(path, work)
        if index_build_s is None:   # the cached project's index: build one again, timed
            _say("  Duplens: the index built from the stored vectors (own process)…")
            index_build_s = _child(["--build-index", str(work)])["index_build_seconds"]
        sample_file = Path(tmp) / "sample.npz"
        _say("  Duplens: graph + cut (own process)…")
        ours = _child(["--measure", str(work), "--sample", str(sample),
                       "--sample-file", str(sample_file)])
        _say("  exact pairs of the sampled texts…")
        ours.update(_sample_recall(work, sample_file))
        baselines = _baselines(work, baseline_sizes)
    result = {"items": ITEMS, "threshold": THRESHOLD, "sample_texts": sample,
              "data": "scale_1m's project: real question embeddings plus noisy copies (σ per "
                      "row uniform in [0.01, 0.05], renormalised), about 22 per question",
              "index_build_seconds": index_build_s, "duplens": ours, **baselines}

    return result


def _ensure_index(path: Path) -> float | None:
    """Build and save the project's index where the cached project has none (a build that
    stopped before its last step); seconds taken, None when it was there (then `run` times
    a build on its copy: the summary gives clustering with and without it)."""
    from engine.project import Project
    from engine.store.schema import indexes

    with Project.open(path) as project:
        with project.store.read() as conn:
            saved = conn.execute(indexes.select()).first() is not None
        if saved:
            return None
        _say(f"  building the {ITEMS:,}-item project's index once (kept in the cache)…")
        t0 = time.perf_counter()
        project.vectors.index()
        return round(time.perf_counter() - t0, 1)


# -- Duplens, in its own process -------------------------------------------------------------
def build_index(path: Path) -> dict:
    """Seconds for the product to build the project's index from its stored vectors (what
    an import ends with), after the saved one is dropped from this copy of the project."""
    from engine.index.side_file import folder_for
    from engine.project import Project
    from engine.store.schema import indexes

    shutil.rmtree(folder_for(path), ignore_errors=True)
    with Project.open(path) as project:
        with project.store.write() as conn:
            conn.execute(indexes.delete())
        t0 = time.perf_counter()
        project.vectors.index()
        return {"index_build_seconds": round(time.perf_counter() - t0, 1)}


def measure(path: Path, sample: int, sample_file: Path) -> dict:
    from engine.project import Project
    from engine.services.clusters import DEFAULT_NEIGHBOURS

    with Project.open(path) as project:
        t0 = time.perf_counter()
        project.vectors.index()
        load_s = time.perf_counter() - t0
        rss_index = scale_1m.current_rss_mib()
        graph, clusters, graph_s, cut_s, recut = time_graph_and_cuts(project,
                                                                     DEFAULT_NEIGHBOURS)
        load_graph = _load()
        rng = np.random.default_rng(0)
        rows = np.sort(rng.choice(len(graph.ids), size=min(sample, len(graph.ids)),
                                  replace=False))
        starts, stops = graph.indptr[rows], graph.indptr[rows + 1]
        found_rows, found_ids = [], []
        for r, lo, hi in zip(rows.tolist(), starts.tolist(), stops.tolist(), strict=True):
            keep = graph.sims[lo:hi] >= THRESHOLD
            nbrs = graph.ids[graph.indices[lo:hi][keep]]
            found_rows.append(np.full(len(nbrs), r))
            found_ids.append(nbrs)
        np.savez(sample_file, sample_ids=graph.ids[rows],
                 found_sample=graph.ids[np.concatenate(found_rows)] if found_rows
                 else np.empty(0, np.int64),
                 found_ids=np.concatenate(found_ids) if found_ids else np.empty(0, np.int64))
        return {"index_load_seconds": round(load_s, 2), "graph_seconds": round(graph_s, 1),
                "cut_seconds": round(cut_s, 2), "seconds": round(graph_s + cut_s, 1),
                "recut_seconds": recut, "clusters": len(clusters),
                "graph_entries": int(len(graph.indices)),
                "rss_after_index_load_mib": rss_index,
                "peak_rss_mib": scale_1m.peak_rss_mib(), "load_average": load_graph,
                "load_average_after_cut": _load()}


def _sample_recall(path: Path, sample_file: Path) -> dict:
    """Pair recall on the sampled texts against exact search over all stored vectors."""
    from engine.project import Project
    from engine.store.embeddings import iter_embeddings

    with np.load(sample_file) as z:
        sample_ids, found_sample, found_ids = z["sample_ids"], z["found_sample"], z["found_ids"]
    t0 = time.perf_counter()
    with Project.open(path) as project:
        model_id, dim = project.vectors.model_id(), project.vectors.index().dim
        with project.store.read() as conn:
            queries = scale_1m_vectors(conn, model_id, dim, sample_ids)
            truth_s, truth_o = [], []
            for ids, vecs in iter_embeddings(conn, model_id, dim, batch=_BLOCK):
                scores = queries @ vecs.T
                i, j = np.nonzero(scores >= THRESHOLD)
                keep = sample_ids[i] != ids[j]
                truth_s.append(sample_ids[i[keep]])
                truth_o.append(ids[j[keep]])
    exact_s = time.perf_counter() - t0
    truth_s, truth_o = np.concatenate(truth_s), np.concatenate(truth_o)
    big = np.int64(1) << 32
    found = np.isin(truth_s * big + truth_o, found_sample * big + found_ids)
    order = np.searchsorted(sample_ids, truth_s)
    per_text_truth = np.bincount(order, minlength=len(sample_ids)).astype(float)
    per_text_found = np.bincount(order[found], minlength=len(sample_ids)).astype(float)
    recall = per_text_found.sum() / max(per_text_truth.sum(), 1.0)
    # Ratio estimator's standard error over sampled texts.
    resid = per_text_found - recall * per_text_truth
    m = len(sample_ids)
    se = float(np.sqrt(resid.var(ddof=1) / m) / max(per_text_truth.mean(), 1e-12)) if m > 1 \
        else float("nan")
    return {"sample_pairs_exact": int(len(truth_s)), "sample_pairs_found": int(found.sum()),
            "sample_texts_with_pairs": int((per_text_truth > 0).sum()),
            "pair_recall": round(float(recall), 4), "pair_recall_se": round(se, 4),
            "exact_sample_seconds": round(exact_s, 1)}


def scale_1m_vectors(conn, model_id: int, dim: int, text_ids: np.ndarray) -> np.ndarray:
    from engine.store.embeddings import read_vectors

    v = read_vectors(conn, model_id, dim, text_ids)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


# -- baselines on samples --------------------------------------------------------------------
def _baselines(path: Path, sizes: tuple[int, ...]) -> dict:
    import torch
    from sentence_transformers.util import community_detection, paraphrase_mining_embeddings

    from engine.project import Project
    from engine.store.embeddings import read_vectors

    rng = np.random.default_rng(1)
    drawn = np.sort(rng.choice(np.arange(1, ITEMS + 1), size=max(sizes), replace=False))
    with Project.open(path, read_only=True) as project:
        model_id, dim = project.vectors.model_id(), project.vectors.index().dim
        with project.store.read() as conn:
            pool = read_vectors(conn, model_id, dim, drawn)
    pool = pool[rng.permutation(len(pool))]   # a prefix of it is a random sample too
    out: dict[str, list[dict]] = {"paraphrase_mining": [], "community_detection": []}
    for n in sorted(sizes):
        tensor = torch.from_numpy(np.ascontiguousarray(pool[:n]))
        for name, fn in (("paraphrase_mining", paraphrase_mining_embeddings),
                         ("community_detection",
                          lambda t: community_detection(t, threshold=THRESHOLD,
                                                        min_community_size=2))):
            _say(f"  {name} on {n:,} sampled vectors…")
            t0 = time.perf_counter()
            fn(tensor)
            out[name].append({"items": n, "seconds": round(time.perf_counter() - t0, 2),
                              "load_average": _load()})
    return {name: {"samples": points, **_extrapolate(points)} for name, points in out.items()}


def _extrapolate(points: list[dict]) -> dict:
    """Time at 1M from the samples: the fitted exponent, and n² from the largest sample."""
    n = np.asarray([p["items"] for p in points], dtype=float)
    t = np.asarray([p["seconds"] for p in points], dtype=float)
    b = float(np.polyfit(np.log(n), np.log(t), 1)[0]) if len(n) > 1 else 2.0
    return {"fitted_exponent": round(b, 2),
            "seconds_at_1m_fitted": round(float(t[-1] * (ITEMS / n[-1]) ** b), 0),
            "seconds_at_1m_n2": round(float(t[-1] * (ITEMS / n[-1]) ** 2), 0)}


# -- presentation ------------------------------------------------------------------------------
def present(result: dict, results: dict | None = None) -> dict:
    d = result["duplens"]
    pm, cd = result["paraphrase_mining"], result["community_detection"]
    best_name, best = min((("community_detection", cd["seconds_at_1m_fitted"]),
                           ("paraphrase_mining", pm["seconds_at_1m_fitted"])),
                          key=lambda x: x[1])
    speedup = best / d["seconds"]
    exponent = (cd if best_name == "community_detection" else pm)["fitted_exponent"]
    worst_recut = max(d["recut_seconds"].values())
    samples = (cd if best_name == "community_detection" else pm)["samples"]
    sizes = ", ".join(f"{x:,}" for x in (sample["items"] for sample in samples))
    extrapolated = (f"{best_name} timed on random samples of {sizes} vectors and "
                    f"extrapolated to 1M (fitted n^{exponent}); not run at 1M")
    index_s = result.get("index_build_seconds")
    headline = [
        {"figure": f"all clusters at {THRESHOLD}, 1M items (graph + cut; the index is built "
                   "at import, for search)",
         "duplens": f"{d['seconds']:.1f} s", "baseline": f"{best:.0f} s",
         "baseline_is": extrapolated,
         "ratio": f"{speedup:.1f}× faster" if speedup >= 1 else f"{1 / speedup:.1f}× slower",
         "goal": f"≥ {GOAL_SPEEDUP:g}×", "met": speedup >= GOAL_SPEEDUP},
        *([{"figure": f"all clusters at {THRESHOLD}, 1M items (index build + graph + cut)",
            "duplens": f"{index_s + d['seconds']:.1f} s", "baseline": f"{best:.0f} s",
            "baseline_is": extrapolated,
            "ratio": f"{best / (index_s + d['seconds']):.1f}× faster",
            "goal": f"≥ {GOAL_SPEEDUP:g}×",
            "met": best / (index_s + d["seconds"]) >= GOAL_SPEEDUP}] if index_s else []),
        {"figure": f"pair recall at {THRESHOLD}, 1M items (sample of "
                   f"{result['sample_texts']:,} texts)",
         "duplens": f"{d['pair_recall']:.4f} ± {d['pair_recall_se']:.4f}",
         "baseline": "1", "baseline_is": "exact search for the sampled texts, same run",
         "ratio": "—", "goal": f"≥ {GOAL_RECALL}",
         "met": d["pair_recall"] >= GOAL_RECALL},
        {"figure": "re-cluster at a new threshold, 1M items (slowest)",
         "duplens": f"{worst_recut:.2f} s", "baseline": "—", "ratio": "—", "goal": "—",
         "met": None},
        {"figure": "peak RSS, 1M items, graph + cut", "duplens": f"{d['peak_rss_mib']:,} MiB",
         "baseline": "—", "ratio": "—", "goal": "—", "met": None},
    ]
    rows = [[name, p["items"], f"{p['seconds']:.2f}",
             " / ".join(f"{x:g}" for x in p["load_average"])]
            for name, b in (("paraphrase_mining", pm), ("community_detection", cd))
            for p in b["samples"]]
    rows += [[name, f"1,000,000 (n^{b['fitted_exponent']}; n^2)",
              f"{b['seconds_at_1m_fitted']:.0f}; {b['seconds_at_1m_n2']:.0f}", ""]
             for name, b in (("paraphrase_mining", pm), ("community_detection", cd))]
    return {"headline": headline,
            "tables": [{"title": "Baselines on random samples of the 1M vectors, and "
                                 "extrapolated to 1M",
                        "columns": ["method", "items", "seconds", "load average after"],
                        "rows": rows}],
            "notes": [result["data"] + ".",
                      f"Duplens: graph {d['graph_seconds']} s + cut {d['cut_seconds']} s, "
                      f"{d['clusters']:,} clusters, re-cuts {d['recut_seconds']}, load "
                      f"{d['load_average']}; recall from {d['sample_pairs_exact']:,} exact "
                      f"pairs of {d['sample_texts_with_pairs']:,} sampled texts (± one "
                      "standard error).",
                      *([f"The 1M index was built in {index_s:.0f} s (hnswlib, every core): "
                         "the product builds it during import, for search, so the summary "
                         "gives the clustering with and without it."] if index_s else [])]}


def _child(args: list[str]) -> dict:
    """Run this module with `args` in a fresh process; its last stdout line is JSON."""
    return json_child("benchmarks.mining_1m", args)


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sample", type=int, default=SAMPLE)
    ap.add_argument("--baseline-sizes", default=",".join(map(str, BASELINE_SIZES)))
    ap.add_argument("--measure", help=argparse.SUPPRESS)
    ap.add_argument("--sample-file", help=argparse.SUPPRESS)
    ap.add_argument("--build-index", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.build_index:
        print(json.dumps(build_index(Path(args.build_index))))
        return
    if args.measure:
        print(json.dumps(measure(Path(args.measure), args.sample, Path(args.sample_file))))
        return
    sizes = tuple(int(x) for x in args.baseline_sizes.split(","))
    print(json.dumps(run(False, args.sample, sizes), indent=1))


if __name__ == "__main__":
    main()

"""Week after week: cluster ids that stay, incremental clusters against whole ones, and the
time from "a week's rows encoded" to "clusters updated".

    python -m benchmarks --only weekly [--quick]
    python -m benchmarks.weekly [--quick] [--part weeks|speed]

Weeks (churn and quality): distinct Quora questions (benchmarks/data.py), shuffled with a
fixed seed so that duplicates of one another arrive in different weeks, in five weekly
files: 20,000 then 4 x 5,000 (--quick: 1,000 then 4 x 250). Each file goes through the
real importer and the product's encode job; the vectors are the bundled model's, computed
once and cached (benchmarks/corpus.py), handed to the encode job by `CachedVectors`, an
executor (the seam Ray plugs into) that looks a batch's texts up instead of running the
model again. After each import the product cuts at `THRESHOLD` as the window or
`duplens duplicates` does (incremental after the first week), and:

- id churn: among the clusters of last week whose earlier rows are, this week, exactly the
  earlier rows of one cluster (the same old members, new rows may have joined), the rows
  whose cluster_id changed. Goal: 0.
- quality: pair F1 (pairs of texts in one cluster) of the product's incremental clusters
  against a whole recut of the same project (the graph built again from the index,
  `build_knn_graph`, and cut, `cut_clusters`). Goal: F1 within 0.5 point of 100. For
  context, each one's F1 on the Quora labels of the pairs whose two questions are in.

Speed: scale_1m's 1M-item project (benchmarks/scale_1m.py; --quick: a 5,000-item one
built the same way), copied, reviewed once (graph, cut at `THRESHOLD`, ids recorded);
then 10,000 more rows (--quick: 500: more noisy copies of real questions, as the build
makes them) are imported and encoded through the product, and the clock runs over
`project.clusters.cut(THRESHOLD)` (graph updated, changed clusters re-cut, built and
labelled); three such trials, each on a fresh copy, and their median counts. The
baseline, measured in the same run on the same rows: the project opened afresh with its
stored graph removed, the clock over graph + cut (what adding rows cost before). Goal:
7.5 s at 1M, stated with the ratio.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from benchmarks import corpus
from benchmarks.child_peak import json_child
from benchmarks.data import QUORA, write_questions_csv
from benchmarks.registry import BY_NAME

THRESHOLD = 0.8
WEEKS_FULL = (20_000, 5_000, 5_000, 5_000, 5_000)
WEEKS_QUICK = (1_000, 250, 250, 250, 250)
SPEED_ITEMS_FULL, SPEED_ADD_FULL = 1_000_000, 10_000
SPEED_ITEMS_QUICK, SPEED_ADD_QUICK = 5_000, 500
SPEED_TRIALS = 3
GOAL_CHURN = 0
GOAL_F1_POINTS = 0.5
GOAL_SECONDS = 7.5
RESULTS = Path(__file__).resolve().parent / "results" / "weekly.json"
TITLE = BY_NAME["weekly"].title
SEED = 24


class CachedVectors:
    """An encode job's executor that hands back the bundled model's cached vectors of each
    batch's texts (computed by the real encoder for any text it lacks)."""

    def __init__(self, vectors: dict[str, np.ndarray]) -> None:
        self._vectors = vectors

    def map(self, encoder, batches):
        from engine.encoding.encoder import EncodeBatch, EncodedBatch

        for batch in batches:
            missing = [i for i, t in enumerate(batch.texts) if t not in self._vectors]
            if missing:
                done = encoder.encode_batch(EncodeBatch(
                    [batch.text_ids[i] for i in missing], [batch.texts[i] for i in missing]))
                for i, v in zip(missing, done.vectors, strict=True):
                    self._vectors[batch.texts[i]] = v
            counts = batch.token_counts or [0] * len(batch.texts)
            yield EncodedBatch(list(batch.text_ids),
                               np.stack([self._vectors[t] for t in batch.texts]),
                               [c > encoder.max_seq_length for c in counts])

    def close(self) -> None:
        """Nothing to release."""


# -- weeks: churn and quality ------------------------------------------------------------------
def weeks(quick: bool) -> dict:
    from engine.project import Project

    sizes = WEEKS_QUICK if quick else WEEKS_FULL
    texts = _shuffled_questions(sum(sizes))
    vectors = _vectors(texts, quick)
    labelled = _quora_pairs()
    rows = []
    with tempfile.TemporaryDirectory(prefix="duplens-weekly-") as tmp:
        path = Path(tmp) / "weekly.duplens"
        with Project.open(path, create=True) as project:
            project.model.attach(corpus.encoder(), is_default=True)
            earlier: dict[str, str] = {}
            batch_of: dict[str, int] = {}
            start = 0
            for week, size in enumerate(sizes, start=1):
                part = texts[start:start + size]
                src = _week_file(Path(tmp) / f"week{week}.csv", part, start)
                batch_of.update({f"q{start + i}": week for i in range(len(part))})
                start += size
                project.rows.import_table(src, ["question"], id_column="id")
                project.vectors.encode(executor=CachedVectors(vectors))
                t0 = time.perf_counter()
                clusters = project.clusters.cut(THRESHOLD)
                cut_s = time.perf_counter() - t0
                now = {m.id: c.cluster_id for c in clusters for m in (*c.members, *c.rejected)}
                churn = _churn(earlier, now, batch_of, week)
                ours = _text_pairs([[m.text_id for m in c.members] for c in clusters])
                whole = _whole_recut_pairs(project)
                known = _labelled_in(project, labelled)
                rows.append({"week": week, "rows": size, "rows_total": start,
                             "cut_seconds": round(cut_s, 2), "clusters": len(clusters),
                             **churn, **_agreement(ours, whole),
                             "labels_f1_incremental": _labels_f1(ours, known),
                             "labels_f1_whole": _labels_f1(whole, known),
                             "labelled_pairs": len(known)})
                earlier = now
                _say(f"  week {week}: {rows[-1]}")
    return {"threshold": THRESHOLD, "weeks": rows, "sizes": list(sizes)}


def _vectors(texts: list[str], quick: bool) -> dict[str, np.ndarray]:
    """The bundled model's vectors of `texts`, cached: a full run embeds every question (the
    cache other benchmarks share), a quick one only the texts it needs."""
    if quick:
        return dict(zip(texts, corpus.embed(texts), strict=True))
    every = corpus.questions()
    found = dict(zip((q.strip() for q in every), corpus.embed(every), strict=True))
    return {t: found[t] for t in texts}


def _shuffled_questions(n: int) -> list[str]:
    from engine.text import normalise

    seen, keep = set(), []
    for q in corpus.questions():
        key = normalise(q)
        if q.strip() and key not in seen:
            seen.add(key)
            keep.append(q.strip())
    order = np.random.default_rng(SEED).permutation(len(keep))
    return [keep[i] for i in order[:n]]


def _week_file(path: Path, texts: list[str], first: int) -> Path:
    import csv

    with path.open("w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["id", "question"])
        w.writerows([f"q{first + i}", t] for i, t in enumerate(texts))
    return path


def _churn(earlier: dict[str, str], now: dict[str, str], batch_of: dict[str, int],
           week: int) -> dict:
    """Rows of earlier weeks whose cluster kept exactly its earlier rows but whose id moved."""
    before: dict[str, set[str]] = defaultdict(set)
    for row, cid in earlier.items():
        before[cid].add(row)
    old_rows_now: dict[str, set[str]] = defaultdict(set)
    for row, cid in now.items():
        if batch_of[row] < week:
            old_rows_now[cid].add(row)
    stable = moved = checked = 0
    for cid, rows in before.items():
        targets = {now.get(r) for r in rows}
        if len(targets) != 1 or None in targets:
            continue
        target = targets.pop()
        if old_rows_now[target] != rows:
            continue
        stable += 1
        checked += len(rows)
        if target != cid:
            moved += len(rows)
    changed_any = sum(1 for r, cid in earlier.items() if now.get(r) not in (None, cid))
    return {"id_churn_rows": moved, "rows_checked": checked, "clusters_unchanged": stable,
            "rows_with_another_id": changed_any}


def _text_pairs(groups) -> set[tuple[int, int]]:
    pairs = set()
    for group in groups:
        ids = sorted(set(group))
        pairs.update((a, b) for i, a in enumerate(ids) for b in ids[i + 1:])
    return pairs


def _whole_recut_pairs(project) -> set[tuple[int, int]]:
    """Text pairs of the project cut whole: the graph built again from the index."""
    from engine.dedup.cut import cut_clusters
    from engine.dedup.graph import build_knn_graph
    from engine.services.clusters import DEFAULT_NEIGHBOURS
    from engine.store import embeddings as embedding_store
    from engine.store import items as item_store

    index = project.vectors.index()
    model_id = project.vectors.model_id()
    with project.store.read() as conn:
        live = np.fromiter(item_store.live_text_ids(conn), dtype=np.int64)

    def read(ids):
        with project.store.read() as conn:
            return embedding_store.read_vectors(conn, model_id, index.dim, ids)

    graph = build_knn_graph(index, DEFAULT_NEIGHBOURS, np.intersect1d(index.ids(), live),
                            vectors=read)
    return _text_pairs([graph.ids[c.members].tolist()
                        for c in cut_clusters(graph, THRESHOLD)])


def _agreement(ours: set, whole: set) -> dict:
    both = len(ours & whole)
    precision = both / len(ours) if ours else 1.0
    recall = both / len(whole) if whole else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"pairs_incremental": len(ours), "pairs_whole": len(whole),
            "f1_vs_whole": round(100 * f1, 3)}


def _quora_pairs() -> list[tuple[str, str, int]]:
    out = []
    with gzip.open(QUORA, "rt", encoding="utf-8") as fh:
        next(fh)
        for line in fh:
            _, _, q1, q2, dup = line.rstrip("\n").split("\t")
            out.append((q1.strip(), q2.strip(), int(dup)))
    return out


def _labelled_in(project, labelled) -> list[tuple[int, int, int]]:
    """(text id, text id, label) of the labelled pairs whose two questions are imported."""
    from engine.store.items import text_ids_for_keys
    from engine.text import norm_key

    keys = {q: norm_key(q) for a, b, _ in labelled for q in (a, b)}
    with project.store.read() as conn:
        found = text_ids_for_keys(conn, set(keys.values()))
    out = []
    for a, b, dup in labelled:
        ta, tb = found.get(keys[a]), found.get(keys[b])
        if ta is not None and tb is not None and ta != tb:
            out.append((min(ta, tb), max(ta, tb), dup))
    return out


def _labels_f1(pairs: set, labelled) -> float:
    tp = sum(1 for a, b, d in labelled if d and (a, b) in pairs)
    fp = sum(1 for a, b, d in labelled if not d and (a, b) in pairs)
    fn = sum(1 for a, b, d in labelled if d and (a, b) not in pairs)
    return round(100 * 2 * tp / (2 * tp + fp + fn), 2) if tp else 0.0


# -- speed: adding a week's rows to a big project ----------------------------------------------
def speed(quick: bool) -> dict:
    from benchmarks import scale_1m

    items = SPEED_ITEMS_QUICK if quick else SPEED_ITEMS_FULL
    added = SPEED_ADD_QUICK if quick else SPEED_ADD_FULL
    path = _small_project(items) if quick else scale_1m.cached_project(items)[0]
    with tempfile.TemporaryDirectory(prefix="duplens-weekly-speed-", dir=corpus.CACHE) as tmp:
        work = Path(tmp) / "speed.duplens"
        _say(f"  copying the {items:,}-item project…")
        shutil.copyfile(path, work)
        measured = json_child("benchmarks.weekly", ["--measure-speed", str(work),
                                                    "--items", str(items),
                                                    "--added", str(added)])
    return {"items": items, "added": added, "threshold": THRESHOLD, **measured}


def _small_project(items: int) -> Path:
    """A project built as scale_1m builds its 1M one, with `items` rows (cached)."""
    from benchmarks import scale_1m

    path = corpus.CACHE / f"weekly-{items}.duplens"
    if not path.exists():
        corpus.CACHE.mkdir(parents=True, exist_ok=True)
        _say(f"  building a {items:,}-item project (cached in {path.parent})…")
        scale_1m.build_project(path, items)
    return path


def measure_speed(path: Path, items: int, added: int, trials: int = SPEED_TRIALS) -> dict:
    """In its own process, `trials` times on a fresh copy of the project (the last on `path`
    itself): review once, add `added` rows, time the incremental cut; the median counts,
    since one run varied from 6.3 to 8.2 s at 1M on this machine (memory: big fresh arrays
    on 2 busy cores). Then the whole graph + cut of the last trial's rows, and how far the
    two agree."""
    from benchmarks import scale_1m
    from engine.index.side_file import folder_for
    from engine.project import Project
    from engine.store.schema import blobs, meta

    base = scale_1m.base_rows()
    queries, pool = corpus.query_and_pool()
    real = np.concatenate([corpus.embed(pool), corpus.embed(queries)])[base]
    texts = [t + " [week 2]" for t in scale_1m.row_texts(items + added, base)[items:]]
    vectors = dict(zip(texts, scale_1m.row_vectors(real, items, items + added, seed=SEED),
                       strict=True))
    out: dict = {"incremental_trials": [], "load_average_trials": []}
    for trial in range(trials):
        last = trial == trials - 1
        work = path if last else path.with_name(f"trial-{trial}.duplens")
        if not last:                              # `path` is untouched until the last trial
            shutil.copyfile(path, work)
        with Project.open(work) as project:
            project.model.attach(corpus.encoder(), is_default=True)
            t0 = time.perf_counter()
            project.clusters.cut(THRESHOLD)
            out["first_review_seconds"] = round(time.perf_counter() - t0, 1)
            src = write_questions_csv(path.with_name("week2.csv"), texts)
            project.rows.import_table(src, ["question"])
            t0 = time.perf_counter()
            project.vectors.encode(executor=CachedVectors(vectors))
            out["encode_job_seconds"] = round(time.perf_counter() - t0, 1)
            out["load_average_trials"].append(list(os.getloadavg()))
            t0 = time.perf_counter()
            ours = project.clusters.cut(THRESHOLD)
            out["incremental_trials"].append(round(time.perf_counter() - t0, 2))
            ours_pairs = _text_pairs([[m.text_id for m in c.members] for c in ours])
            model_id = project.vectors.model_id()
        if not last:
            shutil.rmtree(folder_for(work), ignore_errors=True)
            for leftover in work.parent.glob(work.name + "*"):   # the file, -wal, -shm
                leftover.unlink()
    out["incremental_seconds"] = float(np.median(out["incremental_trials"]))
    out["load_average_before"] = out["load_average_trials"][-1]
    with Project.open(path) as project:
        with project.store.write() as conn:   # no stored graph: it is built again
            conn.execute(blobs.delete().where(blobs.c.name.like(f"knn/{model_id}/%")))
            conn.execute(meta.delete().where(meta.c.key.like(f"knn/{model_id}/%")))
        project.model.attach(corpus.encoder(), is_default=True)
        project.vectors.index()
        out["load_average_whole"] = list(os.getloadavg())
        t0 = time.perf_counter()
        whole = project.clusters.cut(THRESHOLD)
        out["whole_seconds"] = round(time.perf_counter() - t0, 2)
        whole_pairs = _text_pairs([[m.text_id for m in c.members] for c in whole])
    out.update(_agreement(ours_pairs, whole_pairs))
    out["ratio"] = round(out["whole_seconds"] / max(out["incremental_seconds"], 1e-9), 1)
    out["peak_rss_mib"] = scale_1m.peak_rss_mib()
    return out


# -- the suite's entry ---------------------------------------------------------------------------
def run(quick: bool, parts: tuple[str, ...] = ("weeks", "speed")) -> dict:
    result: dict = {}
    if "weeks" in parts:
        result["weeks"] = weeks(quick)
    if "speed" in parts:
        result["speed"] = speed(quick)
    return result


def present(result: dict, results: dict | None = None) -> dict:
    """Headline, tables and notes derived from the measured weeks and speed when the report
    renders (benchmarks/report.py)."""
    quick = "weeks" in result and result["weeks"].get("sizes") == list(WEEKS_QUICK)
    return _presentation(result, quick)


def _presentation(result: dict, quick: bool) -> dict:
    headline, tables, notes = [], [], []
    if "weeks" in result:
        w = result["weeks"]["weeks"]
        later = w[1:]
        churn = sum(r["id_churn_rows"] for r in later)
        worst = min((r["f1_vs_whole"] for r in w), default=100.0)
        headline.append({"figure": f"id churn over {len(later)} weekly imports "
                                   f"({'quick' if quick else 'Quora 20k + 4 x 5k'})",
                         "duplens": f"{churn} rows", "baseline": "ids by position",
                         "baseline_is": "clusters numbered 1..n by size at each cut, as "
                                        "before stable ids, on the same weeks, same run",
                         "ratio": "", "goal": "0", "met": churn <= GOAL_CHURN})
        headline.append({"figure": "pair F1, incremental clusters vs a whole recut (worst week)",
                         "duplens": f"{worst:.2f}", "baseline": "100 (whole recut)",
                         "baseline_is": "the whole graph mined and cut again after the same "
                                        "import, same run",
                         "ratio": "", "goal": f"within {GOAL_F1_POINTS} point",
                         "met": 100 - worst <= GOAL_F1_POINTS})
        tables.append({"title": "Week by week (Quora questions, threshold 0.8)",
                       "columns": ["week", "rows", "rows in project", "clusters",
                                   "clusters unchanged", "their rows", "id churn",
                                   "rows with another id", "F1 vs whole recut",
                                   "labels F1 incremental / whole", "cut s"],
                       "rows": [[r["week"], r["rows"], r["rows_total"], r["clusters"],
                                 r["clusters_unchanged"], r["rows_checked"],
                                 r["id_churn_rows"], r["rows_with_another_id"],
                                 f"{r['f1_vs_whole']:.2f}",
                                 f"{r['labels_f1_incremental']:.2f} / "
                                 f"{r['labels_f1_whole']:.2f}", r["cut_seconds"]]
                                for r in w]})
        notes.append("Rows with another id: rows of earlier weeks whose id changed because "
                     "their cluster did change (merged, split, left); the churn counts only "
                     "rows whose cluster kept exactly its earlier rows.")
    if "speed" in result:
        s = result["speed"]
        headline.append({"figure": f"adding {s['added']:,} rows to {s['items']:,}: encoded "
                                   f"to clusters updated",
                         "duplens": f"{s['incremental_seconds']:.2f} s",
                         "baseline": f"{s['whole_seconds']:.2f} s (graph + cut)",
                         "baseline_is": "the whole neighbour graph mined and cut again, "
                                        "same project, same run",
                         "ratio": f"{s['ratio']}x faster",
                         "goal": f"<= {GOAL_SECONDS} s at 1M",
                         "met": (s["incremental_seconds"] <= GOAL_SECONDS)
                         if s["items"] >= SPEED_ITEMS_FULL else None})
        if s.get("incremental_trials"):
            notes.append(f"Speed: the median of {len(s['incremental_trials'])} trials, each "
                         f"on a fresh copy of the project: "
                         f"{', '.join(f'{t:.2f}' for t in s['incremental_trials'])} s.")
        notes.append(f"Speed: pair F1 of the incremental cut against the whole one at "
                     f"{s['items']:,} items: {s['f1_vs_whole']:.3f} (the updated graph "
                     f"is not the rebuilt one: docs/architecture.md).")
    for part, when in sorted(result.get("measured", {}).items()):
        notes.append(f"The {part} part was measured on {when['date'][:10]} by "
                     f"`{when['command']}`.")
    return {"headline": headline, "tables": tables, "notes": notes}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.weekly")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--part", choices=("weeks", "speed"), action="append")
    ap.add_argument("--merge", action="store_true",
                    help="write the parts measured into benchmarks/results/weekly.json, "
                         "keeping the other part as it was measured (its date and command "
                         "stay with it)")
    ap.add_argument("--measure-speed", help=argparse.SUPPRESS)
    ap.add_argument("--items", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--added", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.measure_speed:
        print(json.dumps(measure_speed(Path(args.measure_speed), args.items, args.added)))
        return
    parts = tuple(args.part or ("weeks", "speed"))
    started = datetime.now(UTC).isoformat(timespec="seconds")
    result = run(args.quick, parts)
    if args.merge:
        command = "python -m benchmarks.weekly " + " ".join(sys.argv[1:] if argv is None
                                                            else argv)
        _say(f"merged into {merge_results(result, parts, args.quick, started, command)}")
    print(json.dumps(result, indent=1))


def merge_results(result: dict, parts: tuple[str, ...], quick: bool, date: str,
                  command: str, path: Path = RESULTS) -> Path:
    """The results file with `parts` replaced by this run's, and each part's own date and
    command recorded, so the page says when each figure was measured; the other part is
    kept only when it was measured in the same mode (quick or full)."""
    record = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    mode = "quick" if quick else "full"
    if record.get("mode") != mode:
        record = {"benchmark": "weekly", "title": TITLE, "mode": mode, "result": {}}
    earlier = record.get("result", {})
    dated = dict(earlier.get("measured", {}))
    for part in ("weeks", "speed"):
        if part in earlier and part not in dated:
            dated[part] = {"date": record.get("date"), "command": record.get("command")}
    merged = {part: earlier[part] for part in ("weeks", "speed") if part in earlier}
    for part in parts:
        merged[part] = result[part]
        dated[part] = {"date": date, "command": command}
    merged["measured"] = dated
    record["result"] = merged
    record["date"] = max(d["date"] for d in dated.values() if d.get("date"))
    runs = {(d.get("date"), d.get("command")) for d in dated.values()}
    if len(runs) > 1:
        # Parts of different runs: the page names each part's command, and no one run's
        # wall time stands for the whole.
        record["command"] = "; ".join(f"{d['command']} ({part})"
                                      for part, d in sorted(dated.items()))
        record.pop("wall_seconds", None)
    tmp = path.with_suffix(".json.part")
    tmp.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()

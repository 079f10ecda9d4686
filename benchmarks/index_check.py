"""Checking a saved index before hnswlib loads it, and what refusing one costs.

    python -m benchmarks --only index_check [--quick]      (--quick: 100k items; full: 100k, 1M)
    python -m benchmarks.index_check [--items N ...]       (the same, printed, not saved)

Opening a project checks its saved HNSW index file (`engine.index.index_check`) before
hnswlib's unchecked loader reads it; a file that does not add up is refused and the index is
rebuilt from the stored embeddings. Per size, on a file project of N texts and their
embeddings (benchmarks/corpus.py: real question embeddings plus noisy copies, written
straight into the store as `benchmarks.team_index` does; cached under
benchmarks/results/tmp/), in this process:

- rebuild: what opening does after a refusal (`engine.services.live_index`): a new index
  filled from the stored embeddings by `engine.index.reconcile` (hnswlib, every core), then
  saved (`save_index`: the blob and the side file). The first run makes the project's saved
  index this way; every run times it again.
- check: `check_index_file` on the saved side file, page cache warm, median of 5; beside it
  hnswlib's own `load_index` of the same file (median of 3), and `HnswIndex.load` (check,
  then hnswlib), the product's path, median of 3.

Timings need a quiet machine; each figure carries the load average at its start.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

from benchmarks import corpus

SIZES_QUICK = (100_000,)
SIZES_FULL = (100_000, 1_000_000)
CHECK_RUNS, LOAD_RUNS = 5, 3
BUILDER_VERSION = 1


def run(quick: bool) -> dict:
    sizes = SIZES_QUICK if quick else SIZES_FULL
    measured = [measure(n) for n in sizes]
    return {
        "sizes": measured,
        "data": corpus.NOISE_NOTE,
        "headline": [
            {"figure": f"check of a saved {m['items']:,}-item index ({m['index_mib']:,} MiB)",
             "duplens": f"{m['check_s']} s", "baseline": f"hnswlib load {m['hnswlib_load_s']} s",
             "ratio": f"{m['check_share']:.0%} of the load", "goal": None, "met": None}
            for m in measured] + [
            {"figure": f"rebuild after a refused {m['items']:,}-item index",
             "duplens": f"{m['rebuild_s']} s + save {m['save_s']} s", "baseline": "",
             "ratio": "", "goal": None, "met": None}
            for m in measured],
        "tables": [{
            "title": "Checking a saved index, loading it, and rebuilding it",
            "columns": ["items", "index MiB", "check s", "hnswlib load s",
                        "check + load s (product)", "rebuild s", "save s", "load avg"],
            "rows": [[f"{m['items']:,}", m["index_mib"], m["check_s"], m["hnswlib_load_s"],
                      m["product_load_s"], m["rebuild_s"], m["save_s"], m["load_avg_1m"]]
                     for m in measured]}],
        "notes": ["Timed on a shared 2-core machine unless the load average says otherwise; "
                  "re-run on a quiet one for figures to compare."],
    }


def project_path(n: int) -> Path:
    return corpus.CACHE / f"index-check-{n}-v{BUILDER_VERSION}.duplens"


def measure(n: int) -> dict:
    import hnswlib

    from engine.index import side_file
    from engine.index.hnsw import HnswIndex, HnswParams
    from engine.index.index_check import Expected, check_index_file
    from engine.index.persist import label_range, save_index
    from engine.index.reconcile import reconcile
    from engine.store.database import Store
    from engine.store.embeddings import list_models

    path = project_path(n)
    if not path.exists():
        _fill_project(path, n)
    store = Store.open(path)
    try:
        with store.read() as conn:
            (model,) = list_models(conn)
            labels = label_range(conn, model["id"])
        dim, params = model["dim"], HnswParams()
        _say(f"  {n:,} items: rebuilding the index from the stored embeddings…")
        load_avg = round(os.getloadavg()[0], 2)
        t0 = time.perf_counter()
        index = HnswIndex(dim, params)
        result = reconcile(store, index, model["id"])
        rebuild_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        with store.write() as conn:
            save_index(conn, model["id"], index, version=result.version)
        save_s = time.perf_counter() - t0
        del index
        side = side_file.folder_for(path) / f"hnsw-{model['id']}.bin"
        expected = Expected(dim, params.M, params.ef_construction, labels, frozenset())
        _say(f"  {n:,} items: checking and loading the saved index…")
        check_index_file(side, expected)   # the page cache warm for every timed run

        def check() -> None:
            check_index_file(side, expected)

        def hnswlib_load() -> None:
            hnswlib.Index(space=params.space, dim=dim).load_index(str(side))

        def product_load() -> None:
            HnswIndex.load(side, dim, params, set(), labels=labels)

        check_s, load_s = _median(check, CHECK_RUNS), _median(hnswlib_load, LOAD_RUNS)
        return {
            "items": n, "index_mib": round(side.stat().st_size / 2**20),
            "check_s": check_s, "hnswlib_load_s": load_s,
            "check_share": round(check_s / load_s, 3),
            "product_load_s": _median(product_load, LOAD_RUNS),
            "rebuild_s": round(rebuild_s, 1), "save_s": round(save_s, 1),
            "load_avg_1m": load_avg, "load_avg_after": round(os.getloadavg()[0], 2),
        }
    finally:
        store.close()


def _median(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return round(statistics.median(times), 3)


def _fill_project(path: Path, n: int) -> None:
    """N texts with their embeddings, no index yet (written to a temporary name first)."""
    from benchmarks.team_index import _fill, _row_texts

    _say(f"  {n:,} items: writing the project (cached in {path.parent})…")
    queries, pool = corpus.query_and_pool()
    base = corpus.with_noisy_copies(corpus.embed(pool), n)
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(path.name + ".part")
    for leftover in (part, Path(f"{part}-wal"), Path(f"{part}-shm")):
        leftover.unlink(missing_ok=True)
    fill = _fill(part, _row_texts(pool, n), base)
    fill["store"].close()
    part.replace(path)


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.index_check",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--items", type=int, action="append",
                    help="project size (repeat for several; default 100,000)")
    args = ap.parse_args(argv)
    for n in args.items or SIZES_QUICK:
        print(json.dumps(measure(n)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

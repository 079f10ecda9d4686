"""Checking a saved index before hnswlib loads it, and what refusing one costs.

    python -m benchmarks --only index_check [--quick]      (--quick: 10k items; full: 100k, 1M)
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
- `--quick` (a smoke run) also times the check and hnswlib's load of a ten times bigger
  index without building one: the saved 10k file tiled ten times (`tiled_file`: every
  copy's neighbour ids and labels shifted), the layout, link counts and levels of a built
  index, as ten disconnected graphs. The full run measures a real 1M-item project instead.

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

import numpy as np

from benchmarks import corpus

SIZES_QUICK = (10_000,)
SIZES_FULL = (100_000, 1_000_000)
CHECK_RUNS, LOAD_RUNS = 5, 3
TILES = 10
BUILDER_VERSION = 1


def run(quick: bool) -> dict:
    sizes = SIZES_QUICK if quick else SIZES_FULL
    measured = [measure(n) for n in sizes]
    if quick:
        measured.append(measure_tiled(SIZES_QUICK[0], TILES))
    return {"sizes": measured, "data": corpus.NOISE_NOTE}


def present(result: dict, results: dict | None = None) -> dict:
    """Headline, table and notes derived from the measured sizes when the report renders
    (benchmarks/report.py)."""
    measured = result["sizes"]
    return {
        "headline": [
            {"figure": f"check of a saved {m['items']:,}-item index ({m['index_mib']:,} MiB"
                       + (", tiled)" if m.get("tiled") else ")"),
             "duplens": f"{m['check_s']} s", "baseline": f"hnswlib load {m['hnswlib_load_s']} s",
             "baseline_is": "hnswlib's own load_index of the same file, same run",
             "ratio": f"{m['check_share']:.0%} of the load", "goal": None, "met": None}
            for m in measured] + [
            {"figure": f"rebuild after a refused {m['items']:,}-item index",
             "duplens": f"{m['rebuild_s']} s + save {m['save_s']} s", "baseline": "",
             "baseline_is": "–",
             "ratio": "", "goal": None, "met": None}
            for m in measured if not m.get("tiled")],
        "tables": [{
            "title": "Checking a saved index, loading it, and rebuilding it",
            "columns": ["items", "index MiB", "check s", "hnswlib load s",
                        "check + load s (product)", "rebuild s", "save s", "load avg"],
            "rows": [[f"{m['items']:,}" + (" (tiled)" if m.get("tiled") else ""),
                      m["index_mib"], m["check_s"], m["hnswlib_load_s"],
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
            save_index(conn, model["id"], index, change_count=result.change_count)
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


def measure_tiled(n: int, tiles: int) -> dict:
    """The check and hnswlib's load of the saved n-item index tiled `tiles` times."""
    import hnswlib

    from engine.index import side_file
    from engine.index.hnsw import HnswIndex, HnswParams
    from engine.index.index_check import Expected, check_index_file
    from engine.index.persist import label_range
    from engine.store.database import Store
    from engine.store.embeddings import list_models

    path = project_path(n)
    store = Store.open(path, read_only=True)
    try:
        with store.read() as conn:
            (model,) = list_models(conn)
            low, high = label_range(conn, model["id"])
    finally:
        store.close()
    dim, params = model["dim"], HnswParams()
    big = corpus.CACHE / f"index-check-{n}x{tiles}.bin"
    _say(f"  {n * tiles:,} elements: tiling the saved index {tiles} times…")
    tiled_file(side_file.folder_for(path) / f"hnsw-{model['id']}.bin", big, tiles,
               high - low + 1)
    labels = (low, high + (tiles - 1) * (high - low + 1))
    expected = Expected(dim, params.M, params.ef_construction, labels, frozenset())
    try:
        check_index_file(big, expected)

        def check() -> None:
            check_index_file(big, expected)

        def hnswlib_load() -> None:
            hnswlib.Index(space=params.space, dim=dim).load_index(str(big))

        def product_load() -> None:
            HnswIndex.load(big, dim, params, set(), labels=labels)

        load_avg = round(os.getloadavg()[0], 2)
        check_s, load_s = _median(check, CHECK_RUNS), _median(hnswlib_load, LOAD_RUNS)
        return {
            "items": n * tiles, "tiled": f"the {n:,}-item index {tiles} times",
            "index_mib": round(big.stat().st_size / 2**20), "check_s": check_s,
            "hnswlib_load_s": load_s, "check_share": round(check_s / load_s, 3),
            "product_load_s": _median(product_load, LOAD_RUNS), "rebuild_s": None,
            "save_s": None, "load_avg_1m": load_avg,
            "load_avg_after": round(os.getloadavg()[0], 2),
        }
    finally:
        big.unlink(missing_ok=True)


def tiled_file(source: Path, target: Path, tiles: int, label_span: int) -> None:
    """`source` (an hnswlib file) as `tiles` copies of its elements in one file: copy k's
    neighbour ids shifted by k * count and its labels by k * label_span. Benchmark-only: a
    file the size of a bigger index without building one."""
    from engine.index.index_check import HEADER

    data = np.fromfile(source, dtype=np.uint8)
    header = list(HEADER.unpack(data[:HEADER.size].tobytes()))
    count, sde, label_offset, max_m, max_m0 = (header[2], header[3], header[4], header[8],
                                               header[9])
    level0 = data[HEADER.size:HEADER.size + count * sde].view("<u4").reshape(count, sde // 4)
    tail = data[HEADER.size + count * sde:].view("<u4")
    is_id = np.zeros(len(tail), dtype=bool)       # which tail words are neighbour ids
    at = 0
    for _ in range(count):
        size = int(tail[at]) // 4
        lists = tail[at + 1:at + 1 + size].reshape(-1, max_m + 1)
        ids = np.zeros(lists.shape, dtype=bool)
        ids[:, 1:] = True
        is_id[at + 1:at + 1 + size] = ids.ravel()
        at += 1 + size
    header[1] = header[2] = count * tiles
    word = label_offset // 4
    with target.open("wb") as out:
        out.write(HEADER.pack(*header))
        for k in range(tiles):
            copy = level0.copy()
            copy[:, 1:1 + max_m0] += np.uint32(k * count)
            labels = (copy[:, word].astype(np.uint64) | copy[:, word + 1].astype(np.uint64)
                      << np.uint64(32)) + np.uint64(k * label_span)
            copy[:, word] = (labels & np.uint64(0xFFFFFFFF)).astype(np.uint32)
            copy[:, word + 1] = (labels >> np.uint64(32)).astype(np.uint32)
            out.write(copy.tobytes())
        for k in range(tiles):
            out.write(np.where(is_id, tail + np.uint32(k * count), tail).astype("<u4")
                      .tobytes())


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
    ap.add_argument("--tiles", type=int, default=0,
                    help="also time the check of the first size's index tiled this often")
    args = ap.parse_args(argv)
    sizes = args.items or SIZES_QUICK
    for n in sizes:
        print(json.dumps(measure(n)), flush=True)
    if args.tiles:
        print(json.dumps(measure_tiled(sizes[0], args.tiles)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

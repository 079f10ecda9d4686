"""Peak memory of building a project's neighbour graph, and a digest of the graph.

    python devtools/graph_peak.py PROJECT

Builds the graph as `duplicates` does when none is kept (`Clusters._build`: the k nearest
of every text, completed where dense), while a thread reads the process's VmRSS every
10 ms, and prints the RSS before, the peak, the seconds, the entries and a SHA-256 of the
graph's arrays. Run it with two versions of the code on the same project: the same digest
means the same graph to the bit, and the peaks compare what each held. Linux only (/proc).
"""

from __future__ import annotations

import hashlib
import sys
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def rss_mib() -> int:
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) // 1024
    return 0


def main(project_path: str) -> None:
    from engine.progress import no_progress
    from engine.project import Project
    from engine.services.clusters import DEFAULT_NEIGHBOURS

    peak = [0]

    def sample() -> None:
        while True:
            peak[0] = max(peak[0], rss_mib())
            time.sleep(0.01)

    with Project.open(project_path) as project:
        index = project.vectors.index()
        before = rss_mib()
        threading.Thread(target=sample, daemon=True).start()
        started = time.perf_counter()
        graph = project.clusters._build(index, DEFAULT_NEIGHBOURS, no_progress, None)
        seconds = time.perf_counter() - started
    digest = hashlib.sha256()
    for array in (graph.ids, graph.indptr, graph.indices, graph.sims):
        digest.update(np.ascontiguousarray(array).tobytes())
    print(f"before {before} MiB, peak {peak[0]} MiB (+{peak[0] - before}), {seconds:.1f} s, "
          f"{len(graph.indices):,} entries, sha256 {digest.hexdigest()[:16]}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python devtools/graph_peak.py PROJECT")
    main(sys.argv[1])

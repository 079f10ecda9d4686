"""Peak memory of building a project's neighbour graph, and a digest of the graph.

    python devtools/graph_peak.py PROJECT

Builds the graph as `duplicates` does when none is kept (`Clusters._build`: the k nearest
of every text, completed where dense) and prints the resident memory before, the peak
during the build, the seconds, the entries and a SHA-256 of the graph's arrays. The peak is
the kernel's own high-water mark (VmHWM, read by `benchmarks.scale_1m`), reset to the
current size just before the build by writing 5 to /proc/self/clear_refs, so it is exact
and belongs to the build alone. Run it with two versions of the code on the same project:
the same digest means the same graph to the bit, and the peaks compare what each held.
Linux only.
"""

from __future__ import annotations

import hashlib
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(project_path: str) -> None:
    from benchmarks.scale_1m import current_rss_mib, peak_rss_mib
    from engine.progress import no_progress
    from engine.project import Project
    from engine.services.clusters import DEFAULT_NEIGHBOURS

    with Project.open(project_path) as project:
        index = project.vectors.index()
        Path("/proc/self/clear_refs").write_text("5")   # VmHWM := VmRSS from here
        before = current_rss_mib()
        started = time.perf_counter()
        graph = project.clusters._build(index, DEFAULT_NEIGHBOURS, no_progress, None)
        seconds = time.perf_counter() - started
        peak = peak_rss_mib()
    digest = hashlib.sha256()
    for array in (graph.ids, graph.indptr, graph.indices, graph.sims):
        digest.update(np.ascontiguousarray(array).tobytes())
    print(f"before {before} MiB, peak {peak} MiB (+{peak - before}), {seconds:.1f} s, "
          f"{len(graph.indices):,} entries, sha256 {digest.hexdigest()[:16]}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python devtools/graph_peak.py PROJECT")
    main(sys.argv[1])

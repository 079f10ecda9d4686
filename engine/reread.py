"""Long texts an earlier version read from their start only, read again whole.

Before long texts were read as windows, a text past the model's window was encoded from
its beginning and flagged `truncated`. Such a project keeps working as it was, and says
how many of its texts were read that way; "Re-encode" (`duplens encode --reread`, the
window's Project menu) runs this. It spans three services, so it lives here once:

1. the flagged texts' embeddings are deleted in one transaction (their rows, clusters and
   verdicts stay; the index keeps their old vectors, so search goes on meanwhile);
2. the ordinary encode job reads them again, whole, and replaces their vectors in the
   index; an interrupted run resumes like any encoding, since they are missing now;
3. the neighbour graph is built again: the vectors of texts already in it changed, which an
   update (that looks for texts added or removed) would not see.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.encoding.encode_job import EncodeReport
from engine.progress import CancelToken, ProgressCallback, no_progress
from engine.store.text_windows import forget_embeddings, read_from_start

if TYPE_CHECKING:  # pragma: no cover
    from engine.project import Project


def count_read_from_start(project: Project) -> int:
    """Texts of the active model read from their start only (0 once all are read whole)."""
    with project.store.read() as conn:
        return len(read_from_start(conn, project.vectors.model_id()))


def reread_long_texts(project: Project, *, progress: ProgressCallback = no_progress,
                      cancel: CancelToken | None = None) -> EncodeReport:
    """Read every text that was read from its start again, whole; returns the encode
    report (`windowed` says how many are now read whole). Also finishes what a stopped
    encoding left."""
    model_id = project.vectors.model_id()
    with project.store.write() as conn:
        stale = read_from_start(conn, model_id)
        forget_embeddings(conn, model_id, stale)
    report = project.vectors.encode(progress=progress, cancel=cancel)
    if stale or report.windowed:
        project.clusters.forget_graph()
    return report

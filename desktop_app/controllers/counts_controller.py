"""`CountsController`: the open project's counts, read once it shows.

Counting a project's rows, texts and vectors scans them all: 4.8 s on a 1M-row project
(`count_embeddings` 3.2 s, `count_truncated` 3.0 s, `count_texts` 1.4 s, `count_items`
0.5 s, one after another). A project therefore opens with `engine.services.summary.describe`
(a few one-row reads) and its table shows at once; this reads the counts afterwards and
hands them over, and the status bar says "counting…" until then. Where some texts were
read from their start only (`truncated`), it also counts those an earlier version read so
(`read_from_start`: what Model → Re-encode long texts would read again whole; a text cut
short at the most windows a text gets is not among them).
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from desktop_app.bridge import EngineBridge
from desktop_app.job_runner import Job, JobHandle, Pool
from engine.services.summary import COUNTS


class CountsController(QObject):
    """Reads the open project's counts in the background (`count`), then `counted`."""

    counted = Signal(dict)   # the project's summary with its counts (`project.info()`)

    def __init__(self, bridge: EngineBridge, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.bridge = bridge
        self._key = f"project counts {id(self)}"

    def count(self) -> JobHandle:
        """Count the open project's rows, texts and vectors; a newer call makes this one's
        answer stale. The review's pool, not the jobs': the model's warm-up, queued there
        as the project opens, must not wait seconds behind the counts, and the table's own
        pool has the rows to read. Nothing is cut or plotted before the counts say there
        are vectors (the window asks for the review once they arrive)."""
        return self.bridge.run(counts, pool=Pool.REVIEW, on_done=self.counted.emit,
                               latest=self._key)


def counts(job: Job) -> dict:
    """The job: `project.info()`, and `read_from_start` (0 unless some text is truncated)."""
    from engine.reread import count_read_from_start

    info = dict(job.project.info())
    info["read_from_start"] = count_read_from_start(job.project) if info.get("truncated") \
        else 0
    return info


def with_counts(info: dict | None, counted: dict) -> dict | None:
    """`info` (what the window shows) with the counts of `counted` filled in; None when they
    no longer belong there: another project is open, or `info` already has counts, newer
    ones (a job that changed the project, such as an import, reported its own)."""
    if info is None or info.get("project") != counted.get("project") or "items" in info:
        return None
    return {**info, **{key: counted[key] for key in COUNTS}}

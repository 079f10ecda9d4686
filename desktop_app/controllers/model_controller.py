"""`ModelController`: which model the open project searches with, and its versions.

Loading another model (Settings), loading the active one again with another backend, and
activating a model version (the fine-tuning wizard's "Use this model", the versions
dialog's "Make active": every row encoded with it first, search keeping the old model
meanwhile). All run on the bridge's changes pool, after any import, and tell the bridge when
the new model is ready so searches held for it go out.

The versions dialog's engine calls are here too: the list of versions (review pool, the
newest request counts), and exporting or deleting one (changes pool: they write). Their
outcomes are signals the dialog renders, their errors `versionsFailed`, said in the dialog.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from PySide6.QtCore import QObject, Signal

from desktop_app.bridge import EngineBridge, project_info
from desktop_app.job_runner import Job, JobHandle, Pool

if TYPE_CHECKING:
    from engine.encoding.encoder import SentenceEncoder
    from engine.project import Project
    from engine.training.activation import ActivationReport


class ModelResult(TypedDict):
    info: dict      # bridge.project_info() after the change
    device: str


class ActivationResult(TypedDict):
    report: ActivationReport   # says whether it was activated or stopped (what was encoded stays)
    info: dict
    device: str


def activation_summary(result: ActivationResult) -> str:
    """One line for the status bar about an activation that ended."""
    report = result["report"]
    if report.cancelled:
        return (f"Stopped: the model in use is unchanged; {report.encoded:,} texts encoded "
                f"with the new one are kept for next time")
    return f"Now searching with {result['info']['model']}"


class ModelController(QObject):
    """Model changes and version activation of the open project; reports by signal."""

    progressed = Signal(object)           # engine.progress.Progress of an activation
    changed = Signal(object)              # ModelResult: another model or backend loaded
    activated = Signal(object)            # ActivationResult
    activationFailed = Signal(str, str)   # message, details
    activationCancelled = Signal()        # stopped before anything changed
    versionsListed = Signal(object)       # list[dict]: `ModelVersions.list()`
    versionCopiedOut = Signal(object)     # Path: the folder a version was copied out to
    versionDeleted = Signal(str)          # the name of the version deleted
    versionsFailed = Signal(str, str)     # message, details: listing, export or delete

    def __init__(self, bridge: EngineBridge, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.bridge = bridge

    def change_model(self, model: str | None) -> JobHandle:
        """Load another model (folder or hub name; None: the bundled default) and make it
        the project's active one. Encode afterwards to index with it. A failure goes to
        the window's error dialog."""
        device, batch_size = self.bridge.device_preference, self.bridge.batch_size
        return self._load(lambda project: project.model.use(model, device=device,
                                                            batch_size=batch_size))

    def change_backend(self) -> JobHandle:
        """Load the project's active model again with the backend now preferred (the
        active model stays: a fine-tuned version is not swapped for the default)."""
        backend = self.bridge.backend_preference
        return self._load(lambda project: project.model.reload(backend))

    def _load(self, load: Callable[[Project], SentenceEncoder]) -> JobHandle:
        def work(job: Job) -> ModelResult:
            project = job.project
            job.model_loading()
            encoder = load(project)
            job.model_ready(encoder.device, reloaded=True)
            return {"info": project_info(project), "device": encoder.device}

        return self.bridge.run(work, pool=Pool.CHANGES, on_done=self.changed.emit)

    def activate(self, version_id: int) -> JobHandle:
        """Encode and index with version `version_id`, then switch search to it."""

        def work(job: Job) -> ActivationResult:
            project = job.project
            report = project.versions.activate(version_id, progress=job.progress,
                                            cancel=job.token)
            device = project.model.encoder().device
            if report.activated:
                job.model_ready(device)
            return {"report": report, "info": project_info(project), "device": device}

        return self.bridge.run(work, pool=Pool.CHANGES, on_done=self.activated.emit,
                               on_failed=self.activationFailed.emit,
                               on_cancelled=self.activationCancelled.emit,
                               on_progress=self.progressed.emit)

    # -- the versions dialog's calls -------------------------------------------------------
    def list_versions(self) -> JobHandle:
        """Every model version of the project (`versionsListed`); only the newest request's
        answer is delivered."""
        return self.bridge.run(lambda job: job.project.versions.list(), pool=Pool.REVIEW,
                               on_done=self.versionsListed.emit,
                               on_failed=self.versionsFailed.emit,
                               latest=f"model versions {id(self)}")

    def copy_out_version(self, version_id: int, target: Path) -> JobHandle:
        """Copy version `version_id`'s folder to `target` for plain sentence-transformers
        (`versionCopiedOut`)."""
        return self.bridge.run(
            lambda job: job.project.versions.copy_out(version_id, str(target)),
            pool=Pool.CHANGES, on_done=self.versionCopiedOut.emit,
            on_failed=self.versionsFailed.emit)

    def delete_version(self, version_id: int) -> JobHandle:
        """Delete a trained version that is not in use, and its folder (`versionDeleted`)."""
        return self.bridge.run(lambda job: job.project.versions.delete(version_id),
                               pool=Pool.CHANGES, on_done=self.versionDeleted.emit,
                               on_failed=self.versionsFailed.emit)

"""`SecondOpinionController`: whether the active model's second opinion is offered, and its
verdict on the pair on screen, asked off the GUI thread.

A fine-tuning run may keep a judge (a cross-encoder) beside the version it trained
(`engine.training.judge_versions`); it is offered once it read the held-out pairs better
than its version did (`project.versions.second_opinion`). Until then, and on a project
without one, nothing of it shows: `offered` is None and `ask` does nothing. Review, Ask me
and Check a file ask it about the pair they show; the score comes back on the GUI thread
and is kept, so stepping back to a pair does not score it again. A suggestion is only shown:
the analyst's key (A) applies it, as if they had pressed D or N themselves.

Scoring runs on the review pool, after the verdicts queued there, with one request per
screen kept (`latest`): moving quickly through pairs scores only the one that stays.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, Signal

from desktop_app.bridge import EngineBridge
from desktop_app.job_runner import Job, Pool

# Probabilities kept per judge, at most: a long session of pairs, a few MB of text.
KEPT_SCORES = 20_000


class SecondOpinionController(QObject):
    """The offered judge (or None) and its cached scores of text pairs."""

    offeredChanged = Signal(object)   # the judge as `ModelVersions.second_opinion` says, or None

    def __init__(self, bridge: EngineBridge, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.bridge = bridge
        self.offered: dict | None = None
        self._scores: dict[tuple[str, str], float] = {}

    def reset(self) -> None:
        """A new project: nothing is offered until `refresh` says so."""
        self._set(None)

    def refresh(self) -> None:
        """Ask the project again (it opened, or another version became active)."""
        if not self.bridge.has_project:
            self._set(None)
            return
        self.bridge.run(lambda job: job.project.versions.second_opinion(), pool=Pool.REVIEW,
                        on_done=self._set, on_failed=lambda *_: self._set(None),
                        latest="second opinion offered")

    def _set(self, judge: dict | None) -> None:
        before = self.offered["id"] if self.offered else None
        self.offered = judge
        if (judge["id"] if judge else None) != before:
            self._scores.clear()
            self.offeredChanged.emit(judge)

    def known(self, text_a: str, text_b: str) -> float | None:
        """The judge's probability for this pair, when scored already."""
        return self._scores.get((text_a, text_b))

    def remember(self, text_a: str, text_b: str, probability: float) -> None:
        """A score the engine gave with a pair (Ask me's disagreement order)."""
        if len(self._scores) >= KEPT_SCORES:
            self._scores.clear()
        self._scores[(text_a, text_b)] = float(probability)

    def ask(self, screen: str, text_a: str, text_b: str, on_done: Callable[[float], object],
            on_failed: Callable[[str], object] | None = None) -> None:
        """The judge's probability that the pair is a duplicate, to `on_done` on the GUI
        thread (at once when known); nothing when none is offered. A newer request from the
        same `screen` makes this one stale: its answer is never delivered."""
        if self.offered is None:
            return
        known = self.known(text_a, text_b)
        if known is not None:
            on_done(known)
            return
        judge = self.offered["id"]

        def work(job: Job) -> float:
            return job.project.versions.second_opinion_scores([(text_a, text_b)])[0]

        def done(probability: float) -> None:
            if self.offered is not None and self.offered["id"] == judge:
                self.remember(text_a, text_b, probability)
                on_done(probability)

        self.bridge.run(work, pool=Pool.REVIEW, on_done=done,
                        on_failed=lambda message, _details: on_failed and on_failed(message),
                        latest=("second opinion", screen))

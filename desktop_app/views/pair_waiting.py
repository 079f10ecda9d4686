"""`PairWaiting`: what Ask me and Measure quality show between pairs, written once.

Both panes judge one pair at a time from a queue their controller fills in batches
(`engine.review.pair_queue`); while the next batch is found or drawn there is no pair to
judge, and both say so the same way. A mixin rather than a base widget: the two panes share
these two answers, not their layout.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from PySide6.QtWidgets import QLabel, QPushButton

    from desktop_app.views.compare_panel import ComparePanel


class PairWaiting:
    """For a pane with `buttons` (the verdict buttons), `compare`, `score_label` and a
    `controller` whose `current` is the pair on screen (None while waiting)."""

    buttons: dict[str, QPushButton]
    compare: ComparePanel
    score_label: QLabel

    def show_waiting(self, what: str) -> None:
        """No pair on screen until the next batch comes: the comparison says so (`what`)
        and the verdict buttons are off, rather than an empty comparison that asked for a
        member, or the pair judged last still shown with keys that judge nothing."""
        for button in self.buttons.values():
            button.setEnabled(False)
        self.compare.clear(what)
        self.score_label.setText("")

    def _say(self, what: str) -> None:
        """A message from the controller (a failed fetch, an undo refused); with no pair on
        screen it ends the wait the comparison spoke of."""
        if not what:
            return
        self.score_label.setText(what)
        if self.controller.current is None:   # type: ignore[attr-defined]
            self.compare.clear()

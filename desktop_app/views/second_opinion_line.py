"""`SecondOpinionLine`: the second opinion's suggestion on the pair on screen, and its
"Accept (A)" button.

One line under the comparison in Review, Ask me and Check a file: "Second opinion:
duplicate, 87% sure". It is a suggestion and nothing more: the verdict is written only when
the analyst accepts it (A, or the button), and then exactly as D or N would write it. The
line is hidden while no judge is offered, and says nothing it has not been told about the
pair now on screen: an answer about a pair that has left the screen is dropped, and until the
answer comes there is nothing to accept.
"""

from __future__ import annotations

from collections.abc import Hashable

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QWidget

ACCEPT_KEY = "A"   # not D, N, S, C, M, J, K (the review's), nor Ctrl+Z
JUDGE_CUT = 0.5    # the judge's probability from which it calls a pair a duplicate
VERDICT_WORDS = {1: "duplicate", 0: "not duplicate"}


def suggested_verdict(probability: float) -> int:
    """The verdict a probability suggests: 1 duplicate at 0.5 or more, else 0."""
    return 1 if probability >= JUDGE_CUT else 0


def opinion_words(probability: float, model_verdict: int | None = None,
                  verdicts: dict[int, str] = VERDICT_WORDS) -> str:
    """"Second opinion: duplicate, 87% sure", and whether the model says otherwise
    (`verdicts`: the screen's own words for 1 and 0)."""
    verdict = suggested_verdict(probability)
    sure = probability if verdict == 1 else 1.0 - probability
    words = f"Second opinion: {verdicts[verdict]}, {sure:.0%} sure"
    if model_verdict is not None and model_verdict != verdict:
        words += f" (the model says {verdicts[model_verdict]})"
    return words


class SecondOpinionLine(QWidget):
    """The suggestion for the pair on screen; `accepted` when its button is clicked."""

    accepted = Signal()

    def __init__(self, parent: QWidget | None = None, *,
                 verdicts: dict[int, str] = VERDICT_WORDS) -> None:
        super().__init__(parent)
        self._verdicts = verdicts
        self.label = QLabel("", self)
        self.label.setTextFormat(Qt.TextFormat.PlainText)
        self.button = QPushButton(f"Accept the second opinion ({ACCEPT_KEY})", self)
        self.button.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.button.setToolTip("Give the verdict the second opinion suggests, as D or N would")
        self.button.clicked.connect(self.accepted)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.label)
        layout.addWidget(self.button)   # beside the words it accepts
        layout.addStretch(1)
        self.offered = False
        self._pair: Hashable | None = None
        self.suggestion: int | None = None   # what accepting gives now (None: nothing)
        self.setVisible(False)
        self._show("")

    def set_offered(self, offered: bool) -> None:
        """Shown only while the active model's judge is offered."""
        self.offered = offered
        self.setVisible(offered)
        if not offered:
            self.expect(None)

    def expect(self, pair: Hashable | None, *, waiting: bool = True) -> None:
        """A new pair is on screen (None: none): nothing to accept until its answer comes."""
        self._pair, self.suggestion = pair, None
        self._show("Second opinion: reading the pair…" if pair is not None and waiting
                   and self.offered else "")

    def show_for(self, pair: Hashable, probability: float,
                 model_verdict: int | None = None) -> None:
        """The judge's answer about `pair`, shown if that pair is still on screen."""
        if pair != self._pair or not self.offered:
            return
        self.suggestion = suggested_verdict(probability)
        self._show(opinion_words(probability, model_verdict, self._verdicts))

    def failed_for(self, pair: Hashable, message: str) -> None:
        if pair == self._pair and self.offered:
            self.suggestion = None
            self._show(f"Second opinion unavailable: {message}")

    def _show(self, text: str) -> None:
        self.label.setText(text)
        self.button.setEnabled(self.suggestion is not None)

"""`AskView`: the "Ask me" mode of the review, one pair the model is unsure of at a time.

The pair side by side (the review's own comparison panel, differing words highlighted), the
model's similarity against the threshold the pair was picked around, the words' overlap
(`engine.review.overlap`) and the review's ⚠ when the model calls the pair a duplicate
although a word that flips the meaning differs (a number, negation, an opposite, a name);
and the review's verdicts: D duplicate, N not duplicate,
S skip, and the review's Undo (Ctrl+Z) to take the last verdict back. "Back to clusters"
(or Esc) leaves the mode. The keys are the review screen's own shortcuts, which forward
here while this mode is shown.

Once the active model's second opinion is offered, its suggestion on the pair shows under
the similarity (`SecondOpinionLine`; A accepts it, as D or N would), and a box orders the
questions by where the model and the second opinion disagree. Neither shows before.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from desktop_app.controllers.ask_controller import AskController
from desktop_app.views.compare_panel import ComparePanel, Row
from desktop_app.views.pair_waiting import PairWaiting
from desktop_app.views.second_opinion_line import SecondOpinionLine
from engine.review.calibration import format_threshold
from engine.review.overlap import overlap
from engine.services.asking import AskedPair

COMPARE_HEIGHT = 220
VERDICT_BUTTONS = (("Duplicate (D)", 1), ("Not duplicate (N)", 0), ("Skip (S)", None))


class AskView(PairWaiting, QWidget):
    """Shows `AskController.current`; the buttons judge it."""

    backRequested = Signal()

    def __init__(self, controller: AskController, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.controller = controller
        self.back_button = QPushButton("← Back to clusters (Esc)", self)
        self.back_button.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.back_button.clicked.connect(self.backRequested)
        self.intro = QLabel("The model asks about the pairs it is least sure of: those nearest "
                            "the threshold, spread over many questions. Each verdict counts "
                            "for the calibrated threshold and for fine-tuning.",
                            self)
        self.intro.setWordWrap(True)
        self.score_label = QLabel("", self)
        self.score_label.setTextFormat(Qt.TextFormat.PlainText)
        # The words that differ can be many: the line wraps rather than widen the window.
        self.score_label.setWordWrap(True)
        # Questions get the room of a few lines, the buttons close under them; two documents
        # take most of the pane.
        self.compare = ComparePanel(self, question_height=COMPARE_HEIGHT)
        self.opinion = SecondOpinionLine(self)
        self.opinion.accepted.connect(self.accept_opinion)
        self.by_disagreement = QCheckBox("Ask first where the second opinion disagrees with "
                                         "the model", self)
        self.by_disagreement.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.by_disagreement.setToolTip(
            "The pairs the model puts on one side of the threshold and its second opinion on "
            "the other come first: your verdict settles which one is wrong")
        self.by_disagreement.setVisible(False)
        self.by_disagreement.toggled.connect(controller.set_by_disagreement)
        self.count_label = QLabel("", self)
        self.buttons: dict[int | None, QPushButton] = {}
        row = QHBoxLayout()
        for text, verdict in VERDICT_BUTTONS:
            button = QPushButton(text, self)
            button.setFocusPolicy(Qt.FocusPolicy.NoFocus)
            button.clicked.connect(lambda _=False, v=verdict: controller.judge(v))
            self.buttons[verdict] = button
            row.addWidget(button)
        row.addStretch(1)
        row.addWidget(self.count_label)
        top = QHBoxLayout()
        top.addWidget(self.intro, 1)
        top.addWidget(self.back_button, 0, Qt.AlignmentFlag.AlignTop)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.by_disagreement)
        layout.addWidget(self.score_label)
        layout.addWidget(self.compare, 3)
        layout.addWidget(self.opinion)
        layout.addLayout(row)
        layout.addStretch(1)
        controller.pairChanged.connect(self.show_pair)
        controller.judged.connect(
            lambda n: self.count_label.setText(f"{n:,} judged in this session"))
        controller.busy.connect(self._say)
        controller.waiting.connect(self.show_waiting)
        controller.waiting.connect(lambda _what: self.opinion.expect(None))
        controller.opinion.offeredChanged.connect(self.set_offered)
        controller.opinionReady.connect(self.show_opinion)
        controller.opinionFailed.connect(
            lambda pair, message: self.opinion.failed_for(_key(pair), message))

    def set_offered(self, judge: dict | None) -> None:
        """The active model's second opinion (None: none offered, nothing of it shows)."""
        self.opinion.set_offered(judge is not None)
        self.by_disagreement.setVisible(judge is not None)
        if judge is None:
            self.by_disagreement.setChecked(False)
        elif self.controller.current is not None:
            self.opinion.expect(_key(self.controller.current))

    def show_opinion(self, pair: AskedPair, probability: float) -> None:
        model = 1 if pair.score >= pair.threshold else 0
        self.opinion.show_for(_key(pair), probability, model)

    def accept_opinion(self) -> bool:
        """Give the suggested verdict on the pair on screen, as D or N would; False when
        there is no suggestion for it (yet)."""
        verdict = self.opinion.suggestion
        if verdict is None or self.controller.current is None:
            return False
        self.controller.judge(verdict)
        return True

    def show_pair(self, pair: AskedPair | None) -> None:
        for button in self.buttons.values():
            button.setEnabled(pair is not None)
        self.opinion.expect(_key(pair) if pair is not None else None)
        if pair is None:
            self.compare.clear()
            self.score_label.setText("Nothing left to ask: every neighbour pair is judged.")
            return
        found = overlap(pair.a.text, pair.b.text)
        self.compare.show_pair(pair.a.public_id, pair.a.text, pair.b.public_id, pair.b.text,
                               rows=(Row(pair.a.item_id, pair.a.public_id),
                                     Row(pair.b.item_id, pair.b.public_id)))
        # The review's rule: called a duplicate (at or above the threshold) although a
        # word that flips the meaning differs.
        mark = "⚠ " if found.marked(pair.score, pair.threshold) else ""
        self.score_label.setText(f"{mark}Similarity {pair.score:.3f} (threshold "
                                 f"{format_threshold(pair.threshold)}) · {found.note()}")


def _key(pair: AskedPair) -> tuple[int, int]:
    """Which pair a second opinion is about: its two rows, in the order shown."""
    return pair.a.item_id, pair.b.item_id

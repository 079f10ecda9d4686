"""`SecondOpinionOption`: the objective page's offer of a second opinion, and why it is on
or off.

A second opinion (Augmented SBERT, `engine.training.second_opinion`) trains a judge on the
analyst's answers and lets it label more pairs near the threshold for the model to learn
from too. It costs a second training and only helps when the judge has both verdicts to
learn from. It starts off: where the answers hold enough of each
(`finetune_controller.second_opinion_advised`) the line under the box says what the
benchmark measured (`MEASURED_OFF`), elsewhere how many answers a judge needs; the analyst
may still turn it on (the engine then refuses a training side of one verdict, and
the training page shows its one-line reason).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtWidgets import QCheckBox, QHBoxLayout, QLabel, QSpinBox, QVBoxLayout, QWidget

from desktop_app.colors import NOTE_STYLE
from desktop_app.controllers.finetune_controller import (
    JUDGE_ENOUGH_OF_EACH,
    SECOND_OPINION_PAIRS,
    second_opinion_advised,
)

if TYPE_CHECKING:
    from engine.training.pairs import PairSummary

MAX_SILVER = 1_000_000


# Why the option starts off, from the benchmark (docs/benchmarks.md, "Asked pairs against
# random pairs", second-opinion arms): with 1,000 answers the judge read Quora's validation
# pairs at AP 56 against the model's 76, called every silver pair not a duplicate, and
# 2,000 silver pairs left the model where it started (+0.00 AP against +2.93 without them).
MEASURED_OFF = ("Off by default: measured on Quora, a judge trained on 1,000 answers read "
                "pairs worse than the model, and its labels took the fine-tuning gain away. "
                "Try it on your answers: the results show whether the judge read your "
                "held-out pairs better than the model, and only a judge that does labels "
                "pairs for the model to learn from.")


class SecondOpinionOption(QWidget):
    """A check box with the number of pairs the judge may label, and a note below."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.check = QCheckBox("Use a second opinion: train a judge on your answers, let it "
                               "label", self)
        self.count = QSpinBox(self)
        self.count.setRange(1, MAX_SILVER)
        self.count.setSingleStep(500)
        self.count.setGroupSeparatorShown(True)
        self.count.setValue(SECOND_OPINION_PAIRS)
        self.count.setMinimumWidth(110)
        self.after = QLabel("more pairs near the threshold", self)
        self.note = QLabel("", self)
        self.note.setWordWrap(True)
        self.note.setStyleSheet(NOTE_STYLE)
        self.note.setContentsMargins(24, 0, 0, 0)
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.check)
        row.addWidget(self.count)
        row.addWidget(self.after)
        row.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(row)
        layout.addWidget(self.note)
        self.check.toggled.connect(self._toggled)
        self._toggled(False)

    def set_input(self, summary: PairSummary, held_out: float) -> None:
        """On or off by default for these answers (`held_out`: the share measured, never
        trained on), with the reason."""
        advised = second_opinion_advised(summary, held_out)
        # Off by default even then: on Quora validation the judge did not yet read pairs
        # better than the model, and its silver took the fine-tuning gain away (see
        # `MEASURED_OFF`); the analyst may still try it on their own answers.
        self.check.setChecked(False)
        kept = 1.0 - held_out
        how = (f"The judge learns from the {kept:.0%} of your answers the model trains on, "
               f"and is measured beside the model in use on the held-out pairs. The model "
               f"then trains on your answers and the judge's: the run trains two models "
               f"instead of one.")
        if advised:
            self.note.setText(f"{MEASURED_OFF} {how}")
        else:
            self.note.setText(
                f"Off by default: your answers hold {summary.positives:,} duplicate and "
                f"{summary.negatives:,} not duplicate pairs; a judge needs about "
                f"{JUDGE_ENOUGH_OF_EACH / kept:,.0f} of each to learn from (about "
                f"{JUDGE_ENOUGH_OF_EACH} of each on the training side). {how}")

    def pairs(self) -> int:
        """Silver pairs asked for: 0 when off (`TrainingOptions.second_opinion`)."""
        return self.count.value() if self.check.isChecked() else 0

    def _toggled(self, on: bool) -> None:
        self.count.setEnabled(on)
        self.after.setEnabled(on)

"""The fine-tuning wizard's last two pages: the run (stages, progress, live loss, ETA) and
its results (before and after on the held-out pairs, and the pairs whose verdict changed).

With a second opinion the run lists the judge's three stages before the model's training,
each with its progress (the judge's loss a second curve), and the results say what the judge
scored on the held-out pairs beside the model in use, and what silver it labelled
(`SecondOpinionSummary`).

Both render what `FinetuneController` emits and the engine's `FinetuneReport`; no number
here is computed by the window.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QProgressBar,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
    QWizard,
    QWizardPage,
)

from desktop_app.colors import ERROR_STYLE, GOOD_STYLE, NOTE_STYLE
from desktop_app.controllers.finetune_controller import (
    JUDGE_STAGE,
    TRAINING_STAGE,
    FinetuneController,
    RunState,
    TrainingRequest,
)
from desktop_app.views.job_status import format_eta
from desktop_app.views.second_opinion_summary import SecondOpinionSummary
from desktop_app.views.training_plots import LossPlot, PrecisionRecallPlot

if TYPE_CHECKING:
    from engine.progress import Progress
    from engine.training.session import FinetuneReport

STAGE_TEXT = {
    "measuring before": "Measure the current model on the held-out pairs",
    JUDGE_STAGE: "Second opinion: train a judge on your answers",
    "measuring second opinion": "Second opinion: measure the judge on the same held-out pairs",
    "labelling silver": "Second opinion: let the judge label up to {silver:,} pairs near "
                        "the threshold",
    "mining negatives": "Find a negative for each duplicate pair",
    "training": "Train a copy of the current model",
    "measuring after": "Measure the trained copy on the same pairs",
    "saving": "Save it as a new version",
    "converting": "Make and check its fast form for this computer",
}
# With a second opinion the model learns from the judge's pairs too.
TRAINING_WITH_SILVER = "Train a copy of the current model on your answers and the judge's"
STAGE_SHORT = {"measuring before": "Measuring the current model",
               JUDGE_STAGE: "Training the judge",
               "measuring second opinion": "Measuring the judge",
               "labelling silver": "Labelling pairs near the threshold",
               "mining negatives": "Finding negatives", "training": "Training",
               "measuring after": "Measuring the trained copy", "saving": "Saving",
               "converting": "Making its fast form"}
STAGE_UNITS = {"training": "steps", JUDGE_STAGE: "steps", "measuring second opinion": "pairs",
               "labelling silver": "pairs"}
COUNTLESS = {"saving", "converting"}  # stages whose small counts say nothing
DONE, CURRENT, PENDING = "✓", "▸", "·"
SUBTITLE = ("The model in use is never changed: a copy is trained, and search keeps working "
            "meanwhile. Stop training at any time; nothing is saved then.")
SUBTITLE_WITH_JUDGE = ("First a judge (the second opinion) learns from your answers and "
                       "labels more pairs; then a copy of the model learns from both. The "
                       "model in use is never changed and search keeps working. Stop at any "
                       "time, in either step; nothing is saved then.")
CHANGES_TEXT_CHARS = 160


class TrainPage(QWizardPage):
    """Starts the run when shown; complete when the engine has saved the version."""

    def __init__(self, controller: FinetuneController, request: Callable[[], TrainingRequest],
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.controller = controller
        self.request = request   # read when the page is shown: the options as chosen then
        self.setTitle("Training")
        self.setSubTitle(SUBTITLE)
        self.setCommitPage(True)  # the version exists once this page completes
        self.setButtonText(QWizard.WizardButton.CommitButton, "Show results")
        self.stage_labels: dict[str, QLabel] = {}
        self.silver = 0  # pairs the judge may label: 0 without a second opinion
        self.stages_box = QVBoxLayout()
        self.bar = QProgressBar(self)
        self.detail = QLabel("", self)
        self.loss_plot = LossPlot(self)
        self.message = QLabel("", self)
        self.message.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.addLayout(self.stages_box)
        layout.addWidget(self.bar)
        layout.addWidget(self.detail)
        layout.addWidget(self.loss_plot, 1)
        layout.addWidget(self.message)
        self._stage = ""
        controller.progressed.connect(self.show_progress)
        controller.lossChanged.connect(self.loss_plot.set_points)
        controller.judgeLossChanged.connect(self.loss_plot.set_judge_points)
        controller.stateChanged.connect(self.show_state)

    def initializePage(self) -> None:  # noqa: N802 - Qt's name
        from engine.training.session import finetune_stages

        request = self.request()
        self.silver = request.options.second_opinion
        self.setSubTitle(SUBTITLE_WITH_JUDGE if self.silver else SUBTITLE)
        # Without "converting": whether it runs is the engine's call (a fast default
        # backend here), so its line is added when it starts (`show_progress`).
        stages = finetune_stages(request.objective, request.options)
        for label in self.stage_labels.values():
            label.deleteLater()
        self.stage_labels = {}
        for stage in stages:
            label = QLabel("", self)
            self.stage_labels[stage] = label
            self.stages_box.addWidget(label)
        self._stage = ""
        self._mark_stages()
        self.bar.setRange(0, 0)
        self.detail.setText("Starting…")
        self.message.setText("")
        self.message.setStyleSheet("")
        self.controller.start(request)

    def cleanupPage(self) -> None:  # noqa: N802 - Qt's name
        self.controller.reset()

    def isComplete(self) -> bool:  # noqa: N802 - Qt's name
        return self.controller.state is RunState.TRAINED

    # -- rendering -------------------------------------------------------------------------
    def _mark_stages(self) -> None:
        order = list(self.stage_labels)
        current = order.index(self._stage) if self._stage in order else -1
        finished = self.controller.state is RunState.TRAINED
        for i, (stage, label) in enumerate(self.stage_labels.items()):
            mark = DONE if finished or i < current else CURRENT if i == current else PENDING
            text = self._stage_text(stage)
            label.setText(f"<b>{mark} {text}</b>" if mark == CURRENT else f"{mark} {text}")

    def _stage_text(self, stage: str) -> str:
        if stage == TRAINING_STAGE and self.silver:
            return TRAINING_WITH_SILVER
        return STAGE_TEXT.get(stage, stage.capitalize()).format(silver=self.silver)

    def show_progress(self, progress: Progress) -> None:
        stage, done, total, rate = progress.stage, progress.done, progress.total, progress.rate
        if stage not in self.stage_labels:
            # "converting" runs only where versions get a fast form, which the engine
            # decides (`backend_choice.for_trained_version`): it is listed when it starts.
            label = QLabel("", self)
            self.stage_labels[stage] = label
            self.stages_box.addWidget(label)
        if stage != self._stage:
            self._stage = stage
            self._mark_stages()
        units = STAGE_UNITS.get(stage, "texts")
        if total > 0:
            self.bar.setRange(0, total)
            self.bar.setValue(min(done, total))
        else:
            self.bar.setRange(0, 0)
        name = STAGE_SHORT.get(stage, stage.capitalize())
        counted = total and stage not in COUNTLESS
        parts = [f"{name}: {done:,} of {total:,} {units}" if counted else f"{name}…"]
        if rate > 0:
            parts.append(f"{rate:,.1f} {units}/s" if rate < 10 else f"{rate:,.0f} {units}/s")
            eta = format_eta(progress.eta_seconds)
            if eta:
                parts.append(f"about {eta} left in this stage")
        losses = {TRAINING_STAGE: self.controller.losses,
                  JUDGE_STAGE: self.controller.judge_losses}.get(stage)
        if losses:
            parts.append(f"loss {losses[-1]:.4f}")
        self.detail.setText(" · ".join(parts))

    def show_state(self, state: RunState, message: str) -> None:
        if state is RunState.STOPPING:
            self.detail.setText("Stopping after the current step…")
        elif state is RunState.CANCELLED:
            self.bar.setRange(0, 1)
            self.bar.setValue(0)
            self.detail.setText("Stopped.")
            self._say(message + " Go back to change the options, or close.", "")
        elif state is RunState.FAILED:
            self.bar.setRange(0, 1)
            self.bar.setValue(0)
            self.detail.setText("Training did not finish.")
            self._say(f"{_sentence(message)} Nothing was saved and the model in use is "
                      f"unchanged.", ERROR_STYLE)
        elif state is RunState.TRAINED:
            self._mark_stages()
            self._say("Done: the new version is saved, not in use yet.", GOOD_STYLE)
            QTimer.singleShot(0, self._advance)
        self.completeChanged.emit()

    def _say(self, text: str, style: str) -> None:
        self.message.setText(text)
        self.message.setStyleSheet(style)

    def _advance(self) -> None:
        wizard = self.wizard()
        if wizard is not None and wizard.currentPage() is self:
            wizard.next()


class ResultsPage(QWizardPage):
    """Before and after, side by side; Finish is "Use this model"."""

    def __init__(self, controller: FinetuneController, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.controller = controller
        self.setTitle("Before and after")
        self.setButtonText(QWizard.WizardButton.FinishButton, "Use this model")
        self.summary = QLabel("", self)
        self.summary.setWordWrap(True)
        self.opinion = SecondOpinionSummary(self)
        self.metrics = QTableWidget(5, 3, self)
        self.metrics.setHorizontalHeaderLabels(["Before", "After", "Change"])
        self.metrics.setVerticalHeaderLabels(["Average precision", "Best F1",
                                              "Its threshold (cosine)", "Precision at it",
                                              "Recall at it"])
        _read_only(self.metrics)
        self.metrics.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.metrics.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.metrics.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.metrics.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.metrics.setMinimumWidth(400)
        self.metrics_note = QLabel("", self)
        self.metrics_note.setWordWrap(True)
        self.pr_plot = PrecisionRecallPlot(self)
        self.changes_label = QLabel("", self)
        self.changes_label.setWordWrap(True)
        self.changes = QTableWidget(0, 5, self)
        self.changes.setHorizontalHeaderLabels(["Now", "Pair", "Label", "Before", "After"])
        _read_only(self.changes)
        self.changes.verticalHeader().hide()
        self.changes.setWordWrap(False)  # one line per text; the tooltip has them whole
        header = self.changes.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        self.notes = QLabel("", self)
        self.notes.setWordWrap(True)
        self.notes.setStyleSheet(NOTE_STYLE)
        self.status = QLabel("", self)
        self.status.setWordWrap(True)
        left = QVBoxLayout()
        left.addWidget(self.metrics)
        left.addWidget(self.metrics_note)
        left.addStretch(1)
        top = QHBoxLayout()
        top.addLayout(left, 2)
        top.addWidget(self.pr_plot, 3)
        layout = QVBoxLayout(self)
        layout.addWidget(self.summary)
        layout.addWidget(self.opinion)
        layout.addLayout(top, 3)
        layout.addWidget(self.changes_label)
        layout.addWidget(self.changes, 2)
        layout.addWidget(self.notes)
        layout.addWidget(self.status)
        controller.stateChanged.connect(self._state)

    def initializePage(self) -> None:  # noqa: N802 - Qt's name
        if self.controller.report is not None:
            self.show_report(self.controller.report)

    def isComplete(self) -> bool:  # noqa: N802 - Qt's name
        return self.controller.state is RunState.TRAINED

    def _state(self, state: RunState, message: str) -> None:
        if state is RunState.DISCARDING:
            self.status.setText("Deleting the new version…")
        elif state is RunState.TRAINED and message:
            self.status.setText(message)
            self.status.setStyleSheet(ERROR_STYLE)
        self.completeChanged.emit()

    def show_report(self, report: FinetuneReport) -> None:
        from engine.training import fast_form
        from engine.training.ap_change import claim, evidence
        from engine.training.objectives import get_objective

        before, after = report.before, report.after
        title = get_objective(report.objective).title
        opinion = report.second_opinion
        silver = (f" and {len(opinion.silver):,} the judge labelled"
                  if opinion is not None and opinion.silver else "")
        self.setSubTitle(f"{report.name}: the {title.lower()} objective on "
                         f"{len(report.split.train):,} pairs{silver}. Both models were "
                         f"measured on the same {len(report.split.held_out):,} held-out "
                         f"pairs, which share no question with those it learned from.")
        rows = [(before.average_precision, after.average_precision, "{:.2f}"),
                (before.f1, after.f1, "{:.2f}"),
                (before.threshold, after.threshold, "{:.3f}"),
                (before.precision, after.precision, "{:.2f}"),
                (before.recall, after.recall, "{:.2f}")]
        for row, (old, new, fmt) in enumerate(rows):
            for col, text in enumerate((fmt.format(old), fmt.format(new),
                                        ("+" if new >= old else "") + fmt.format(new - old))):
                self.metrics.setItem(row, col, QTableWidgetItem(text))
        self.pr_plot.set_curves(before.curve, after.curve,
                                (before.recall / 100, before.precision / 100),
                                (after.recall / 100, after.precision / 100),
                                ("before (in use)", f"after ({report.name})"))
        judge = opinion.judge if opinion is not None else None
        self.pr_plot.set_judge(judge.curve if judge else None,
                               (judge.recall / 100, judge.precision / 100) if judge else None)
        self.metrics_note.setText(
            f"Before: the model in use. After: {report.name}. Percentages, except the "
            f"threshold, the cosine similarity at which pairs are called duplicates.")
        self._fit_metrics()
        # Better or worse only when the held-out pairs show it (`engine.training.ap_change`).
        self.summary.setText(f"<b>{claim(report.ap_change)}</b>: {evidence(report.ap_change)}; "
                             f"best F1 {before.f1:.2f} → {after.f1:.2f}.")
        self.opinion.show_report(report, self.controller.judge_change)
        self._show_changes(report)
        # The second opinion's own note is the paragraph above, in more words.
        notes = [n for n in report.notes if opinion is None or n != opinion.note]
        self.notes.setText("\n".join(notes))
        self.notes.setVisible(bool(notes))
        self.status.setStyleSheet("")
        self.status.setText(
            f"{report.name} is saved in {report.location}, not in use yet. <b>Use this "
            f"model</b> encodes every row with it and then switches search to it (search "
            f"keeps working meanwhile). <b>Discard</b> deletes it. Closing keeps it in Model "
            f"→ Model versions…, to use later. {fast_form.describe(report.fast_form)}")

    def _fit_metrics(self) -> None:
        """Tall enough for its five rows, no more: the space below is the note's."""
        self.metrics.resizeRowsToContents()
        height = self.metrics.horizontalHeader().height() + 2 * self.metrics.frameWidth()
        height += sum(self.metrics.rowHeight(r) for r in range(self.metrics.rowCount()))
        self.metrics.setFixedHeight(height)

    def _show_changes(self, report: FinetuneReport) -> None:
        fixed, broken = report.changes_fixed, report.changes_broken
        shown = len(report.changes)
        if not fixed and not broken:
            self.changes_label.setText("No held-out pair changed verdict (each model judged "
                                       "at its own best-F1 threshold).")
        else:
            more = f"; the {shown} biggest changes" if shown < fixed + broken else ""
            self.changes_label.setText(
                f"Held-out pairs whose verdict changed, each model at its own best-F1 "
                f"threshold ({report.before.threshold:.3f} before, "
                f"{report.after.threshold:.3f} after): <b>{fixed} now right</b>, "
                f"<b>{broken} now wrong</b>{more}.")
        self.changes.setRowCount(shown)
        for row, change in enumerate(report.changes):
            pair = change.pair
            text = f"{_short(pair.text_a)}\n↔ {_short(pair.text_b)}"
            cells = ["✓ right" if change.fixed else "✗ wrong", text,
                     "duplicate" if pair.is_duplicate else "not duplicate",
                     f"{change.before_score:.3f} ({_call(change.before_duplicate)})",
                     f"{change.after_score:.3f} ({_call(change.after_duplicate)})"]
            for col, value in enumerate(cells):
                item = QTableWidgetItem(value)
                if col == 1:
                    item.setToolTip(f"{pair.text_a}\n↔\n{pair.text_b}")
                self.changes.setItem(row, col, item)
        self.changes.resizeRowsToContents()


def _sentence(message: str) -> str:
    """The engine's message as a sentence: some start lower-case and end without a stop
    (they read as a clause after "duplens finetune:" on the command line)."""
    message = message.strip()
    if not message:
        return message
    message = message[0].upper() + message[1:]
    return message if message[-1] in ".!?)" else message + "."


def _call(duplicate: bool) -> str:
    return "duplicate" if duplicate else "not"


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= CHANGES_TEXT_CHARS else text[:CHANGES_TEXT_CHARS] + "…"


def _read_only(table: QTableWidget) -> None:
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    table.setAlternatingRowColors(True)

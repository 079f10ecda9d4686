"""`FinetuneWizard`: "Improve the model…", from verdicts to a measured new version.

Four pages: what it will learn from (review verdicts plus an optional labelled file, with
counts, balance and the engine's advice), the objective, the second opinion and the options,
training (the judge's stages, then the model's: progress, live loss, ETA, stop), and the
results before and after (with the judge's AP beside the model in use's) with **Use this
model** or **Discard**. The pages render what `FinetuneController` emits; the engine decides
everything (whether there is enough to train on, the split, the metrics). Using the model is
left to the main window (`useModel`), which shows the re-encoding in its status bar.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QDoubleValidator
from PySide6.QtWidgets import (
    QButtonGroup,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QRadioButton,
    QSpinBox,
    QToolButton,
    QVBoxLayout,
    QWidget,
    QWizard,
    QWizardPage,
)

from desktop_app.bridge import EngineBridge
from desktop_app.colors import ERROR_STYLE, NOTE_STYLE, WARNING_STYLE
from desktop_app.controllers.finetune_controller import (
    FinetuneController,
    RunState,
    TrainingRequest,
)
from desktop_app.views.finetune_run import ResultsPage, TrainPage
from desktop_app.views.second_opinion_option import SecondOpinionOption

if TYPE_CHECKING:
    from engine.training.pairs import PairSummary

LABELLED_FILTER = ("Labelled pairs (*.csv *.tsv *.txt *.xlsx *.xlsm *.parquet *.jsonl);;"
                   "All files (*)")


def note_label(text: str, parent: QWidget, style: str = NOTE_STYLE) -> QLabel:
    label = QLabel(text, parent)
    label.setWordWrap(True)
    label.setStyleSheet(style)
    return label


class DataPage(QWizardPage):
    """Counts of what training would use; not complete while the engine would refuse."""

    def __init__(self, controller: FinetuneController, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.controller = controller
        self.setTitle("What the model will learn from")
        self.setSubTitle("The pairs you marked duplicate or not duplicate in Review, and any "
                         "labelled file you add. Part of them is held out to measure the "
                         "model before and after; it never learns from those.")
        self.review_label = QLabel("Reading the verdicts given in Review…", self)
        self.file_label = QLabel("No labelled file added.", self)
        self.file_label.setWordWrap(True)
        self.add_button = QPushButton("Add labelled file…", self)
        self.remove_button = QPushButton("Remove file", self)
        self.remove_button.setEnabled(False)
        self.file_help = note_label(
            "CSV or Excel: two text columns and a 0/1 or score column (question1, question2, "
            "is_duplicate; sentence1, sentence2, score), or anchor, positive, negative "
            "triplets.", self)
        self.file_error = note_label("", self, ERROR_STYLE)
        self.file_error.hide()
        self.total_label = QLabel("", self)
        self.balance_label = QLabel("", self)
        self.questions_label = QLabel("", self)
        self.warnings_label = note_label("", self, WARNING_STYLE)
        self.problem_label = note_label("", self, ERROR_STYLE)
        font = self.total_label.font()
        font.setBold(True)
        self.total_label.setFont(font)

        file_row = QHBoxLayout()
        file_row.addWidget(self.file_label, 1)
        file_row.addWidget(self.add_button)
        file_row.addWidget(self.remove_button)
        counts = QFormLayout()
        counts.addRow("Pairs in all", self.total_label)
        counts.addRow("Verdicts", self.balance_label)
        counts.addRow("Questions", self.questions_label)
        layout = QVBoxLayout(self)
        layout.addWidget(self.review_label)
        layout.addSpacing(6)
        layout.addLayout(file_row)
        layout.addWidget(self.file_help)
        layout.addWidget(self.file_error)
        layout.addSpacing(10)
        layout.addLayout(counts)
        layout.addSpacing(6)
        layout.addWidget(self.warnings_label)
        layout.addWidget(self.problem_label)
        layout.addStretch(1)

        self._loading = False
        self.add_button.clicked.connect(self._choose_file)
        self.remove_button.clicked.connect(lambda: self.controller.load_input(None))
        controller.inputLoading.connect(self._loading_started)
        controller.inputReady.connect(self.show_input)
        controller.inputFailed.connect(self.show_file_error)

    def initializePage(self) -> None:  # noqa: N802 - Qt's name
        if self.controller.input is None:
            self.controller.load_input(None)

    def isComplete(self) -> bool:  # noqa: N802 - Qt's name
        data = self.controller.input
        return not self._loading and data is not None and data.can_train

    # -- actions ---------------------------------------------------------------------------
    def ask_labelled_file(self) -> str | None:
        """The file picker (tests replace it)."""
        path, _ = QFileDialog.getOpenFileName(self, "Add labelled pairs", "", LABELLED_FILTER)
        return path or None

    def _choose_file(self) -> None:
        path = self.ask_labelled_file()
        if path:
            self.add_file(path)

    def add_file(self, path: str) -> None:
        self.controller.load_input(path)

    # -- rendering -------------------------------------------------------------------------
    def _loading_started(self) -> None:
        self._loading = True
        self.add_button.setEnabled(False)
        self.remove_button.setEnabled(False)
        self.file_error.hide()
        self.completeChanged.emit()

    def show_input(self, data) -> None:
        """Render an engine `TrainingInput`."""
        self._loading = False
        self.add_button.setEnabled(True)
        self.remove_button.setEnabled(data.file is not None)
        summary = data.summary
        checked = (f" From checking files: {data.checked:,} verdicts on rows not added yet."
                   if data.checked else "")
        self.review_label.setText(
            (f"From Review: {data.review:,} verdicts, {data.asked:,} of them asked for "
             f"by the model (Ask me)." if data.review else
             "No verdicts in Review yet: mark pairs duplicate (D) or not duplicate "
             "(N) there, or add a labelled file.") + checked)
        if data.file is None:
            self.file_label.setText("No labelled file added.")
        else:
            repeated = len(data.file.pairs) - data.file_added
            kind = "triplets" if data.file.kind == "triplets" else "pairs"
            read = len(data.file.triplets) if data.file.kind == "triplets" else len(
                data.file.pairs)
            columns = ", ".join(data.file.columns.values())
            extra = [f"{data.file_added:,} pairs added"]
            if repeated:
                extra.append(f"{repeated:,} already judged in Review (Review's verdict kept)")
            if data.file.skipped_rows:
                extra.append(f"{len(data.file.skipped_rows):,} rows with an empty text "
                             f"skipped")
            if data.file.note:
                extra.append(data.file.note)
            self.file_label.setText(
                f"<b>{Path(data.file_path).name}</b>: {read:,} {kind} from columns "
                f"{columns}; {'; '.join(extra)}.")
        self.total_label.setText(f"{summary.pairs:,}")
        if summary.pairs:
            share = summary.positives / summary.pairs
            graded = f" · {summary.graded:,} graded scores" if summary.graded else ""
            self.balance_label.setText(
                f"{summary.positives:,} duplicate ({share:.0%}) · {summary.negatives:,} not "
                f"duplicate ({1 - share:.0%}){graded}")
        else:
            self.balance_label.setText("—")
        self.questions_label.setText(f"{summary.questions:,} distinct")
        advice = [w for w in summary.warnings if w != data.problem]  # said once, below
        self.warnings_label.setText("\n".join(advice))
        self.warnings_label.setVisible(bool(advice))
        self.problem_label.setText(f"Training is not possible yet: {data.problem}"
                                   if data.problem else "")
        self.problem_label.setVisible(bool(data.problem))
        self.completeChanged.emit()

    def show_file_error(self, message: str) -> None:
        """The file was not added; what was shown before stays."""
        self._loading = False
        self.add_button.setEnabled(True)
        data = self.controller.input
        self.remove_button.setEnabled(data is not None and data.file is not None)
        self.file_error.setText(f"The file was not added: {message}")
        self.file_error.show()
        self.completeChanged.emit()


class ObjectivePage(QWizardPage):
    """The objectives, the recommended one preselected, the second opinion, and the training
    options. `summary()`: the counts of the answers the first page showed (None before)."""

    def __init__(self, summary: Callable[[], PairSummary | None],
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.summary = summary
        self.setTitle("How it should learn")
        self.setSubTitle("Each objective turns the same pairs into a different "
                         "training signal. The recommended one gained the most on Quora test "
                         "pairs: 4,000 pairs took average precision from 76.8 to 83.0.")
        self.setButtonText(QWizard.WizardButton.NextButton, "Train")
        self.buttons: dict[str, QRadioButton] = {}

    def initializePage(self) -> None:  # noqa: N802 - Qt's name
        if not self.buttons:
            self._build()
        summary = self.summary()
        if summary is not None:  # entered from the first page: its answers may have changed
            self.second_opinion.set_input(summary, self.held_out_fraction())

    def _build(self) -> None:
        """Made on first view: the first page's work on the review thread has imported the
        engine's training modules by then, so reading their defaults here costs nothing."""
        from engine.training.objectives import DEFAULT_OBJECTIVE, OBJECTIVES
        from engine.training.split import DEFAULT_HELD_OUT
        from engine.training.trainer import TrainingOptions

        self.defaults = TrainingOptions()
        self.default_held_out = DEFAULT_HELD_OUT
        self.group = QButtonGroup(self)
        layout = QVBoxLayout(self)
        for objective in OBJECTIVES.values():
            recommended = objective.name == DEFAULT_OBJECTIVE
            text = f"{objective.title} · {objective.loss}"
            button = QRadioButton(text + (" · recommended" if recommended else ""), self)
            if recommended:
                font = button.font()
                font.setBold(True)
                button.setFont(font)
                button.setChecked(True)
            self.group.addButton(button)
            self.buttons[objective.name] = button
            explanation = note_label(objective.explanation, self)
            explanation.setContentsMargins(24, 0, 0, 4)
            layout.addWidget(button)
            layout.addWidget(explanation)
        layout.addSpacing(8)
        self.second_opinion = SecondOpinionOption(self)
        layout.addWidget(self.second_opinion)
        layout.addSpacing(6)
        self.advanced_button = QToolButton(self)
        self.advanced_button.setText("Advanced")
        self.advanced_button.setCheckable(True)
        self.advanced_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.advanced_button.setArrowType(Qt.ArrowType.RightArrow)
        self.advanced_button.setAutoRaise(True)
        self.advanced_button.toggled.connect(self._toggle_advanced)
        self.advanced = QWidget(self)
        self._build_advanced()
        self.second_opinion.check.toggled.connect(self.silver_band.setEnabled)
        self.silver_band.setEnabled(self.second_opinion.check.isChecked())
        self.advanced.hide()
        self.error_label = note_label("", self, ERROR_STYLE)
        self.error_label.hide()
        layout.addWidget(self.advanced_button)
        layout.addWidget(self.advanced)
        layout.addWidget(self.error_label)
        layout.addStretch(1)

    def _build_advanced(self) -> None:
        self.batch_size = QSpinBox(self.advanced)
        self.batch_size.setRange(1, 1024)
        self.learning_rate = QLineEdit(self.advanced)
        validator = QDoubleValidator(1e-9, 1.0, 9, self.learning_rate)
        validator.setNotation(QDoubleValidator.Notation.ScientificNotation)
        self.learning_rate.setValidator(validator)
        self.warmup = QSpinBox(self.advanced)
        self.warmup.setRange(0, 99)
        self.warmup.setSuffix(" % of the steps")
        self.epochs = QSpinBox(self.advanced)
        self.epochs.setRange(1, 100)
        self.max_steps = QSpinBox(self.advanced)
        self.max_steps.setRange(0, 10_000_000)
        self.max_steps.setSpecialValueText("no limit")
        self.held_out = QSpinBox(self.advanced)
        self.held_out.setRange(10, 90)
        self.held_out.setSuffix(" % of the pairs")
        self.seed = QSpinBox(self.advanced)
        self.seed.setRange(0, 2_147_483_647)
        self.silver_band = QDoubleSpinBox(self.advanced)
        self.silver_band.setRange(0.01, 0.99)
        self.silver_band.setSingleStep(0.05)
        self.silver_band.setPrefix("± ")
        self.silver_band.setSuffix(" of the threshold (cosine)")
        reset = QPushButton("Defaults", self.advanced)
        reset.clicked.connect(self.reset_options)
        for field in (self.batch_size, self.learning_rate, self.warmup, self.epochs,
                      self.max_steps, self.held_out, self.seed, self.silver_band):
            field.setMinimumWidth(180)
        form = QFormLayout(self.advanced)
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.FieldsStayAtSizeHint)
        form.setContentsMargins(24, 0, 0, 0)
        form.addRow("Batch size", self.batch_size)
        form.addRow("Learning rate", self.learning_rate)
        form.addRow("Linear warm-up", self.warmup)
        form.addRow("Epochs", self.epochs)
        form.addRow("Stop after (steps)", self.max_steps)
        form.addRow("Held out for measuring", self.held_out)
        form.addRow("Random seed (split and training)", self.seed)
        form.addRow("Pairs the judge may label", self.silver_band)
        form.addRow("", reset)
        self.reset_options()

    def reset_options(self) -> None:
        d = self.defaults
        self.batch_size.setValue(d.batch_size)
        self.learning_rate.setText(f"{d.learning_rate:g}")
        self.warmup.setValue(round(d.warmup_ratio * 100))
        self.epochs.setValue(d.epochs)
        self.max_steps.setValue(d.max_steps or 0)
        self.held_out.setValue(round(self.default_held_out * 100))
        self.seed.setValue(d.seed)
        self.silver_band.setValue(d.silver_band)

    def _toggle_advanced(self, shown: bool) -> None:
        self.advanced.setVisible(shown)
        self.advanced_button.setArrowType(Qt.ArrowType.DownArrow if shown
                                          else Qt.ArrowType.RightArrow)

    # -- the choices -----------------------------------------------------------------------
    def objective(self) -> str:
        return next(name for name, b in self.buttons.items() if b.isChecked())

    def choose(self, name: str) -> None:
        self.buttons[name].setChecked(True)

    def options(self):
        """The engine's `TrainingOptions` from the fields; ValueError when one is invalid."""
        try:
            rate = float(self.learning_rate.text().replace(",", "."))
        except ValueError:
            raise ValueError("the learning rate must be a number such as 1e-4") from None
        return dataclasses.replace(
            self.defaults, batch_size=self.batch_size.value(), learning_rate=rate,
            warmup_ratio=self.warmup.value() / 100, epochs=self.epochs.value(),
            max_steps=self.max_steps.value() or None, seed=self.seed.value(),
            second_opinion=self.second_opinion.pairs(), silver_band=self.silver_band.value())

    def held_out_fraction(self) -> float:
        return self.held_out.value() / 100

    def request(self) -> TrainingRequest:
        """What the training page runs; ValueError when an advanced field is invalid."""
        return TrainingRequest(self.objective(), self.options(), self.held_out_fraction(),
                               self.seed.value())

    def validatePage(self) -> bool:  # noqa: N802 - Qt's name
        try:
            self.options()
        except ValueError as exc:
            self.error_label.setText(f"Check the advanced options: {exc}")
            self.error_label.show()
            self.advanced_button.setChecked(True)
            return False
        self.error_label.hide()
        return True


class FinetuneWizard(QWizard):
    """The four pages over one `FinetuneController`; `useModel(version_id, name)` when the
    user chooses the new version."""

    useModel = Signal(int, str)

    def __init__(self, bridge: EngineBridge, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Improve the model")
        self.controller = FinetuneController(bridge, self)
        self.data_page = DataPage(self.controller, self)
        self.objective_page = ObjectivePage(
            lambda: self.controller.input.summary if self.controller.input else None, self)
        self.train_page = TrainPage(self.controller, self.objective_page.request, self)
        self.results_page = ResultsPage(self.controller, self)
        for page in (self.data_page, self.objective_page, self.train_page, self.results_page):
            self.addPage(page)
        self.setOption(QWizard.WizardOption.NoBackButtonOnStartPage)
        self.setOption(QWizard.WizardOption.HaveCustomButton1)
        self.setButtonText(QWizard.WizardButton.CustomButton1, "Discard")
        self.setButtonLayout([QWizard.WizardButton.Stretch, QWizard.WizardButton.BackButton,
                              QWizard.WizardButton.NextButton,
                              QWizard.WizardButton.CommitButton,
                              QWizard.WizardButton.CustomButton1,
                              QWizard.WizardButton.FinishButton,
                              QWizard.WizardButton.CancelButton])
        self.customButtonClicked.connect(self._custom)
        self.currentIdChanged.connect(self._page_changed)
        self.controller.stateChanged.connect(self._state_changed)
        self.resize(960, 760)
        self._page_changed()

    # -- navigation ------------------------------------------------------------------------
    def _page_changed(self, *_args) -> None:
        on_results = self.currentPage() is self.results_page
        self.button(QWizard.WizardButton.CustomButton1).setVisible(on_results)
        self._sync_buttons()

    def _state_changed(self, state: RunState, _message: str) -> None:
        if state is RunState.DISCARDED:
            super().reject()
            return
        self._sync_buttons()

    def _sync_buttons(self) -> None:
        """No going back or discarding while a job of this wizard runs."""
        busy = self.controller.busy
        if busy:
            self.button(QWizard.WizardButton.BackButton).setEnabled(False)
        self.button(QWizard.WizardButton.CustomButton1).setEnabled(
            not busy and self.controller.report is not None)
        state = self.controller.state
        self.setButtonText(QWizard.WizardButton.CancelButton,
                           {RunState.TRAINING: "Stop training",
                            RunState.STOPPING: "Stopping…"}.get(state, "Close"))
        self.button(QWizard.WizardButton.CancelButton).setEnabled(
            state not in (RunState.STOPPING, RunState.DISCARDING))

    def back(self) -> None:
        if not self.controller.busy:
            super().back()

    def _custom(self, which: int) -> None:
        if which == QWizard.WizardButton.CustomButton1.value:
            self.controller.discard()

    def accept(self) -> None:
        """Finish ("Use this model") hands the new version to the main window."""
        report = self.controller.report
        if self.controller.busy or report is None:
            return
        self.useModel.emit(report.version_id, report.name)
        super().accept()

    def reject(self) -> None:
        """Close, or, while training, stop it first (the wizard stays to say so)."""
        if self.controller.state is RunState.TRAINING:
            self.controller.cancel()
            return
        if self.controller.busy:
            return
        super().reject()

"""`MainWindow`: the start page, then the search panel over the project's rows.

The window wires widgets to the bridge and the controllers (which run the engine calls) and
reacts to their signals; it decides nothing about data. Every slot is `guarded`: a bug shows
an error dialog and is logged, and the window carries on. A job with no handler of its own
for failures reports through `bridge.failed`, shown here as that dialog. Questions to the
user (file pickers, the import dialog) are small `ask_*` methods, so tests can answer them
without a modal dialog; `views.questions` asks them, `views.message_boxes` shows the error
and model-consent boxes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QSettings, Qt, QUrl
from PySide6.QtGui import QCloseEvent, QDesktopServices
from PySide6.QtWidgets import (
    QDialog,
    QMainWindow,
    QMessageBox,
    QSplitter,
    QStackedWidget,
    QTabWidget,
    QWidget,
)

from desktop_app.bridge import EngineBridge
from desktop_app.controllers.counts_controller import CountsController, with_counts
from desktop_app.controllers.import_controller import EncodingResult, ImportController, summary
from desktop_app.controllers.match_controller import MatchController
from desktop_app.controllers.model_controller import (
    ActivationResult,
    ModelController,
    ModelResult,
    activation_summary,
)
from desktop_app.controllers.review_controller import ReviewController
from desktop_app.controllers.second_opinion_controller import SecondOpinionController
from desktop_app.job_runner import JobHandle
from desktop_app.recent import RecentProjects
from desktop_app.resources import sample_questions_path, user_data_dir
from desktop_app.safety import guarded
from desktop_app.team_servers import TeamServers
from desktop_app.views import questions
from desktop_app.views.items_view import ItemsView
from desktop_app.views.main_menu import MainMenu
from desktop_app.views.match_results import MatchResultsDialog
from desktop_app.views.message_boxes import error_box, model_consent_box
from desktop_app.views.plots_view import PlotsView
from desktop_app.views.review_view import ClusterReviewView
from desktop_app.views.search_panel import SearchPanel
from desktop_app.views.settings_dialog import Preferences
from desktop_app.views.start_page import StartPage
from desktop_app.views.status_bar import WindowStatusBar
from desktop_app.views.team_dialog import TeamProjectDialog
from engine.add_file import ImportChoices
from engine.services.summary import COUNTS

log = logging.getLogger("duplens.gui")

LOADING_MODEL = "Loading the model…"


class MainWindow(QMainWindow):
    """The Duplens window; owns its widgets, borrows the bridge."""

    def __init__(self, bridge: EngineBridge, settings: QSettings | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.bridge = bridge
        self.settings = settings or QSettings("Duplens", "Duplens")
        self.recent = RecentProjects(self.settings)
        self.setWindowTitle("Duplens")
        self.resize(1180, 780)
        self._info: dict | None = None
        self._pending_import: ImportChoices | None = None
        self._file_choices: dict[str, ImportChoices] = {}   # by file path: the last choices
        self._opening: str | None = None
        self._recount = False          # counts asked for mid-import: take them
        self._busy = False             # a job of the changes pool runs (the menu waits)
        self._read_from_start = 0      # long texts an earlier version read from their start
        self.error_box: QMessageBox | None = None
        self.imports = ImportController(bridge, self)
        self.models = ModelController(bridge, self)
        # The active model's second opinion, asked by Review, Ask me and Check a file.
        self.opinion = SecondOpinionController(bridge, self)
        # A check uses the window's threshold once the analyst moved it, else the project's.
        self.matches = MatchController(bridge, self, threshold=lambda: (
            self.review.threshold if self.review.threshold_chosen else None),
            opinion=self.opinion)
        self.counts = CountsController(bridge, self)
        self.match_dialog: MatchResultsDialog | None = None

        self.start_page = StartPage(self)
        self.search_panel = SearchPanel(bridge, self, self.settings)
        self.items_view = ItemsView(bridge, self)
        self.items_model = self.items_view.model
        self.table = self.items_view.table
        splitter = QSplitter(Qt.Orientation.Vertical, self)
        splitter.addWidget(self.search_panel)
        splitter.addWidget(self.items_view)
        splitter.setStretchFactor(0, 2)
        splitter.setStretchFactor(1, 3)
        splitter.setContentsMargins(8, 8, 8, 0)
        self.search_page = splitter
        self.review = ReviewController(bridge, self, opinion=self.opinion)
        self.review_view = ClusterReviewView(self.review, self, self.settings)
        self.plots_view = PlotsView(self.review, self)
        self.tabs = QTabWidget(self)
        self.tabs.addTab(self.search_page, "Search")
        self.tabs.addTab(self.review_view, "Review duplicates")
        self.tabs.addTab(self.plots_view, "Plots")
        self.tabs.setDocumentMode(True)
        self.project_page = self.tabs
        self.pages = QStackedWidget(self)
        self.pages.addWidget(self.start_page)
        self.pages.addWidget(self.project_page)
        self.setCentralWidget(self.pages)

        self.status = WindowStatusBar(self)
        self.setStatusBar(self.status)
        self.status_label, self.job_status = self.status.project, self.status.job
        self.preferences = Preferences.load(self.settings)
        self.imports.encode_on = self.matches.encode_on = self.preferences.encode_on
        bridge.set_preferences(self.preferences.device, self.preferences.batch_size,
                               self.preferences.backend)
        self.setAcceptDrops(True)
        self._make_menu()
        self._connect()
        self.start_page.set_recent(self.recent.paths())
        self._show_status()

    # -- construction ----------------------------------------------------------------------
    def _make_menu(self) -> None:
        """The menus come from one table (`views.main_menu`); each action is kept as
        `<name>_action` so tests and the self-check can trigger it."""
        self.menu = MainMenu(self)
        for name, action in self.menu.actions.items():
            setattr(self, f"{name}_action", action)

    def _connect(self) -> None:
        b = self.bridge
        b.projectOpened.connect(self.on_project_opened)
        b.projectUpgrading.connect(self.status.show_upgrading)
        self.counts.counted.connect(self._counted)
        b.failed.connect(self.show_error)
        b.modelLoading.connect(self.on_model_loading)
        b.modelReady.connect(self.on_model_ready)
        b.modelFailed.connect(self.on_model_failed)
        b.modelNeedsConsent.connect(self.on_model_needs_consent)
        for progressed in (self.imports.progressed, self.models.progressed,
                           self.matches.progressed):
            progressed.connect(self.job_status.update_progress)
        self.imports.progressed.connect(self._import_progressed)
        self.imports.finished.connect(self._encoded)
        self.imports.stopped.connect(self._import_stopped)
        self.imports.failed.connect(self._job_failed)
        self.imports.removed.connect(self._import_removed)
        self.matches.checked.connect(self._file_checked)
        self.matches.added.connect(self._checked_rows_added)
        self.matches.failed.connect(self._match_failed)
        self.matches.exported.connect(lambda path: self.status.say(f"Exported to {path}"))
        self.matches.opinionReady.connect(
            lambda row, p: self._to_match_dialog(lambda d: d.show_opinion(row, p)))
        self.matches.opinionFailed.connect(
            lambda row, why: self._to_match_dialog(lambda d: d.opinion.failed_for(row, why)))
        self.opinion.offeredChanged.connect(
            lambda judge: self._to_match_dialog(lambda d: d.set_offered(judge is not None)))
        self.models.changed.connect(self._model_changed)
        self.models.activated.connect(self._activated)
        self.models.activationFailed.connect(self._job_failed)
        self.models.activationCancelled.connect(lambda: self._set_busy(False))
        self.start_page.newRequested.connect(self.new_project_from_spreadsheet)
        self.start_page.openRequested.connect(self.open_project_dialog)
        self.start_page.recentChosen.connect(self.open_project)
        self.start_page.sampleRequested.connect(self.try_sample)
        self.start_page.fileDropped.connect(self.new_project_from_file)
        self.search_panel.hitActivated.connect(self.select_item)
        self.status.resumeRequested.connect(self.resume_encoding)
        self.status.rereadRequested.connect(self.reread_long_texts)
        self.imports.rereadStopped.connect(self._reread_stopped)
        self.tabs.currentChanged.connect(self._tab_shown)
        self.review_view.exportRequested.connect(self.export_clusters)
        self.review.thresholdChanged.connect(self.search_panel.set_threshold)
        self.review.projectThresholdReady.connect(self.status.show_threshold)
        self.review.clustersChanged.connect(self.items_model.annotate)
        self.review.clustersChanged.connect(lambda _clusters: self.items_view.notes_changed())
        self.review.clusterUpdated.connect(
            lambda _pos, cluster: self.items_model.annotate_cluster(cluster))
        self.review.exported.connect(self._exported)
        self.review.measure.reportWritten.connect(
            lambda path: self.status.say(f"Quality report written to {path}"))

    # -- questions to the user (tests replace these; `views.questions` asks them) ---------
    def ask_spreadsheet(self) -> str | None:
        return questions.ask_spreadsheet(self)

    def ask_import_choices(self, path: str) -> ImportChoices | None:
        return self._ask_file_choices(path, "import")

    def ask_check_choices(self, path: str) -> ImportChoices | None:
        return self._ask_file_choices(path, "check")

    def _ask_file_choices(self, path: str, purpose: str) -> ImportChoices | None:
        """The import dialog for `path`, starting from the choices made for that file
        earlier in this session, by an import or a check: a file is often checked again
        (a second look, a wrong column), and the dialog's guess would put its ID column back
        to "(none)". What the analyst chooses now is remembered in turn."""
        key = str(Path(path).resolve())
        chosen = questions.ask_import_choices(self, self.bridge, path, purpose=purpose,
                                              remembered=self._file_choices.get(key))
        if chosen is not None:
            self._file_choices[key] = chosen
        return chosen

    def ask_new_project_path(self, suggested: str) -> str | None:
        return questions.ask_new_project_path(self, suggested)

    def ask_project_path(self) -> str | None:
        return questions.ask_project_path(self)

    def ask_export_path(self) -> str | None:
        return questions.ask_export_path(self, self._info["project"] if self._info else None)

    def ask_export_form(self) -> str | None:
        return questions.ask_export_form(self)

    def ask_preferences(self, current: Preferences) -> Preferences | None:
        model = self._info.get("model_location") if self._info else None
        return questions.ask_preferences(self, current, model)

    def sample_project_path(self) -> Path:
        """Where "Try it with sample questions" keeps its project (the user's data folder)."""
        return user_data_dir() / "sample-questions.duplens"

    # -- user actions ----------------------------------------------------------------------
    @guarded
    def new_project_from_spreadsheet(self) -> None:
        """Spreadsheet, then its columns, then where to save: the import starts on open."""
        sheet = self.ask_spreadsheet()
        if sheet:
            self.new_project_from_file(sheet)

    @guarded
    def new_project_from_file(self, sheet: str) -> None:
        """Its columns, then where to save (a spreadsheet dropped on the window starts here),
        then the file checked as the import would check it: only a file it can import gets
        a project. One it refuses (a text column blank on every row) says the import's one
        line and creates nothing; the project open before stays open, as `duplens import`
        leaves no file behind."""
        choices = self.ask_import_choices(sheet)
        if choices is None:
            return
        target = self.ask_new_project_path(str(Path(sheet).with_suffix(".duplens")))
        if target:
            self._follow(f"Reading {Path(sheet).name}…", self.imports.check(
                choices, on_done=lambda: self._create_project(target, choices),
                on_failed=self._new_project_refused,
                on_cancelled=lambda: self._set_busy(False)))

    @guarded
    def _create_project(self, target: str, choices: ImportChoices) -> None:
        """The file passed its check: make its project; the import starts once it opens."""
        self._set_busy(False)
        self._pending_import = choices
        self.open_project(target, create=True)

    @guarded
    def _new_project_refused(self, message: str, details: str) -> None:
        self._set_busy(False)
        self.show_error(message, details)

    @guarded
    def try_sample(self) -> None:
        """Open the sample project, importing the shipped sample questions the first time."""
        target = self.sample_project_path()
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists():
            self._pending_import = ImportChoices(str(sample_questions_path()), ["question"],
                                                 "id", None)
        self.open_project(str(target), create=True)

    @guarded
    def resume_encoding(self) -> None:
        self._follow(ImportController.title(None), self.imports.resume())

    @guarded
    def reread_long_texts(self) -> None:
        """Model → Re-encode long texts: what an earlier version read from its start only,
        read again whole, with progress and Cancel as an import."""
        self._follow("Re-encoding long texts…", self.imports.reread())

    @guarded
    def export_clusters(self) -> None:
        if self._info is None:
            return
        form = self.ask_export_form()
        path = self.ask_export_path() if form else None
        if path:
            self.status.say(f"Exporting to {Path(path).name}…", 0)
            self.review.export(path, form)

    @guarded
    def export_quality_report(self) -> None:
        """File → Export quality report: the estimate from the random sample, as one page."""
        if self._info is None:
            return
        path = self.ask_report_path()
        if path:
            self.status.say(f"Writing the quality report to {Path(path).name}…", 0)
            self.review.measure.export_report(path)

    def ask_report_path(self) -> str | None:
        return questions.ask_report_path(self, self._info["project"] if self._info else None)

    @guarded
    def show_about(self) -> None:
        from desktop_app.views.about_dialog import AboutDialog

        self.about_dialog = AboutDialog(self)
        self.about_dialog.open()  # window-modal, not exec(): tests can read and close it

    @guarded
    def show_guide(self) -> None:
        from desktop_app.views.guide_dialog import GuideDialog

        self.guide_dialog = GuideDialog(self)
        self.guide_dialog.open()

    @guarded
    def open_log_folder(self) -> None:
        """Help → Open the log folder: where the tracebacks of unexpected errors go."""
        from engine.logfile import log_path

        folder = log_path().parent
        folder.mkdir(parents=True, exist_ok=True)
        if not self.open_folder(folder):
            self.status.say(f"The log folder is {folder}")

    def open_folder(self, folder: Path) -> bool:
        """Show `folder` in the desktop's file manager (tests replace this)."""
        return QDesktopServices.openUrl(QUrl.fromLocalFile(str(folder)))

    @guarded
    def improve_model(self) -> None:
        """The fine-tuning wizard; choosing its model starts `activate_model`."""
        from desktop_app.views.finetune_wizard import FinetuneWizard

        wizard = FinetuneWizard(self.bridge, self)
        wizard.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        wizard.useModel.connect(self.activate_model)
        wizard.controller.discarded.connect(self._say_deleted)
        self.finetune_wizard = wizard
        wizard.open()

    @guarded
    def show_imports(self) -> None:
        """File → Imports…: the project's imports; one can be taken back out."""
        from desktop_app.views.imports_dialog import ImportsDialog

        dialog = ImportsDialog(self.bridge, self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.removeRequested.connect(self.remove_import)
        dialog.destroyed.connect(lambda *_: setattr(self, "imports_dialog", None))
        self.imports_dialog = dialog
        dialog.open()

    @guarded
    def remove_import(self, batch: int) -> None:
        self._follow(f"Removing import {batch}…", self.imports.remove(batch))

    @guarded
    def _import_removed(self, result: dict) -> None:
        self._set_busy(False)
        self._set_info(result["info"])
        self.items_view.reload()
        self.status.say(f"Import {result['batch']}: {result['rows']:,} rows removed")
        dialog = getattr(self, "imports_dialog", None)
        if dialog is not None and dialog.isVisible():
            dialog.reload()
        self.review.index_changed()
        self.review.load_imports()
        self._index_changed()

    @guarded
    def show_model_versions(self) -> None:
        from desktop_app.views.versions_dialog import VersionsDialog

        dialog = VersionsDialog(self.models, self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.activateRequested.connect(self.activate_model)
        dialog.deleted.connect(self._say_deleted)
        dialog.copied_out.connect(
            lambda folder: self.status.say(f"Model copied out to {folder}"))
        self.versions_dialog = dialog
        dialog.open()

    @guarded
    def activate_model(self, version_id: int, name: str) -> None:
        """Encode and index with a model version in the background, then search with it."""
        self._follow(f"Switching to {name}…", self.models.activate(version_id))

    @guarded
    def open_settings(self) -> None:
        chosen = self.ask_preferences(self.preferences)
        if chosen is None:
            return
        old = self.preferences
        self.preferences = chosen
        chosen.save(self.settings)
        self.imports.encode_on = self.matches.encode_on = chosen.encode_on
        self.bridge.set_preferences(chosen.device, chosen.batch_size, chosen.backend)
        if self._info is None:
            return
        if chosen.model != old.model:
            self.models.change_model(chosen.model or None)
            self.status.say("Loading the new model; encode to index with it", 10000)
        elif chosen.backend != old.backend:
            self.models.change_backend()
            self.status.say("Loading the model with the new backend", 10000)

    @guarded
    def open_team_project(self) -> None:
        """A project in a PostgreSQL database: server remembered, password never."""
        servers = TeamServers(self.settings)
        dialog = TeamProjectDialog(servers.servers(), self)
        if dialog.exec() == QDialog.DialogCode.Accepted:
            servers.remember(dialog.server())
            self.open_project(dialog.url())

    @guarded
    def open_project_dialog(self) -> None:
        path = self.ask_project_path()
        if path:
            self.open_project(path)

    @guarded
    def open_project(self, path: str, create: bool = False) -> None:
        self._opening = path
        self.status.show_opening(Path(path).name)
        self.bridge.open_project(path, create=create, on_failed=self._open_failed)

    @guarded
    def import_spreadsheet(self, sheet: str | None = None) -> None:
        """Into the open project: `sheet` (dropped), or one the user picks."""
        sheet = sheet or self.ask_spreadsheet()
        choices = self.ask_import_choices(sheet) if sheet else None
        if choices is not None:
            self.start_import(choices)

    @guarded
    def check_file(self, sheet: str | None = None) -> None:
        """File → Check a file against this project: the import dialog's choices, then the
        check with progress and Cancel, then the results (`views.match_results`)."""
        sheet = sheet or self.ask_spreadsheet()
        choices = self.ask_check_choices(sheet) if sheet else None
        if choices is not None:
            self._follow(MatchController.title(choices), self.matches.check(choices))

    @guarded
    def _file_checked(self, result) -> None:
        self._set_busy(False)
        dialog = MatchResultsDialog(result, self)
        dialog.verdictGiven.connect(self.matches.set_verdict)
        dialog.exportRequested.connect(self.matches.export)
        dialog.addRequested.connect(
            lambda: self._follow(ImportController.title(self.matches.choices),
                                 self.matches.add()))
        dialog.opinionWanted.connect(self.matches.ask_opinion)
        dialog.set_offered(self.opinion.offered is not None)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.match_dialog = dialog
        dialog.destroyed.connect(lambda: setattr(self, "match_dialog", None))
        dialog.show()

    def _to_match_dialog(self, say: Callable[[MatchResultsDialog], object]) -> None:
        """Pass the second opinion's news to the check's results, while they are open."""
        if self.match_dialog is not None:
            say(self.match_dialog)

    @guarded
    def _match_failed(self, message: str, details: str) -> None:
        if self.match_dialog is not None:
            self.match_dialog.add_failed()
        self._job_failed(message, details)

    @guarded
    def _checked_rows_added(self, result: dict) -> None:
        self._encoded(result)
        said = f"{summary(result)}; {result['verdicts_stored']} verdicts stored on its rows"
        self.status.say(said)
        if self.match_dialog is not None:
            self.match_dialog.rows_added(said)

    @guarded
    def start_import(self, choices: ImportChoices) -> None:
        self._follow(ImportController.title(choices), self.imports.start(choices))

    @guarded
    def select_item(self, item_id: int) -> None:
        """Select and show the table row of a search hit."""
        if not self.items_view.select_item(item_id):
            hidden = "hidden by the filter" if self.items_view.query.text_filter else \
                "no longer in the table"
            if self.items_view.reading:   # a million ids take seconds to read
                hidden = "not in the table yet: its rows are still being read"
            self.status.say(f"That row is {hidden}", 5000)

    # -- bridge signals --------------------------------------------------------------------
    @guarded
    def on_project_opened(self, info: dict) -> None:
        self._opening = None
        self._info = info
        self.status.show_model_state("")
        self._show_read_from_start(0)   # until its counts say
        self.recent.add(info["project"])
        self.start_page.set_recent(self.recent.paths())
        self.setWindowTitle(f"{Path(info['project']).name} — Duplens")
        self.items_view.reload(another_project=True)
        self.counts.count()
        self.pages.setCurrentWidget(self.project_page)
        self.tabs.setCurrentWidget(self.search_page)
        self.review.project_opened()
        self.search_panel.project_changed()
        self._set_busy(False)
        self.search_panel.query.setFocus()
        self._show_status()
        for notice in info.get("notices", []):
            self.status.say(notice)
        pending, self._pending_import = self._pending_import, None
        if pending is not None:
            self.start_import(pending)

    @guarded
    def _import_progressed(self, progress) -> None:
        """While an import encodes, the texts committed so far are searchable: the status
        line says how far it is, the rows are counted and shown once, and a query on screen
        is asked again every few seconds, so its answer grows with the index."""
        if progress.stage != "encoding":
            return
        if not self.search_panel.indexing:
            self.search_panel.set_indexing(True)
            self._recount = True
            self.counts.count()            # the file's rows are in: say how many,
            self.items_view.reload()       # and show them (a hit's row can be selected)
        self.status.show_encoding(progress.done, progress.total)
        self.search_panel.index_grew()

    def _import_ended(self) -> None:
        self.search_panel.set_indexing(False)
        self.status.show_encoding(None)

    @guarded
    def _counted(self, counted: dict) -> None:
        if self._recount and self._info is not None and \
                self._info.get("project") == counted.get("project"):
            self._recount = False
            info: dict | None = {**self._info, **{k: counted[k] for k in COUNTS}}
        else:
            info = with_counts(self._info, counted)
        if self._info is not None and self._info.get("project") == counted.get("project") \
                and counted.get("read_from_start") and not self._read_from_start:
            self.status.say(f"{counted['read_from_start']:,} long texts were read from their "
                            "start only, by an earlier version: Model → Re-encode long texts "
                            "reads them whole")
            self._show_read_from_start(counted["read_from_start"])
        if info is not None:
            self._set_info(info)
            if not self.search_panel.indexing:   # mid-import, the cut waits for the end
                self._tab_shown(self.tabs.currentIndex())   # it waited for "encoded"

    def _follow(self, title: str, job: JobHandle) -> None:
        """Show `job` in the status bar, its Cancel stopping it, until it ends."""
        self.status.follow(title, job)
        self._set_busy(True)

    # -- outcomes --------------------------------------------------------------------------
    @guarded
    def _model_changed(self, result: ModelResult) -> None:
        self._set_info(result["info"])

    @guarded
    def _job_failed(self, message: str, details: str) -> None:
        """An import or an activation failed: nothing changed; say why."""
        self._import_ended()
        self._set_busy(False)
        self.show_error(message, details)

    @guarded
    def _activated(self, result: ActivationResult) -> None:
        self._set_busy(False)
        self._set_info(result["info"])
        self.status.say(activation_summary(result))
        if not result["report"].cancelled:
            self._index_changed()

    def _index_changed(self) -> None:
        """New rows are searchable: clusters and plots shown so far are out of date."""
        if self.search_panel.query.text().strip():
            self.search_panel.refresh()
        self.review.index_changed()
        self._tab_shown(self.tabs.currentIndex())

    @guarded
    def _tab_shown(self, index: int) -> None:
        """Once there are vectors, the clusters are cut at the project threshold whichever
        tab shows (off the GUI thread, only when out of date): the table's Cluster and
        Verdict columns and the search's threshold come from that cut too. The plots are
        made when first shown."""
        if self._info is None or not self._info.get("encoded"):
            return
        self.review.show_clusters()
        if self.tabs.widget(index) is self.plots_view:
            self.review.show_plots()

    def _exported(self, path: str, rows: int) -> None:
        self.status.say(f"Exported {rows:,} rows to {path}")

    @guarded
    def _encoded(self, result: EncodingResult) -> None:
        """An import, a resumed encoding or a re-encode ended (perhaps stopped while
        encoding)."""
        if result.get("read_from_start") is not None:
            self._show_read_from_start(result["read_from_start"])
        self._import_ended()
        self._set_busy(False)
        self._set_info(result["info"])
        self.items_view.reload()
        self.status.say(summary(result))
        self.review.load_imports()
        self._index_changed()

    @guarded
    def _import_stopped(self) -> None:
        self._import_ended()
        self._set_busy(False)
        self.status.say("Import stopped; nothing from this file was added")

    @guarded
    def _reread_stopped(self) -> None:
        self._import_ended()
        self._set_busy(False)
        self.status.say("Re-encoding stopped before it began; nothing changed")

    def _show_read_from_start(self, count: int) -> None:
        """The open project has `count` long texts read from their start only: the Model
        menu's Re-encode long texts and the status bar's button are there while it has."""
        self._read_from_start = count
        self.status.show_read_from_start(count)
        self._menu_state()

    def _say_deleted(self, name: str) -> None:
        self.status.say(f"Deleted {name}")

    @guarded
    def _open_failed(self, message: str, details: str) -> None:
        self._pending_import = None
        if self._opening and not Path(self._opening).exists():
            self.recent.remove(self._opening)
            self.start_page.set_recent(self.recent.paths())
        self._opening = None
        self._show_status()
        self.show_error(message, details)

    @guarded
    def on_model_loading(self) -> None:
        self.status.show_model_state(LOADING_MODEL)

    @guarded
    def on_model_failed(self, message: str, details: str) -> None:
        self.status.show_model_state("Model not loaded")
        self.show_error(message, details)

    @guarded
    def on_model_needs_consent(self, message: str, location: str) -> None:
        """A project from someone else names a model outside its own folder: loading it
        runs its tokenizer and weights, so the user decides (engine.model_trust)."""
        self.status.show_model_state("Model not loaded")
        model_consent_box(self, message, lambda yes: self._consent_answered(yes, location))

    def _consent_answered(self, yes: bool, location: str) -> None:
        if yes:
            self.bridge.approve_model(location)
        else:
            self.status.say("The project's model was not loaded: search and encoding "
                            "need it")

    @guarded
    def on_model_ready(self, device: str) -> None:
        self.status.show_model_state("")
        if self._info is not None:
            self._set_info({**self._info, "device": device})

    # -- display ---------------------------------------------------------------------------
    def show_error(self, message: str, details: str = "") -> None:
        """A non-blocking warning box; the traceback (if any) under "Show Details…"."""
        log.warning("error shown to the user: %s", message)
        self.error_box = error_box(self, message, details)

    def _set_info(self, info: dict) -> None:
        self._info = info
        self._show_status()

    def _show_status(self) -> None:
        self.status.show_info(self._info)

    # -- drag and drop ---------------------------------------------------------------------
    def dragEnterEvent(self, event) -> None:  # noqa: N802 - Qt's name
        urls = event.mimeData().urls() if event.mimeData().hasUrls() else []
        if len(urls) == 1 and urls[0].isLocalFile():
            event.acceptProposedAction()

    def dropEvent(self, event) -> None:  # noqa: N802 - Qt's name
        urls = event.mimeData().urls()
        if not urls:
            return
        path = urls[0].toLocalFile()
        event.acceptProposedAction()
        if path.lower().endswith(".duplens"):
            self.open_project(path)
        elif self._info is not None:
            self.import_spreadsheet(path)
        else:
            self.new_project_from_file(path)

    def _set_busy(self, busy: bool) -> None:
        """One import at a time: the job pool is serial, a second would only queue."""
        self._busy = busy
        self._menu_state()
        self.start_page.setEnabled(not busy)
        if not busy:
            self.status.idle()

    def _menu_state(self) -> None:
        self.menu.set_state(busy=self._busy, project_open=self._info is not None,
                            read_from_start=self._read_from_start > 0)

    def closeEvent(self, event: QCloseEvent) -> None:
        self.bridge.shutdown()
        super().closeEvent(event)

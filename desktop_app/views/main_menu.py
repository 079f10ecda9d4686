"""The window's menus as one table: each action's menu, text, slot, shortcut and when it is
enabled.

A new command is one row here, not a `QAction` built by hand in the window: the table says at
a glance which actions need an open project and which wait while a job runs, and `set_state`
applies that rule in one place.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMainWindow, QMenu

Keys = QKeySequence.StandardKey


class Needs(Enum):
    """When an action can be used."""

    ALWAYS = "always"
    IDLE = "idle"                      # not while a job runs (the job pool is serial)
    PROJECT = "project"                # a project is open
    IDLE_PROJECT = "idle project"      # both
    # both, and some long texts were read from their start only by an earlier version
    READ_FROM_START = "idle project with texts read from their start"


@dataclass(frozen=True)
class MenuEntry:
    menu: str            # "&File"
    name: str            # the window attribute it becomes: `<name>_action`
    text: str
    slot: str            # a method of the window
    shortcut: Keys | str | None = None
    needs: Needs = Needs.ALWAYS
    separator_before: bool = False
    role: QAction.MenuRole | None = None


ENTRIES: tuple[MenuEntry, ...] = (
    MenuEntry("&File", "new", "&New project from spreadsheet…",
              "new_project_from_spreadsheet", Keys.New, Needs.IDLE),
    MenuEntry("&File", "open", "&Open project…", "open_project_dialog", Keys.Open, Needs.IDLE),
    MenuEntry("&File", "team", "Open &team project…", "open_team_project"),
    MenuEntry("&File", "sample", "Try it with &sample questions", "try_sample",
              needs=Needs.IDLE),
    MenuEntry("&File", "import", "&Import spreadsheet…", "import_spreadsheet", "Ctrl+I",
              Needs.IDLE_PROJECT),
    MenuEntry("&File", "check", "&Check a file against this project…", "check_file",
              needs=Needs.IDLE_PROJECT),
    MenuEntry("&File", "imports", "Im&ports…", "show_imports", needs=Needs.IDLE_PROJECT),
    MenuEntry("&File", "export", "&Export clusters…", "export_clusters", "Ctrl+E",
              Needs.PROJECT),
    MenuEntry("&File", "quality_report", "Export &quality report…", "export_quality_report",
              needs=Needs.PROJECT),
    MenuEntry("&File", "settings", "&Settings…", "open_settings", Keys.Preferences,
              separator_before=True),
    MenuEntry("&File", "quit", "&Quit", "close", Keys.Quit, separator_before=True),
    MenuEntry("&Model", "improve", "&Improve the model…", "improve_model",
              needs=Needs.IDLE_PROJECT),
    MenuEntry("&Model", "versions", "Model &versions…", "show_model_versions",
              needs=Needs.IDLE_PROJECT),
    MenuEntry("&Model", "reread", "&Re-encode long texts", "reread_long_texts",
              needs=Needs.READ_FROM_START, separator_before=True),
    MenuEntry("&Help", "guide", "&Keys and workflow", "show_guide", Keys.HelpContents),
    MenuEntry("&Help", "logs", "Open the &log folder", "open_log_folder"),
    MenuEntry("&Help", "about", "&About Duplens", "show_about",
              role=QAction.MenuRole.AboutRole, separator_before=True),
)


class MainMenu:
    """Builds `ENTRIES` into a window's menu bar and keeps each action's enabled state."""

    def __init__(self, window: QMainWindow, entries: tuple[MenuEntry, ...] = ENTRIES) -> None:
        self.actions: dict[str, QAction] = {}
        self._needs: dict[str, Needs] = {}
        menus: dict[str, QMenu] = {}
        for entry in entries:
            menu = menus.get(entry.menu)
            if menu is None:
                menu = menus[entry.menu] = window.menuBar().addMenu(entry.menu)
            if entry.separator_before:
                menu.addSeparator()
            action = QAction(entry.text, window)
            if entry.shortcut is not None:
                action.setShortcut(QKeySequence(entry.shortcut))
            if entry.role is not None:
                action.setMenuRole(entry.role)
            action.triggered.connect(_no_args(getattr(window, entry.slot)))
            menu.addAction(action)
            self.actions[entry.name] = action
            self._needs[entry.name] = entry.needs
        self.set_state(busy=False, project_open=False)

    def set_state(self, *, busy: bool, project_open: bool, read_from_start: bool = False
                  ) -> None:
        """Enable each action by its `Needs`; `read_from_start`: the open project has long
        texts an earlier version read from their start only."""
        for name, needs in self._needs.items():
            enabled = {Needs.ALWAYS: True, Needs.IDLE: not busy, Needs.PROJECT: project_open,
                       Needs.IDLE_PROJECT: not busy and project_open,
                       Needs.READ_FROM_START: not busy and project_open and read_from_start,
                       }[needs]
            self.actions[name].setEnabled(enabled)


def _no_args(slot: Callable[..., object]) -> Callable[[], object]:
    """`triggered` passes a `checked` flag; the window's slots take their own arguments."""
    return lambda *_: slot()

"""`ProjectStatus`: the status bar's line about the open project and its model.

"48 items · all-MiniLM-L6-v2 on cpu · 12 texts not encoded yet · index: 36 texts ·
Loading the model…": what the project holds (the engine's `info`) and what the model is
doing, rendered whenever either changes.
"""

from __future__ import annotations

from PySide6.QtWidgets import QLabel, QWidget

NO_PROJECT = "Open a project, or create one from a spreadsheet."
SEPARATOR = "  ·  "


def describe_project(info: dict | None) -> str:
    """The counts of `info` (`bridge.project_info`) in words; a hint when none is open."""
    if info is None:
        return NO_PROJECT
    parts = [f"{info['items']:,} items"]
    if info.get("model"):
        device = f" on {info['device']}" if info.get("device") else ""
        parts.append(f"{info['model']}{device}")
    left = info.get("texts", 0) - info.get("encoded", 0)
    if left > 0:
        parts.append(f"{left:,} texts not encoded yet")
    parts.append(f"index: {info.get('index_items', 0):,} texts"
                 if info.get("index_items") else "index: empty")
    return SEPARATOR.join(parts)


class ProjectStatus(QLabel):
    """The project's counts, then the model's state ("" when there is nothing to say)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(NO_PROJECT, parent)
        self._info: dict | None = None
        self._model_state = ""

    def show_info(self, info: dict | None) -> None:
        self._info = info
        self._render()

    def show_model_state(self, state: str) -> None:
        self._model_state = state
        self._render()

    def show_opening(self, name: str) -> None:
        """While a project opens; the next `show_info` replaces it."""
        self.setText(f"Opening {name}…")

    def _render(self) -> None:
        text = describe_project(self._info)
        self.setText(f"{text}{SEPARATOR}{self._model_state}" if self._model_state else text)

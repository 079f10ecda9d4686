"""Help → Keys and workflow: a short guide to the window, from a spreadsheet to a model.

The keys listed come from the review's own table of keys (`cluster_pane.KEYS`), so the guide
cannot drift from what the keys do.
"""

from __future__ import annotations

from html import escape

from PySide6.QtWidgets import QDialog, QDialogButtonBox, QTextBrowser, QVBoxLayout, QWidget

from desktop_app.views.cluster_pane import KEYS
from desktop_app.views.second_opinion_line import ACCEPT_KEY

WORKFLOW = (
    ("Import", "File → New project from spreadsheet… (or drop a file on the window): pick the "
               "text column(s) and an optional id column. Search works while it encodes, on "
               "the texts encoded so far."),
    ("Search", "Type a question in the Search tab: the most similar rows follow as you "
               "type. \"This may already exist\" heads them when the best one reaches the "
               "threshold; the near misses under it follow, muted, as similar, down to "
               "\"Show similar from\"."),
    ("Review duplicates", "The clusters at the threshold (the slider; it starts at the "
                          "project threshold). Judge each member against the canonical row "
                          "with the keys below; the next cluster follows when one is done."),
    ("Ask me", "In Review: one pair at a time that the model is least sure of. D / N / S "
               "give the verdict; Esc or \"Back to clusters\" leaves it."),
    ("Check a file", "File → Check a file against this project…: this week's new rows beside "
                     "their best existing match, nothing added. D / N give verdicts, kept "
                     "with the project until you add the rows."),
    ("Export", "File → Export clusters…: every row with its cluster and your verdicts, only "
               "the rows in clusters, or one row per cluster."),
    ("Improve the model", "Model → Improve the model…: fine-tune on your verdicts, see the "
                          "before/after on held-out pairs, then use the new version or "
                          "discard it."),
)

THRESHOLD = ("One threshold decides what counts as a duplicate everywhere: the project "
             "threshold, shown in the status bar with where it comes from. It is the one "
             "you set with the slider (Reset hands it back), else the best-F1 threshold of "
             "your verdicts once there are ten of each kind, else the model's default, "
             "chosen on labelled data and recorded with the model.")


def guide_html() -> str:
    steps = "".join(f"<li><b>{escape(title)}</b>: {escape(text)}</li>"
                    for title, text in WORKFLOW)
    keys = "".join(f"<tr><td><b>{escape(key)}</b></td><td>{escape(label)}</td></tr>"
                   for key, label in KEYS.values())
    keys += ("<tr><td><b>Ctrl+Z</b> / <b>Ctrl+Shift+Z</b></td><td>Undo / redo</td></tr>"
             "<tr><td><b>Esc</b></td><td>Leave Ask me</td></tr>"
             f"<tr><td><b>{ACCEPT_KEY}</b></td><td>Accept the second opinion (once a "
             "fine-tuned version's judge is offered; also in a file's check)</td></tr>")
    return (f"<h3>The workflow</h3><ol>{steps}</ol><p>{escape(THRESHOLD)}</p>"
            f"<h3>Keys in Review</h3><table cellspacing='4'>{keys}</table>"
            "<p>In a file's check: <b>D</b> duplicate of the best match, <b>N</b> new.</p>")


class GuideDialog(QDialog):
    """The guide in a scrollable page; Close closes it."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("guide")
        self.setWindowTitle("Duplens: keys and workflow")
        self.resize(620, 560)
        self.text = QTextBrowser(self)
        self.text.setHtml(guide_html())
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.text)
        layout.addWidget(buttons)

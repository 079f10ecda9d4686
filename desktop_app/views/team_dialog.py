"""`TeamProjectDialog`: File → Open team project… — which PostgreSQL server and database.

Remembered servers fill the fields in one pick. The password field appears only when libpq
would not find one by itself (PGPASSWORD, ~/.pgpass); what is typed there is used for this
connection and never saved.
"""

from __future__ import annotations

from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QSpinBox,
    QWidget,
)

from desktop_app.team_servers import Server


class TeamProjectDialog(QDialog):
    def __init__(self, remembered: list[Server], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Open team project")
        self._remembered = remembered
        self.known = QComboBox(self)
        self.known.addItem("New server…", None)
        for server in remembered:
            self.known.addItem(server.label, server)
        self.host = QLineEdit(self)
        self.host.setPlaceholderText("db.example.org")
        self.port = QSpinBox(self)
        self.port.setRange(1, 65535)
        self.port.setValue(5432)
        self.database = QLineEdit(self)
        self.database.setPlaceholderText("support_faq")
        self.user = QLineEdit(self)
        self.password = QLineEdit(self)
        self.password.setEchoMode(QLineEdit.EchoMode.Password)
        self.password_note = QLabel("Not saved. Put it in PGPASSWORD or ~/.pgpass to "
                                    "skip this.", self)
        form = QFormLayout(self)
        form.addRow("Server", self.known)
        form.addRow("Host", self.host)
        form.addRow("Port", self.port)
        form.addRow("Database", self.database)
        form.addRow("User", self.user)
        self._password_label = QLabel("Password", self)
        form.addRow(self._password_label, self.password)
        form.addRow("", self.password_note)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Open
                                        | QDialogButtonBox.StandardButton.Cancel, self)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        form.addRow(self.buttons)
        self.known.currentIndexChanged.connect(self._pick)
        for field in (self.host, self.database, self.user):
            field.textChanged.connect(self._update)
        self.port.valueChanged.connect(self._update)
        if remembered:
            self.known.setCurrentIndex(1)
        self._update()

    def _pick(self) -> None:
        server = self.known.currentData()
        if server is not None:
            self.host.setText(server.host)
            self.port.setValue(server.port)
            self.database.setText(server.database)
            self.user.setText(server.user)

    def _update(self) -> None:
        server = self.server()
        ask = not server.password_known()
        for widget in (self._password_label, self.password, self.password_note):
            widget.setVisible(ask)
        self.buttons.button(QDialogButtonBox.StandardButton.Open).setEnabled(
            bool(server.host and server.database))

    def server(self) -> Server:
        """What to remember: no password."""
        return Server(self.host.text().strip(), self.port.value(),
                      self.database.text().strip(), self.user.text().strip())

    def url(self) -> str:
        """What to connect with: the typed password only when one was asked for."""
        server = self.server()
        typed = self.password.text() if self.password.isVisibleTo(self) else ""
        return server.url(typed or None)

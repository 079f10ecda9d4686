"""The import dialog's encoding and delimiter overrides re-read the preview and travel with
the choices to the engine."""

from desktop_app.views.import_dialog import ImportDialog
from tests.desktop_app.conftest import SIGNAL_TIMEOUT_MS, shown_dialog


def choose(qtbot, dialog: ImportDialog, combo, value) -> None:
    """Pick `value` in `combo` and wait for the preview read again with it."""
    with qtbot.waitSignal(dialog.previewed, timeout=SIGNAL_TIMEOUT_MS):
        combo.setCurrentIndex(combo.findData(value))


def test_delimiter_override_changes_the_parsed_columns(qtbot, bridge_without_model,
                                                       tmp_path):
    path = tmp_path / "semi.csv"
    path.write_text("id;question\n1;How do I learn Python?\n2;Why is the sky blue?\n",
                    encoding="utf-8")
    dialog = shown_dialog(qtbot, ImportDialog(str(path), bridge_without_model))
    assert dialog.table.columnCount() == 2 and "semicolon" in dialog.format_label.text()
    choose(qtbot, dialog, dialog.delimiter_combo, ",")
    assert dialog.table.columnCount() == 1
    assert dialog.choices().delimiter == ","
    choose(qtbot, dialog, dialog.delimiter_combo, ";")
    assert dialog.table.columnCount() == 2
    assert dialog.choices().delimiter == ";"


def test_encoding_override_reads_the_file_as_told(qtbot, bridge_without_model, tmp_path):
    path = tmp_path / "latin.csv"
    path.write_bytes("id,question\n1,Où est la crème brûlée ?\n".encode("cp1252"))
    dialog = shown_dialog(qtbot, ImportDialog(str(path), bridge_without_model))
    choose(qtbot, dialog, dialog.encoding_combo, "cp1252")
    assert dialog.table.item(0, 1).text() == "Où est la crème brûlée ?"
    assert dialog.choices().encoding == "cp1252"
    choose(qtbot, dialog, dialog.encoding_combo, "utf-16")
    assert dialog.error_label.isVisibleTo(dialog) or dialog.table.item(0, 1) is None or \
        dialog.table.item(0, 1).text() != "Où est la crème brûlée ?"


def test_the_preview_is_read_off_the_gui_thread_and_only_the_newest_shown(
        qtbot, bridge_without_model, tmp_path, monkeypatch):
    import threading

    import engine.io

    path = tmp_path / "semi.csv"
    path.write_text("id;question\n1;How do I learn Python?\n", encoding="utf-8")
    read_on_gui_thread: list[bool] = []
    original = engine.io.preview_table

    def recording(*args, **kwargs):
        read_on_gui_thread.append(threading.current_thread() is threading.main_thread())
        return original(*args, **kwargs)

    monkeypatch.setattr(engine.io, "preview_table", recording)
    dialog = shown_dialog(qtbot, ImportDialog(str(path), bridge_without_model))
    shown: list[int] = []
    dialog.previewed.connect(lambda: shown.append(dialog.table.columnCount()))
    combo = dialog.delimiter_combo
    combo.setCurrentIndex(combo.findData(","))     # two changes before any answer comes:
    combo.setCurrentIndex(combo.findData(";"))     # the first preview is stale
    assert not dialog.buttons.buttons()[0].isEnabled()   # no import while it reads
    qtbot.waitUntil(lambda: not dialog.loading, timeout=SIGNAL_TIMEOUT_MS)
    bridge_without_model.wait()
    qtbot.wait(50)
    assert shown == [2] and dialog.choices().delimiter == ";"
    assert read_on_gui_thread and not any(read_on_gui_thread)


def test_checking_a_file_again_starts_from_the_choices_made_for_it(
        qtbot, window, tmp_path, monkeypatch):
    """Before, every File → Check a file of the same file reset the ID column to "(none)"
    (and the text columns to the guess): the dialog starts from last time's choices for that
    file, for the session; another file starts from the guess."""
    from PySide6.QtWidgets import QDialog

    path = tmp_path / "week.csv"
    path.write_text("ref;question;note\nr1;How do I learn Python quickly today?;a\n"
                    "r2;Which tyres are best for winter cycling?;b\n", encoding="utf-8")
    other = tmp_path / "other.csv"
    other.write_text("ref;question;note\nr1;How do I bake bread at home?;c\n",
                     encoding="utf-8")
    seen: list[tuple[list[str], str, str | None]] = []

    def analyst(dialog: ImportDialog) -> QDialog.DialogCode:
        qtbot.waitUntil(lambda: not dialog.loading, timeout=SIGNAL_TIMEOUT_MS)
        seen.append((dialog.text_columns(), dialog.id_combo.currentText(),
                     dialog.choices().delimiter))
        if len(seen) == 1:        # the first time: the analyst sets columns and a delimiter
            choose(qtbot, dialog, dialog.delimiter_combo, ";")
            dialog.set_text_columns(["question", "note"])
            dialog.id_combo.setCurrentText("ref")
        return QDialog.DialogCode.Accepted

    checked = []
    monkeypatch.setattr(ImportDialog, "exec", analyst)
    monkeypatch.setattr(window.matches, "check", checked.append)
    monkeypatch.setattr(window, "_follow", lambda *_args: None)
    window.check_file(str(path))
    window.check_file(str(path))
    window.check_file(str(other))
    assert seen[0] == (["question"], "(none)", None)            # the guess, the first time
    assert seen[1] == (["question", "note"], "ref", ";")        # last time's, the second
    assert seen[2] == (["question"], "(none)", None)            # another file: the guess
    assert checked[1].text_columns == ["question", "note"] and checked[1].id_column == "ref"

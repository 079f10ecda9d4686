"""The import dialog's encoding and delimiter overrides re-read the preview and travel with
the choices to the engine."""

from desktop_app.views.import_dialog import ImportDialog


def test_delimiter_override_changes_the_parsed_columns(qtbot, tmp_path):
    path = tmp_path / "semi.csv"
    path.write_text("id;question\n1;How do I learn Python?\n2;Why is the sky blue?\n",
                    encoding="utf-8")
    dialog = ImportDialog(str(path))
    qtbot.addWidget(dialog)
    assert dialog.table.columnCount() == 2 and "semicolon" in dialog.format_label.text()
    dialog.delimiter_combo.setCurrentIndex(dialog.delimiter_combo.findData(","))
    assert dialog.table.columnCount() == 1
    assert dialog.choices().delimiter == ","
    dialog.delimiter_combo.setCurrentIndex(dialog.delimiter_combo.findData(";"))
    assert dialog.table.columnCount() == 2
    assert dialog.choices().delimiter == ";"


def test_encoding_override_reads_the_file_as_told(qtbot, tmp_path):
    path = tmp_path / "latin.csv"
    path.write_bytes("id,question\n1,Où est la crème brûlée ?\n".encode("cp1252"))
    dialog = ImportDialog(str(path))
    qtbot.addWidget(dialog)
    dialog.encoding_combo.setCurrentIndex(dialog.encoding_combo.findData("cp1252"))
    assert dialog.table.item(0, 1).text() == "Où est la crème brûlée ?"
    assert dialog.choices().encoding == "cp1252"
    dialog.encoding_combo.setCurrentIndex(dialog.encoding_combo.findData("utf-16"))
    assert dialog.error_label.isVisibleTo(dialog) or dialog.table.item(0, 1) is None or \
        dialog.table.item(0, 1).text() != "Où est la crème brûlée ?"

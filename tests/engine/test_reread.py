"""A project whose long texts were read from their start reads them again, whole."""

from __future__ import annotations

import csv
import json

from engine.cli.dispatch import main
from engine.reread import count_read_from_start, reread_long_texts
from tests.engine.encoding.test_windows import LONG, QUESTIONS


def _file(tmp_path):
    src = tmp_path / "docs.csv"
    with src.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["text"])
        for row in [*QUESTIONS, LONG]:
            writer.writerow([row])
    return src


def _as_before_windows(project, monkeypatch):
    """Encode as a version before windows did: the tokenizer gives no offsets, so the long
    text is read from its start and flagged."""
    encoder = project.model.encoder()
    monkeypatch.setattr(type(encoder), "token_spans", lambda self, texts: None)
    report = project.vectors.encode()
    monkeypatch.undo()
    return report


def test_an_old_project_reads_its_long_texts_whole_when_asked(new_project, tmp_path,
                                                              monkeypatch):
    project = new_project()
    project.rows.import_table(_file(tmp_path), ["text"])
    old = _as_before_windows(project, monkeypatch)
    assert (old.truncated, old.windowed) == (1, 0)
    assert count_read_from_start(project) == 1 and project.info()["truncated"] == 1
    middle = LONG[-600:-200]                   # past the part the old encoding read
    before = project.search(middle, k=1)[0].score
    project.clusters.cut(threshold=0.75)       # a graph made with the old vectors
    report = reread_long_texts(project)
    assert (report.encoded, report.windowed, report.truncated) == (1, 1, 0)
    assert count_read_from_start(project) == 0 and project.info()["truncated"] == 0
    hit = project.search(middle, k=1)[0]
    assert hit.text == LONG and hit.score > before
    assert project.info()["index_items"] == 4          # replaced in the index, not added
    assert project.clusters.graph().ids.tolist() == sorted(project.vectors.index().ids())
    # Nothing left to read again: a second run encodes nothing.
    assert reread_long_texts(project).encoded == 0


def test_the_command_line_says_and_rereads(new_project, tmp_path, monkeypatch, capsys):
    project = new_project()
    project.rows.import_table(_file(tmp_path), ["text"])
    _as_before_windows(project, monkeypatch)
    path = project.store.path
    project.close()
    assert main(["info", str(path)]) == 0
    assert "1 long texts were read from their beginning only" in capsys.readouterr().err
    assert main(["encode", str(path), "--reread"]) == 0
    said = capsys.readouterr().err
    assert "1 texts were read from their beginning only; reading them whole" in said
    assert "1 texts are longer than one window of the model (256 word pieces)" in said
    assert main(["info", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["truncated"] == 0

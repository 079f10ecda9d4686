"""`project.matching`: a file's rows looked up in the project, which stays as it was."""

from __future__ import annotations

import codecs
import csv

import numpy as np
import pytest

from engine.errors import Cancelled, ProjectError
from engine.progress import CancelToken


@pytest.fixture
def new_file(tmp_path):
    path = tmp_path / "new.csv"
    path.write_text("title,body\n"
                    "Learning Python,How do I learn Python quickly?\n"
                    ",\n"
                    "Capitals,What is the capital of France?\n"
                    "Again,How do I learn Python quickly?\n"
                    "Capitals again,What is the capital of France?\n", encoding="utf-8")
    return path


def test_scores_are_exact_cosines_and_repeats_are_found_across_batches(open_questions, new_file,
                                                                       encoder):
    before = open_questions.info()
    result = open_questions.matching.check_file(new_file, ["title", "body"], k=2, batch_rows=2)
    # no verdicts yet: the project threshold is the model's default, and the result says so
    assert result.threshold == open_questions.threshold.model_default().value
    assert result.threshold_reason.startswith("the model's default, best F1 on")
    # The empty row 2 has nothing to match and is left out; the rest keep their numbers.
    assert [r.row for r in result.rows] == [1, 3, 4, 5]
    assert [r.id for r in result.rows] == ["1", "3", "4", "5"]
    first = result.rows[0]
    assert first.text == "Learning Python\nHow do I learn Python quickly?"
    query, stored = encoder.encode([first.text, first.matches[0].text])
    assert first.matches[0].score == pytest.approx(float(np.dot(query, stored)), abs=1e-4)
    # Row 4 repeats row 1 (an earlier batch), row 5 repeats row 3 (the same batch).
    assert [r.duplicate_in_file_of for r in result.rows] == [None, None, "1", "3"]
    assert open_questions.info() == before


def test_a_project_without_encoded_rows_is_refused(new_project, data_dir, new_file):
    project = new_project()
    project.rows.import_table(data_dir / "questions.csv", ["question"])
    with pytest.raises(ProjectError, match="no encoded rows"):
        project.matching.check_file(new_file, ["body"])


def test_cancel_stops_between_batches(open_questions, new_file):
    cancel = CancelToken()
    cancel.cancel()
    with pytest.raises(Cancelled):
        open_questions.matching.check_file(new_file, ["body"], cancel=cancel)


def _unstreamed(result, path):
    """The export as it was written before streaming: the whole result, then one table."""
    from engine.io import export_table

    export_table(result.frame(), path)


@pytest.mark.parametrize("suffix", [".csv", ".xlsx"])
def test_streamed_export_over_several_batches_is_the_whole_table(open_questions, new_file,
                                                                  tmp_path, suffix):
    import openpyxl

    from engine.services.matching import export_header, write_matches

    streamed, whole = tmp_path / f"streamed{suffix}", tmp_path / f"whole{suffix}"
    stream = open_questions.matching.stream(new_file, ["title", "body"], k=2, batch_rows=2)
    assert write_matches(stream, streamed) == 4
    assert stream.bad_lines == []
    result = open_questions.matching.check_file(new_file, ["title", "body"], k=2, batch_rows=2)
    assert list(result.frame().columns) == export_header(["title", "body"], 2)
    _unstreamed(result, whole)
    if suffix == ".csv":
        # The same cells; the csv module ends lines with CRLF (RFC 4180) where pandas wrote
        # the platform's line ending, which every CSV reader takes alike.
        def cells(path):
            with path.open(encoding="utf-8-sig", newline="") as fh:
                return list(csv.reader(fh))
        assert cells(streamed) == cells(whole)
        assert len(cells(streamed)) == 5
        assert streamed.read_bytes().startswith(codecs.BOM_UTF8)
    else:
        def cells(path):
            return [list(r) for r in openpyxl.load_workbook(path).active.iter_rows(
                values_only=True)]
        assert cells(streamed) == cells(whole)
        assert len(cells(streamed)) == 5


def test_a_check_stopped_mid_file_leaves_no_partial_export(open_questions, new_file, tmp_path):
    from engine.services.matching import write_matches

    out = tmp_path / "out" / "matches.csv"
    out.parent.mkdir()
    out.write_text("an earlier export\n", encoding="utf-8")
    cancel = CancelToken()
    seen = []

    def progress(p):
        seen.append(p.done)
        cancel.cancel()                       # after the first batch is written

    stream = open_questions.matching.stream(new_file, ["body"], batch_rows=2, progress=progress,
                                      cancel=cancel)
    with pytest.raises(Cancelled):
        write_matches(stream, out)
    assert seen == [2]
    assert out.read_text(encoding="utf-8") == "an earlier export\n"
    assert [p.name for p in out.parent.iterdir()] == ["matches.csv"]


def test_a_failing_write_leaves_no_partial_export(open_questions, new_file, tmp_path):
    from engine.errors import InputError
    from engine.services.matching import write_matches

    out = tmp_path / "out" / "matches.csv"
    out.parent.mkdir()
    stream = open_questions.matching.stream(new_file, ["body"], batch_rows=2)
    rows = stream.rows

    def failing():
        yield next(rows)
        raise OSError(5, "Input/output error")   # the disk fails after the first row

    stream.rows = failing()
    with pytest.raises(InputError, match="cannot write"):
        write_matches(stream, out)
    assert list(out.parent.iterdir()) == []


def _keep(project, result, *answers):
    """Verdicts on the checked rows, against each one's best match: (row, 1 / 0)."""
    from engine.store.pending_verdicts import PendingVerdict

    by_row = {r.row: r for r in result.rows}
    project.matching.keep_verdicts(result.sha256, result.file_name, [
        PendingVerdict(row, by_row[row].text, by_row[row].matches[0].item_id, label)
        for row, label in answers])


def test_verdicts_on_a_checked_file_are_kept_shown_again_and_adopted_on_import(
        open_questions, new_file):
    """Verdicts given while checking a file stay with the project, come back when the same
    file is checked again, are training pairs meanwhile, and become labelled pairs (origin
    "match") when an import adds the rows; before, they lived only in the window."""
    from engine.training.collect import training_input

    project = open_questions
    result = project.matching.check_file(new_file, ["body"])
    assert result.sha256 and result.verdicts == {}
    _keep(project, result, (1, 1), (3, 0))
    again = project.matching.check_file(new_file, ["body"])
    assert again.verdicts == {1: 1, 3: 0}
    assert project.matching.check_file(new_file, ["title", "body"]).verdicts == {}  # other text

    pending = project.matching.pending_pairs()
    assert sorted((p["text_a"], p["label"]) for p in pending) == [
        ("How do I learn Python quickly?", 1), ("What is the capital of France?", 0)]
    best = {r.row: r.matches[0].text for r in result.rows}
    assert {p["text_b"] for p in pending} == {best[1], best[3]}
    # Row 1 is word for word an existing question: no pair to learn from; row 3 is one.
    assert best[1] == "How do I learn Python quickly?" != best[3]
    pairs = project.versions.training_pairs()
    got = training_input(project.verdicts.pairs(), checked_rows=pending)
    assert got.checked == 1 and got.pairs == pairs
    assert [(p.text_a, p.text_b, p.label) for p in pairs] == [
        ("What is the capital of France?", best[3], 0.0)]

    _keep(project, result, (1, None))             # an answer taken back is forgotten
    assert project.matching.check_file(new_file, ["body"]).verdicts == {3: 0}
    report = project.rows.import_table(new_file, ["body"])
    assert report.verdicts_adopted == 1
    assert project.matching.pending_pairs() == []
    assert [(p["text_a"], p["text_b"], p["label"]) for p in project.verdicts.pairs()
            if p["origin"] == "match"] in ([("What is the capital of France?", best[3], 0)],
                                           [(best[3], "What is the capital of France?", 0)])


def test_export_of_a_check_says_each_rows_verdict(open_questions, new_file):
    result = open_questions.matching.check_file(new_file, ["body"], k=1)
    frame = result.frame({1: 1, 3: 0})
    assert list(frame.columns)[-1] == "verdict"
    assert list(frame["verdict"]) == ["duplicate", "new", "", ""]   # rows 1, 3, 4, 5
    assert "verdict" not in result.frame().columns      # `duplens match --out` as before

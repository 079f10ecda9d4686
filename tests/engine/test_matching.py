"""`project.matching`: a file's rows looked up in the project, which stays as it was."""

from __future__ import annotations

import numpy as np
import pytest

from engine.errors import Cancelled, ProjectError
from engine.jobs import CancelToken


@pytest.fixture
def imported(new_project, data_dir):
    project = new_project()
    project.rows.import_table(data_dir / "questions.csv", ["question"], id_column="qid")
    project.vectors.encode()
    return project


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


def test_scores_are_exact_cosines_and_repeats_are_found_across_batches(imported, new_file,
                                                                       encoder):
    before = imported.info()
    result = imported.matching.check_file(new_file, ["title", "body"], k=2, batch_rows=2)
    assert result.threshold == 0.8                      # no labels yet: the default
    # The empty row 2 has nothing to match and is left out; the rest keep their numbers.
    assert [r.row for r in result.rows] == [1, 3, 4, 5]
    assert [r.id for r in result.rows] == ["1", "3", "4", "5"]
    first = result.rows[0]
    assert first.text == "Learning Python\nHow do I learn Python quickly?"
    query, stored = encoder.encode([first.text, first.matches[0].text])
    assert first.matches[0].score == pytest.approx(float(np.dot(query, stored)), abs=1e-4)
    # Row 4 repeats row 1 (an earlier batch), row 5 repeats row 3 (the same batch).
    assert [r.duplicate_in_file_of for r in result.rows] == [None, None, "1", "3"]
    assert imported.info() == before


def test_a_project_without_encoded_rows_is_refused(new_project, data_dir, new_file):
    project = new_project()
    project.rows.import_table(data_dir / "questions.csv", ["question"])
    with pytest.raises(ProjectError, match="no encoded rows"):
        project.matching.check_file(new_file, ["body"])


def test_cancel_stops_between_batches(imported, new_file):
    cancel = CancelToken()
    cancel.cancel()
    with pytest.raises(Cancelled):
        imported.matching.check_file(new_file, ["body"], cancel=cancel)

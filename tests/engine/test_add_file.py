"""`engine.add_file`: a file imported, encoded, indexed and placed in the recorded clusters,
in one call, with what changed; stopped at each step, it keeps what the step promises."""

from __future__ import annotations

import pytest

from engine.add_file import ImportChoices, add_file, finish_encoding
from engine.errors import Cancelled
from engine.progress import CancelToken
from tests.engine.weekly_files import FIRST, SECOND


@pytest.fixture
def files(tmp_path):
    first, second = tmp_path / "week1.csv", tmp_path / "week2.csv"
    first.write_text(FIRST, encoding="utf-8")
    second.write_text(SECOND, encoding="utf-8")
    return ImportChoices(first, ["question"], "id"), ImportChoices(second, ["question"], "id")


def test_a_file_is_imported_encoded_and_placed_in_the_recorded_clusters(new_project, files):
    first, second = files
    project = new_project()
    added = add_file(project, first)
    assert added.imported.rows_imported == 6 and added.encoded.encoded == 6
    assert added.placed_at is None and added.changes == {}   # no cut recorded yet
    project.clusters.cut(0.8)

    seen = []
    added = add_file(project, second, on_imported=lambda r: seen.append(("imported", r)),
                     on_encoded=lambda r: seen.append(("encoded", r)))
    assert [step for step, _ in seen] == ["imported", "encoded"]
    assert added.placed_at == 0.8 and not added.cancelled and not added.placing_stopped
    assert added.changes == {"joined": 1, "new": 2, "canonical": 1}   # p3 leads p1, p2
    assert project.info()["encoded"] == 9

    again = add_file(project, second)   # the same file with the same columns: nothing new
    assert again.imported.already_imported and again.changes == {} and again.placed_at is None


def test_without_encoding_the_rows_wait_and_finish_encoding_does_the_rest(new_project, files):
    first, _ = files
    project = new_project()
    added = add_file(project, first, encode=False)
    assert added.encoded is None and project.info()["encoded"] == 0
    finished = finish_encoding(project)
    assert finished.imported is None and finished.encoded.encoded == 6


def test_stopped_while_reading_nothing_of_the_file_is_kept(new_project, files):
    first, _ = files
    project = new_project()
    stop = CancelToken()
    stop.cancel()
    with pytest.raises(Cancelled):
        add_file(project, first, cancel=stop)
    assert project.info()["items"] == 0

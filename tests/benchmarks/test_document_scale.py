"""The document scale benchmark's baseline encodes the windows the import reads: cut before
the import by the engine's own windowing, and checked against what the project stored."""

from __future__ import annotations

import csv

import numpy as np

from benchmarks.document_scale import _halves_note
from benchmarks.documents import stored_pieces
from engine.encoding.read_whole import cut_whole


def _texts() -> list[str]:
    """Three documents of several windows (different lengths, so their last windows differ)
    and two short texts, of words drawn at random."""
    rng = np.random.default_rng(3)
    vocabulary = ["river", "stone", "apple", "engine", "quiet", "north", "table", "signal",
                  "garden", "copper", "window", "letter", "basket", "silver", "market",
                  "winter", "orange", "planet", "candle", "harbour", "meadow", "pencil",
                  "thunder", "velvet", "lantern"]
    long = [" ".join(rng.choice(vocabulary, size=n)) + "." for n in (420, 650, 900)]
    return [long[0], "How do I learn Python?", long[1], long[2], "What is a window?"]


def test_the_pieces_cut_before_an_import_are_the_windows_the_project_stores(
        new_project, encoder, tmp_path):
    texts = _texts()
    table = tmp_path / "documents.csv"
    with table.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["id", "text"])
        writer.writerows([f"d{i}", t] for i, t in enumerate(texts))
    project = new_project()
    project.rows.import_table(table, ["text"], id_column="id")
    report = project.vectors.encode()
    assert report.windowed == 3 and report.windows > 6
    path = str(project.path)
    project.close()

    stored, count, windowed = stored_pieces(path)
    cut = cut_whole(encoder, texts).pieces
    assert (count, windowed) == (5, 3)
    assert sorted(cut) == sorted(stored)   # the project numbers its texts its own way
    assert len(cut) == report.windows + 2
    assert "How do I learn Python?" in cut and texts[0] not in cut


def test_the_halves_note_says_both_rates_and_whether_the_windows_matched():
    base = {"pieces_per_second_before_import": 33.04, "pieces_per_second_after_import": 41.0,
            "same_windows_as_stored": True}
    note = _halves_note({"documents": 10_000, "baseline": base})
    assert "33.0 windows/s" in note and "41.0 on the half timed just after" in note
    assert "are those the project stored" in note
    note = _halves_note({"documents": 10_000,
                         "baseline": {**base, "same_windows_as_stored": False}})
    assert "differ from those the project stored" in note

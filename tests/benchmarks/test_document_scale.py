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


def test_a_run_under_a_class_cap_records_the_cap_and_the_kernels_read_under_it(monkeypatch):
    """A run forced to a CPU class by `cpu_classes`' caps measures that class, not the CPU
    as it is: the caps are recorded with what the engine read, and the page names both."""
    from benchmarks.cpu_classes import CAP_VARIABLES
    from benchmarks.document_scale import _cpu, present

    for key in CAP_VARIABLES:
        monkeypatch.delenv(key, raising=False)
    assert "caps" not in _cpu()
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")
    cpu = _cpu()
    assert cpu["caps"] == {"ONEDNN_MAX_CPU_ISA": "AVX2"}
    assert cpu["int8_kernels"] == "avx2" and cpu["bf16_units"] is False
    base = {"pieces_per_second": 20.0, "pieces_encoded": 100, "batch_size": 16}
    measured = {"documents": 10, "windows": 100, "import": {"seconds": 2.5, "peak_rss_mib": 1},
                "import_windows_per_second": 40.0, "ratio": 2.0, "baseline": base,
                "duplicates": {"seconds": 1.0, "peak_rss_mib": 1}, "clusters": 0,
                "rows_in_clusters": 0, "project_mib_per_1000_documents": 1.0,
                "load_average_before": [1.0], "load_average_after": [1.0]}
    result = {"measured": [measured], "full_sizes": [10], "words_per_document": [800, 1200],
              "engine": {"commit": "abc"}, "cpu": cpu}
    page = present(result)
    assert page["headline"][0]["figure"].endswith("whole command; avx2, without bf16 units")
    assert "Kernels capped: ONEDNN_MAX_CPU_ISA=AVX2." in page["notes"]

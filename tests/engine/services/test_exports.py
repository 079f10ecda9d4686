"""The export is the analyst's spreadsheet: every row, every original cell, plus the review."""

import csv
from pathlib import Path

import pytest

from engine.services.exports import ADDED_COLUMNS, DEDUPLICATED, ONLY_CLUSTERS

# Leading zeros, embedded newline / quotes / separator, a row in no cluster, a pair of
# near-duplicates and an exact copy up to case and spacing (same normalised text).
ROWS = [
    ["id", "question", "zip", "note"],
    ["a1", "How do I reset my password?", "08123", 'line one\nline "two"; three, four'],
    ["a2", "How can I reset my password?", "00001", ""],
    ["a3", "What is the capital of Peru?", "0", "plain"],
    ["a4", "HOW do I   reset my password?", "08123", "  spaced  "],
    ["a5", "Best recipe for banana bread", "", "tab\there"],
]


def write_source(path: Path, delimiter: str, newline: str, bom: bool) -> None:
    with path.open("w", encoding="utf-8-sig" if bom else "utf-8", newline="") as fh:
        csv.writer(fh, delimiter=delimiter, lineterminator=newline).writerows(ROWS)


def read_back(path: Path) -> list[list[str]]:
    with path.open(encoding="utf-8-sig", newline="") as fh:
        return list(csv.reader(fh))


@pytest.fixture
def cut(new_project, tmp_path):
    def make(delimiter=",", newline="\n", bom=False):
        src = tmp_path / "odd.csv"
        write_source(src, delimiter, newline, bom)
        project = new_project()
        project.rows.import_table(src, ["question"], id_column="id")
        project.vectors.encode()
        return project, project.clusters.cut(0.9)
    return make


@pytest.mark.parametrize("delimiter,newline,bom", [(",", "\n", False), (";", "\r\n", True),
                                                   (",", "\r\n", True)])
def test_every_row_round_trips_cell_by_cell(cut, tmp_path, delimiter, newline, bom):
    project, clusters = cut(delimiter, newline, bom)
    out = tmp_path / "out.csv"
    assert project.exports.rows(out, clusters, 0.9) == 5
    got = read_back(out)
    assert got[0] == [*ROWS[0], *ADDED_COLUMNS]
    assert [line[:4] for line in got[1:]] == ROWS[1:]          # order and every cell exact
    added = {line[0]: dict(zip(ADDED_COLUMNS, line[4:], strict=True)) for line in got[1:]}
    assert added["a3"] == added["a5"] == {**dict.fromkeys(ADDED_COLUMNS, ""), "first_seen": "1",
                                         "threshold": "0.9"}
    group = {k: added[k] for k in ("a1", "a2", "a4")}
    assert len({a["cluster_id"] for a in group.values()}) == 1
    assert group["a1"]["cluster_id"] == "C000001"     # the project's first stored id
    canonical = [k for k, a in group.items() if a["is_canonical"] == "True"]
    assert len(canonical) == 1
    for key, a in group.items():
        assert a["canonical_id"] == canonical[0]
        assert a["duplicate_of"] == ("" if key == canonical[0] else canonical[0])
        assert 0.9 <= float(a["similarity"]) <= 1.0 and a["decision"]


def test_same_normalised_text_is_a_duplicate_even_above_the_threshold(cut, tmp_path):
    project, _ = cut()
    clusters = project.clusters.cut(1.0)     # no near-duplicate reaches 1.0
    out = tmp_path / "out.csv"
    project.exports.rows(out, clusters, 1.0)
    added = {line[0]: line[4:] for line in read_back(out)[1:]}
    assert added["a1"][2] == "" and added["a4"][2] == "a1"   # a4 folds onto a1
    assert added["a2"][0] == "" and added["a3"][0] == ""


def test_deduplicated_and_only_clusters(cut, tmp_path):
    project, clusters = cut()
    dedup, only = tmp_path / "dedup.csv", tmp_path / "only.csv"
    assert project.exports.rows(dedup, clusters, 0.9, form=DEDUPLICATED) == 3
    kept = [line[0] for line in read_back(dedup)[1:]]
    canonical = clusters[0].canonical.id
    assert kept == [i for i in ("a1", "a2", "a3", "a4", "a5")
                    if i in {canonical, "a3", "a5"}]
    assert project.exports.rows(only, clusters, 0.9, form=ONLY_CLUSTERS) == 3
    assert sorted(line[0] for line in read_back(only)[1:]) == ["a1", "a2", "a4"]


def test_cli_exports_every_row_and_the_two_other_forms(cut, tmp_path):
    from tests.engine.cli.test_cli import run

    project, _ = cut()
    path = project.path
    project.close()
    lines = {}
    for flag in ("", "--only-clusters", "--deduplicated"):
        out = tmp_path / f"cli{flag}.csv"
        run("duplicates", str(path), "--threshold", "0.9", "--out", str(out),
            *([flag] if flag else []))
        lines[flag] = read_back(out)[1:]
    assert [line[:4] for line in lines[""]] == ROWS[1:]
    assert len(lines["--only-clusters"]) == 3 and len(lines["--deduplicated"]) == 3
    run("duplicates", str(path), "--out", str(tmp_path / "x.csv"), "--only-clusters",
        "--deduplicated", check_code=2)


def test_xlsx_holds_every_row_with_text_kept_as_text(cut, tmp_path):
    import openpyxl

    project, clusters = cut()
    out = tmp_path / "out.xlsx"
    assert project.exports.rows(out, clusters, 0.9) == 5
    sheet = openpyxl.load_workbook(out, read_only=True).active
    got = list(sheet.iter_rows(values_only=True))
    # "08123" stays text; an empty cell is no cell in XLSX, so it reads back as None
    assert [[c or "" for c in r[:3]] for r in got[1:]] == [r[:3] for r in ROWS[1:]]
    assert got[1][3] == ROWS[1][3]

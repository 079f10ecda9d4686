"""Adding next week's file from the command line: import, review, import again, see what
changed, take an import back out — real processes, the real model."""

from __future__ import annotations

import csv
import io
import json

import pytest

from tests.engine.cli.test_cli import run
from tests.engine.weekly_files import FIRST, SECOND


def rows_of(path) -> dict[str, dict]:
    with open(path, encoding="utf-8-sig", newline="") as fh:
        return {r["id"]: r for r in csv.DictReader(fh)}


@pytest.mark.slow
def test_a_second_weeks_file_joins_the_first_weeks_clusters_and_can_be_taken_out(
        tmp_path, monkeypatch):
    project = str(tmp_path / "weekly.duplens")
    (tmp_path / "week1.csv").write_text(FIRST, encoding="utf-8")
    (tmp_path / "week2.csv").write_text(SECOND, encoding="utf-8")
    run("import", project, str(tmp_path / "week1.csv"), "--column", "question",
        "--id-column", "id")
    run("duplicates", project, "--threshold", "0.8", "--out", str(tmp_path / "w1.csv"))
    week1 = rows_of(tmp_path / "w1.csv")
    assert week1["p1"]["cluster_id"] == week1["p2"]["cluster_id"] != ""
    assert {r["first_seen"] for r in week1.values()} == {"1"}

    second = run("import", project, str(tmp_path / "week2.csv"), "--column", "question",
                 "--id-column", "id")
    assert ("clusters at 0.8 updated: 1 rows joined existing clusters, 2 rows in new "
            "clusters, 1 clusters led by another row") in second.stderr

    changes = tmp_path / "changes.csv"
    run("duplicates", project, "--threshold", "0.8", "--changes-since", "2", "--out",
        str(changes))
    changed = rows_of(changes)
    python = week1["p1"]["cluster_id"]
    assert set(changed) == {"p3", "k1", "k2", "p2"}
    assert changed["p3"]["change"] == "joined"
    assert changed["p3"]["cluster_id"] == python
    assert changed["k1"]["change"] == changed["k2"]["change"] == "new"
    assert changed["k1"]["first_seen"] == "2"
    # p3 took the lead from p2: said on p2 (p3 joined), with the rows before and after
    assert week1["p1"]["canonical_id"] == "p2"
    assert {k: changed["p2"][k] for k in ("change", "previous_cluster_id", "cluster_id",
                                          "canonical_id", "previous_canonical_id")} == \
        {"change": "canonical", "previous_cluster_id": python, "cluster_id": python,
         "canonical_id": "p3", "previous_canonical_id": "p2"}
    assert changed["p3"]["previous_canonical_id"] == ""
    listed = json.loads(run("duplicates", project, "--threshold", "0.8", "--changes-since",
                            "2", "--json").stdout)
    led = [line for line in listed if line["change"] == "canonical"]
    assert [(x["id"], x["cluster_id"], x["canonical_id"], x["previous_canonical_id"])
            for x in led] == [("p2", python, "p3", "p2")]
    said = run("duplicates", project, "--threshold", "0.8", "--changes-since", "2")
    assert "1 canonical" in said.stderr
    assert f"canonical  {python} -> {python}  [p2]" in said.stdout
    assert "(led by [p2] before, [p3] now)" in said.stdout

    run("duplicates", project, "--threshold", "0.8", "--out", str(tmp_path / "w2.csv"))
    week2 = rows_of(tmp_path / "w2.csv")
    assert {k: week2[k]["cluster_id"] for k in week1} == \
        {k: r["cluster_id"] for k, r in week1.items()}

    info = run("info", project)
    assert "import 1     week1.csv: 6 rows" in info.stdout
    assert "import 2     week2.csv: 3 rows" in info.stdout
    # No terminal to ask on (stdin is an empty file): refused, nothing removed.
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    refused = run("imports", project, "--delete", "2", check_code=2)
    assert "--yes" in refused.stderr
    run("imports", project, "--delete", "2", "--yes")
    listed = json.loads(run("imports", project, "--json").stdout)
    assert [b["batch"] for b in listed] == [1, 2] and listed[1]["removed_at"] is not None
    assert listed[1]["live"] == 0
    run("duplicates", project, "--threshold", "0.8", "--out", str(tmp_path / "w3.csv"))
    week3 = rows_of(tmp_path / "w3.csv")
    assert {k: r["cluster_id"] for k, r in week3.items()} == \
        {k: r["cluster_id"] for k, r in week1.items()}
    missing = run("duplicates", project, "--changes-since", "9", check_code=2)
    assert "no import 9" in missing.stderr


@pytest.mark.slow
def test_a_duplicate_label_across_two_clusters_puts_them_in_one_in_the_next_export(
        tmp_path):
    project = str(tmp_path / "label.duplens")
    (tmp_path / "week1.csv").write_text(FIRST, encoding="utf-8")
    run("import", project, str(tmp_path / "week1.csv"), "--column", "question",
        "--id-column", "id")
    run("duplicates", project, "--threshold", "0.8", "--out", str(tmp_path / "before.csv"))
    before = rows_of(tmp_path / "before.csv")
    assert before["p1"]["cluster_id"] != before["j1"]["cluster_id"]
    run("label", project, "p1", "j1", "dup")
    run("duplicates", project, "--threshold", "0.8", "--out", str(tmp_path / "after.csv"))
    after = rows_of(tmp_path / "after.csv")
    older = min(before["p1"]["cluster_id"], before["j1"]["cluster_id"])
    assert {after[k]["cluster_id"] for k in ("p1", "p2", "j1", "j2")} == {older}
    assert after["t1"]["cluster_id"] == before["t1"]["cluster_id"]

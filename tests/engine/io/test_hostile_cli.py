"""Hostile files through `duplens import --no-encode` as a user runs it, in a real process:
exit 2 with one line, and a peak memory that the file's size does not drive.

Each file is several times bigger than the memory the import may use (or, for the zip bomb,
unpacks to that), so a reader that loaded it whole would blow the bound.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from benchmarks.child_peak import run_python
from tests.engine.io.test_workbook import SHEET, SHEET_HEAD, SHEET_TAIL
from tests.engine.io.zips import padded_xml, repacked, workbook_parts

ROOT = Path(__file__).resolve().parents[3]
# The engine alone peaks at ~130 MiB and a row at the 16M-character cap adds ~70 (measured
# 163 and 197 MiB for the two 300 MB files); any of the files read whole passes the bound.
PEAK_RSS_MIB = 300
BIG = 300_000_000  # bytes of each text file: loaded whole, it would pass the bound alone

pytestmark = pytest.mark.slow


def import_cli(project: Path, path: Path, column: str) -> tuple[int, str, int, str]:
    """(exit code, stderr without progress bars, peak RSS in MiB, stdout: the summary) of
    one import."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TQDM_DISABLE": "1"}
    done = run_python(["-m", "engine.cli", "import", str(project), str(path), "--column",
                       column, "--no-encode"], env=env)
    return done.returncode, done.stderr.strip(), done.peak_rss_mib, done.stdout


def one_line(path: Path) -> Path:
    with path.open("w", encoding="utf-8") as out:
        out.write("id,text\n1,")
        for _ in range(BIG // 2**20):
            out.write("x" * 2**20)  # and never a newline
    return path


def unclosed_quote(path: Path) -> Path:
    line = "a question that goes on, and on\n" * 1000
    with path.open("w", encoding="utf-8") as out:
        out.write('id,text\n1,ok\n2,"opened here\n')
        for _ in range(BIG // len(line)):
            out.write(line)
    return path


def wide(path: Path) -> Path:
    path.write_text(",".join(f"c{i}" for i in range(100_000)) + "\n" + "v," * 99_999 + "v\n",
                    encoding="utf-8")
    return path


def zip_bomb(path: Path) -> Path:
    parts = workbook_parts([["text"], ["hello"]])
    bomb = padded_xml(SHEET, SHEET_HEAD, SHEET_TAIL, 3_200_000_000)
    return repacked(path, parts, {SHEET: bomb})


@pytest.mark.parametrize(("make", "name", "message"), [
    (one_line, "line.csv", "line.csv: line 2: a row longer than 16,000,000 characters"),
    (unclosed_quote, "quote.csv", "quote.csv: line 3: a row longer than 16,000,000 characters"),
    (wide, "wide.csv", "wide.csv: the table has 100,000 columns"),
    (zip_bomb, "bomb.xlsx", "bomb.xlsx: a sheet expands to 3.2 GB when unpacked"),
])
def test_a_hostile_file_exits_2_in_one_line_within_bounded_memory(tmp_path, make, name,
                                                                  message) -> None:
    path = make(tmp_path / name)
    code, stderr, peak_mib, _ = import_cli(tmp_path / "p.duplens", path, "text")
    assert code == 2, stderr
    assert len(stderr.splitlines()) == 1 and message in stderr, stderr
    assert peak_mib < PEAK_RSS_MIB, f"peak RSS {peak_mib} MiB"
    assert not (tmp_path / "p.duplens").exists()   # a failed import creates no project


def test_json_lines_nested_100000_deep_import_the_rest(tmp_path) -> None:
    path = tmp_path / "deep.jsonl"
    deep = 100_000
    path.write_text('{"text": ' + "[" * deep + "]" * deep + '}\n{"text": "fine"}\n',
                    encoding="utf-8")
    code, stderr, peak_mib, stdout = import_cli(tmp_path / "p.duplens", path, "text")
    assert code == 0, stderr
    assert "1 rows imported" in stdout and "skipped 1 malformed lines (1)" in stderr
    assert peak_mib < PEAK_RSS_MIB

"""The benchmark report generator: results JSON into docs/benchmarks.md's marked blocks.

These test the renderer with synthetic results files (no benchmark data, no model; a
`demo_*` name has no benchmark module, so what its file holds is rendered as it is), and
that the committed page is what the committed results render to; the figures themselves
come from `python -m benchmarks`.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from benchmarks import report
from tests.required import unavailable

ROOT = Path(__file__).resolve().parents[1]

DOC = """# Benchmarks

Hand-written introduction.

## Summary

<!-- generated:summary -->
old summary
<!-- /generated -->

## Live query latency

Prose about the method, kept.

<!-- generated:demo_latency -->
old latency table
<!-- /generated -->

Prose after the block, kept.

## The window

<!-- generated:window_latency -->
| figure | measured |
|---|---|
| hand-measured row | 63 ms |
<!-- /generated -->
"""

HARDWARE = {"cpu": "Example CPU 9000", "cores": 2, "ram_gib": 23.4}


def _result(name: str, result: dict) -> dict:
    return {"benchmark": name, "title": name.replace("_", " "), "mode": "quick",
            "command": f"python -m benchmarks --quick --only {name}",
            "date": "2026-11-23T10:00:00+00:00", "wall_seconds": 12.3, "hardware": HARDWARE,
            "versions": {"python": "3.11"}, "result": result}


LATENCY = _result("demo_latency", {
    "headline": [{"figure": "live query p95, 10k items", "duplens": "4.2 ms",
                  "baseline": "9.9 ms", "ratio": "2.36× faster", "goal": "≤ 10 ms",
                  "met": True}],
    "tables": [{"title": "Per query", "columns": ["items", "p95 | ms"],
                "rows": [["10k", "4.2"], ["100k", "5.0"]]}],
    "notes": ["Synthetic note."],
})


def test_blocks_are_replaced_and_prose_kept(tmp_path):
    text = report.render_doc(DOC, {"demo_latency": LATENCY}, tmp_path / "plots", tmp_path)

    assert "Hand-written introduction." in text
    assert "Prose about the method, kept." in text
    assert "Prose after the block, kept." in text
    assert "old latency table" not in text
    assert "old summary" not in text
    # A block without a result is left exactly as it was.
    assert "| hand-measured row | 63 ms |" in text
    latency = text.split("<!-- generated:demo_latency -->")[1].split("<!-- /generated -->")[0]
    assert "| 100k | 5.0 |" in latency
    assert "p95 \\| ms" in latency          # a pipe inside a cell is escaped
    assert "- Synthetic note." in latency
    assert "Example CPU 9000, 2 cores, 23.4 GiB RAM, CPU only" in latency
    assert "`python -m benchmarks --quick --only demo_latency`" in latency
    assert "2026-11-23T10:00:00+00:00" in latency
    # Rendering again changes nothing: the blocks are found and rewritten in place.
    assert report.render_doc(text, {"demo_latency": LATENCY}, tmp_path / "plots",
                             tmp_path) == text


def test_summary_rows_name_hardware_command_and_date(tmp_path):
    text = report.render_doc(DOC, {"demo_latency": LATENCY}, None, tmp_path)
    summary = text.split("<!-- generated:summary -->")[1].split("<!-- /generated -->")[0]
    row = next(line for line in summary.splitlines() if "live query p95" in line)
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1:7] == ["**4.2 ms**", "9.9 ms", "?", "2.36× faster", "≤ 10 ms", "yes"]
    assert cells[7].startswith("Example CPU 9000")
    assert cells[8] == "`python -m benchmarks --quick --only demo_latency`"
    assert cells[9] == "2026-11-23"


def test_result_without_a_block_gets_a_section_and_skips_say_why(tmp_path):
    gpu = _result("gpu_import", {"skipped": "no CUDA device"})
    text = report.render_doc(DOC, {"gpu_import": gpu}, None, tmp_path)
    assert text.count("<!-- generated:gpu_import -->") == 1
    tail = text.split("<!-- generated:gpu_import -->")[1]
    assert "_Not measured: no CUDA device._" in tail
    assert "| gpu import | not measured |" in text


def test_a_presenter_that_cannot_be_imported_fails_the_report(tmp_path, monkeypatch):
    """A benchmark's module that exists but cannot be imported must not leave its section
    rendered from whatever the results file holds (it was passed over silently)."""
    real = report.importlib.import_module

    def broken(name, *args, **kwargs):
        if name == "benchmarks.weekly":
            raise ImportError("a dependency of the presenter is missing")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(report.importlib, "import_module", broken)
    weekly = _result("weekly", {"weeks": {"weeks": []}})
    with pytest.raises(ImportError, match="dependency of the presenter"):
        report.render_doc(DOC, {"weekly": weekly}, None, tmp_path)
    # A results file with no module of its own is rendered from what it holds, as before.
    demo = _result("demo_latency", {"headline": [], "tables": [
        {"title": "t", "columns": ["a"], "rows": [[1]]}]})
    assert "| 1 |" in report.render_doc(DOC, {"demo_latency": demo}, None, tmp_path)


def test_another_machines_run_is_kept_beside_and_rendered_by_its_benchmark(tmp_path,
                                                                          monkeypatch):
    """`NAME@MACHINE.json` is NAME measured on another CPU: it gets its own block after
    NAME's, a title that names the machine, and NAME's own presenter."""
    here = LATENCY
    there = {**LATENCY, "hardware": {"cpu": "Laptop CPU 1", "cores": 8, "ram_gib": 16}}
    text = report.render_doc(DOC, {"demo_latency@laptop": there, "demo_latency": here},
                             None, tmp_path)
    assert report.block_names(text)[-1] == "demo_latency@laptop"   # a section of its own
    tail = text.split("<!-- generated:demo_latency@laptop -->")[1]
    assert "Laptop CPU 1, 8 cores" in tail and "Example CPU 9000" not in tail
    assert "## demo latency (on laptop)" in text
    summary = text.split("<!-- generated:summary -->")[1].split("<!-- /generated -->")[0]
    rows = [line for line in summary.splitlines() if "live query p95" in line]
    assert [("Laptop" in r) for r in rows] == [False, True]   # this machine's first

    real = report.importlib.import_module
    asked: list[str] = []

    def watched(name, *args, **kwargs):
        asked.append(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(report.importlib, "import_module", watched)
    weekly = _result("weekly", {"weeks": {"weeks": []}})
    report.render_doc(DOC, {"weekly@laptop": weekly}, None, tmp_path)
    assert "benchmarks.weekly" in asked   # the benchmark's presenter, not a flat table


def test_older_flat_results_are_rendered(tmp_path):
    flat = _result("import_throughput", {"rows": 5000, "batch_size": 64, "device": "cpu",
                                         "bare_encode_rows_per_s": 400.0,
                                         "duplens_import_rows_per_s": 380.0, "ratio": 0.95})
    text = report.render_doc(DOC, {"import_throughput": flat}, None, tmp_path)
    block = text.split("<!-- generated:import_throughput -->")[1]
    assert "| Duplens import (parse + store + encode + index) | 380.0 | **0.95** |" in block
    summary = text.split("<!-- generated:summary -->")[1].split("<!-- /generated -->")[0]
    assert "| ≥ 0.9× | yes |" in summary


def test_plots_are_drawn_as_png(tmp_path):
    if importlib.util.find_spec("matplotlib") is None:
        unavailable("BENCH", "matplotlib draws the plots: pip install 'duplens[bench]'")
    with_plot = _result("demo_latency", {**LATENCY["result"], "plots": [{
        "file": "latency.png", "title": "Latency", "xlabel": "items", "ylabel": "ms",
        "logx": True, "series": [{"label": "Duplens", "x": [10_000, 100_000], "y": [4, 5]}]}]})
    doc_dir = tmp_path / "docs"
    text = report.render_doc(DOC, {"demo_latency": with_plot}, doc_dir / "benchmarks",
                             doc_dir)
    png = doc_dir / "benchmarks" / "latency.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "![Latency](benchmarks/latency.png)" in text


def test_the_committed_page_is_its_results_rendered():
    """docs/benchmarks.md is what benchmarks/results/ renders to, to the character: a figure
    edited in the page, or a results file changed without rendering it again, fails here.
    (Plots are not drawn: their image lines are compared, the PNGs are not.)"""
    doc = ROOT / "docs" / "benchmarks.md"
    committed = doc.read_text(encoding="utf-8")
    rendered = report.render_doc(committed, report.load_results(report.RESULTS),
                                 report.PLOTS, doc.parent, draw=False)
    assert rendered == committed, (
        "docs/benchmarks.md differs from its results: run `python -m benchmarks.report`")


def test_every_summary_baseline_says_what_it_is():
    """A summary row with a baseline names what the baseline was, as it was run."""
    doc = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    summary = doc.split("<!-- generated:summary -->")[1].split("<!-- /generated -->")[0]
    lines = [line for line in summary.strip().splitlines()[2:]]
    assert lines
    for line in lines:
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells[1] == "not measured":
            continue
        assert cells[3] != "?", f"no description of the baseline in: {line}"
        assert cells[2] in ("", "—") or cells[3] not in ("", "–"), line


def test_suite_help_and_list():
    help_text = subprocess.run([sys.executable, "-m", "benchmarks", "--help"], cwd=ROOT,
                               capture_output=True, text=True, check=True).stdout
    assert "--quick" in help_text and "--only" in help_text
    listing = subprocess.run([sys.executable, "-m", "benchmarks", "--list"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout
    names = [line.split()[0] for line in listing.splitlines()]
    assert {"quality", "query_latency", "mining", "gpu_import", "finetune_quora"} <= set(names)


def test_gpu_benchmark_skips_with_a_reason_without_cuda():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA: the GPU benchmark would run for real")
    from benchmarks import gpu_import

    assert gpu_import.run(quick=True) == {"skipped": gpu_import.cuda_problem()}
    assert "no GPU was lent" in gpu_import.cuda_problem()


@pytest.mark.slow
def test_gpu_benchmark_logic_runs_on_the_cpu():
    """The GPU benchmark's code path, on the CPU with a few sample questions (logic only)."""
    import csv

    import duplens_data
    from benchmarks import gpu_import

    with duplens_data.sample_questions().open(encoding="utf-8") as fh:
        texts = [row["question"] for row in csv.DictReader(fh)][:48]
    result = gpu_import.measure(texts, "cpu", warm_up=8)

    assert result["rows"] == 48 and result["device"] == "cpu"
    assert result["baseline"]["rows_per_s"] > 0
    # On a CPU Duplens loads the model in fp32 (fp16 is for CUDA only), and says so.
    assert {r["dtype"] for r in result["runs"]} == {"fp32"}
    assert [r["name"].split(",")[0] for r in result["runs"]] == [
        "bare encode", "Duplens import", "Duplens import", "Duplens import", "Duplens import"]
    for r in result["runs"]:
        assert r["ratio"] == pytest.approx(r["rows_per_s"] / result["baseline"]["rows_per_s"],
                                           rel=0.01)
    table = gpu_import.present(result)["tables"][0]
    assert table["title"].endswith("on cpu") and len(table["rows"]) == 6


def _finetune_run(pairs: int, ap: float, seed: int = 0, **options) -> dict:
    from engine.training import TrainingOptions

    chosen = dataclasses.asdict(TrainingOptions(seed=seed, **options))
    return {"objective": "contrastive", "train_pairs": pairs, "options": chosen,
            "negative_pool": 0, "load_before": "2.10", "load_after": "3.40",
            "date": "2026-11-25T05:00:00+00:00", "training_seconds": 40.0,
            "total_seconds": 50.0, "seconds_per_pair": 50.0 / pairs,
            "after": {"average_precision": ap, "f1": 70.0}}


def test_finetune_relabel_marks_the_defaults_runs_and_the_report_holds_them_to_the_goals(
        tmp_path):
    """--relabel marks only the runs with today's default options (any seed) as recommended;
    the report pools their seeds, and says whether each size's goal was met."""
    from benchmarks.finetune_quora import _relabel

    results = {"benchmark": "finetune_quora", "command": "python -m benchmarks.finetune_quora",
               "date": "2026-11-25T05:00:00+00:00", "hardware": HARDWARE,
               "data": {"measured_pairs": 400, "held_out_duplicates": 150},
               "default_objective": "softmax", "options": {}, "goals": {"100": 2.5, "400": 5.0},
               "before": {"average_precision": 70.0, "f1": 68.0},
               "runs": [_finetune_run(100, 73.0), _finetune_run(100, 74.0, seed=1),
                        _finetune_run(100, 80.0, epochs=2), _finetune_run(400, 74.0)]}
    path = tmp_path / "finetune_quora.json"
    path.write_text(json.dumps(results), encoding="utf-8")
    _relabel(path)
    relabelled = json.loads(path.read_text(encoding="utf-8"))
    assert [r["recommended"] for r in relabelled["runs"]] == [True, True, False, True]
    assert relabelled["runs"][2]["changed"] == "epochs=2"

    section = report.section("finetune_quora", relabelled)
    goals = {row["figure"]: (row["ratio"], row["met"]) for row in section.headline[1:]}
    assert goals == {
        "held-out Quora AP after fine-tuning (contrastive, 100 pairs, mean of 2 seeds "
        "73.00–74.00)": ("+3.50 points", True),
        "held-out Quora AP after fine-tuning (contrastive, 400 pairs, 1 seed)": ("+4.00 points",
                                                                          False)}
    rows = section.tables[0]["rows"]
    pooled = next(r for r in rows if r[0].startswith("**recommended:**") and r[1] == "100")
    assert pooled[2] == 2 and pooled[-2] == "2.10 → 3.40, 2.10 → 3.40"


def test_finetune_reports_test_runs_and_chooses_on_validation(tmp_path):
    """Three-way results: the headline comes from the test runs only (F1 at the validation
    threshold), and each objective's best learning rate is read from the validation runs."""
    from benchmarks.finetune_quora import best_learning_rates

    def run(on: str, ap: float, seed: int = 0, objective: str = "contrastive",
            **options) -> dict:
        found = {**_finetune_run(1000, ap, seed=seed, **options), "measured_on": on,
                 "objective": objective}
        if on == "test":
            found["f1_at_validation_threshold"] = 71.0
        return found

    data = {"benchmark": "finetune_quora", "command": "python -m benchmarks.finetune_quora",
            "date": "2026-11-26T05:00:00+00:00", "hardware": HARDWARE,
            "data": {"measured_validation": 400, "measured_test": 400,
                     "validation_duplicates": 150, "test_duplicates": 140},
            "goals": {"1000": 2.5},
            "before": {"validation": {"average_precision": 70.0, "f1": 68.0},
                       "test": {"average_precision": 60.0, "f1": 58.0}},
            "runs": [run("validation", 75.0, learning_rate=2e-5),
                     run("validation", 78.0),
                     run("validation", 74.0, objective="mnrl", learning_rate=2e-5),
                     run("validation", 73.0, objective="mnrl"),
                     run("test", 63.0), run("test", 64.0, seed=1), run("test", 62.0, seed=2)]}
    best = best_learning_rates(data)
    assert best[("contrastive", 1000)] == (1e-4, 78.0, [2e-5, 1e-4], "")
    assert best[("mnrl", 1000)][:2] == (2e-5, 74.0)
    section = report.section("finetune_quora", data)
    figures = {h["figure"]: (h["duplens"], h["ratio"], h["met"]) for h in section.headline}
    assert figures["test Quora AP after fine-tuning (contrastive, 1,000 pairs, mean of 3 "
                   "seeds 62.00–64.00)"] == ("63.00", "+3.00 points", True)
    assert not any("validation" in f for f in figures)
    test_table = next(t for t in section.tables if t["title"].startswith("Test"))
    assert test_table["rows"][0][4] == "71.00"   # F1 at the validation threshold


def test_three_way_split_shares_no_question():
    """Training, validation and test share no question (by key or by normalised text)."""
    from benchmarks.finetune_quora import three_way_split
    from engine.training import LabelledPair

    rng = np.random.default_rng(0)
    pairs = []
    for i in range(400):
        a, b = rng.integers(0, 300, 2)
        pairs.append(LabelledPair(f"question {a}", f"question {b}", float(i % 3 == 0),
                                  key_a=f"id:{a}", key_b=f"id:{b}"))
    train, validation, test, dropped = three_way_split(pairs, seed=0)
    assert len(train) + len(validation) + len(test) + dropped == len(pairs)
    keys = [{k for p in part for k in (p.key_a, p.key_b)} for part in (train, validation, test)]
    assert not keys[0] & keys[1] and not keys[0] & keys[2] and not keys[1] & keys[2]
    assert validation and test and len(train) > len(validation)


def test_ask_headline_compares_with_random_pairs_of_the_same_run():
    """The asked-pairs headline is judged against 4x as many random pairs measured with the
    same seeds; without them it says so and claims nothing."""
    from benchmarks.ask_vs_random import present

    def run(kind: str, pairs: int, seed: int, ap: float) -> dict:
        return {"kind": kind, "strategy": "uncertain" if kind == "ask" else None,
                "pairs": pairs, "seed": seed, "measured_on": "test", "duplicates": 1,
                "average_precision": ap, "f1": 70.0, "best_threshold": 0.8,
                "calibrated_threshold": 0.8, "f1_at_calibrated": 70.0,
                "f1_at_validation_threshold": 69.0, "validation_threshold": 0.79,
                "training_seconds": 1.0}

    result = {"product_strategy": "uncertain",
              "before": {"test": {"average_precision": 70.0}},
              "runs": [run("ask", 100, s, 75.0 + s) for s in range(3)]
              + [run("random", 400, s, 76.5) for s in range(3)]
              + [run("random", 100, s, 73.0) for s in range(3)]}
    goal, same_size = present(result)["headline"]
    assert goal["baseline"].startswith("+6.50") and goal["met"] is False
    assert goal["baseline_is"].endswith("same run") and goal["ratio"] == "-0.50 points"
    assert same_size["met"] is None and same_size["baseline"].startswith("+3.00")
    result["runs"] = [r for r in result["runs"] if r["pairs"] != 400]
    goal = present(result)["headline"][0]
    assert goal["baseline"] == "not measured in this run" and goal["met"] is None

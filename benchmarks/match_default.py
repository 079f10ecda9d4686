"""Checking a new file at the default settings: the whole `duplens match` command against
plain sentence-transformers encoding the file's texts.

    python -m benchmarks --only match_default [--quick]

A project of the first 20,000 distinct Quora questions (quick, a smoke run: 3,000) is made
with `duplens import` at the default settings (not timed), so it is encoded by whatever
backend a new project gets here (`engine.encoding.backend_choice.default_backend`: OpenVINO
in bf16 on a CPU with bf16 units).
Then, one after the other in the same run, for a file of the next 5,000 questions (quick:
500):

- the baseline: plain `SentenceTransformer.encode` of the file's texts (the bundled model
  loaded and warm, normalised, torch's default threads, the faster of batch 32 and 64, both
  timed: `benchmarks.plain_encode`), timed around `encode` alone;
- Duplens: `duplens match PROJECT FILE --column question --out OUT.csv` in a child process,
  as an analyst types it, timed from process start to exit (imports, model load, reading
  the file, encoding it with the project's own backend, searching, the in-file check,
  writing the matches).

`benchmarks/match_throughput.py` measures the match path in process against a 1M-item
project whose embeddings were made by torch; this one is the command a new project's user
runs.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from benchmarks.console import command_headline, command_table, run_cli
from benchmarks.data import quora_questions, write_questions_csv
from benchmarks.import_throughput import GOAL_RATIO
from benchmarks.plain_encode import BATCH_SIZES, best_encode

PROJECT_ROWS, QUICK_PROJECT_ROWS = 20_000, 3_000
FILE_ROWS, QUICK_FILE_ROWS = 5_000, 500


def measure(file_rows: int, batch_size: int = 64, project_rows: int = PROJECT_ROWS) -> dict:
    import torch

    from engine.encoding.backend_choice import default_backend
    from engine.encoding.model_spec import load_model, resolve_model

    texts = quora_questions(project_rows + file_rows)
    known, new = texts[:project_rows], texts[project_rows:]
    model = load_model(resolve_model(None), "cpu")
    model.encode(new[:256], batch_size=batch_size)   # warm-up, not timed
    with tempfile.TemporaryDirectory(prefix="duplens-match-default-") as tmp:
        work = Path(tmp)
        env = {"DUPLENS_CACHE_DIR": str(work / "cache")}
        project = work / "project.duplens"
        started = time.perf_counter()
        run_cli(["import", str(project), str(write_questions_csv(work / "known.csv", known)),
                 "--column", "question"], env)
        import_s = time.perf_counter() - started
        bare, bare_batch = best_encode(model, new)
        out = work / "matches.csv"
        command = run_cli(["match", str(project),
                           str(write_questions_csv(work / "new.csv", new)),
                           "--column", "question", "--out", str(out)], env)
        matched = sum(1 for _ in out.open(encoding="utf-8-sig")) - 1
    print(f"  {file_rows:,} rows: plain encode {bare:.1f} s, duplens match {command:.1f} s "
          f"({bare / command:.2f}x)", file=sys.stderr)
    return {"backend": default_backend("cpu"), "project_rows": project_rows,
            "file_rows": file_rows, "rows_written": matched, "batch_size": batch_size,
            "torch_threads": torch.get_num_threads(), "import_s": round(import_s, 1),
            "bare_encode_s": round(bare, 2), "bare_batch": bare_batch,
            "bare_batches": list(BATCH_SIZES), "command_s": round(command, 2),
            "ratio": round(bare / command, 3)}


def present(result: dict, results: dict | None = None) -> dict:
    """The headline and its notes (benchmarks/report.py)."""
    n = result["file_rows"]
    headline = [command_headline(
        f"`duplens match` of a {n:,}-row file against a {result['project_rows']:,}-row "
        f"project at the default settings ({result['backend']}), whole command", n, result,
        "plain sentence-transformers (torch) `encode` of the file's texts alone (model "
        "loaded and warm, the faster of batch 32 and 64), same run", GOAL_RATIO)]
    notes = [
        f"The project: {result['project_rows']:,} distinct Quora questions imported with "
        f"`duplens import` at the default settings ({result['import_s']:.1f} s, not part of "
        f"the ratio); the file: the next {n:,}, every one written to the output with its "
        f"matches ({result['rows_written']:,} rows written).",
        f"Duplens at batch {result['batch_size']}; plain encode on torch's "
        f"{result['torch_threads']} threads at the faster of batch "
        f"{' and '.join(map(str, result.get('bare_batches', [64])))} in the run "
        f"({result.get('bare_batch', 64)} won); "
        f"the command is a child process (`python -m desktop_app.launcher`, what "
        f"the `duplens` console script runs), its time from process start to exit.",
    ]
    table = command_table(f"A {n:,}-row file against a {result['project_rows']:,}-row "
                          f"project ({result['backend']})", n, result,
                          "plain sentence-transformers encode of the file's texts",
                          "`duplens match`, whole command")
    return {"headline": headline, "tables": [table], "notes": notes}


def run(quick: bool) -> dict:
    """The suite's entry point (benchmarks/run.py)."""
    if quick:
        return measure(QUICK_FILE_ROWS, project_rows=QUICK_PROJECT_ROWS)
    return measure(FILE_ROWS)

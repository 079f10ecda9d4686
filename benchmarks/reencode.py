"""The re-encode after "Use this model": activating a fine-tuned version at the default
settings, the whole command, against plain sentence-transformers encoding the same texts
with the same version.

    python -m benchmarks --only reencode [--quick]

Not timed, in order: a project of the first 5,000 distinct Quora questions (quick: 500)
made with `duplens import` at the default settings; then `duplens finetune PROJECT --pairs
PAIRS --max-steps 10` on the first `TRAIN_PAIRS` labelled Quora pairs, which saves version 2
and, on a CPU whose default backend is a fast one, makes and checks its fast form
(`engine.training.fast_form`; its check and seconds are recorded).

Then, one after the other in the same run:

- the baseline: plain `SentenceTransformer.encode` of the project's texts with the version's
  own folder (torch, loaded and warm, normalised, torch's default threads, the faster of
  batch 32 and 64, both timed: `benchmarks.plain_encode`), timed around `encode` alone;
- Duplens: `duplens models PROJECT --activate 2` in a child process, as an analyst types it
  (what the window's "Use this model" runs), timed from process start to exit: imports,
  loading the version's form, encoding every text, building and saving the index, the
  switch.
"""

from __future__ import annotations

import csv
import gzip
import json
import sys
import tempfile
from pathlib import Path

from benchmarks.console import command_headline, command_table, run_cli, run_cli_output
from benchmarks.data import QUORA, quora_questions, write_questions_csv
from benchmarks.import_throughput import GOAL_RATIO
from benchmarks.plain_encode import BATCH_SIZES, best_encode

ROWS, QUICK_ROWS = 5_000, 500
TRAIN_PAIRS = 400
STEPS = 10


def write_pairs(path: Path, limit: int) -> Path:
    """The first `limit` labelled Quora pairs as a CSV `duplens finetune --pairs` reads."""
    with gzip.open(QUORA, "rt", encoding="utf-8") as fh, \
            path.open("w", newline="", encoding="utf-8") as out:
        next(fh)
        writer = csv.writer(out)
        writer.writerow(["qid1", "qid2", "question1", "question2", "is_duplicate"])
        for _, line in zip(range(limit), fh, strict=False):
            writer.writerow(line.rstrip("\n").split("\t"))
    return path


def finetune(project: Path, pairs: Path, env: dict[str, str]) -> tuple[dict, float]:
    """`duplens finetune … --json` in a child process: its report and wall seconds."""
    seconds, out = run_cli_output(["finetune", str(project), "--pairs", str(pairs),
                                   "--max-steps", str(STEPS), "--json"], env)
    return json.loads(out), seconds


def measure(rows: int) -> dict:
    import torch

    from engine.encoding.backend_choice import default_backend
    from engine.encoding.model_spec import load_model, resolve_model

    texts = quora_questions(rows)
    with tempfile.TemporaryDirectory(prefix="duplens-reencode-") as tmp:
        work = Path(tmp)
        env = {"DUPLENS_CACHE_DIR": str(work / "cache")}
        project = work / "project.duplens"
        run_cli(["import", str(project), str(write_questions_csv(work / "q.csv", texts)),
                 "--column", "question"], env)
        report, finetune_s = finetune(project, write_pairs(work / "pairs.csv", TRAIN_PAIRS),
                                      env)
        version = report["version"]["id"]
        model = load_model(resolve_model(report["version"]["folder"]), "cpu")
        model.encode(texts[:256], batch_size=64)    # warm-up, not timed
        bare, bare_batch = best_encode(model, texts)
        command = run_cli(["models", str(project), "--activate", str(version)], env)
    print(f"  {rows:,} rows: plain encode {bare:.1f} s, activation {command:.1f} s "
          f"({bare / command:.2f}x)", file=sys.stderr)
    return {"backend": default_backend("cpu"), "rows": rows, "train_pairs": TRAIN_PAIRS,
            "steps": STEPS, "finetune_s": round(finetune_s, 1),
            "fast_form": report["fast_form"], "torch_threads": torch.get_num_threads(),
            "bare_encode_s": round(bare, 2), "bare_batch": bare_batch,
            "bare_batches": list(BATCH_SIZES), "command_s": round(command, 2),
            "ratio": round(bare / command, 3)}


def present(result: dict, results: dict | None = None) -> dict:
    """The headline and its notes (benchmarks/report.py)."""
    n, fast = result["rows"], result["fast_form"]
    runs_as = fast["backend"] if fast and fast["passed"] else "torch"
    headline = [command_headline(
        f"Activating a fine-tuned version of a {n:,}-row project at the default settings (it "
        f"runs as {runs_as}), whole `duplens models --activate`", n, result,
        "plain sentence-transformers (torch) `encode` of the same texts with the same version "
        "(loaded and warm, the faster of batch 32 and 64), same run", GOAL_RATIO)]
    notes = [
        f"The project: {n:,} distinct Quora questions imported with `duplens import` at the "
        f"default settings; the version: `duplens finetune --max-steps {result['steps']}` on "
        f"the first {result['train_pairs']:,} labelled Quora pairs ({result['finetune_s']:.1f} "
        f"s in all, not part of the ratio).",
    ]
    if fast:
        verdict = "passed" if fast["passed"] else f"failed ({'; '.join(fast['failed'])})"
        notes.append(
            f"Its {fast['backend']} form was made and checked after training in "
            f"{fast['seconds']:.1f} s and {verdict}: held-out average precision "
            f"{fast['average_precision']:.2f} against {fast['torch_average_precision']:.2f} "
            f"under torch, search recall@10 {fast['recall_at_10']:.4f} against torch's exact "
            f"neighbours over {fast['texts']:,} of the project's texts.")
    notes.append(
        f"Plain encode on torch's {result['torch_threads']} threads at the faster of batch "
        f"{' and '.join(map(str, result['bare_batches']))} ({result['bare_batch']} won); the "
        f"command is a child process (`python -m desktop_app.launcher`, what the `duplens` "
        f"console script runs), its time from process start to exit.")
    table = command_table(f"Re-encoding {n:,} rows with a fine-tuned version ({runs_as})", n,
                          result, "plain sentence-transformers encode with the version",
                          "`duplens models --activate`, whole command")
    return {"headline": headline, "tables": [table], "notes": notes}


def run(quick: bool) -> dict:
    """The suite's entry point (benchmarks/run.py)."""
    return measure(QUICK_ROWS if quick else ROWS)

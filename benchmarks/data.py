"""Loading the evaluation data that lives beside the repository (never inside it), and writing
the one-column question files the import benchmarks feed the real importer."""

from __future__ import annotations

import csv
import gzip
import os
from pathlib import Path

SHARED = Path(os.environ.get("DUPLENS_SHARED", Path(__file__).resolve().parents[2] / "shared"))
QUORA = SHARED / "data" / "quora" / "pairs.tsv.gz"
STSB_TEST = SHARED / "data" / "stsb" / "test.tsv"
STSB_DEV = SHARED / "data" / "stsb" / "dev.tsv"
STSB_TRAIN = SHARED / "data" / "stsb" / "train.tsv"


def quora_questions(limit: int | None = None) -> list[str]:
    """Distinct Quora questions in file order (about 44k), for throughput runs."""
    if not QUORA.exists():
        raise SystemExit(f"benchmark data not found: {QUORA} (set DUPLENS_SHARED)")
    seen: dict[str, None] = {}
    with gzip.open(QUORA, "rt", encoding="utf-8") as fh:
        next(fh)
        for line in fh:
            _, _, q1, q2, _ = line.rstrip("\n").split("\t")
            seen.setdefault(q1, None)
            seen.setdefault(q2, None)
            if limit and len(seen) >= limit:
                break
    return list(seen)[:limit] if limit else list(seen)


def write_questions_csv(path: Path, texts: list[str]) -> Path:
    """`texts` as a one-column CSV headed "question": the benchmarks time Duplens' own
    importer reading a real file, so they need one on disk."""
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["question"])
        writer.writerows([t] for t in texts)
    return path

"""Import throughput: `duplens import` (parse + store + encode + index) vs bare encoding.

    python -m benchmarks.import_throughput [--rows 10000] [--batch-size 64]

Both runs use the same texts, the same model, device and batch size, in the same process,
one after the other; the ratio is pipeline rows/s divided by bare encode rows/s. The bare run
is `SentenceTransformer.encode` with its defaults (batches sorted by characters); Duplens
sorts batches by token count and indexes each committed chunk while the next one encodes
(engine/encoding/encode_job.py). `stages_s` splits the pipeline: reading + storing the rows, then
encoding + storing the vectors + indexing + saving the index.
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from pathlib import Path

from benchmarks.data import quora_questions, write_questions_csv


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()

    from engine.encoding.encoder import SentenceEncoder
    from engine.encoding.model_spec import load_model, resolve_model
    from engine.project import Project

    texts = quora_questions(args.rows)
    spec = resolve_model(None)
    model = load_model(spec, args.device)
    model.encode(texts[:256], batch_size=args.batch_size)  # warm-up, not timed

    t0 = time.perf_counter()
    model.encode(texts, batch_size=args.batch_size, normalize_embeddings=True,
                 convert_to_numpy=True)
    bare = time.perf_counter() - t0

    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "questions.csv"
        write_questions_csv(src, texts)
        t0 = time.perf_counter()
        with Project.open(Path(tmp) / "bench.duplens", create=True) as project:
            project.model.attach(SentenceEncoder(model, spec, args.device, args.batch_size),
                                   is_default=True)
            project.rows.import_table(src, ["question"])
            t1 = time.perf_counter()
            project.vectors.encode()
        pipeline = time.perf_counter() - t0
        parse_store = t1 - t0

    result = {
        "rows": len(texts), "device": args.device, "batch_size": args.batch_size,
        "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
        "bare_encode_rows_per_s": round(len(texts) / bare, 1),
        "duplens_import_rows_per_s": round(len(texts) / pipeline, 1),
        "ratio": round(bare / pipeline, 3),
        "stages_s": {"bare_encode": round(bare, 2), "parse_and_store_rows": round(parse_store, 2),
                     "encode_store_index_save": round(pipeline - parse_store, 2)},
    }
    print(json.dumps(result, indent=1))


def run(quick: bool) -> dict:
    """The suite's entry point (benchmarks/run.py): `main` with the suite's sizes, its JSON."""
    import contextlib
    import io
    import sys
    from unittest import mock

    out = io.StringIO()
    argv = ["import_throughput", "--rows", "5000" if quick else "20000"]
    with mock.patch.object(sys, "argv", argv), contextlib.redirect_stdout(out):
        main()
    return json.loads(out.getvalue())


if __name__ == "__main__":
    main()

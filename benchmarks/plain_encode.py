"""Plain sentence-transformers encoding as a baseline at its own best settings: every batch
size in `BATCH_SIZES` timed in the same run, the fastest kept.

On the 2-core test machine, 5,000 Quora questions took 15.7 s at batch 32 (the library's
default), 16.5 s at 64 and 18.3 s at 128, on torch's 2 threads (1 thread: 28-33 s); so a
baseline fixed at Duplens' batch 64 would be a few per cent slow.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

BATCH_SIZES = (32, 64)


def best_encode(model, texts: Sequence[str]) -> tuple[float, int]:
    """(seconds, batch size) of the fastest `model.encode(texts)` (normalised, NumPy) among
    `BATCH_SIZES`, each run once; the model is warmed up beforehand by the caller."""
    timings = []
    for batch_size in BATCH_SIZES:
        started = time.perf_counter()
        model.encode(list(texts), batch_size=batch_size, normalize_embeddings=True,
                     convert_to_numpy=True)
        timings.append((time.perf_counter() - started, batch_size))
    return min(timings)

"""Real question embeddings for the search and mining benchmarks, and noisy copies for scale.

The latency and mining figures time the index, the graph and the search, not the encoder,
so the 43,944 distinct Quora questions are encoded once (Duplens' own
`SentenceEncoder`, batch 64) and the vectors cached under benchmarks/results/tmp/ (ignored
by git), keyed by the model's fingerprint and the texts. The encode time is never reported.

A quick (smoke) run, which `benchmarks.run` marks with `QUICK_ENV` in its children's
environment, takes the first `QUICK_QUESTIONS` of them instead (the encode is the slow part
of a cold cache, and its figures are not quoted), and caches what it builds from them under
benchmarks/results/tmp/quick/, apart from the full run's.

Beyond those the extra rows are noisy copies of real embeddings: Gaussian noise with a
per-row σ drawn uniformly from [0.01, 0.05], renormalised, so a copy's cosine to its
original lies between about 0.7 and 0.98. They are index-only rows (no text), which every
benchmark that uses them says.
"""

from __future__ import annotations

import hashlib
import os
import sys
from functools import lru_cache
from pathlib import Path

import numpy as np

from benchmarks.data import quora_questions

QUERIES = 1000
QUICK_ENV = "DUPLENS_BENCHMARKS_QUICK"   # set to "1" in a quick run's processes
QUICK_QUESTIONS = 3_000
NOISE_SIGMA = (0.01, 0.05)
NOISE_NOTE = ("real question embeddings plus noisy copies of them (Gaussian noise, σ per row "
              "uniform in [0.01, 0.05], renormalised) as index-only rows")


def quick_run() -> bool:
    """Whether this process belongs to a quick (smoke) run of the suite."""
    return os.environ.get(QUICK_ENV) == "1"


CACHE = Path(__file__).resolve().parent / "results" / "tmp" / ("quick" if quick_run() else "")


@lru_cache(maxsize=1)
def questions() -> list[str]:
    """Every distinct Quora question of the pairs file, in file order (a quick run: the
    first `QUICK_QUESTIONS`)."""
    return quora_questions(QUICK_QUESTIONS if quick_run() else None)


def query_and_pool() -> tuple[list[str], list[str]]:
    """(the last 1,000 distinct questions, the rest): queries are never in an index."""
    texts = questions()
    return texts[-QUERIES:], texts[:-QUERIES]


@lru_cache(maxsize=1)
def encoder():
    """The bundled model through Duplens' loading path, on the CPU."""
    from engine.encoding.loading import load_encoder

    return load_encoder(None, device="cpu", batch_size=64)


def embed(texts: list[str]) -> np.ndarray:
    """Normalised float32 embeddings of `texts` by Duplens' encoder, cached on disk."""
    enc = encoder()
    digest = hashlib.sha256(enc.spec.fingerprint.encode())
    for text in texts:
        digest.update(text.encode("utf-8", "surrogatepass") + b"\0")
    path = CACHE / f"embeddings-{digest.hexdigest()[:20]}.npy"
    if path.exists():
        return np.load(path)
    print(f"  encoding {len(texts):,} questions once (cached in {path.parent})…",
          file=sys.stderr, flush=True)
    vectors = enc.encode(texts)
    CACHE.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".part.npy")
    np.save(tmp, vectors)
    tmp.replace(path)
    return vectors


def with_noisy_copies(real: np.ndarray, total: int, seed: int = 0,
                      chunk: int = 100_000) -> np.ndarray:
    """`real` followed by noisy, renormalised copies of its rows (cycling) up to `total` rows."""
    if total <= len(real):
        return real[:total].copy()
    rng = np.random.default_rng(seed)
    out = np.empty((total, real.shape[1]), dtype=np.float32)
    out[:len(real)] = real
    for start in range(len(real), total, chunk):
        stop = min(start + chunk, total)
        source = real[np.arange(start, stop) % len(real)]
        sigma = rng.uniform(*NOISE_SIGMA, size=(stop - start, 1)).astype(np.float32)
        noisy = source + sigma * rng.standard_normal(source.shape, dtype=np.float32)
        noisy /= np.linalg.norm(noisy, axis=1, keepdims=True)
        out[start:stop] = noisy
    return out

"""Texts read whole in memory, nothing stored: for a file checked against a project.

The encode job reads a project's long texts as windows and stores them; a checked file's
rows are looked up and forgotten, but must be read the same way, or a long row would be
compared by its opening only. This cuts each long text into the same windows
(`engine.encoding.windows`), encodes every piece in one call, and gives each text its
vector (the normalised mean of its windows', as the job stores it) and its windows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from engine.encoding.encoder import SentenceEncoder
from engine.encoding.windows import plans_for_long


@dataclass(frozen=True)
class ReadTexts:
    """Texts' vectors (n, dim), and for each text read in several windows its (spans,
    window vectors); None for a text read in one."""

    vectors: np.ndarray
    windows: list[tuple[np.ndarray, np.ndarray] | None]


@dataclass(frozen=True)
class CutTexts:
    """Texts cut into the pieces they are encoded in: `pieces[starts[i]:starts[i + 1]]` are
    text i's, and `spans_of[i]` the (windows, 2) character spans of a text read in several."""

    pieces: list[str]
    starts: list[int]
    spans_of: dict[int, np.ndarray]


def cut_whole(encoder: SentenceEncoder, texts: Sequence[str]) -> CutTexts:
    """Each long text cut into the windows the encode job cuts it into, each short text
    whole (also what the document scale benchmark's baseline encodes)."""
    window = encoder.max_seq_length
    long_at = [i for i, t in enumerate(texts) if len(t) + 2 > window]
    counts = encoder.token_counts([texts[i] for i in long_at]) if long_at else []
    long_at = [i for i, n in zip(long_at, counts, strict=True) if n > window]
    spans_of = {i: np.array([(w.start, w.end) for w in plan.windows], dtype=np.int32)
                for i, plan in plans_for_long(texts, long_at, encoder.token_spans,
                                              window).items()}
    pieces: list[str] = []
    starts = [0]
    for i, text in enumerate(texts):
        if i in spans_of:
            pieces.extend(text[a:b] for a, b in spans_of[i])
        else:
            pieces.append(text)
        starts.append(len(pieces))
    return CutTexts(pieces, starts, spans_of)


def encode_whole(encoder: SentenceEncoder, texts: Sequence[str]) -> ReadTexts:
    """Each text read whole, as the encode job reads it (one window: the same vector)."""
    if not texts:
        return ReadTexts(np.zeros((0, encoder.dim), dtype=np.float32), [])
    cut = cut_whole(encoder, texts)
    pieces, starts, spans_of = cut.pieces, cut.starts, cut.spans_of
    encoded = encoder.encode(pieces) if len(pieces) > 1 else encoder.encode_query(pieces[0])
    vectors = np.empty((len(texts), encoded.shape[1]), dtype=np.float32)
    windows: list[tuple[np.ndarray, np.ndarray] | None] = []
    for i in range(len(texts)):
        part = encoded[starts[i]:starts[i + 1]]
        if i in spans_of:
            mean = part.mean(axis=0)
            vectors[i] = mean / max(float(np.linalg.norm(mean)), 1e-12)
            windows.append((spans_of[i], part))
        else:
            vectors[i] = part[0]
            windows.append(None)
    return ReadTexts(vectors, windows)

"""Turning texts into normalised embeddings, one batch at a time.

A batch is plain data (`EncodeBatch` in, `EncodedBatch` out) so the same work can be handed
to another executor, a process pool or a Ray cluster, instead of the local one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

from engine.encoding.models import ModelSpec

if TYPE_CHECKING:  # pragma: no cover
    from sentence_transformers import SentenceTransformer

# Tokens are rarely shorter than one character, so a text longer than this many characters
# per token of the model's window is cut before tokenising: the model sees exactly the same
# tokens, and a several-MB cell does not cost seconds of tokenising.
CHARS_PER_TOKEN_CAP = 12


@dataclass(frozen=True)
class EncodeBatch:
    text_ids: list[int]
    texts: list[str]


@dataclass(frozen=True)
class EncodedBatch:
    text_ids: list[int]
    vectors: np.ndarray          # float32, L2-normalised, shape (len(text_ids), dim)
    truncated: list[bool]        # True where the model saw only the start of the text


class Executor(Protocol):
    """Runs `fn` over batches and yields results in order; local today, a cluster later."""

    def map(self, fn: Callable[[EncodeBatch], EncodedBatch], batches: Iterable[EncodeBatch]
            ) -> Iterator[EncodedBatch]: ...


class LocalExecutor:
    """Encodes batches one after another in the calling thread."""

    def map(self, fn: Callable[[EncodeBatch], EncodedBatch], batches: Iterable[EncodeBatch]
            ) -> Iterator[EncodedBatch]:
        for batch in batches:
            yield fn(batch)


class SentenceEncoder:
    """A loaded sentence-transformers model and how Duplens calls it."""

    def __init__(self, model: SentenceTransformer, spec: ModelSpec, device: str,
                 batch_size: int = 64) -> None:
        self.model = model
        self.spec = spec
        self.device = device
        self.batch_size = batch_size
        # Hugging Face fast tokenizers fail ("Already borrowed") when two threads use one
        # at once, as a live search does while an import encodes: one call at a time.
        self._lock = threading.Lock()

    @property
    def dim(self) -> int:
        return int(self.model.get_embedding_dimension())

    @property
    def max_seq_length(self) -> int:
        return int(self.model.max_seq_length)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Normalised float32 embeddings of `texts`, in order."""
        cap = self.max_seq_length * CHARS_PER_TOKEN_CAP
        clipped = [t[:cap] for t in texts]
        with self._lock:
            vectors = self.model.encode(
                clipped, batch_size=self.batch_size, convert_to_numpy=True,
                normalize_embeddings=True, show_progress_bar=False,
            )
        return np.asarray(vectors, dtype=np.float32)

    def encode_batch(self, batch: EncodeBatch) -> EncodedBatch:
        return EncodedBatch(batch.text_ids, self.encode(batch.texts),
                            self.truncation_flags(batch.texts))

    def truncation_flags(self, texts: Sequence[str]) -> list[bool]:
        """Which texts exceed the model's window; only long ones are tokenised to find out."""
        window = self.max_seq_length
        flags = [False] * len(texts)
        # A text cannot have more tokens than characters (plus [CLS] and [SEP]).
        long_idx = [i for i, t in enumerate(texts) if len(t) + 2 > window]
        if not long_idx:
            return flags
        cap = window * CHARS_PER_TOKEN_CAP
        clipped = [texts[i][:cap] for i in long_idx]
        with self._lock:
            encoded = self.model.tokenizer(clipped, add_special_tokens=True, truncation=False,
                                           return_attention_mask=False,
                                           return_token_type_ids=False, verbose=False)
        for i, ids in zip(long_idx, encoded["input_ids"], strict=True):
            flags[i] = len(ids) > window or len(texts[i]) > cap
        return flags

"""Turning texts into normalised embeddings, one batch at a time.

A batch is plain data (`EncodeBatch` in, `EncodedBatch` out) so the same work can be handed
to another executor, a process pool or a Ray cluster, instead of the local one.

Two paths share one set of weights. Bulk encoding (imports, activation) goes through the
model's own tokenizer, one call at a time. A single query (the per-keystroke search) goes
through a view of the model that has its own copy of the tokenizer and its own lock, so a
keystroke never waits for an import's batch: Hugging Face fast tokenizers fail ("Already
borrowed") when two threads use one at once, but the forward pass itself is stateless in
eval mode and torch runs two of them from two threads side by side.
"""

from __future__ import annotations

import collections
import copy
import logging
import os
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

from engine.encoding.model_spec import ModelSpec

if TYPE_CHECKING:  # pragma: no cover
    from sentence_transformers import SentenceTransformer

log = logging.getLogger("duplens")

# Tokens are rarely shorter than one character, so a text longer than this many characters
# per token of the model's window is cut before tokenising: the model sees exactly the same
# tokens, and a several-MB cell does not cost seconds of tokenising.
CHARS_PER_TOKEN_CAP = 12



def document_char_cap(max_seq_length: int) -> int:
    """Characters of a text read as windows at most: as many as `MAX_WINDOWS` windows
    could hold at the cap per token above, so a huge cell costs bounded tokenising."""
    from engine.encoding.windows import MAX_WINDOWS, STRIDE_SHARE

    return int(max_seq_length * CHARS_PER_TOKEN_CAP * MAX_WINDOWS * STRIDE_SHARE)


# Backends whose forward pass two threads may run at once: torch modules in eval mode, and
# onnxruntime sessions. OpenVINO models (optimum-intel) share one infer request, so their
# queries wait for the bulk path's lock instead.
_CONCURRENT = ("torch", "onnx")


@dataclass(frozen=True)
class EncodeBatch:
    text_ids: list[int]
    texts: list[str]
    # Token counts (special tokens included, before truncation) when the planner already
    # tokenised the texts to sort them; they give the truncation flags for free.
    token_counts: list[int] | None = None


@dataclass(frozen=True)
class EncodedBatch:
    text_ids: list[int]
    vectors: np.ndarray          # float32, L2-normalised, shape (len(text_ids), dim)
    truncated: list[bool]        # True where the model saw only the start of the text


class Executor(Protocol):
    """Runs an encoder over batches and yields the results in order.

    It gets the loaded encoder itself: an executor in this process calls it, one elsewhere
    (a Ray cluster) loads the same model from its `spec` and `batch_size` once per worker.
    Stopping the iteration (`close()` on the generator, which a `for` loop's `break` leads
    to once the generator is dropped) must stop the work still pending; `close()` on the
    executor releases what it holds (a cluster connection) and is idempotent.
    """

    def map(self, encoder: SentenceEncoder, batches: Iterable[EncodeBatch]
            ) -> Iterator[EncodedBatch]: ...

    def close(self) -> None: ...


class LocalExecutor:
    """Encodes batches one after another in the calling thread; an encoder that keeps
    batches in flight itself (`map_batches`: the torch-free one with OpenVINO) is handed
    them all."""

    def map(self, encoder: SentenceEncoder, batches: Iterable[EncodeBatch]
            ) -> Iterator[EncodedBatch]:
        pipelined = getattr(encoder, "map_batches", None)
        if pipelined is not None:
            yield from pipelined(batches)
            return
        for batch in batches:
            yield encoder.encode_batch(batch)

    def close(self) -> None:
        """Nothing to release."""


class SentenceEncoder:
    """A loaded sentence-transformers model and how Duplens calls it."""

    def __init__(self, model: SentenceTransformer, spec: ModelSpec, device: str,
                 batch_size: int = 64) -> None:
        self.model = model
        self.spec = spec
        self.device = device
        self.batch_size = batch_size
        # Hugging Face fast tokenizers fail ("Already borrowed") when two threads use one
        # at once: bulk calls take this lock; single queries use their own tokenizer.
        self._lock = threading.Lock()
        self._query_lock = threading.Lock()
        self._query_model: SentenceTransformer | None = None
        self._direct_queries = getattr(model, "backend", "torch") == "torch"
        self.query_runtime = "torch" if self._direct_queries else self.spec.backend
        self._fast_tried = False
        # Why single queries stay with torch after `prepare_fast_queries`, if they do.
        self.query_fallback_reason = ""

    @property
    def dim(self) -> int:
        return int(self.model.get_embedding_dimension())

    @property
    def max_seq_length(self) -> int:
        return int(self.model.max_seq_length)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Normalised float32 embeddings of `texts`, in order.

        One text (a search) goes through the query path and never waits for a bulk batch.
        """
        if len(texts) == 1:
            return self.encode_query(texts[0])
        clipped = self._clip(texts)
        with self._lock:
            vectors = self.model.encode(
                clipped, batch_size=self.batch_size, convert_to_numpy=True,
                normalize_embeddings=True, show_progress_bar=False,
            )
        return np.asarray(vectors, dtype=np.float32)

    def encode_query(self, text: str) -> np.ndarray:
        """The normalised embedding of one text, shape (1, dim), off the bulk path's lock.

        A torch model takes the direct route (`_forward_one`): sentence-transformers'
        `preprocess` and forward, as its `encode` runs them, without `encode`'s per-call
        bookkeeping (length sorting, eval(), progress bar), about 1.5 ms of a 7 ms query on
        2 CPU cores. Anything else, or a model the direct route fails on, goes by `encode`.
        """
        with self._query_lock:
            model = self._query_view()
            clipped = self._clip([text])
            if self._direct_queries and not isinstance(model, _Locked):
                try:
                    return _forward_one(model, clipped[0])
                except Exception:  # noqa: BLE001 - an unusual model: use encode from now on
                    self._direct_queries = False
            vectors = model.encode(clipped, batch_size=1, convert_to_numpy=True,
                                   normalize_embeddings=True, show_progress_bar=False)
        return np.asarray(vectors, dtype=np.float32).reshape(1, -1)

    def prepare_fast_queries(self) -> str:
        """Serve single queries through onnxruntime when it is installed and the model runs
        with torch on the CPU; returns the query runtime ("onnxruntime" or "torch").

        For the window, where every keystroke encodes one text: a short query took p50
        2.8 / p95 4.7 ms there against 7.3 / 10.4 ms with torch (1,000 questions, 2 cores;
        4.8 / 7.0 ms with a 50 ms pause before each, as when typing). The first call
        exports the transformer into the cache (seconds, once per model), so it is made
        from a background thread, and it is checked: the two runtimes must give the same
        embedding of a probe text, or queries stay with torch. `DUPLENS_FAST_QUERIES=0`
        turns it off. Idempotent; never raises.
        """
        with self._query_lock:
            if self._fast_tried:
                return self.query_runtime
            self._fast_tried = True
            if not self._direct_queries or self.device != "cpu":
                self.query_fallback_reason = "only a torch model on the CPU uses it"
                return self.query_runtime
            if os.environ.get("DUPLENS_FAST_QUERIES", "1") == "0":
                self.query_fallback_reason = "turned off by DUPLENS_FAST_QUERIES=0"
                return self.query_runtime
            try:
                from engine.encoding.runtime import query_runner

                runner = query_runner(self.model, self.spec.fingerprint)
                if runner is None:
                    self.query_fallback_reason = "onnxruntime is not installed"
                    return self.query_runtime
                view = self._query_view()
                fast = copy.copy(view)
                fast._modules = collections.OrderedDict(view._modules)
                first = copy.copy(view[0])
                # Its own submodule dict: a shallow copy shares the original's, and setting
                # `model` there would swap the bulk path's transformer too.
                first._modules = collections.OrderedDict(view[0]._modules)
                first.model, first.backend = runner, "onnx"
                fast._modules[next(iter(fast._modules))] = first
                probe = "How do I find out whether a question was already asked?"
                same = float((_forward_one(fast, probe) * _forward_one(view, probe)).sum())
                if same < 0.99999:
                    self.query_fallback_reason = (f"onnxruntime and torch disagree (cosine "
                                                  f"{same:.6f})")
                    log.warning("fast queries: %s; queries stay with torch",
                                self.query_fallback_reason)
                    return self.query_runtime
            except Exception as exc:  # noqa: BLE001 - an optimisation; torch still serves
                self.query_fallback_reason = f"{type(exc).__name__}: {exc}"
                log.warning("fast queries unavailable, queries stay with torch: %s", exc,
                            exc_info=True)
                return self.query_runtime
            self._query_model, self.query_runtime = fast, "onnxruntime"
            return self.query_runtime

    def encode_batch(self, batch: EncodeBatch) -> EncodedBatch:
        if batch.token_counts is not None:
            flags = self._flags_from_counts(batch.texts, batch.token_counts)
        else:
            flags = self.truncation_flags(batch.texts)
        return EncodedBatch(batch.text_ids, self.encode(batch.texts), flags)

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        """Tokens per text (special tokens included, not truncated; huge texts are cut at
        the character cap first), for sorting batches by what the model really pays for."""
        if not texts:
            return []
        with self._lock:
            encoded = self.model.tokenizer(self._clip(texts), add_special_tokens=True,
                                           truncation=False, return_attention_mask=False,
                                           return_token_type_ids=False, verbose=False)
        return [len(ids) for ids in encoded["input_ids"]]

    def token_spans(self, texts: Sequence[str]
                    ) -> list[tuple[list[tuple[int, int]], list[int | None]]] | None:
        """Each text's word pieces (no special tokens, not truncated, cut at the document
        cap) as (character offsets, word ids), for cutting it into windows
        (`engine.encoding.windows`); None where the tokenizer cannot say (a slow one)."""
        if not texts:
            return []
        tokenizer = self.model.tokenizer
        if not getattr(tokenizer, "is_fast", False):
            return None
        with self._lock:
            encoded = tokenizer([t[:document_char_cap(self.max_seq_length)] for t in texts],
                                add_special_tokens=False, truncation=False,
                                return_offsets_mapping=True, return_attention_mask=False,
                                return_token_type_ids=False, verbose=False)
        return [([tuple(o) for o in encoded["offset_mapping"][i]], list(encoded.word_ids(i)))
                for i in range(len(texts))]

    def truncation_flags(self, texts: Sequence[str]) -> list[bool]:
        """Which texts exceed the model's window; only long ones are tokenised to find out."""
        window = self.max_seq_length
        flags = [False] * len(texts)
        # A text cannot have more tokens than characters (plus [CLS] and [SEP]).
        long_idx = [i for i, t in enumerate(texts) if len(t) + 2 > window]
        if not long_idx:
            return flags
        counts = self.token_counts([texts[i] for i in long_idx])
        for i, n in zip(long_idx, counts, strict=True):
            flags[i] = self._is_truncated(texts[i], n)
        return flags

    # -- helpers ---------------------------------------------------------------------------
    def _clip(self, texts: Sequence[str]) -> list[str]:
        cap = self.max_seq_length * CHARS_PER_TOKEN_CAP
        return [t[:cap] for t in texts]

    def _is_truncated(self, text: str, count: int) -> bool:
        return count > self.max_seq_length or len(text) > self.max_seq_length * CHARS_PER_TOKEN_CAP

    def _flags_from_counts(self, texts: Sequence[str], counts: Sequence[int]) -> list[bool]:
        return [self._is_truncated(t, n) for t, n in zip(texts, counts, strict=True)]

    def _query_view(self) -> SentenceTransformer:
        """The model with its own tokenizer, sharing every weight (built once, lazily).

        A shallow copy of the model whose first module is a shallow copy holding a deep copy
        of the tokenizer: `encode` keeps all of sentence-transformers' behaviour (prompts,
        truncation, pooling, normalisation) and only the tokenizer is private. A model whose
        first module has no processor to copy, or whose backend may not run two calls at
        once, falls back to the bulk path's lock.
        """
        if self._query_model is not None:
            return self._query_model
        first = self.model[0]
        processor = getattr(first, "processor", None)
        if processor is None or getattr(self.model, "backend", "torch") not in _CONCURRENT:
            self._query_model = _Locked(self.model, self._lock)  # type: ignore[assignment]
            return self._query_model
        view = copy.copy(self.model)
        view._modules = collections.OrderedDict(self.model._modules)  # not the shared dict
        own_first = copy.copy(first)
        own_first.processor = copy.deepcopy(processor)
        view._modules[next(iter(view._modules))] = own_first
        self._query_model = view
        return view


def _forward_one(model: SentenceTransformer, text: str) -> np.ndarray:
    """What `model.encode([text], normalize_embeddings=True)` computes, shape (1, dim):
    the model's default prompt, its own `preprocess` (tokenising and truncating as
    `encode` does) and forward pass, then L2 normalisation."""
    import torch
    from sentence_transformers.util import batch_to_device

    name = model.default_prompt_name
    prompt = model.prompts.get(name) if name else None
    with torch.inference_mode():
        features = model.preprocess([text], prompt=prompt) if prompt else model.preprocess([text])
        features = batch_to_device(features, model.device)
        embedding = model(features)["sentence_embedding"]
        embedding = torch.nn.functional.normalize(embedding.float(), p=2, dim=1)
        return embedding.cpu().numpy().astype(np.float32, copy=False)


class _Locked:
    """A model whose `encode` takes the bulk path's lock (models with nothing to copy)."""

    def __init__(self, model: SentenceTransformer, lock: threading.Lock) -> None:
        self._model, self._lock = model, lock

    def encode(self, *args, **kwargs):
        with self._lock:
            return self._model.encode(*args, **kwargs)

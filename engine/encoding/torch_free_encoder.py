"""An encoder without torch: the model's cached export (ONNX, or an OpenVINO backend's IR),
its `tokenizers` tokenizer and NumPy pooling, for the command line's one-off searches and
small matches, and wherever an OpenVINO backend serves on the CPU (`engine.encoding.loading`).

`duplens search` used to import torch, transformers and sentence-transformers (seconds, and
most of a ten-second search on a small machine) to encode one text. The "onnx" backend's
export of the model (`engine.encoding.conversion`, cached per weights in
`engine.encoding.backends.export_dir`) gives torch's embeddings; what sentence-transformers
adds around the transformer is, for the models Duplens serves, a tokenizer that the
`tokenizers` library loads from `tokenizer.json`, a pooling of the token embeddings and a
normalisation, all of which the model folder describes (`modules.json`,
`sentence_bert_config.json`, `1_Pooling/config.json`; read by `engine.encoding.folder_steps`).
`TorchFreeEncoder` does those steps itself, running the transformer with onnxruntime or,
for an OpenVINO backend's IR, with OpenVINO (`engine.encoding.openvino_runner`).

It is used only where it was checked against torch: `verify` (run where torch is loaded
anyway: the window's fast queries, `duplens import` and `encode`, and a search that had to
fall back to torch) encodes probe texts both ways and, when every cosine is at least
`MIN_COSINE`, writes a marker beside the export, named by a digest of everything in the
model folder that the steps above read (and the `tokenizers` release). `load` returns an
encoder only when that marker is there; any other model (a default prompt, another pooling,
extra modules, no export yet) returns None and the caller loads torch as before.
"""

from __future__ import annotations

import collections
import importlib.util
import json
import logging
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from engine.encoding import shipped_model
from engine.encoding.backends import BACKENDS, split_fingerprint
from engine.encoding.encoder import (
    EncodeBatch,
    EncodedBatch,
    SentenceEncoder,
    document_char_cap,
)
from engine.encoding.folder_steps import FolderSteps, read_json, read_steps
from engine.encoding.model_spec import ModelSpec

if TYPE_CHECKING:  # pragma: no cover
    from tokenizers import Tokenizer

log = logging.getLogger("duplens")

# Lowest cosine between this encoder's and torch's embedding of a probe text for the export
# to be used without torch. The fp32 export measures 1.000000 (docs/benchmarks.md).
MIN_COSINE = 0.9999
# Probe texts: a question, case and punctuation, accents and other scripts, spaces around,
# an empty one, and one far past the model's window (truncation); encoded one at a time
# and as one padded batch.
PROBES = (
    "How do I find out whether a question was already asked?",
    "WHAT's the   capital of Australia?!",
    "Crème brûlée, naïve café — 東京 und München 🙂",
    "  leading and trailing spaces  ",
    "",
    "a",
    " ".join(["Why does a long text get cut at the model's window of tokens?"] * 60),
)


def available() -> bool:
    """Whether onnxruntime and tokenizers are installed (found without importing them)."""
    return all(importlib.util.find_spec(m) is not None for m in ("onnxruntime", "tokenizers"))


def turned_off() -> bool:
    """`DUPLENS_FAST_QUERIES=0` keeps every query with torch, this path included."""
    return os.environ.get("DUPLENS_FAST_QUERIES", "1") == "0"


def export_file(stored_fingerprint: str, serving: str | None = None) -> Path:
    """The export these embeddings come from (made or not): for torch's embeddings the
    exact OpenVINO backend's IR where that backend serves them (`serving`), else the "onnx"
    backend's, both giving the same ones; for a quantised backend's, its own (the one
    shipped with Duplens for the bundled model, `engine.encoding.shipped_model`)."""
    from engine.encoding.runtime import export_location

    weights, tag = split_fingerprint(stored_fingerprint)
    if tag is None and exact_openvino(serving):
        return export_location(weights, BACKENDS[str(serving)])
    return export_location(weights, BACKENDS[tag or "onnx"])


def exact_openvino(backend: str | None) -> bool:
    """Whether `backend` is OpenVINO giving torch's embeddings (float32): the default of
    AVX2 CPUs (`backends.CPU_CLASS_DEFAULTS`)."""
    found = BACKENDS.get(backend or "")
    return found is not None and found.exact and found.runtime == "openvino"


def _marker(export: Path, steps: FolderSteps) -> Path:
    return export.parent / f"torch-free-{steps.digest}.json"


class _OrtRunner:
    """The transformer as an onnxruntime session (CPU): one batch at a time."""

    def __init__(self, path: Path) -> None:
        from engine import offline

        ort = offline.onnxruntime()
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        self._session = ort.InferenceSession(str(path), options,
                                             providers=["CPUExecutionProvider"])
        self.input_names = [i.name for i in self._session.get_inputs()]

    def run(self, feed: dict[str, np.ndarray]) -> np.ndarray:
        (hidden,) = self._session.run(["last_hidden_state"], feed)
        return hidden

    def run_many(self, feeds: Iterable[dict[str, np.ndarray]]) -> Iterator[np.ndarray]:
        for feed in feeds:
            yield self.run(feed)


def _runner(export: Path, options: dict[str, str] | None = None):
    """onnxruntime for an ONNX file, OpenVINO for an IR (`openvino_runner`) compiled with
    `options` (the backend's `openvino_options`)."""
    if export.suffix == ".xml":
        from engine.encoding.openvino_runner import OpenVinoRunner

        return OpenVinoRunner(export, options)
    return _OrtRunner(export)


class TorchFreeEncoder(SentenceEncoder):
    """A `SentenceEncoder` that runs an export of the model (the "onnx" backend's with
    onnxruntime, an OpenVINO backend's IR with OpenVINO), tokenises with `tokenizers` and
    pools with NumPy: the embeddings of sentence-transformers' `encode` (normalised) with
    that backend, for the models `read_steps` accepts, with no torch in the process.

    It has no `model`: fine-tuning, evaluation and exports load torch as before."""

    def __init__(self, steps: FolderSteps, export: Path, spec: ModelSpec,
                 batch_size: int = 64) -> None:
        from tokenizers import Tokenizer

        served = BACKENDS.get(spec.backend or "onnx")
        self._runner = _runner(export, served.openvino_options() if served else None)
        self._inputs = list(self._runner.input_names)
        self._steps = steps
        self._tokenizer = Tokenizer.from_file(str(steps.tokenizer_file))
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(steps.max_seq_length)
        self._counter: Tokenizer | None = None   # untruncated, for token counts (lazily)
        self._streams: int | None = None         # the runner's, read on first bulk call
        self._counter_lock = threading.Lock()
        self._pad_id = _pad_id(self._tokenizer, steps.tokenizer_file)
        self.model = None  # type: ignore[assignment] - no sentence-transformers model here
        self.spec = spec
        self.device = "cpu"
        self.batch_size = batch_size
        self.query_runtime = "openvino" if export.suffix == ".xml" else "onnxruntime"
        self.query_fallback_reason = ""

    @property
    def dim(self) -> int:
        return self._steps.dim

    @property
    def max_seq_length(self) -> int:
        return self._steps.max_seq_length

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Normalised float32 embeddings of `texts`, in order; batches of similar length,
        as sentence-transformers makes them, each padded to its longest text."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        encodings = self._tokenizer.encode_batch(self._prepared(texts))
        order = sorted(range(len(encodings)), key=lambda i: -len(encodings[i].ids))
        size = self._batch_for(len(order))
        chunks = [order[s:s + size] for s in range(0, len(order), size)]
        masks: collections.deque[np.ndarray] = collections.deque()

        def feeds() -> Iterator[dict[str, np.ndarray]]:
            for chosen in chunks:
                feed, mask = self._feed([encodings[i] for i in chosen])
                masks.append(mask)
                yield feed

        out = np.empty((len(encodings), self.dim), dtype=np.float32)
        for chosen, hidden in zip(chunks, self._runner.run_many(feeds()), strict=True):
            out[chosen] = self._pooled(hidden, masks.popleft())
        return out

    def _batch_for(self, count: int) -> int:
        """The batch size for `count` texts: `batch_size`, or less where that would leave a
        stream idle. OpenVINO runs one batch per stream, each stream on its own cores (two
        streams of one thread on 2 cores), so 60 texts in one batch of 64 ran on half the
        machine: 60 passages of 70 words took 643 ms in one batch, 341 in two and 240 in
        four (2 cores, openvino-bf16). Two batches a stream keep every stream busy and the
        next batch ready; a search's close-up and a checked file's rows are such calls,
        while an import's batches (`map_batches`) are planned elsewhere."""
        if self._streams is None:
            self._streams = max(1, int(getattr(self._runner, "streams", 1)))
        return max(1, min(self.batch_size, -(-count // (2 * self._streams))))

    def encode_query(self, text: str) -> np.ndarray:
        feed, mask = self._feed([self._tokenizer.encode(self._prepared([text])[0])])
        return self._pooled(self._runner.run(feed), mask)

    def map_batches(self, batches: Iterable[EncodeBatch]) -> Iterator[EncodedBatch]:
        """Each batch encoded, in order, with the next ones tokenised while the runtime
        computes (OpenVINO keeps a batch in flight per stream): what `LocalExecutor` runs
        an import's batches through. Truncation flags come from the planner's token
        counts when it gave them."""
        pending: collections.deque[tuple[EncodeBatch, np.ndarray]] = collections.deque()

        def feeds() -> Iterator[dict[str, np.ndarray]]:
            for batch in batches:
                feed, mask = self._feed(self._tokenizer.encode_batch(
                    self._prepared(batch.texts)))
                pending.append((batch, mask))
                yield feed

        for hidden in self._runner.run_many(feeds()):
            batch, mask = pending.popleft()
            if batch.token_counts is not None:
                flags = self._flags_from_counts(batch.texts, batch.token_counts)
            else:
                flags = self.truncation_flags(batch.texts)
            yield EncodedBatch(batch.text_ids, self._pooled(hidden, mask), flags)

    def prepare_fast_queries(self) -> str:
        return self.query_runtime

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        if not texts:
            return []
        return [len(e.ids) for e in self._untruncated().encode_batch(self._prepared(texts))]

    def _untruncated(self) -> Tokenizer:
        """The model's tokenizer without truncation (made once, on first use)."""
        with self._counter_lock:
            if self._counter is None:
                from tokenizers import Tokenizer

                counter = Tokenizer.from_file(str(self._steps.tokenizer_file))
                counter.no_padding()
                counter.no_truncation()
                self._counter = counter
            return self._counter

    def token_spans(self, texts: Sequence[str]
                    ) -> list[tuple[list[tuple[int, int]], list[int | None]]] | None:
        """As `SentenceEncoder.token_spans`, with the untruncated tokenizer."""
        if not texts:
            return []
        counter = self._untruncated()
        cap = document_char_cap(self.max_seq_length)
        cut = [t[:cap] for t in texts]
        if self._steps.do_lower_case:
            cut = [t.lower() for t in cut]
        encodings = counter.encode_batch(cut, add_special_tokens=False)
        return [(list(e.offsets), list(e.word_ids)) for e in encodings]

    def _prepared(self, texts: Sequence[str]) -> list[str]:
        clipped = self._clip(texts)
        return [t.lower() for t in clipped] if self._steps.do_lower_case else clipped

    def _feed(self, encodings) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """One batch padded to its longest text: the runtime's inputs and the mask."""
        width = max(len(e.ids) for e in encodings)
        shape = (len(encodings), width)
        ids = np.full(shape, self._pad_id, dtype=np.int64)
        mask = np.zeros(shape, dtype=np.int64)
        types = np.zeros(shape, dtype=np.int64)
        for row, e in enumerate(encodings):
            n = len(e.ids)
            ids[row, :n] = e.ids
            mask[row, :n] = e.attention_mask
            types[row, :n] = e.type_ids
        given = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        return {n: given[n] for n in self._inputs}, mask

    def _pooled(self, hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Token embeddings pooled and normalised, as the model folder says."""
        pooled = np.concatenate([_pool(mode, hidden.astype(np.float32, copy=False), mask)
                                 for mode in self._steps.pooling], axis=1)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)


def _pool(mode: str, hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """sentence-transformers' Pooling for right-padded batches (its `_forward_padded`)."""
    weights = mask[..., None].astype(np.float32)
    if mode == "cls":
        return hidden[np.arange(len(hidden)), mask.argmax(axis=1)]
    if mode == "max":
        return np.where(weights > 0, hidden, -np.inf).max(axis=1)
    total = (hidden * weights).sum(axis=1)
    count = np.maximum(weights.sum(axis=1), 1e-9)
    return total / (count if mode == "mean" else np.sqrt(count))


def _pad_id(tokenizer: Tokenizer, tokenizer_file: Path) -> int:
    """The id padding uses: tokenizer.json's own padding setting, else its [PAD] token.
    Padded positions are masked out, so the id changes nothing but must exist."""
    try:
        padding = read_json(tokenizer_file).get("padding") or {}
        if isinstance(padding.get("pad_id"), int):
            return padding["pad_id"]
    except (OSError, ValueError, AttributeError):
        pass
    for token in ("[PAD]", "<pad>"):
        found = tokenizer.token_to_id(token)
        if found is not None:
            return found
    return 0


def load(folder: Path, row: dict, *, batch_size: int = 64, serving: str | None = None
         ) -> TorchFreeEncoder | None:
    """The torch-free encoder of the model in `folder`, whose stored `models` row is `row`
    (served by `serving`, the backend loading it: `export_file`), or None where it may not
    serve: not installed or turned off, no export of these weights cached yet, a model
    whose steps are not done here, or never checked against sentence-transformers on this
    computer (`verify`) nor shipped checked (`shipped_model.torch_free_checked`). Never
    raises: the caller loads torch."""
    if turned_off() or not available():
        return None
    try:
        steps = read_steps(folder)
        export = export_file(row["fingerprint"], serving)
        if steps is None or not export.is_file() or not _runtime_installed(export):
            return None
        if not (_marker(export, steps).is_file()
                or shipped_model.torch_free_checked(export, steps.digest)):
            return None
        if (row.get("dim") not in (None, steps.dim)
                or row.get("max_seq_length") not in (None, steps.max_seq_length)):
            return None
        _, tag = split_fingerprint(row["fingerprint"])
        runs = tag or (str(serving) if exact_openvino(serving) else "onnx")
        spec = ModelSpec(row["name"], str(folder), row["fingerprint"], True, backend=runs)
        return TorchFreeEncoder(steps, export, spec, batch_size)
    except Exception as exc:  # noqa: BLE001 - an optimisation: torch still serves
        log.warning("torch-free encoder unavailable for %s: %s", folder, exc, exc_info=True)
        return None


def _runtime_installed(export: Path) -> bool:
    return export.suffix != ".xml" or importlib.util.find_spec("openvino") is not None


def verify(encoder: SentenceEncoder, on_export: Callable[[], object] | None = None
           ) -> float | None:
    """Check the torch-free path against `encoder` (sentence-transformers on the CPU: torch,
    or a quantised backend's export inside it) on the probe texts, one at a time and as one
    batch, making the ONNX export first if torch's embeddings have none cached (seconds,
    once per model; `on_export` is called before, to tell the user); where every cosine is
    at least `MIN_COSINE`, mark it as checked so that `load` uses it from now on. Returns
    the lowest cosine, or None where there was nothing to check (no sentence-transformers
    model, an exact backend other than torch, not installed, unsupported steps). Never
    raises: a failure is logged and the command line keeps using torch."""
    model = encoder.model
    if model is None or turned_off() or not available() or encoder.device != "cpu":
        return None
    runs = _runs_on(model)
    _, tag = split_fingerprint(encoder.spec.fingerprint)
    serving = encoder.spec.backend if tag is None and exact_openvino(encoder.spec.backend) \
        else None
    expected = BACKENDS[tag].runtime if tag else ("openvino" if serving else "torch")
    if runs != expected:
        return None
    try:
        folder = Path(encoder.spec.location)
        steps = read_steps(folder) if folder.is_dir() else None
        if steps is None:
            return None
        export = export_file(encoder.spec.fingerprint, serving)
        marker = _marker(export, steps)
        if marker.is_file():
            return json.loads(marker.read_text(encoding="utf-8"))["min_cosine"]
        if not export.is_file():
            if tag is not None or serving:   # the export sentence-transformers runs is gone
                return None
            from engine.encoding.runtime import exported_file

            if on_export is not None:
                on_export()
            weights, _ = split_fingerprint(encoder.spec.fingerprint)
            export = exported_file(model, weights, BACKENDS["onnx"])
        if not _runtime_installed(export):
            return None
        light = TorchFreeEncoder(steps, export, encoder.spec, encoder.batch_size)
        lowest = agreement(light, encoder)
        if lowest < MIN_COSINE:
            log.warning("torch-free encoder of %s disagrees with sentence-transformers "
                        "(cosine %.6f); the command line keeps loading torch",
                        encoder.spec.name, lowest)
            return lowest
        if shipped_model.torch_free_checked(export, steps.digest):
            return lowest   # shipped checked; its folder may be read-only
        _write_marker(marker, {"min_cosine": round(lowest, 7), "probes": len(PROBES),
                               "model": encoder.spec.name, "folder": str(folder)})
        return lowest
    except Exception as exc:  # noqa: BLE001 - an optimisation: torch still serves
        log.warning("could not check the torch-free encoder of %s: %s", encoder.spec.name,
                    exc, exc_info=True)
        return None


def _runs_on(model) -> str:
    """What runs `model`'s transformer: "torch", or the runtime of the export swapped in
    (`runtime.use_exported` marks the transformer module; the SentenceTransformer's own
    `backend` keeps saying torch)."""
    try:
        first = model[0]
    except (TypeError, IndexError, KeyError):
        first = None
    return str(getattr(first, "backend", None) or getattr(model, "backend", "torch"))


def agreement(light: TorchFreeEncoder, reference: SentenceEncoder) -> float:
    """The lowest cosine between `light`'s embeddings of the probe texts (one at a time
    and as one batch) and `reference`'s (its bulk path)."""
    texts = list(PROBES)
    expected = reference.encode(texts)
    single = np.concatenate([light.encode_query(t) for t in texts])
    batched = light.encode(texts)
    return float(min((single * expected).sum(axis=1).min(),
                     (batched * expected).sum(axis=1).min()))


def _write_marker(path: Path, content: dict) -> None:
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temp.write_text(json.dumps(content, indent=1), encoding="utf-8")
    os.replace(temp, path)

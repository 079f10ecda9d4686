"""What runs inside a Ray worker: one encoder, loaded once, encoding the batches it is sent.

Plain Python with no Ray import: `engine.encoding.ray_executor` wraps `EncodeWorker` with
`ray.remote`, and this module stays importable (and testable) without Ray.

A worker on another machine may not have the model folder the driver resolved (a
fine-tuned version beside the project, say). The driver then ships the folder's files
through Ray's object store (`pack_model`), and a worker without an identical folder at the
same path unpacks them once per machine (`model_folder`); a folder there is used only if
its weights have the fingerprint the embeddings will be stored under.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import tempfile
from dataclasses import replace
from pathlib import Path

from engine.encoding.encoder import EncodeBatch, EncodedBatch, SentenceEncoder
from engine.encoding.model_spec import ModelSpec, load_model
from engine.errors import ClusterError, ModelError

# Where shipped model folders are unpacked on a worker machine, one folder per fingerprint.
SHIPPED_MODELS = "duplens-ray-models"


class EncodeWorker:
    """A Ray actor's state: the model is loaded once, in the constructor.

    The constructor never raises: a worker that cannot load the model says why through
    `ready()`, so the driver reports one clear line instead of Ray's actor-death traceback.
    """

    def __init__(self, spec: ModelSpec, batch_size: int, device: str, threads: int,
                 shipped: dict[str, bytes] | None = None) -> None:
        self._encoder: SentenceEncoder | None = None
        self._error: str | None = None
        try:
            import torch

            # Ray gives the actor `threads` CPUs; torch would otherwise start one thread
            # per core of the machine in every worker.
            torch.set_num_threads(threads)
            folder = model_folder(spec, shipped)
            model = load_model(replace(spec, location=folder), device, spec.backend)
            self._encoder = SentenceEncoder(model, spec, device, batch_size)
        except Exception as exc:  # noqa: BLE001 - reported by ready(), see the docstring
            text = str(exc).strip()
            self._error = text.splitlines()[0] if text else type(exc).__name__

    def ready(self) -> dict:
        """Where this worker runs and whether its model loaded (`error` None)."""
        return {"host": socket.gethostname(), "pid": os.getpid(), "error": self._error,
                "device": self._encoder.device if self._encoder is not None else None}

    def encode_batch(self, batch: EncodeBatch) -> EncodedBatch:
        if self._encoder is None:
            raise ClusterError(f"a Ray worker on {socket.gethostname()} cannot load the "
                               f"model: {self._error}")
        return self._encoder.encode_batch(batch)


def pack_model(location: str) -> dict[str, bytes]:
    """Every file of a model folder, by its path relative to the folder."""
    root = Path(location)
    return {path.relative_to(root).as_posix(): path.read_bytes()
            for path in sorted(root.rglob("*")) if path.is_file()}


def model_folder(spec: ModelSpec, shipped: dict[str, bytes] | None) -> str:
    """The folder (or hub name) this worker loads `spec` from.

    The driver's own path when it holds the same weights here (always so on one machine),
    else the shipped copy, unpacked once per machine under the temp folder.
    """
    if not spec.is_local:
        return spec.location            # a hub name: the worker's own hub cache
    here = Path(spec.location)
    if here.is_dir() and _same_weights(here, spec):
        return spec.location
    if shipped is None:
        raise ModelError(f"{spec.name}: the model folder {spec.location} is not on "
                         f"{socket.gethostname()}")
    return str(unpack_model(spec.fingerprint, shipped))


def unpack_model(fingerprint: str, shipped: dict[str, bytes], root: Path | None = None
                 ) -> Path:
    """Write a shipped folder under `root` (default: this machine's temp folder) once.

    Written beside its final place and renamed, so a worker never loads a half-written
    folder; when two workers unpack at once, the first rename wins and the other's copy
    is dropped.
    """
    base = (root or Path(tempfile.gettempdir())) / SHIPPED_MODELS
    target = base / hashlib.sha256(fingerprint.encode()).hexdigest()[:16]
    if target.is_dir():
        return target
    base.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f"{target.name}.", dir=base))
    try:
        for relative, data in shipped.items():
            path = partial / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        os.rename(partial, target)
    except OSError:
        if not target.is_dir():
            raise
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return target


def _same_weights(folder: Path, spec: ModelSpec) -> bool:
    from engine.encoding.backends import split_fingerprint
    from engine.encoding.model_spec import resolve_model

    weights, _ = split_fingerprint(spec.fingerprint)
    try:
        return resolve_model(str(folder)).fingerprint == weights
    except ModelError:
        return False

"""One call from "which model, which device" to a ready `SentenceEncoder`.

The window loads the default model before any project is open (so the first search after
opening is instant) and a project loads its own active model; both go through here.

OpenVINO on the CPU (int8, bf16, and exact float32) is served without torch where it can be
(`engine.encoding.torch_free_encoder`: the export, `tokenizers` and NumPy pooling, checked to give
sentence-transformers' embeddings with that export): no torch import, and bulk batches kept
in flight (`TorchFreeEncoder.map_batches`). Where it cannot yet (a model not checked on this
computer), sentence-transformers runs the export, is checked once, and the next load is
torch-free.
"""

from __future__ import annotations

import logging
from pathlib import Path

from engine.encoding.backends import Backend, backend_for_row, get_backend
from engine.encoding.encoder import SentenceEncoder
from engine.encoding.model_spec import (
    ModelSpec,
    load_model,
    pick_device,
    resolve_model,
    with_backend,
)
from engine.errors import ModelError

log = logging.getLogger("duplens")


def load_encoder(model: str | None = None, *, device: str | None = "auto",
                 batch_size: int = 64, backend: str | None = None, stored: bool = False
                 ) -> SentenceEncoder:
    """Resolve `model` (None: the bundled default; a folder; a hub name), pick the device
    (auto: CUDA, then MPS, then CPU) and load it with `backend` (None: torch). `stored`:
    the backend is the one the project's embeddings were made with (`require_backend`).

    The ONNX and OpenVINO backends run on the CPU, so with them "auto" means the CPU.
    """
    spec = resolve_model(model)
    chosen_backend = get_backend(backend)
    if chosen_backend.runtime != "torch" and device in (None, "", "auto"):
        chosen = "cpu"
    else:
        chosen = pick_device(device)
    return _load(spec, with_backend(spec, chosen_backend.name), chosen, batch_size,
                 stored=stored)


def load_stored_encoder(model: str | None, stored_fingerprint: str, *,
                        device: str | None = "auto", batch_size: int = 64,
                        backend: str | None = None, check_weights: bool = True
                        ) -> SentenceEncoder:
    """Load a model a project has embeddings of, so that new embeddings match them.

    The backend is the one the stored fingerprint names when that backend changes the
    embeddings (int8), else `backend` when it gives torch's embeddings, else torch
    (`backend_for_row`). With `check_weights`, the folder must still hold the weights the
    fingerprint was taken of.
    """
    spec = resolve_model(model)
    serving = backend_for_row(stored_fingerprint, backend)
    served = with_backend(spec, serving.name)
    if check_weights and served.fingerprint != stored_fingerprint:
        raise ModelError(f"{spec.name}: the weights in {spec.location} are not those this "
                         f"version was saved with; restore the folder")
    if serving.runtime != "torch" and device in (None, "", "auto"):
        chosen = "cpu"
    else:
        chosen = pick_device(device)
    return _load(spec, served, chosen, batch_size, stored=True)


def _load(spec: ModelSpec, served: ModelSpec, device: str, batch_size: int, *,
          stored: bool = False) -> SentenceEncoder:
    """`served` (the model as its backend serves it) on `device`: torch-free when that is
    checked to give the same embeddings, else through sentence-transformers, checked then
    for the next time. Only OpenVINO's forms (`_torch_free_bulk`). `stored`: it
    serves a project's embeddings, which a CPU that runs its backend slowly still serves
    (`require_backend`)."""
    backend = get_backend(served.backend)
    torch_free = device == "cpu" and _torch_free_bulk(backend) and spec.is_local
    if torch_free:
        light = _torch_free(served, batch_size)
        if light is not None:
            return light
    encoder = SentenceEncoder(load_model(spec, device, backend.name, stored=stored), served,
                              device, batch_size)
    if torch_free:
        from engine.encoding import torch_free_encoder

        checked = torch_free_encoder.verify(encoder)
        if checked is not None and checked >= torch_free_encoder.MIN_COSINE:
            light = _torch_free(served, batch_size)
            if light is not None:
                return light
    return encoder


def _torch_free_bulk(backend: Backend) -> bool:
    """Whether the torch-free encoder serves `backend`'s bulk work too: the OpenVINO forms,
    which it runs with a batch in flight per stream (measured with bf16 on 2 cores: about
    870 sentences/s against 600 through sentence-transformers, cosine 0.99999 between the
    two): those whose embeddings are their own (int8 static, bf16), and exact OpenVINO, the
    default of AVX2 CPUs, whose IR gives torch's embeddings and is checked
    against them the same way. Not torch's embeddings under torch: torch encodes bulk
    batches faster than onnxruntime. Not onnx-int8: its dynamic quantisation scales each
    batch by its own texts, so a text's embedding depends on its batch and never passes
    the check."""
    return backend.runtime == "openvino"


def _torch_free(served: ModelSpec, batch_size: int) -> SentenceEncoder | None:
    from engine.encoding import torch_free_encoder

    return torch_free_encoder.load(Path(served.location), {"name": served.name,
                                                     "fingerprint": served.fingerprint},
                             batch_size=batch_size, serving=served.backend)

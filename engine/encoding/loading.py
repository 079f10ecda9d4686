"""One call from "which model, which device" to a ready `SentenceEncoder`.

The window loads the default model before any project is open (so the first search after
opening is instant) and a project loads its own active model; both go through here.
"""

from __future__ import annotations

from engine.encoding.backends import backend_for_row, get_backend
from engine.encoding.encoder import SentenceEncoder
from engine.encoding.model_spec import load_model, pick_device, resolve_model, with_backend
from engine.errors import ModelError


def load_encoder(model: str | None = None, *, device: str | None = "auto",
                 batch_size: int = 64, backend: str | None = None) -> SentenceEncoder:
    """Resolve `model` (None: the bundled default; a folder; a hub name), pick the device
    (auto: CUDA, then MPS, then CPU) and load it with `backend` (None: torch).

    The ONNX and OpenVINO backends run on the CPU, so with them "auto" means the CPU.
    """
    spec = resolve_model(model)
    chosen_backend = get_backend(backend)
    if chosen_backend.runtime != "torch" and device in (None, "", "auto"):
        chosen = "cpu"
    else:
        chosen = pick_device(device)
    return SentenceEncoder(load_model(spec, chosen, chosen_backend.name),
                           with_backend(spec, chosen_backend.name), chosen, batch_size)


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
    return SentenceEncoder(load_model(spec, chosen, serving.name), served, chosen, batch_size)

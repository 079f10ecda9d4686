"""One call from "which model, which device" to a ready `SentenceEncoder`.

The window loads the default model before any project is open (so the first search after
opening is instant) and a project loads its own active model; both go through here.
"""

from __future__ import annotations

from engine.encoding.encoder import SentenceEncoder
from engine.encoding.models import load_model, pick_device, resolve_model


def load_encoder(model: str | None = None, *, device: str | None = "auto",
                 batch_size: int = 64) -> SentenceEncoder:
    """Resolve `model` (None: the bundled default; a folder; a hub name), pick the device
    (auto: CUDA, then MPS, then CPU) and load it."""
    spec = resolve_model(model)
    chosen = pick_device(device)
    return SentenceEncoder(load_model(spec, chosen), spec, chosen, batch_size)

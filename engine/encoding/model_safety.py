"""Refusing model folders that would run code when loaded: pickled weights, custom classes.

A project file can name a model folder, and a project may come from someone else, so
loading a model must never run code the folder brings. Two ways it could, checked here
before sentence-transformers sees the folder:

- Pickled weights. With no safetensors file, sentence-transformers 6.2 and transformers
  5.23 load `pytorch_model.bin` with `torch.load` (measured: a folder holding only that
  file loads). `weights_only=True` restricts the unpickler, but it is still a pickle, and
  that restriction has been bypassed before (CVE-2025-32434). Duplens loads safetensors only.
- Code the folder names: a `modules.json` (or a Router's config) type outside the
  sentence_transformers package, or an `auto_map` in a config that asks transformers for
  the folder's own modelling code. Both libraries refuse these without trust_remote_code,
  which Duplens never passes; refusing first gives one clear message and loads nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

from engine.errors import ModelError

# What sentence-transformers gets on every load: no remote code, and transformers must
# find safetensors weights or fail (it never falls back to pytorch_model.bin).
SAFE_LOAD = {"trust_remote_code": False, "model_kwargs": {"use_safetensors": True}}

SAFE_WEIGHTS = (".safetensors",)
PICKLED_WEIGHTS = (".bin", ".pt", ".pth", ".pkl", ".pickle", ".ckpt", ".joblib")
OWN_PACKAGE = "sentence_transformers."
# Config files transformers reads for a model, its tokenizer or its processor.
_CONFIGS = ("config.json", "tokenizer_config.json", "processor_config.json",
            "preprocessor_config.json", "feature_extractor_config.json")


def check_model_folder(folder: Path, name: str | None = None) -> None:
    """Raise `ModelError` if loading `folder` could run code: pickled weights without
    safetensors beside them, no safetensors weights at all, or a class or `auto_map` that
    names code outside sentence-transformers and transformers."""
    label = name or str(folder)
    module_dirs = [folder, *(folder / path for path in _module_paths(folder, label))]
    for wanted in _named_classes(folder, module_dirs, label):
        raise ModelError(f"model folder {label} asks to run its own code ({wanted}); "
                         f"Duplens refuses such models")
    _check_weights(folder, module_dirs, label)


def _module_paths(folder: Path, label: str) -> list[str]:
    modules = _read_json(folder / "modules.json", label)
    if modules is None:
        return []
    if not isinstance(modules, list):
        raise ModelError(f"model folder {label}: modules.json is not a list of modules")
    paths = []
    for entry in modules:
        path = entry.get("path") if isinstance(entry, dict) else None
        if isinstance(path, str) and path:
            resolved = (folder / path).resolve()
            if not resolved.is_relative_to(folder.resolve()):
                raise ModelError(f"model folder {label}: modules.json names {path!r}, "
                                 f"outside the folder")
            paths.append(path)
    return paths


def _named_classes(folder: Path, module_dirs: list[Path], label: str) -> list[str]:
    """Every reference to code outside the two libraries, described for the user."""
    found = []
    modules = _read_json(folder / "modules.json", label) or []
    for entry in modules:
        kind = entry.get("type") if isinstance(entry, dict) else None
        if not isinstance(kind, str) or not kind.startswith(OWN_PACKAGE):
            found.append(f"modules.json names {kind!r}")
    for directory in module_dirs:
        router = _read_json(directory / "router_config.json", label)
        if isinstance(router, dict):
            for kind in (router.get("types") or {}).values():
                if not isinstance(kind, str) or not kind.startswith(OWN_PACKAGE):
                    found.append(f"router_config.json names {kind!r}")
        for config in _CONFIGS:
            data = _read_json(directory / config, label)
            if isinstance(data, dict) and data.get("auto_map"):
                where = (directory / config).relative_to(folder).as_posix()
                found.append(f"{where} has an auto_map for {_first_class(data['auto_map'])}")
    return found


def _first_class(auto_map) -> str:
    if isinstance(auto_map, dict) and auto_map:
        value = next(iter(auto_map.values()))
        return str(value[0] if isinstance(value, list) and value else value)
    return repr(auto_map)


def _check_weights(folder: Path, module_dirs: list[Path], label: str) -> None:
    """Every folder that holds weights holds safetensors; pickles may sit beside them
    (transformers and sentence-transformers then read the safetensors), never alone."""
    has_safe = False
    for directory in dict.fromkeys([*_folders(folder), *module_dirs]):
        if not directory.is_dir():
            continue
        files = [p.name for p in directory.iterdir() if p.is_file()]
        safe = any(f.endswith(SAFE_WEIGHTS) for f in files)
        pickled = sorted(f for f in files if f.endswith(PICKLED_WEIGHTS))
        has_safe = has_safe or safe
        if pickled and not safe:
            where = "" if directory == folder else f" ({directory.relative_to(folder)})"
            raise ModelError(f"model folder {label} has no safetensors weights{where}, only "
                             f"{', '.join(pickled)}; Duplens loads only safetensors (no "
                             f"pickled code)")
    if not has_safe:
        raise ModelError(f"model folder {label} has no safetensors weights; Duplens loads "
                         f"only safetensors (no pickled code)")


def _folders(folder: Path, depth: int = 3) -> list[Path]:
    """The folder and its subfolders a few levels down (modules sit one or two down);
    hidden ones (.git, a half-written version) are skipped."""
    found = [folder]
    if depth > 0:
        for entry in sorted(folder.iterdir()):
            if entry.is_dir() and not entry.name.startswith("."):
                found.extend(_folders(entry, depth - 1))
    return found


def _read_json(path: Path, label: str):
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelError(f"model folder {label}: {path.name} cannot be read ({exc})") from exc

"""Model folders for tests: a cheap copy of the bundled model, and ways to spoil one."""

from __future__ import annotations

import json
from pathlib import Path

from engine.encoding.model_spec import default_model_path


def model_copy(folder: Path, *, weights: bool = True) -> Path:
    """`folder` made a copy of the bundled all-MiniLM-L6-v2 whose files are symbolic links
    to the package's (no 90 MB copy); without `weights`, it has no model.safetensors."""
    source = default_model_path()
    for entry in source.rglob("*"):
        target = folder / entry.relative_to(source)
        if entry.is_dir():
            target.mkdir(parents=True, exist_ok=True)
        elif weights or entry.name != "model.safetensors":
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(entry)
    return folder


def pickle_only(folder: Path) -> Path:
    """A model folder whose weights are a pickle (`pytorch_model.bin`), as older models and
    `torch.save` leave them; the bytes never matter, Duplens must not read them."""
    model_copy(folder, weights=False)
    (folder / "pytorch_model.bin").write_bytes(b"\x80\x04not read by anyone\x94.")
    return folder


def custom_module(folder: Path, marker: Path) -> Path:
    """A model folder whose modules.json names a class in a Python file of its own; the
    file creates `marker` if it is ever imported."""
    model_copy(folder)
    modules_file = folder / "modules.json"
    modules = json.loads(modules_file.read_text("utf-8"))
    modules_file.unlink()  # a link to the package's file: never write through it
    modules[1]["type"] = "their_pooling.Pooling"
    modules_file.write_text(json.dumps(modules), "utf-8")
    (folder / "their_pooling.py").write_text(
        f"open({str(marker)!r}, 'w').write('ran')\n"
        "from sentence_transformers.models import Pooling\n", "utf-8")
    return folder


def rewrite_json(path: Path, change) -> None:
    """Replace the JSON file at `path` (a link to the package's file) with `change(data)`."""
    data = json.loads(path.read_text("utf-8"))
    path.unlink()
    path.write_text(json.dumps(change(data)), "utf-8")

"""What sentence-transformers does around a model's transformer, read from its folder:
the tokenizer file, the window, lower-casing, the pooling and the size
(`modules.json`, `sentence_bert_config.json`, `1_Pooling/config.json`, ...).

`read_steps` accepts only the steps the torch-free encoder
(`engine.encoding.torch_free_encoder`) does itself, and digests every file it read, so a
check of that encoder against torch is named by exactly what it checked.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

# Bump when the steps here change, so an older check is not taken for one of them.
CHECK_FORMAT = 1
_MODULE_KINDS = ("Transformer", "Pooling", "Normalize")
_POOLING_MODES = ("cls", "max", "mean", "mean_sqrt_len_tokens")
# sentence-transformers' legacy switches, in the order it concatenates them.
_LEGACY_POOLING = (("pooling_mode_cls_token", "cls"), ("pooling_mode_max_tokens", "max"),
                   ("pooling_mode_mean_tokens", "mean"),
                   ("pooling_mode_mean_sqrt_len_tokens", "mean_sqrt_len_tokens"),
                   ("pooling_mode_weightedmean_tokens", "weightedmean"),
                   ("pooling_mode_lasttoken", "lasttoken"))


@dataclass(frozen=True)
class FolderSteps:
    """What sentence-transformers does around the transformer, read from a model folder."""

    tokenizer_file: Path
    max_seq_length: int
    do_lower_case: bool
    pooling: tuple[str, ...]
    hidden_size: int
    digest: str          # of every file read here and the tokenizers release

    @property
    def dim(self) -> int:
        return self.hidden_size * len(self.pooling)


def read_steps(folder: Path) -> FolderSteps | None:
    """The steps of the model in `folder`, or None when they are not ones done here (a
    default prompt, a pooling other than cls/max/mean, modules besides Transformer,
    Pooling and Normalize, no tokenizer.json). Reads small JSON files only."""
    try:
        modules = read_json(folder / "modules.json")
        kinds = [str(m.get("type", "")).rsplit(".", 1)[-1] for m in modules]
        if (len(kinds) not in (2, 3) or kinds != list(_MODULE_KINDS[:len(kinds)])):
            return None
        transformer_dir = folder / modules[0].get("path", "")
        pooling_dir = folder / modules[1].get("path", "")
        read = [folder / "modules.json", pooling_dir / "config.json"]
        st_config = _optional_json(folder / "config_sentence_transformers.json", read)
        if st_config.get("default_prompt_name"):
            return None
        bert_config = _optional_json(transformer_dir / "sentence_bert_config.json", read)
        tokenizer_config = _optional_json(transformer_dir / "tokenizer_config.json", read)
        _optional_json(transformer_dir / "special_tokens_map.json", read)
        model_config = read_json(transformer_dir / "config.json")
        read.append(transformer_dir / "config.json")
        pooling = _pooling_modes(read_json(pooling_dir / "config.json"))
        tokenizer_file = transformer_dir / "tokenizer.json"
        if pooling is None or not tokenizer_file.is_file():
            return None
        read.append(tokenizer_file)
        length = bert_config.get("max_seq_length") or tokenizer_config.get("model_max_length")
        positions = model_config.get("max_position_embeddings") or 0
        if not isinstance(length, int) or length <= 0:
            return None
        if isinstance(positions, int) and positions > 0:
            length = min(length, positions)
        hidden = int(model_config["hidden_size"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError):
        return None
    digest = hashlib.sha256(f"{CHECK_FORMAT}|{_tokenizers_version()}".encode())
    for path in read:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return FolderSteps(tokenizer_file, length, bool(bert_config.get("do_lower_case")),
                       pooling, hidden, digest.hexdigest()[:16])


def read_json(path: Path):
    with path.open(encoding="utf-8") as fh:
        return json.load(fh)


def _optional_json(path: Path, read: list[Path]) -> dict:
    if not path.is_file():
        return {}
    read.append(path)
    found = read_json(path)
    return found if isinstance(found, dict) else {}


def _pooling_modes(config: dict) -> tuple[str, ...] | None:
    mode = config.get("pooling_mode")
    if mode is None:
        modes = tuple(name for key, name in _LEGACY_POOLING if config.get(key))
        modes = modes or ("mean",)
    else:
        modes = (mode,) if isinstance(mode, str) else tuple(mode)
    if not modes or any(m not in _POOLING_MODES for m in modes):
        return None
    return modes


def _tokenizers_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tokenizers")
    except PackageNotFoundError:
        return "missing"

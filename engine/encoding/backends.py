"""Which inference backends can run a sentence encoder here, and where their exports live.

sentence-transformers has ONNX and OpenVINO backends of its own, but they load through
optimum-onnx / optimum-intel, and no release of those installs beside the transformers
Duplens is pinned to (they cap transformers below 4.58 and 5.6, and their imports fail on
5.23 even when forced). So Duplens exports the model's transformer itself (torch.onnx),
runs it with onnxruntime or OpenVINO directly, and leaves tokenising, pooling and
normalising to sentence-transformers as before (`engine.encoding.runtime`).

This module imports none of those packages: the window asks `available_backends()` to fill
its settings, and that must stay instant.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from engine.errors import ModelError

log = logging.getLogger("duplens")

DEFAULT_BACKEND = "torch"
# A preference for "the fastest backend that keeps quality here"
# (`backend_choice.default_backend`): what the settings and the command line start with.
AUTO = "auto"
# The backend a new project encodes with on a CPU, by the CPU's class
# (`cpu_features.cpu_class`): the fastest whose whole import ran at least 1.2x Duplens'
# own import with torch and that passed the quality gate (engine/encoding/gate_rules.py:
# STSb, pair AP, the cut at the default threshold, the partner in the top 5), each class
# measured in one run with the kernels capped to it (benchmarks/cpu_classes.py;
# docs/benchmarks.md, "The default backend of each CPU class").
# tests/engine/encoding/test_default_backend.py checks that these are the newest recorded
# run's verdicts for each class on each vendor's CPUs. Measured on Intel Xeons:
# - amx (Sapphire Rapids, benchmarks/results/cpu_classes.json): openvino-bf16, 4.05x
#   Duplens' torch import (2.18x plain sentence-transformers);
# - bf16 without AMX, int8 and AVX2 (a Xeon whose AMX is not enabled,
#   cpu_classes@intel-xeon-no-amx.json): bf16 arithmetic on AVX512-BF16 alone ran at 0.68x
#   plain sentence-transformers there, so with bf16 units and with VNNI
#   openvino-int8-dynamic (int8 weights, inputs quantised as they run; 3.27x and 2.03x
#   Duplens' torch import, cut F1 0.986); on AVX2 exact OpenVINO served without torch
#   (1.52x). openvino-int8 (static) is faster still and fails the gate in every class (cut
#   F1 0.954; 0.936 on AVX2).
# arm64 and x86-64 CPUs without AVX2 were not measured: torch, which runs everywhere.
CPU_CLASS_DEFAULTS: dict[str, str] = {
    "amx": "openvino-bf16",
    "bf16": "openvino-int8-dynamic",
    "int8": "openvino-int8-dynamic",
    "avx2": "openvino",
    "arm64": "torch",
    "older": "torch",
}
# Per vendor (`cpu_features.cpu_vendor`), the classes whose measured verdict differs from
# `CPU_CLASS_DEFAULTS`'. On AMD EPYCs AVX512-BF16 runs bfloat16 fast: openvino-bf16
# imported at 4.10x Duplens' torch import on a Zen 5 (cpu_classes@amd-epyc-zen5.json; 2.85x
# plain sentence-transformers), ahead of openvino-int8-dynamic (2.58x plain), and stayed
# ahead on a Zen 4 (cpu_classes@amd-epyc-zen4.json, the newest AMD run, the first with
# openvino-int8-dynamic-g64 among the candidates and three interleaved timings of each
# import). There the int8 class took openvino-int8-dynamic-g64 (9.2 s against 10.3 s for
# groups of 32, faster in every round). Its AVX2 class keeps exact OpenVINO, as on Intel:
# groups of 64 took 14.3 s against 14.5 s, inside their own rounds' spread (14.3-17.5 s),
# and a backend that changes the vectors must win by more than that (`cpu_classes.decide`;
# docs/benchmarks.md, "The same classes on an AMD EPYC Zen 4, with groups of 64").
VENDOR_CLASS_DEFAULTS: dict[str, dict[str, str]] = {
    "amd": {"bf16": "openvino-bf16", "int8": "openvino-int8-dynamic-g64"},
}


def class_default_name(klass: str, vendor: str) -> str:
    """The measured default of a CPU class on a vendor's CPUs (before asking whether it is
    installed: `backend_choice.cpu_class_default`)."""
    return VENDOR_CLASS_DEFAULTS.get(vendor, {}).get(
        klass, CPU_CLASS_DEFAULTS.get(klass, DEFAULT_BACKEND))
# Bump when the export steps change, so old exports are not loaded as if they were new ones.
EXPORT_FORMAT = 1


@dataclass(frozen=True)
class Backend:
    """One way of running the transformer.

    `exact` backends give the same embeddings as torch up to float32 rounding (measured: a
    cosine of at least 0.99999 between the two), so embeddings stored by one are used with
    the other. Quantised backends do not: a project encoded with one of them keeps those
    embeddings apart (`stored_fingerprint`) and encodes again when the backend changes.
    """

    name: str
    runtime: str                   # "torch", "onnx" or "openvino"
    label: str
    exact: bool = True
    optimization: int = 0          # onnxruntime transformer optimiser level (O1-O3), 0 none
    # None, "dynamic" (onnxruntime), "static" (nncf) or "weights" (nncf's int8 weights)
    quantization: str | None = None
    extra: str | None = None       # the `pip install duplens[extra]` that brings it
    modules: tuple[str, ...] = ()  # what must be importable
    # OpenVINO's INFERENCE_PRECISION_HINT: "f32", or "bf16" where the CPU has the units
    # (`needs_bf16`); never OpenVINO's own choice, which is bf16 on such CPUs.
    precision: str = "f32"
    needs_bf16: bool = False
    # OpenVINO's DYNAMIC_QUANTIZATION_GROUP_SIZE: the int8 weights' products take their
    # activations in int8 too, quantised as they run with a scale per this many values of
    # each token; 0 leaves it out of the options (no backend but that one has int8 weights
    # for it to apply to).
    dynamic_group: int = 0
    # Matrix products whose weights stay float32 (NNCF ignored-scope patterns over the
    # exported graph's node names; a model whose names differ keeps none in float32).
    float32_layers: tuple[str, ...] = ()

    def openvino_options(self) -> dict[str, str]:
        """What every OpenVINO compilation of this backend is told besides its hint."""
        options = {"INFERENCE_PRECISION_HINT": self.precision}
        if self.dynamic_group:
            options["DYNAMIC_QUANTIZATION_GROUP_SIZE"] = str(self.dynamic_group)
        return options

    @property
    def tag(self) -> str:
        """Short, stable name used in folder names and stored fingerprints."""
        return self.name


_ONNX = ("onnxruntime", "onnx")
_OPENVINO = ("openvino", "onnx")
_NNCF = ("openvino", "onnx", "nncf")
# Each layer's feed-forward output product (its name in the exported graph), which the
# dynamic int8 backends keep in float32.
_FEED_FORWARD_OUT = (r".*/layer\.\d+/output/dense/MatMul",)

# What the settings and `--backend` offer. "onnx" is optimised at O2 (fused attention and
# layer norms, exact); "onnx-int8" is dynamic int8 quantisation of that graph.
BACKENDS: dict[str, Backend] = {b.name: b for b in (
    Backend("torch", "torch", "PyTorch"),
    Backend("onnx", "onnx", "ONNX Runtime", optimization=2, extra="onnx", modules=_ONNX),
    Backend("onnx-int8", "onnx", "ONNX Runtime, int8 quantised", exact=False, optimization=2,
            quantization="dynamic", extra="onnx", modules=_ONNX),
    Backend("openvino", "openvino", "OpenVINO", extra="openvino", modules=_OPENVINO),
    Backend("openvino-int8", "openvino", "OpenVINO, int8 quantised", exact=False,
            quantization="static", extra="openvino", modules=_NNCF),
    # The float32 model computed in bfloat16 (8 bits of mantissa in each product): about
    # twice float32's speed on CPUs with bf16 units (docs/benchmarks.md, int8 recipes), and
    # not torch's embeddings, so they are kept apart as a quantised backend's are.
    Backend("openvino-bf16", "openvino", "OpenVINO, bfloat16 arithmetic", exact=False,
            extra="openvino", modules=_OPENVINO, precision="bf16", needs_bf16=True),
    # Int8 weights (NNCF's `compress_weights`, asymmetric, per output channel; no
    # calibration), and each product's activations quantised to int8 as it runs, a scale
    # per 32 values of each token, except each layer's feed-forward output product, kept in
    # float32; the rest in float32. Static int8 (openvino-int8) fixes one scale per tensor
    # from calibration texts and loses the gate's cut. With every product in int8 this lost
    # it too, narrowly (pair F1 0.9799 against 0.98); keeping the feed-forward outputs in
    # float32 (the product that hurt most in the int8 recipes benchmark) reached 0.9855 on
    # the gate's choice data, at 1.29x exact OpenVINO's speed with the kernels capped to
    # AVX512-VNNI on an AMD EPYC (1.28x on questions, 1.23x on 256-piece windows on an
    # Intel Xeon without AMX, timed in interleaved rounds; there groups of 64 met the rule
    # for a change of recipe: the next backend; benchmarks/dynamic_int8_choice.py;
    # docs/benchmarks.md, "openvino-int8-dynamic's recipe, chosen on the choice data").
    # Without VNNI (AVX2) OpenVINO runs the products on
    # decompressed weights, slower than exact OpenVINO.
    Backend("openvino-int8-dynamic", "openvino",
            "OpenVINO, int8 weights and dynamic int8 activations", exact=False,
            quantization="weights", extra="openvino", modules=_NNCF, dynamic_group=32,
            float32_layers=_FEED_FORWARD_OUT),
    # The same int8 weights with a scale per 64 values of each token: the recipe that met
    # the rule for a change in benchmarks/dynamic_int8_choice.py on an Intel Xeon without
    # AMX (cut F1 0.9871 on the gate's choice data, 0.0071 over the bar; 1.10x the recipe
    # above on questions and 1.06x on 256-piece windows, capped to AVX512-VNNI). Its own
    # name, not a new recipe under the old one: the group changes the embeddings, so a
    # project encoded with openvino-int8-dynamic keeps its vectors and the backend that
    # made them (`stored_fingerprint`), and a CPU class takes this one only where
    # benchmarks/cpu_classes.py's verdict does.
    Backend("openvino-int8-dynamic-g64", "openvino",
            "OpenVINO, int8 weights and dynamic int8 activations in groups of 64",
            exact=False, quantization="weights", extra="openvino", modules=_NNCF,
            dynamic_group=64, float32_layers=_FEED_FORWARD_OUT),
)}


def get_backend(name: str | None) -> Backend:
    """The backend called `name` (None or "": torch); a clear error for an unknown name."""
    if name in (None, ""):
        name = DEFAULT_BACKEND
    try:
        return BACKENDS[name]
    except KeyError:
        raise ModelError(f"unknown backend {name!r}; use one of: {', '.join(BACKENDS)}"
                         ) from None


def is_auto(preference: str | None) -> bool:
    """Whether a backend preference leaves the choice to Duplens (`backend_choice`)."""
    return preference in (None, "", AUTO)


def missing_modules(backend: Backend) -> list[str]:
    """The packages `backend` needs that are not installed (found without importing them)."""
    return [m for m in backend.modules if importlib.util.find_spec(m) is None]


def unsupported_here(backend: Backend) -> str | None:
    """Why this CPU cannot run `backend` well, or None: bf16 arithmetic without bf16 units
    would be emulated, slower than float32."""
    from engine.encoding.cpu_features import has_bf16_units

    if backend.needs_bf16 and not has_bf16_units():
        return (f"the {backend.name} backend needs a CPU with bfloat16 units (AVX512-BF16 or "
                f"AMX), and this one has none that Duplens can see; use openvino or torch")
    return None


def available_backends() -> list[str]:
    """Backends whose packages are installed here and that this CPU runs, torch first."""
    return [name for name, b in BACKENDS.items()
            if not missing_modules(b) and unsupported_here(b) is None]


def require_backend(name: str | None, *, stored: bool = False) -> Backend:
    """The backend, or a ModelError saying which extra to install or why this CPU cannot
    run it well. With `stored` (a project's embeddings were made with it, on another
    computer of a team, say), a CPU that runs it slowly still runs it: the project opens
    and keeps its embeddings, and the log says why encoding is slower here."""
    backend = get_backend(name)
    missing = missing_modules(backend)
    if missing:
        raise ModelError(f"the {backend.name} backend needs {', '.join(missing)}: install "
                         f"them with pip install \"duplens[{backend.extra}]\"")
    why = unsupported_here(backend)
    if why is not None and not stored:
        raise ModelError(why)
    if why is not None:
        log.warning("this project's embeddings were made with %s, which this CPU runs "
                    "emulated (%s): they are kept, and encoding here is slower than usual",
                    backend.name, why)
    return backend


def stored_fingerprint(fingerprint: str, backend: Backend) -> str:
    """The model identity embeddings are stored under: the weights', plus the backend's tag
    for backends that change the embeddings (so they never share an index with torch's)."""
    return fingerprint if backend.exact else f"{fingerprint}+{backend.tag}"


def split_fingerprint(stored: str) -> tuple[str, str | None]:
    """(weights fingerprint, backend name or None) of a stored fingerprint."""
    base, sep, tag = stored.rpartition("+")
    if sep and tag in BACKENDS and not BACKENDS[tag].exact:
        return base, tag
    return stored, None


def backend_for_row(stored: str, preferred: str | None) -> Backend:
    """The backend that serves a model a project already has embeddings of, keeping them
    valid: the quantised backend the stored fingerprint names, else `preferred` when it
    gives torch's embeddings, else torch. (A quantised preference applies when a model is
    chosen (`load_encoder`), which re-encodes under its own identity, never silently.)"""
    _, tag = split_fingerprint(stored)
    if tag is not None:
        return BACKENDS[tag]
    wanted = get_backend(None if is_auto(preferred) else preferred)
    return wanted if wanted.exact else BACKENDS[DEFAULT_BACKEND]


def cache_root() -> Path:
    """Where exports are kept: `DUPLENS_CACHE_DIR`, else the user's cache folder. Exports
    are made again when missing, so a cache (not the data folder) is their place."""
    override = os.environ.get("DUPLENS_CACHE_DIR")
    if override:
        return Path(override).expanduser()
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("Duplens", appauthor=False))


def runtime_versions(backend: Backend) -> dict[str, str]:
    """Versions of the packages that write `backend`'s files; part of the cache key, since
    an optimiser or quantiser of another release may write a different graph."""
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for module in backend.modules:
        try:
            found[module] = version(module)
        except PackageNotFoundError:
            found[module] = "missing"
    return found


def export_key(fingerprint: str, backend: Backend, calibration: str = "") -> str:
    """Folder name of one model's export for one backend: the same weights, backend, export
    steps, package versions and calibration texts (a digest) always give the same name."""
    versions = ",".join(f"{k}={v}" for k, v in sorted(runtime_versions(backend).items()))
    material = f"{fingerprint}|{backend.name}|{backend.optimization}|{backend.quantization}|" \
               f"{EXPORT_FORMAT}|{versions}|{calibration}"
    if backend.float32_layers:   # only where set: every other export keeps its name
        material += "|" + ",".join(backend.float32_layers)
    return f"{backend.name}-{hashlib.sha256(material.encode()).hexdigest()[:16]}"


def export_dir(fingerprint: str, backend: Backend, calibration: str = "") -> Path:
    return cache_root() / "backends" / export_key(fingerprint, backend, calibration)


def texts_digest(texts: list[str] | tuple[str, ...] | None) -> str:
    """A short digest of calibration texts, for `export_key`."""
    if not texts:
        return ""
    return hashlib.sha256("\n".join(texts).encode("utf-8")).hexdigest()[:16]

"""Writing a model's transformer as ONNX or OpenVINO files, optimised or int8-quantised.

The same steps sentence-transformers' `export_optimized_onnx_model`,
`export_dynamic_quantized_onnx_model` and `export_static_quantized_openvino_model` take
through optimum, done with the libraries underneath (torch.onnx, onnxruntime's transformer
optimiser and quantiser, OpenVINO and NNCF), because optimum does not install beside the
transformers release Duplens pins (see `engine.encoding.backends`).

Every function writes into a scratch folder and renames it into place at the end, so a
crash or a second process never leaves a half-written export that looks finished.
"""

from __future__ import annotations

import contextlib
import io
import logging
import shutil
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from engine.encoding.backends import Backend
from engine.encoding.cpu_features import cpu_isa

if TYPE_CHECKING:  # pragma: no cover
    from sentence_transformers import SentenceTransformer

log = logging.getLogger("duplens")

ONNX_FILE = "model.onnx"
OPENVINO_FILE = "openvino_model.xml"
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
CALIBRATION_SAMPLES = 300   # what optimum's OpenVINO quantisation uses by default


def model_file(backend: Backend) -> str:
    return ONNX_FILE if backend.runtime == "onnx" else OPENVINO_FILE


def convert(model: SentenceTransformer, backend: Backend, target: Path, *,
            calibration_texts: Sequence[str] | None = None, isa: str | None = None) -> Path:
    """Write `model`'s transformer for `backend` into folder `target` (made atomically);
    returns the file to load. `isa` picks the int8 kernel family for onnx quantisation
    (default: the best this CPU has, `cpu_isa()`)."""
    target = Path(target)
    done = target / model_file(backend)
    if done.is_file():
        return done
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        plain = scratch / "plain.onnx"
        export_onnx(model, plain)
        if backend.runtime == "onnx":
            current = plain
            if backend.optimization:
                current = optimize_onnx(current, scratch / "optimized.onnx",
                                        backend.optimization, model)
            if backend.quantization == "dynamic":
                current = quantize_onnx_dynamic(current, scratch / "quantized.onnx",
                                                isa or cpu_isa())
            current.rename(scratch / ONNX_FILE)
        else:
            if backend.quantization == "static" and not calibration_texts:
                raise ValueError("static quantisation needs calibration texts")
            write_openvino(plain, scratch / OPENVINO_FILE, model,
                           calibration_texts if backend.quantization == "static" else None,
                           int8_weights=backend.quantization == "weights",
                           float32_layers=backend.float32_layers)
        for leftover in ("plain.onnx", "optimized.onnx", "quantized.onnx"):
            (scratch / leftover).unlink(missing_ok=True)
        try:
            scratch.rename(target)
        except OSError:  # another process finished the same export first
            if not done.is_file():
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return done


def export_onnx(model: SentenceTransformer, path: Path) -> Path:
    """The transformer (inputs: token ids, mask, type ids; output: token embeddings) as one
    fp32 ONNX file with dynamic batch and sequence axes."""
    import torch

    transformer = model[0]
    auto_model = transformer.auto_model
    inputs = model.tokenizer(["a short one", "and a somewhat longer second sentence"],
                             padding=True, return_tensors="pt")
    names = [n for n in INPUT_NAMES if n in inputs]

    class Wrapped(torch.nn.Module):
        """Positional inputs in `names` order, the last hidden state out."""

        def __init__(self) -> None:
            super().__init__()
            self.inner = auto_model

        def forward(self, *args):
            return self.inner(**dict(zip(names, args, strict=True))).last_hidden_state

    axes = {n: {0: "batch", 1: "sequence"} for n in names}
    axes["last_hidden_state"] = {0: "batch", 1: "sequence"}
    was_training = auto_model.training
    attention = getattr(auto_model.config, "_attn_implementation", None)
    auto_model.eval()
    try:
        # The eager attention graph is the one onnxruntime's optimiser fuses into its
        # Attention kernel; the SDPA graph is left as separate MatMuls and Softmax.
        _set_attention(auto_model, "eager")
        # The tracer warns about shapes it freezes; the export is checked against torch's
        # embeddings (tests, benchmark), and the user's console is no place for these.
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(Wrapped().cpu().float(), tuple(inputs[n].cpu() for n in names),
                              str(path), input_names=names,
                              output_names=["last_hidden_state"], dynamic_axes=axes,
                              opset_version=17, dynamo=False)
    finally:
        _set_attention(auto_model, attention)
        auto_model.train(was_training)
    return path


def _set_attention(auto_model, implementation: str | None) -> None:
    if implementation is None or not hasattr(auto_model, "set_attn_implementation"):
        return
    # A model without that attention keeps its own.
    with contextlib.suppress(ValueError, ImportError):
        auto_model.set_attn_implementation(implementation)


def _heads_and_hidden(model: SentenceTransformer) -> tuple[int, int]:
    config = model[0].auto_model.config
    return (int(getattr(config, "num_attention_heads", 0) or 0),
            int(getattr(config, "hidden_size", 0) or 0))


def optimize_onnx(source: Path, target: Path, level: int, model: SentenceTransformer) -> Path:
    """optimum's O1-O3 on CPU: O1 onnxruntime's basic graph rewrites; O2 adds the fused
    attention, layer-norm and GELU kernels of onnxruntime's transformer optimiser; O3 also
    approximates GELU with tanh (not exact). O4 is fp16, for GPUs only."""
    from engine import offline

    offline.onnxruntime()  # the optimiser runs onnxruntime sessions: their telemetry off
    from onnxruntime.transformers.fusion_options import FusionOptions
    from onnxruntime.transformers.optimizer import optimize_model

    if level == 1:
        optimized = optimize_model(str(source), opt_level=1, only_onnxruntime=True,
                                   use_gpu=False)
    elif level in (2, 3):
        options = FusionOptions("bert")
        options.enable_gelu_approximation = level == 3
        heads, hidden = _heads_and_hidden(model)
        optimized = optimize_model(str(source), model_type="bert", num_heads=heads,
                                   hidden_size=hidden, optimization_options=options,
                                   opt_level=2, use_gpu=False)
    else:
        raise ValueError(f"onnx optimisation level {level} is not one for CPUs (1-3)")
    optimized.save_model_to_file(str(target))
    return target


def quantize_onnx_dynamic(source: Path, target: Path, isa: str) -> Path:
    """Int8 weights, activations quantised on the fly: optimum's
    `AutoQuantizationConfig.<isa>(is_static=False)`, which sentence-transformers'
    `export_dynamic_quantized_onnx_model` uses: per-channel symmetric weights, signed on
    arm64/avx512/avx512_vnni and unsigned on avx2, full 8-bit range."""
    from onnx import TensorProto

    from engine import offline

    offline.onnxruntime()  # the quantiser runs onnxruntime sessions: their telemetry off
    from onnxruntime.quantization import QuantType, quantize_dynamic

    weights = QuantType.QUInt8 if isa == "avx2" else QuantType.QInt8
    # Shape inference does not know the optimiser's fused ops (contrib domain): their
    # outputs are float32, which `DefaultTensorType` tells the quantiser.
    with _root_log_quiet():   # its "consider pre-processing" advice is for image models
        quantize_dynamic(str(source), str(target), per_channel=True, reduce_range=False,
                         weight_type=weights,
                         extra_options={"WeightSymmetric": True, "ActivationSymmetric": False,
                                        "DefaultTensorType": TensorProto.FLOAT})
    return target


@contextlib.contextmanager
def _root_log_quiet():
    """onnxruntime's quantiser warns through the root logger, which reaches the user's
    console and log file; only errors get through while it runs."""
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        yield
    finally:
        root.setLevel(level)


def quiet_nncf() -> None:
    """NNCF and OpenVINO's converter send usage telemetry unless told otherwise; Duplens
    sends nothing. `engine.offline` sets NNCF's CI switch and blocks openvino_telemetry
    before either is imported; this puts NNCF's stub in place as well, in case NNCF was
    imported first, and models are read with `Core.read_model` rather than `convert_model`."""
    import nncf.telemetry.decorator as decorator
    import nncf.telemetry.wrapper as wrapper

    stub = wrapper.NNCFTelemetryStub()
    if not isinstance(wrapper.telemetry, wrapper.NNCFTelemetryStub):
        wrapper.telemetry = stub
    if not isinstance(decorator.telemetry, wrapper.NNCFTelemetryStub):
        decorator.telemetry = stub


def write_openvino(onnx_path: Path, target: Path, model: SentenceTransformer,
                   calibration_texts: Sequence[str] | None, *, int8_weights: bool = False,
                   float32_layers: Sequence[str] = ()) -> Path:
    """The ONNX graph as an OpenVINO IR (fp32 weights); with `calibration_texts`, int8
    quantised with NNCF's post-training quantisation for transformers (as optimum does);
    with `int8_weights`, its weights alone compressed to int8 (`compress_int8_weights`),
    but for the products `float32_layers` name."""
    import openvino as ov

    graph = ov.Core().read_model(str(onnx_path))
    if calibration_texts:
        graph = quantize_openvino(graph, calibration_items(graph, model, calibration_texts))
    elif int8_weights:
        graph = compress_int8_weights(graph, float32_layers)
    ov.save_model(graph, str(target), compress_to_fp16=False)
    return target


def calibration_items(graph, model: SentenceTransformer, texts: Sequence[str],
                      limit: int = CALIBRATION_SAMPLES) -> list[dict]:
    """The quantiser's inputs for an OpenVINO `graph`: the first `limit` of `texts`, one
    text per item, so no padding is measured as if it were text."""
    names = [port.get_any_name() for port in graph.inputs]
    items = []
    for text in list(texts)[:limit]:
        encoded = model.tokenizer([text], truncation=True, max_length=model.max_seq_length,
                                  return_tensors="np")
        items.append({n: encoded[n] for n in names})
    return items


def compress_int8_weights(graph, float32_layers: Sequence[str] = ()):
    """`graph` with the weights of its matrix products stored as int8 (NNCF's
    `compress_weights`, asymmetric, one scale and zero point per output channel), no
    calibration: the weights decompress as they are used, or, with OpenVINO's dynamic
    quantisation (`Backend.dynamic_group`), the products run on int8 activations. Products
    whose names match a pattern of `float32_layers` keep float32 weights (and arithmetic);
    a pattern that matches nothing (another architecture's names) is no error."""
    import nncf

    quiet_nncf()
    nncf.set_log_level(logging.WARNING)
    ignored = nncf.IgnoredScope(patterns=list(float32_layers), validate=False)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return nncf.compress_weights(graph, mode=nncf.CompressWeightsMode.INT8_ASYM,
                                     ignored_scope=ignored)


def quantize_openvino(graph, items: Sequence[dict], **options):
    """`graph` quantised to int8 by NNCF's post-training quantisation for transformers,
    measured on `items`; `options` go to `nncf.quantize` (the int8 recipes benchmark tries
    others; Duplens ships the defaults)."""
    import nncf

    quiet_nncf()
    nncf.set_log_level(logging.WARNING)   # not a line per layer left out of quantisation
    # NNCF draws progress bars on stdout; the window has none, the CLI has its own.
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return nncf.quantize(graph, nncf.Dataset(list(items)),
                             model_type=nncf.ModelType.TRANSFORMER,
                             subset_size=len(items), **options)

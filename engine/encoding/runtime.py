"""Running an exported transformer inside a loaded `SentenceTransformer`.

The model is loaded as usual (tokenizer, pooling, normalising, `encode`, evaluators: all
sentence-transformers'), then its transformer's inner torch model is swapped for a small
module that runs the exported file with onnxruntime or OpenVINO and hands back the token
embeddings as a torch tensor, as the torch model would. Everything that calls
`model.encode` (the encoder, the evaluators, the benchmarks) is unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.encoding.backends import Backend, export_dir, texts_digest
from engine.encoding.conversion import CALIBRATION_SAMPLES, convert, model_file, quiet_nncf
from engine.encoding.cpu_features import cpu_isa
from engine.encoding.shipped_model import shipped_export

if TYPE_CHECKING:  # pragma: no cover
    from sentence_transformers import SentenceTransformer


def _torch_module_base():
    import torch

    return torch.nn.Module


def _threads() -> int:
    """All cores: onnxruntime and OpenVINO default to physical cores, torch to all cores;
    the side-by-side benchmark must give each the same."""
    import torch

    return max(1, torch.get_num_threads())


class _ExportedTransformer:
    """Mixin of the two runners: keeps the replaced model's config (sentence-transformers
    reads `hidden_size` and friends from it) and turns outputs into torch tensors."""

    def _setup(self, config: Any, names: Sequence[str]) -> None:
        self.config = config
        self.input_names = list(names)

    def _feed(self, kwargs: dict) -> dict:
        feed = {}
        for name in self.input_names:
            value = kwargs.get(name)
            if value is None and name == "token_type_ids":
                import torch

                value = torch.zeros_like(kwargs["input_ids"])
            feed[name] = value.detach().cpu().numpy().astype("int64", copy=False)
        return feed

    @staticmethod
    def _output(array):
        import torch
        from transformers.modeling_outputs import BaseModelOutput

        return BaseModelOutput(last_hidden_state=torch.from_numpy(array))


def _make_onnx_runner(path: Path, config: Any):
    """The transformer as an onnxruntime session. Its threads spin between operators, as
    onnxruntime's default: without it one short query took 7.9 ms instead of 4.8 (p50, a
    50 ms pause before each, 2 cores), the threads being woken for each operator."""
    from engine import offline

    ort = offline.onnxruntime()

    class OnnxTransformer(_torch_module_base(), _ExportedTransformer):
        """The transformer as an onnxruntime session (CPU)."""

        def __init__(self) -> None:
            super().__init__()
            options = ort.SessionOptions()
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            options.intra_op_num_threads = _threads()
            options.inter_op_num_threads = 1
            options.log_severity_level = 3
            self.session = ort.InferenceSession(str(path), options,
                                                providers=["CPUExecutionProvider"])
            self._setup(config, [i.name for i in self.session.get_inputs()])

        def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, **_):
            feed = self._feed({"input_ids": input_ids, "attention_mask": attention_mask,
                               "token_type_ids": token_type_ids})
            (hidden,) = self.session.run(["last_hidden_state"], feed)
            return self._output(hidden)

    return OnnxTransformer()


def _make_openvino_runner(path: Path, config: Any, options: dict[str, str] | None = None):
    import openvino as ov

    from engine.encoding.openvino_runner import RequestPool

    class OpenVinoTransformer(_torch_module_base(), _ExportedTransformer):
        """The transformer compiled by OpenVINO for the CPU, tuned for one request at a
        time on every core (sentence-transformers hands it one batch after another)."""

        def __init__(self) -> None:
            super().__init__()
            core = ov.Core()
            compiled = core.compile_model(str(path), "CPU", {
                "PERFORMANCE_HINT": "LATENCY",
                "INFERENCE_NUM_THREADS": _threads(),
                # As the backend says (`Backend.openvino_options`): its precision, never a
                # silent bf16 on AMX/avx512_bf16 CPUs, which OpenVINO's own default would
                # be, and its dynamic int8 activations where it has them.
                **(options or {"INFERENCE_PRECISION_HINT": "f32"}),
            })
            self.compiled = compiled
            self._requests = RequestPool(compiled.create_infer_request)
            self._setup(config, [p.get_any_name() for p in compiled.inputs])

        def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, **_):
            feed = self._feed({"input_ids": input_ids, "attention_mask": attention_mask,
                               "token_type_ids": token_type_ids})
            # An infer request serves one call at a time: one per call in flight, so a
            # search's query never waits for an import's batch.
            return self._output(self._requests.infer(feed))

    return OpenVinoTransformer()


def calibration_texts() -> list[str]:
    """Texts the static int8 quantiser measures activations on: the sample questions
    shipped with Duplens (`duplens_data`), so the export is the same on every machine and
    needs no download (optimum would fetch a GLUE dataset)."""
    import csv

    import duplens_data

    path = duplens_data.sample_questions()
    try:
        with path.open(encoding="utf-8", newline="") as fh:
            return [row["question"] for row in csv.DictReader(fh) if row.get("question")]
    except OSError as exc:
        from engine.errors import ModelError

        raise ModelError(f"the int8 OpenVINO export needs its calibration questions, "
                         f"{path}, which are missing") from exc


def exported_file(model: SentenceTransformer, fingerprint: str, backend: Backend, *,
                  calibration_texts: Sequence[str] | None = None, isa: str | None = None,
                  folder: Path | None = None) -> Path:
    """The backend's file for this model: the one shipped with Duplens when it is this
    very export (`engine.encoding.shipped_model`), else exported into the cache on first
    use (or into `folder`)."""
    texts = None
    if backend.quantization == "static":
        texts = list(calibration_texts or ())[:CALIBRATION_SAMPLES]
    if folder is None:
        shipped = shipped_export(fingerprint, backend, texts_digest(texts))
        if shipped is not None:
            return shipped
    if backend.quantization == "dynamic":
        isa = isa or cpu_isa()
    target = folder or export_dir(fingerprint, backend, _variant(backend, texts, isa))
    return convert(model, backend, target, calibration_texts=texts, isa=isa)


def _variant(backend: Backend, texts: list[str] | None, isa: str | None) -> str:
    """What besides the weights and the backend sets an export apart: the calibration
    texts' digest for static quantisation; for ONNX Runtime's dynamic int8 the kernel
    family it was quantised for (unsigned weights on AVX2, signed with VNNI), so a cache
    made under one CPU (or one class's cap) is never served on another."""
    if backend.quantization == "dynamic":
        return f"isa={isa or cpu_isa()}"
    return texts_digest(texts)


def export_location(weights: str, backend: Backend) -> Path:
    """Where `exported_file` finds or puts `backend`'s file for these weights, without
    making it: the shipped one, else the cache's (calibrated on the shipped questions)."""
    texts = calibration_texts()[:CALIBRATION_SAMPLES] if backend.quantization == "static" \
        else None
    shipped = shipped_export(weights, backend, texts_digest(texts))
    if shipped is not None:
        return shipped
    return export_dir(weights, backend, _variant(backend, texts, None)) / model_file(backend)


def use_exported(model: SentenceTransformer, backend: Backend, path: Path) -> None:
    """Swap `model`'s torch transformer for the exported one at `path`, in place."""
    transformer = model[0]
    config = transformer.auto_model.config
    if backend.runtime == "onnx":
        runner = _make_onnx_runner(path, config)
    elif backend.runtime == "openvino":
        if backend.quantization:
            quiet_nncf()
        runner = _make_openvino_runner(path, config, backend.openvino_options())
    else:
        raise ValueError(f"{backend.name}: not an exported backend")
    transformer.model = runner
    transformer.backend = backend.runtime


def query_runner(model: SentenceTransformer, fingerprint: str):
    """An onnxruntime session of `model`'s transformer (the "onnx" backend's export, made
    once into the cache) for single queries, or None when onnxruntime is not installed.

    It gives torch's embeddings (lowest cosine 1.000000 over 5,000 questions) in about half
    the time for one short text on the CPU; bulk batches stay with torch, which is faster
    there (docs/benchmarks.md)."""
    from engine.encoding.backends import BACKENDS, missing_modules, split_fingerprint

    backend = BACKENDS["onnx"]
    if missing_modules(backend):
        return None
    weights, _ = split_fingerprint(fingerprint)
    path = exported_file(model, weights, backend)
    return _make_onnx_runner(path, model[0].auto_model.config)

"""Fast CPU backends: which are offered, where exports go, how a project keeps embeddings of
different backends apart, and (when `duplens[onnx]` / `duplens[openvino]` are installed)
that each really runs the bundled model with the embeddings it promises.

CI installs only `.[test]`: the tests that need onnxruntime, OpenVINO or NNCF skip there;
the catalogue, cache keys, identities and error messages are tested everywhere.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest

from engine.encoding import backends as bk
from engine.encoding.backends import (
    BACKENDS,
    Backend,
    available_backends,
    backend_for_row,
    export_dir,
    export_key,
    get_backend,
    require_backend,
    split_fingerprint,
    stored_fingerprint,
)
from engine.encoding.model_spec import load_model, resolve_model, with_backend
from engine.errors import ModelError
from tests.required import unavailable

WEIGHTS = "sha256:" + "ab" * 32
QUESTIONS = ["How do I learn Python quickly?", "What is the fastest way to learn Python?",
             "Why do cats purr?", "How can I improve my English speaking skills?",
             "What are some tips to speak English fluently?", "Is it safe to eat raw eggs?"]


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory, monkeypatch):
    """Exports go to a folder of this test session, never the user's cache."""
    monkeypatch.setenv("DUPLENS_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))


# -- the catalogue, without the optional packages -----------------------------------------
def test_torch_is_the_default_and_always_available():
    assert get_backend(None).name == get_backend("").name == "torch"
    assert available_backends()[0] == "torch"
    assert require_backend("torch").runtime == "torch"


def test_available_backends_are_those_whose_packages_are_installed_and_cpu_runs():
    bf16 = bool({"avx512_bf16", "amx_bf16"} & _flags())
    for name, backend in BACKENDS.items():
        installed = all(importlib.util.find_spec(m) is not None for m in backend.modules)
        runs = bf16 or not backend.needs_bf16
        assert (name in available_backends()) == (installed and runs), name


def _flags() -> set[str]:
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return set()
    return next((set(line.split(":", 1)[1].split()) for line in lines
                 if line.startswith("flags")), set())


def test_bf16_is_offered_only_where_the_cpu_has_bf16_units(monkeypatch):
    from engine.encoding import backend_choice, cpu_features

    bf16 = Backend("openvino-bf16", "openvino", "OpenVINO, bfloat16 arithmetic",
                   exact=False, modules=(), precision="bf16", needs_bf16=True)
    monkeypatch.setitem(BACKENDS, "openvino-bf16", bf16)
    monkeypatch.setattr(cpu_features, "cpu_flags", lambda: {"avx2", "avx512f", "avx512_vnni"})
    assert "openvino-bf16" not in available_backends()
    with pytest.raises(ModelError, match="needs a CPU with bfloat16 units"):
        require_backend("openvino-bf16")
    with pytest.raises(ModelError, match="needs a CPU with bfloat16 units"):
        load_model(resolve_model(None), "cpu", "openvino-bf16")
    monkeypatch.setattr(bk, "VENDOR_CLASS_DEFAULTS", {})   # the class's default alone
    for klass in ("bf16", "int8"):
        monkeypatch.setitem(bk.CPU_CLASS_DEFAULTS, klass, "openvino-bf16")
    assert backend_choice.default_backend("cpu") == "torch"          # not here: torch, not an error
    for units in ({"avx512_bf16"}, {"amx_bf16", "amx_tile"}):
        monkeypatch.setattr(cpu_features, "cpu_flags", lambda units=units: {"avx2", *units})
        assert "openvino-bf16" in available_backends()
        assert require_backend("openvino-bf16") is bf16
        assert backend_choice.default_backend("cpu") == "openvino-bf16"


def test_without_linux_flags_openvino_says_whether_the_cpu_has_bf16_units(monkeypatch):
    """Windows and macOS have no /proc/cpuinfo: an x86-64 CPU's bf16 units are asked of
    OpenVINO's CPU plugin, whose answer here must agree with Linux's flags; ARM CPUs are
    never offered bf16 (the gate measured x86-64 kernels)."""
    _needs("openvino")
    from engine.encoding import cpu_features

    linux_says = cpu_features.has_bf16_units()
    monkeypatch.setattr(cpu_features, "cpu_flags", set)
    monkeypatch.setattr(cpu_features.platform, "machine", lambda: "AMD64")
    assert "FP32" in cpu_features.openvino_capabilities()   # OpenVINO really answered
    assert cpu_features.has_bf16_units() == linux_says
    monkeypatch.setattr(cpu_features.platform, "machine", lambda: "arm64")
    assert cpu_features.has_bf16_units() is False


def test_unknown_backend_is_a_clear_error():
    with pytest.raises(ModelError, match="unknown backend 'tensorrt'; use one of: torch, onnx"):
        get_backend("tensorrt")


def test_missing_packages_say_which_extra_to_install(monkeypatch):
    absent = Backend("onnx", "onnx", "ONNX Runtime", extra="onnx",
                     modules=("duplens_no_such_runtime",))
    monkeypatch.setitem(BACKENDS, "onnx", absent)
    assert "onnx" not in available_backends()
    with pytest.raises(ModelError, match=r'needs duplens_no_such_runtime: install them with '
                                         r'pip install "duplens\[onnx\]"'):
        require_backend("onnx")
    with pytest.raises(ModelError, match=r"duplens\[onnx\]"):
        load_model(resolve_model(None), "cpu", "onnx")


def test_exported_backends_run_on_the_cpu_only(monkeypatch):
    # Checked before anything is imported or exported, so no runtime is needed here.
    monkeypatch.setitem(BACKENDS, "onnx", Backend("onnx", "onnx", "ONNX Runtime", modules=()))
    with pytest.raises(ModelError, match="the onnx backend runs on the CPU, not cuda"):
        load_model(resolve_model(None), "cuda", "onnx")


# -- identities: which embeddings may be mixed ---------------------------------------------
def test_exact_backends_share_torchs_identity_and_int8_ones_have_their_own():
    for name, backend in BACKENDS.items():
        stored = stored_fingerprint(WEIGHTS, backend)
        assert split_fingerprint(stored) == (WEIGHTS, None if backend.exact else name)
        assert (stored == WEIGHTS) == backend.exact
    assert not BACKENDS["onnx-int8"].exact and not BACKENDS["openvino-int8"].exact
    assert BACKENDS["onnx"].exact and BACKENDS["openvino"].exact


def test_a_plus_that_names_no_backend_is_part_of_the_fingerprint():
    assert split_fingerprint("hub:someone/model+v2") == ("hub:someone/model+v2", None)
    assert split_fingerprint("hub:x+onnx") == ("hub:x+onnx", None)  # onnx is exact: no tag


def test_model_spec_with_backend():
    spec = resolve_model(None)
    onnx = with_backend(spec, "onnx")
    assert (onnx.fingerprint, onnx.name, onnx.backend) == (spec.fingerprint, spec.name, "onnx")
    int8 = with_backend(spec, "openvino-int8")
    assert int8.fingerprint == spec.fingerprint + "+openvino-int8"
    assert int8.name == "all-MiniLM-L6-v2 (openvino-int8)"
    assert int8.location == spec.location and int8.backend == "openvino-int8"


def test_stored_rows_are_served_by_a_backend_that_keeps_their_embeddings():
    tagged = WEIGHTS + "+onnx-int8"
    assert backend_for_row(tagged, None).name == "onnx-int8"
    assert backend_for_row(tagged, "torch").name == "onnx-int8"
    assert backend_for_row(WEIGHTS, None).name == "torch"
    assert backend_for_row(WEIGHTS, "openvino").name == "openvino"
    assert backend_for_row(WEIGHTS, "openvino-int8").name == "torch"


# -- the export cache ----------------------------------------------------------------------
def test_export_folders_are_keyed_by_weights_backend_and_calibration(tmp_path, monkeypatch):
    monkeypatch.setenv("DUPLENS_CACHE_DIR", str(tmp_path))
    onnx, int8 = BACKENDS["onnx"], BACKENDS["onnx-int8"]
    assert export_key(WEIGHTS, onnx) == export_key(WEIGHTS, onnx)
    keys = {export_key(WEIGHTS, onnx), export_key(WEIGHTS, int8),
            export_key("sha256:" + "cd" * 32, onnx), export_key(WEIGHTS, onnx, "calib")}
    assert len(keys) == 4
    assert export_key(WEIGHTS, int8).startswith("onnx-int8-")
    assert export_dir(WEIGHTS, onnx) == tmp_path / "backends" / export_key(WEIGHTS, onnx)


def test_dynamic_int8_exports_are_kept_apart_by_the_kernel_family_they_were_made_for(
        tmp_path, monkeypatch):
    """ONNX Runtime's dynamic int8 quantises weights unsigned for AVX2 and signed for VNNI:
    an export made on (or capped to) one CPU class is not served on another. An exact
    export's folder does not depend on the CPU."""
    from engine.encoding import runtime

    monkeypatch.setenv("DUPLENS_CACHE_DIR", str(tmp_path))
    found = {}
    for isa in ("avx2", "avx512_vnni"):
        monkeypatch.setattr(runtime, "cpu_isa", lambda isa=isa: isa)
        found[isa] = (runtime.export_location(WEIGHTS, BACKENDS["onnx-int8"]),
                      runtime.export_location(WEIGHTS, BACKENDS["onnx"]))
    assert found["avx2"][0] != found["avx512_vnni"][0]
    assert found["avx2"][1] == found["avx512_vnni"][1]
    assert found["avx2"][0].parent.name.startswith("onnx-int8-")


def test_cache_defaults_to_the_users_cache_folder(monkeypatch):
    from platformdirs import user_cache_dir

    monkeypatch.delenv("DUPLENS_CACHE_DIR")
    assert bk.cache_root() == Path(user_cache_dir("Duplens", appauthor=False))


def test_calibration_texts_are_the_shipped_sample_questions():
    from engine.encoding.runtime import calibration_texts

    texts = calibration_texts()
    assert len(texts) >= 300 and all(t.strip() for t in texts)
    assert texts[0] == "Should I accept a counter-offer from my current employer?"


def test_int8_kernel_family_is_one_optimum_knows():
    from engine.encoding.cpu_features import cpu_isa

    assert cpu_isa() in ("arm64", "avx2", "avx512", "avx512_vnni")


# -- the backends themselves (need the optional packages) ---------------------------------
def _needs(backend: str) -> None:
    """The backend's packages: the onnx ones are dependencies of duplens (missing is a
    broken install: fail); OpenVINO's are an extra, which CI installs and requires
    (DUPLENS_REQUIRE_OPENVINO=1)."""
    missing = [m for m in BACKENDS[backend].modules if importlib.util.find_spec(m) is None]
    if not missing:
        return
    if BACKENDS[backend].extra == "openvino":
        unavailable("OPENVINO", f"{', '.join(missing)} not installed: pip install "
                                f"'duplens[openvino]'")
    pytest.fail(f"{', '.join(missing)} not installed, yet duplens depends on them")


@pytest.fixture(scope="module")
def torch_vectors(encoder):
    return encoder.encode(QUESTIONS)


@pytest.mark.slow
@pytest.mark.parametrize("name,min_cos,alone", [
    ("onnx", 0.9999, 0.9999), ("openvino", 0.9999, 0.9999),
    # Dynamic int8 sets activation scales per batch: a text alone comes out a little
    # different from the same text among others. Static int8 (OpenVINO) has fixed scales.
    ("onnx-int8", 0.95, 0.98), ("openvino-int8", 0.95, 0.9999),
    # bf16 keeps 8 bits of each product's mantissa: near torch, not equal to it.
    ("openvino-bf16", 0.99, 0.99),
    # Int8 weights, activations quantised per token as they run: a text's scales are its
    # own, alone or among others.
    ("openvino-int8-dynamic", 0.99, 0.999), ("openvino-int8-dynamic-g64", 0.99, 0.999)])
def test_backend_runs_the_model(name, min_cos, alone, torch_vectors, encoder):
    torch_fingerprint = encoder.spec.fingerprint
    _needs(name)
    if bk.unsupported_here(BACKENDS[name]):
        pytest.skip(bk.unsupported_here(BACKENDS[name]))
    from engine.encoding.loading import load_encoder

    encoder = load_encoder(None, device="auto", backend=name, batch_size=4)
    assert encoder.device == "cpu" and encoder.spec.backend == name
    if BACKENDS[name].runtime == "openvino":
        # Every OpenVINO form (int8, bf16, and exact float32 with torch's embeddings under
        # torch's fingerprint): served without torch, once checked against
        # sentence-transformers running the same IR
        assert encoder.model is None and encoder.query_runtime == "openvino"
        assert (encoder.spec.fingerprint == torch_fingerprint) == BACKENDS[name].exact
    else:
        assert type(encoder.model[0].auto_model).__name__ != "BertModel"  # really swapped
    vectors = encoder.encode(QUESTIONS)
    assert vectors.shape == (len(QUESTIONS), 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    cos = np.sum(vectors * torch_vectors, axis=1)
    assert cos.min() >= min_cos, cos
    # Paraphrases stay closer than unrelated questions.
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.3
    # The single-query path (its own tokenizer) gives the bulk path's vector.
    assert float(encoder.encode([QUESTIONS[3]])[0] @ vectors[3]) > alone
    if not BACKENDS[name].exact:
        assert encoder.spec.fingerprint.endswith("+" + name)
    if BACKENDS[name].precision == "bf16" or BACKENDS[name].quantization == "weights":
        assert cos.min() < 0.99999, cos     # not float32's embeddings: really in effect


@pytest.mark.slow
def test_export_happens_once_and_is_reused(tmp_path, monkeypatch):
    _needs("onnx")
    from engine.encoding.loading import load_encoder

    monkeypatch.setenv("DUPLENS_CACHE_DIR", str(tmp_path))
    first = load_encoder(None, backend="onnx")
    (folder,) = (tmp_path / "backends").iterdir()
    stamp = (folder / "model.onnx").stat().st_mtime_ns
    second = load_encoder(None, backend="onnx")
    assert [p.name for p in (tmp_path / "backends").iterdir()] == [folder.name]
    assert (folder / "model.onnx").stat().st_mtime_ns == stamp
    assert sorted(p.name for p in folder.iterdir()) == ["model.onnx"]  # no scratch left
    assert np.allclose(first.encode(QUESTIONS[:2]), second.encode(QUESTIONS[:2]))


@pytest.mark.slow
def test_openvino_int8_sends_no_telemetry():
    _needs("openvino-int8")
    from engine.encoding.loading import load_encoder

    load_encoder(None, backend="openvino-int8")
    import nncf.telemetry.decorator as decorator
    import nncf.telemetry.wrapper as wrapper

    assert isinstance(wrapper.telemetry, wrapper.NNCFTelemetryStub)
    assert isinstance(decorator.telemetry, wrapper.NNCFTelemetryStub)


@pytest.mark.slow
def test_project_keeps_int8_embeddings_apart_and_switches_back(new_project, tmp_path, encoder):
    _needs("onnx-int8")
    project = new_project()
    csv = tmp_path / "q.csv"
    csv.write_text("question\n" + "\n".join(QUESTIONS) + "\n")
    project.rows.import_table(csv, ["question"])
    project.vectors.encode()
    torch_model = project.model.row()
    assert project.info()["encoded"] == len(QUESTIONS)

    project.model.use(None, backend="onnx-int8")
    int8_model = project.model.row()
    assert int8_model["id"] != torch_model["id"]
    assert int8_model["name"] == "all-MiniLM-L6-v2 (onnx-int8)"
    assert int8_model["fingerprint"] == torch_model["fingerprint"] + "+onnx-int8"
    assert project.info()["encoded"] == 0  # nothing of torch's is reused
    project.vectors.encode()
    assert project.info()["encoded"] == len(QUESTIONS)
    assert project.search(QUESTIONS[1], k=1)[0].text == QUESTIONS[1]

    project.model.use(None, backend="onnx")  # exact: torch's row and embeddings again
    assert project.model.row()["id"] == torch_model["id"]
    assert project.info()["encoded"] == len(QUESTIONS)


@pytest.mark.slow
def test_training_an_onnx_served_model_starts_from_its_torch_weights():
    _needs("onnx")
    import torch

    from engine.encoding.loading import load_encoder
    from engine.training.trainer import _training_copy

    served = load_encoder(None, backend="onnx")
    trainee = _training_copy(served, "cpu")
    assert type(trainee[0].auto_model).__name__ == "BertModel"
    reference = load_model(resolve_model(None), "cpu")
    for (name, a), (_, b) in zip(trainee.named_parameters(), reference.named_parameters(),
                                 strict=True):
        assert torch.equal(a, b), name


def test_a_project_encoded_with_bf16_opens_on_a_cpu_without_bf16_units(
        tmp_path, monkeypatch, caplog, data_dir):
    """A team project's embeddings made with bf16 on one computer, opened on an analyst's
    laptop whose CPU has no bf16 units: it opens, keeps its embeddings and searches as
    before (OpenVINO emulates bf16 there, slower), and the log says so; bf16 as a new
    choice is still refused there."""
    _needs("openvino")
    from engine.encoding import cpu_features
    from engine.encoding.loading import load_encoder
    from engine.project import Project

    if not cpu_features.has_bf16_units():
        pytest.skip("making the bf16 project needs a CPU with bf16 units")
    path = tmp_path / "team.duplens"
    query = "which city is australia's capital"
    with Project.open(path, create=True) as project:
        project.model.use(None, device="cpu", backend="openvino-bf16")
        project.rows.import_table(data_dir / "questions.csv", ["question"], id_column="qid")
        project.vectors.encode()
        before = [(h.text, round(h.score, 4)) for h in project.search(query, 3)]

    monkeypatch.setattr(cpu_features, "cpu_flags", lambda: {"avx2", "avx512f", "avx512_vnni"})
    monkeypatch.setenv("DUPLENS_CACHE_DIR", str(tmp_path / "laptop-cache"))  # no export yet
    with pytest.raises(ModelError, match="needs a CPU with bfloat16 units"):
        load_encoder(None, device="cpu", backend="openvino-bf16")
    with caplog.at_level("WARNING", logger="duplens"), Project.open(path) as again:
        assert again.model.encoder().spec.backend == "openvino-bf16"
        assert [(h.text, round(h.score, 4)) for h in again.search(query, 3)] == before
    assert "runs emulated" in caplog.text


@pytest.mark.slow
def test_dynamic_int8_keeps_the_feed_forward_outputs_in_float32(tmp_path, encoder):
    """openvino-int8-dynamic's export: int8 weights for every product but each layer's
    feed-forward output (`Backend.float32_layers`), which keeps float32 weights."""
    _needs("openvino-int8-dynamic")
    import openvino as ov

    from engine.encoding.conversion import convert

    path = convert(encoder.model, BACKENDS["openvino-int8-dynamic"], tmp_path / "export")
    graph = ov.Core().read_model(str(path))

    def weights(product) -> str:
        """The element type of the constant a product's weights are read from."""
        node = product.input_value(1).get_node()
        while node.get_type_name() != "Constant":    # through the decompression steps
            node = node.input_value(0).get_node()
        return node.get_element_type().get_type_name()

    scores = re.compile(r"/attention/self/MatMul(_1)?$")   # query x key, and x value
    kinds = {op.get_friendly_name(): weights(op) for op in graph.get_ops()
             if op.get_type_name() == "MatMul" and not scores.search(op.get_friendly_name())}
    layers = encoder.model[0].auto_model.config.num_hidden_layers
    kept = sorted(n for n, kind in kinds.items() if kind == "f32")
    assert kept == sorted(f"/inner/encoder/layer.{i}/output/dense/MatMul" for i in range(layers))
    assert {kind for n, kind in kinds.items() if n not in kept} == {"u8"}
    assert len(kinds) - len(kept) == 5 * layers     # query, key, value, attention out, up


@pytest.mark.slow
def test_each_dynamic_int8_backend_runs_its_own_group_under_its_own_identity():
    """The two dynamic int8 backends share their int8 weights and differ only in OpenVINO's
    group of activation values per scale: each compiled model is told its own, the vectors
    differ (so they may not share an index), and each is stored under its own name."""
    _needs("openvino-int8-dynamic")
    from engine.encoding.loading import load_encoder

    vectors, fingerprints = {}, set()
    for name, group in (("openvino-int8-dynamic", 32), ("openvino-int8-dynamic-g64", 64)):
        encoder = load_encoder(None, backend=name, batch_size=4)
        compiled = encoder._runner._compiled("THROUGHPUT")
        assert int(compiled.get_property("DYNAMIC_QUANTIZATION_GROUP_SIZE")) == group
        fingerprints.add(encoder.spec.fingerprint)
        assert encoder.spec.fingerprint.endswith("+" + name)
        vectors[name] = encoder.encode(QUESTIONS)
    assert len(fingerprints) == 2
    cos = np.sum(vectors["openvino-int8-dynamic"] * vectors["openvino-int8-dynamic-g64"], axis=1)
    assert cos.min() > 0.99 and not np.array_equal(*vectors.values())


def test_a_mid_sized_bulk_call_gives_every_openvino_stream_work():
    """60 texts with a batch size of 64 are cut into at least two batches a stream (one
    batch ran on one stream's cores while the others waited), and the vectors are the ones
    each text gets alone."""
    _needs("openvino")
    from engine.encoding.loading import load_encoder

    encoder = load_encoder(None, backend="openvino", batch_size=64)
    streams = encoder._runner.streams
    assert 2 * streams * encoder._batch_for(60) >= 60
    assert encoder._batch_for(60) <= max(1, -(-60 // (2 * streams))) < 64
    assert encoder._batch_for(100_000) == 64
    texts = [f"{QUESTIONS[i % len(QUESTIONS)]} (asked on day {i})" for i in range(60)]
    together = encoder.encode(texts)
    alone = np.concatenate([encoder.encode_query(t) for t in texts])
    assert np.sum(together * alone, axis=1).min() > 0.9999

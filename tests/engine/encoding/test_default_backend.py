"""Fast by default where quality allows: a new project on a CPU encodes with its class's
default (`CPU_CLASS_DEFAULTS`: the fastest backend that passed the quality gate there, torch
where none did), the int8 form shipped with Duplens serves openvino-int8 without
calibrating, and a project that already has embeddings keeps the backend they were made
with.

The gate's own functions are tested in tests/benchmarks/test_quality_gate.py; here, that the
code's defaults are what the recorded run of every CPU class decided."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.encoding import backends, cpu_features
from engine.encoding.backend_choice import cpu_class_default, default_backend, why_default
from engine.encoding.backends import (
    AUTO,
    BACKENDS,
    CPU_CLASS_DEFAULTS,
    VENDOR_CLASS_DEFAULTS,
    class_default_name,
    missing_modules,
)
from engine.project import Project
from tests.required import unavailable

ROOT = Path(__file__).resolve().parents[3]
RESULT = ROOT / "benchmarks" / "results" / "cpu_classes.json"
FAST = "openvino-int8"   # the backend whose int8 model ships with Duplens


def _needs_fast() -> None:
    missing = missing_modules(BACKENDS[FAST])
    if missing:
        unavailable("OPENVINO", f"{FAST} needs {', '.join(missing)}: "
                                f"pip install 'duplens[openvino]'")


def _runs() -> list[tuple[str, str, dict]]:
    """Every recorded full run of benchmarks/cpu_classes.py: (vendor, date, classes under
    today's names), oldest first."""
    from benchmarks.cpu_classes import recorded_classes

    runs = []
    for path in RESULT.parent.glob("cpu_classes*.json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        assert data["result"]["mode"] == "full", path.name
        vendor = cpu_features.vendor_of(data["hardware"]["cpu"])
        assert vendor, path.name
        runs.append((vendor, data["date"], recorded_classes(data["result"])))
    return sorted(runs, key=lambda run: run[1])


def test_the_code_defaults_are_the_recorded_verdicts_of_every_cpu_class():
    """The defaults of each vendor's CPUs (`class_default_name`: `CPU_CLASS_DEFAULTS`, and
    `VENDOR_CLASS_DEFAULTS` where a vendor differs) are the verdicts of the newest recorded
    full run of benchmarks/cpu_classes.py that measured the class on a CPU of that vendor
    (cpu_classes.json, and cpu_classes@MACHINE.json from other machines; each class's gate
    and whole imports in one process, kernels capped to it; a newer run measures the code
    as it is now, so it decides): a default that failed the gate, was never measured, or
    was passed over for a faster passing one fails here; classes no run measured on any
    vendor's CPU keep torch (AMX, measured on Intel's, has no AMD CPU to be measured on)."""
    from benchmarks.cpu_classes import decide
    from benchmarks.quality_gate import MIN_SPEEDUP

    newest: dict[tuple[str, str], dict] = {}
    for vendor, _, classes in _runs():
        newest.update({(vendor, klass): measured for klass, measured in classes.items()})
    assert newest
    for (vendor, klass), measured in newest.items():
        verdict, why = decide(measured)
        assert class_default_name(klass, vendor) == verdict, f"{vendor} {klass}: {why}"
        if verdict != "torch":
            assert measured["gate"][verdict]["gate"]["passed"]
            imports = measured["speed"]["imports"]   # the bar is Duplens' own torch import
            assert imports["torch"]["seconds"] / imports[verdict]["seconds"] >= MIN_SPEEDUP
    measured = {klass for _, klass in newest}
    for vendor in {v for v, _ in newest} | {""}:
        for klass in set(cpu_features.CPU_CLASSES) - measured:
            assert class_default_name(klass, vendor) == "torch", f"{klass} was not measured"


def test_every_vendor_default_was_measured_on_that_vendors_cpu():
    """A vendor's own default comes from a recorded run on that vendor's CPU, never typed
    in: each `VENDOR_CLASS_DEFAULTS` entry is a recorded verdict (the test above), so here
    each vendor named there has a results file."""
    measured = {cpu_features.vendor_of(json.loads(p.read_text(encoding="utf-8"))
                                       ["hardware"]["cpu"])
                for p in RESULT.parent.glob("cpu_classes*.json")}
    assert set(VENDOR_CLASS_DEFAULTS) <= measured


def test_the_vendor_is_read_from_what_each_system_says():
    assert cpu_features.vendor_of(" AuthenticAMD") == "amd"
    assert cpu_features.vendor_of("AMD EPYC") == "amd"
    assert cpu_features.vendor_of("AMD64 Family 25 Model 33 Stepping 0, AuthenticAMD") == "amd"
    assert cpu_features.vendor_of("Intel64 Family 6 Model 85 Stepping 7, GenuineIntel") == \
        "intel"
    assert cpu_features.vendor_of("Intel(R) Xeon(R) Processor") == "intel"
    assert cpu_features.vendor_of("") == ""
    assert class_default_name("avx2", "") == CPU_CLASS_DEFAULTS["avx2"]


def test_the_default_is_the_class_default_on_a_cpu_and_torch_on_a_gpu():
    assert default_backend("cpu") == cpu_class_default(cpu_features.cpu_class())
    assert default_backend("cpu") in why_default("cpu")
    for gpu in ("cuda", "cuda:1", "mps"):
        assert default_backend(gpu) == "torch"


def test_a_class_default_is_used_where_installed_and_torch_where_not(monkeypatch):
    """The choice itself, whatever the run decided: an installed default is taken on the
    CPU only; one whose packages are missing leaves torch, and says why."""
    klass = cpu_features.cpu_class()
    monkeypatch.setattr(backends, "VENDOR_CLASS_DEFAULTS", {})   # the class's default alone
    monkeypatch.setitem(CPU_CLASS_DEFAULTS, klass, "onnx")   # ships with Duplens
    assert default_backend("cpu") == "onnx" and default_backend("cuda") == "torch"
    absent = backends.Backend(FAST, "openvino", "OpenVINO, int8 quantised",
                              exact=False, quantization="static", extra="openvino",
                              modules=("duplens_no_such_runtime",))
    monkeypatch.setitem(BACKENDS, FAST, absent)
    monkeypatch.setitem(CPU_CLASS_DEFAULTS, klass, FAST)
    assert default_backend("cpu") == "torch"
    assert "duplens_no_such_runtime is not installed" in why_default("cpu")


@pytest.mark.parametrize(("flags", "cap", "klass"), [
    ({"avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16", "amx_int8"}, None, "amx"),
    ({"avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16"}, "AVX512_CORE_BF16", "bf16"),
    ({"avx2", "avx512f", "avx512_vnni", "avx512_bf16", "avx512_fp16"}, None, "bf16"),
    ({"avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16"}, "AVX512_CORE_VNNI", "int8"),
    ({"avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16"}, "avx2", "avx2"),
    ({"avx2", "avx512f", "avx512_vnni"}, None, "int8"),
    ({"avx2", "avx_vnni"}, None, "int8"),                  # laptops since Alder Lake
    ({"avx2", "fma"}, None, "avx2"),
    ({"sse4_2"}, None, "older"),
])
def test_the_cpu_class_follows_the_flags_and_a_cap_on_the_kernels(monkeypatch, flags, cap,
                                                                   klass):
    """A cap on oneDNN's instruction set (which OpenVINO and torch obey) makes the CPU the
    class of the cap, as the benchmark forced each class."""
    monkeypatch.setattr(cpu_features, "_linux_flags", lambda: set(flags))
    monkeypatch.setattr(cpu_features.platform, "machine", lambda: "x86_64")
    monkeypatch.delenv("DNNL_MAX_CPU_ISA", raising=False)
    if cap:
        monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", cap)
    else:
        monkeypatch.delenv("ONEDNN_MAX_CPU_ISA", raising=False)
    assert cpu_features.cpu_class() == klass


@pytest.mark.parametrize(("vendor", "klass"), [("intel", "amx"), ("amd", "bf16"), ("", "bf16")])
def test_without_flags_the_bf16_units_are_taken_from_the_vendor_and_said_so(
        monkeypatch, vendor, klass):
    """Windows and macOS give no flags, and OpenVINO says "BF16" of AMX and AVX512-BF16
    alike: AMD has no AMX, Intel's bf16 CPUs outside a Linux server have it; the words
    say that the class was inferred."""
    from engine.encoding import backend_choice

    monkeypatch.setattr(cpu_features, "_linux_flags", set)
    monkeypatch.setattr(cpu_features.platform, "machine", lambda: "AMD64")
    monkeypatch.setattr(cpu_features, "openvino_capabilities",
                        lambda: frozenset({"BF16", "FP32", "INT8"}))
    monkeypatch.setattr(cpu_features, "cpu_vendor", lambda: vendor)
    monkeypatch.setattr(backend_choice, "cpu_vendor", lambda: vendor)
    assert cpu_features.cpu_class() == klass
    monkeypatch.setattr(backend_choice, "cpu_class", cpu_features.cpu_class)
    assert "taken from its vendor" in why_default("cpu")


@pytest.fixture
def own_cache(tmp_path, monkeypatch) -> Path:
    """An empty export cache of this test's own: anything exported shows up here."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("DUPLENS_CACHE_DIR", str(cache))
    return cache


@pytest.mark.slow
def test_a_new_project_encodes_with_the_default_backend_and_reopens_without_torch(
        tmp_path, data_dir, own_cache):
    """A new project left at the default preferences encodes with `default_backend` (the
    gated fast backend on a CPU that runs it, else torch), keeps those embeddings apart
    under their own fingerprint, and on reopening serves them as they were made: OpenVINO's
    own embeddings from its export without torch, checked the first time."""
    expected = default_backend("cpu")
    path = tmp_path / "new.duplens"
    with Project.open(path, create=True) as project:
        assert project.model.preferences.backend in (None, AUTO)
        project.model.configure(device="cpu")
        project.rows.import_table(data_dir / "questions.csv", ["question"], id_column="qid")
        project.vectors.encode()
        assert project.model.loaded().spec.backend == expected
        fingerprint = project.model.row()["fingerprint"]
        assert fingerprint.endswith(f"+{expected}") == (not BACKENDS[expected].exact)
        first = project.rows.page(0, 1)[0]["text"]
        found = project.search(first, k=1)[0]
        assert found.text == first and found.score > 0.99
        encoded = project.info()["encoded"]
    with Project.open(path) as reopened:
        reopened.model.configure(device="cpu")
        served = reopened.model.encoder()
        assert served.spec.fingerprint == fingerprint
        if BACKENDS[expected].runtime == "openvino":
            assert served.model is None and served.query_runtime == "openvino"
        assert reopened.vectors.encode().encoded == 0
        assert reopened.info()["encoded"] == encoded
        assert reopened.search(first, k=1)[0].text == first


@pytest.mark.slow
def test_openvino_int8_is_served_from_the_model_shipped_with_duplens(
        tmp_path, data_dir, own_cache):
    """A new project asking for openvino-int8 is encoded and searched by OpenVINO from the
    shipped int8 model, without torch (nothing calibrated or exported into the cache)."""
    _needs_fast()
    with Project.open(tmp_path / "new.duplens", create=True) as project:
        assert project.model.preferences.backend in (None, AUTO)
        project.model.configure(device="cpu", backend=FAST)
        project.rows.import_table(data_dir / "questions.csv", ["question"], id_column="qid")
        project.vectors.encode()
        encoder = project.model.loaded()
        assert encoder.spec.backend == FAST
        assert encoder.model is None and encoder.query_runtime == "openvino"  # torch-free
        row = project.model.row()
        assert row["fingerprint"].endswith(f"+{FAST}")
        assert project.info()["encoded"] > 0
        first = project.rows.page(0, 1)[0]["text"]
        assert project.search(first, k=1)[0].text == first
    exported = [p.name for p in (own_cache / "backends").glob("*")] \
        if (own_cache / "backends").is_dir() else []
    assert not [name for name in exported if name.startswith(FAST)], exported


@pytest.mark.slow
def test_an_existing_project_keeps_its_torch_embeddings(new_project, data_dir, own_cache):
    """A project encoded by torch (before fast-by-default) opened with the default
    preferences: served by torch, or by this CPU's default where it gives torch's very
    embeddings (openvino on a CPU without bf16 units), nothing re-encoded, the same model
    row."""
    fast = default_backend("cpu")
    serving = fast if BACKENDS[fast].exact else "torch"
    project = new_project()   # the session's torch encoder attached
    project.rows.import_table(data_dir / "questions.csv", ["question"], id_column="qid")
    project.vectors.encode()
    before, encoded = project.model.row(), project.info()["encoded"]
    assert "+" not in before["fingerprint"]
    path = project.path
    project.close()

    with Project.open(path) as reopened:
        reopened.model.configure(device="cpu")   # the backend preference left at "auto"
        assert reopened.model.encoder().spec.backend == serving
        report = reopened.vectors.encode()
        assert report.encoded == 0
        assert reopened.model.row()["id"] == before["id"]
        assert reopened.info()["encoded"] == encoded > 0
        reopened.model.reload()   # "auto": a backend that keeps the embeddings valid
        assert reopened.model.loaded().spec.backend == serving
        assert reopened.model.row()["id"] == before["id"]


@pytest.mark.slow
def test_an_existing_fast_project_keeps_its_backend_under_any_preference(
        tmp_path, data_dir, own_cache):
    """The other way round: int8 embeddings stay served by int8 under the default
    preference and under torch; nothing is re-encoded behind the user's back."""
    _needs_fast()
    path = tmp_path / "fast.duplens"
    with Project.open(path, create=True) as project:
        project.model.configure(device="cpu", backend=FAST)
        project.rows.import_table(data_dir / "questions.csv", ["question"], id_column="qid")
        project.vectors.encode()
        before, encoded = project.model.row(), project.info()["encoded"]
    for preference in (AUTO, "torch"):
        with Project.open(path) as reopened:
            reopened.model.configure(device="cpu", backend=preference)
            assert reopened.model.encoder().spec.backend == FAST
            assert reopened.vectors.encode().encoded == 0
            assert reopened.model.row()["id"] == before["id"]
            assert reopened.info()["encoded"] == encoded

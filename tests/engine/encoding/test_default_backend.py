"""Fast by default where quality allows: a new project on a CPU encodes with the fastest
backend that passed the quality gate (`CPU_DEFAULT_BACKEND`; torch while no candidate
passes), the int8 form shipped with Duplens serves openvino-int8 without calibrating, and a
project that already has embeddings keeps the backend they were made with.

The gate's own functions are tested in tests/benchmarks/test_quality_gate.py; here, that the
code's default is what the recorded gate run allows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.encoding import backends
from engine.encoding.backend_choice import default_backend
from engine.encoding.backends import (
    AUTO,
    BACKENDS,
    CPU_DEFAULT_BACKEND,
    missing_modules,
)
from engine.project import Project
from tests.required import unavailable

ROOT = Path(__file__).resolve().parents[3]
RESULT = ROOT / "benchmarks" / "results" / "backends.json"
FAST = "openvino-int8"   # the backend whose int8 model ships with Duplens


def _needs_fast() -> None:
    missing = missing_modules(BACKENDS[FAST])
    if missing:
        unavailable("OPENVINO", f"{FAST} needs {', '.join(missing)}: "
                                f"pip install 'duplens[openvino]'")


def test_the_code_default_is_what_the_recorded_quality_gate_allows():
    """`CPU_DEFAULT_BACKEND` is the verdict of the recorded backends run
    (benchmarks/results/backends.json, every backend gated and timed against torch in one
    run): torch only while no candidate passed every gate figure at `MIN_SPEEDUP` times
    torch's speed, and otherwise the fastest that did. A default that failed, was never
    measured, or was passed over for a faster one fails here. (The `--gate-only` record
    has no timing, so it cannot say which passing backend is fast enough.)"""
    from benchmarks.quality_gate import MIN_SPEEDUP, choose_default

    record = json.loads(RESULT.read_text(encoding="utf-8"))
    rows = {n: r for n, r in record["result"]["backends"].items() if "gate" in r}
    assert "torch" in rows   # the reference ran in the same run
    verdict, why = choose_default(rows)
    assert verdict == CPU_DEFAULT_BACKEND, why
    torch = rows["torch"]["sentences_per_s"]
    passed = [name for name, row in rows.items() if name != "torch" and row["gate"]["passed"]
              and row["sentences_per_s"] >= MIN_SPEEDUP * torch]
    if CPU_DEFAULT_BACKEND == "torch":
        assert not passed, f"{passed} passed the gate: make the fastest of them the default"
    else:
        assert CPU_DEFAULT_BACKEND in passed, f"the gate run did not pass {CPU_DEFAULT_BACKEND}"


def test_the_default_is_the_gated_backend_on_a_cpu_and_torch_on_a_gpu():
    chosen = BACKENDS[CPU_DEFAULT_BACKEND]
    usable = not missing_modules(chosen) and backends.unsupported_here(chosen) is None
    assert default_backend("cpu") == (CPU_DEFAULT_BACKEND if usable else "torch")
    for gpu in ("cuda", "cuda:1", "mps"):
        assert default_backend(gpu) == "torch"


def test_a_gated_cpu_default_is_used_where_installed_and_torch_where_not(monkeypatch):
    """The choice itself, whatever the gate decided: an installed default is taken on the
    CPU only; one whose packages are missing leaves torch."""
    monkeypatch.setattr(backends, "CPU_DEFAULT_BACKEND", "onnx")   # ships with Duplens
    assert default_backend("cpu") == "onnx" and default_backend("cuda") == "torch"
    absent = backends.Backend(FAST, "openvino", "OpenVINO, int8 quantised",
                              exact=False, quantization="static", extra="openvino",
                              modules=("duplens_no_such_runtime",))
    monkeypatch.setitem(BACKENDS, FAST, absent)
    monkeypatch.setattr(backends, "CPU_DEFAULT_BACKEND", FAST)
    assert default_backend("cpu") == "torch"


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
    preferences: served by torch, nothing re-encoded, the same model row."""
    project = new_project()   # the session's torch encoder attached
    project.rows.import_table(data_dir / "questions.csv", ["question"], id_column="qid")
    project.vectors.encode()
    before, encoded = project.model.row(), project.info()["encoded"]
    assert "+" not in before["fingerprint"]
    path = project.path
    project.close()

    with Project.open(path) as reopened:
        reopened.model.configure(device="cpu")   # the backend preference left at "auto"
        assert reopened.model.encoder().spec.backend == "torch"
        report = reopened.vectors.encode()
        assert report.encoded == 0
        assert reopened.model.row()["id"] == before["id"]
        assert reopened.info()["encoded"] == encoded > 0
        reopened.model.reload()   # "auto": the backend the embeddings were made with
        assert reopened.model.loaded().spec.backend == "torch"
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

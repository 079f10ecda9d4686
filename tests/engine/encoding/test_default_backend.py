"""Fast by default: a new project on a CPU encodes with the fastest backend that passed the
quality gate (`CPU_DEFAULT_BACKEND`, openvino-int8, from the fast form shipped with Duplens),
and a project that already has embeddings keeps the backend they were made with.

The gate's own functions are tested in tests/benchmarks/test_quality_gate.py; here, that the
code's default is a backend the recorded gate run passed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.encoding import backends
from engine.encoding.backends import (
    AUTO,
    BACKENDS,
    CPU_DEFAULT_BACKEND,
    default_backend,
    missing_modules,
)
from engine.project import Project
from tests.required import unavailable

ROOT = Path(__file__).resolve().parents[3]
GATE = ROOT / "benchmarks" / "results" / "gate" / "backends_gate.json"


def _needs_default() -> None:
    missing = missing_modules(BACKENDS[CPU_DEFAULT_BACKEND])
    if missing:
        unavailable("OPENVINO", f"{CPU_DEFAULT_BACKEND} needs {', '.join(missing)}: "
                                f"pip install 'duplens[openvino]'")


def test_the_code_default_passed_the_recorded_quality_gate():
    """`CPU_DEFAULT_BACKEND` is a backend that passed every gate figure against torch in
    the recorded run (benchmarks/results/gate/backends_gate.json, `python -m
    benchmarks.backends --gate-only`): a default that failed, or was never measured, fails
    here."""
    record = json.loads(GATE.read_text(encoding="utf-8"))
    row = record["result"]["rows"].get(CPU_DEFAULT_BACKEND)
    assert row is not None, f"the gate run did not measure {CPU_DEFAULT_BACKEND}"
    assert row["gate"] == {"passed": True, "failed": []}
    assert "torch" in record["result"]["rows"]   # its reference ran in the same run


def test_the_default_is_the_gated_backend_on_a_cpu_and_torch_on_a_gpu():
    installed = not missing_modules(BACKENDS[CPU_DEFAULT_BACKEND])
    assert default_backend("cpu") == (CPU_DEFAULT_BACKEND if installed else "torch")
    for gpu in ("cuda", "cuda:1", "mps"):
        assert default_backend(gpu) == "torch"


def test_without_its_packages_the_default_stays_torch(monkeypatch):
    absent = backends.Backend(CPU_DEFAULT_BACKEND, "openvino", "OpenVINO, int8 quantised",
                              exact=False, quantization="static", extra="openvino",
                              modules=("duplens_no_such_runtime",))
    monkeypatch.setitem(BACKENDS, CPU_DEFAULT_BACKEND, absent)
    assert default_backend("cpu") == "torch"


@pytest.fixture
def own_cache(tmp_path, monkeypatch) -> Path:
    """An empty export cache of this test's own: anything exported shows up here."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("DUPLENS_CACHE_DIR", str(cache))
    return cache


@pytest.mark.slow
def test_a_new_project_encodes_with_the_fast_backend_shipped_with_duplens(
        tmp_path, data_dir, own_cache):
    """No backend asked for: the project is encoded by openvino-int8, served without torch
    from the shipped export (nothing calibrated or exported into the cache)."""
    _needs_default()
    with Project.open(tmp_path / "new.duplens", create=True) as project:
        assert project.model.preferences.backend in (None, AUTO)
        project.model.configure(device="cpu")
        project.rows.import_table(data_dir / "questions.csv", ["question"], id_column="qid")
        project.vectors.encode()
        encoder = project.model.loaded()
        assert encoder.spec.backend == CPU_DEFAULT_BACKEND
        assert encoder.model is None and encoder.query_runtime == "openvino"  # torch-free
        row = project.model.row()
        assert row["fingerprint"].endswith(f"+{CPU_DEFAULT_BACKEND}")
        assert project.info()["encoded"] > 0
        first = project.rows.page(0, 1)[0]["text"]
        assert project.search(first, k=1)[0].text == first
    exported = [p.name for p in (own_cache / "backends").glob("*")] \
        if (own_cache / "backends").is_dir() else []
    assert not [name for name in exported if name.startswith(CPU_DEFAULT_BACKEND)], exported


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
def test_an_existing_fast_project_keeps_its_backend_when_torch_is_preferred(
        tmp_path, data_dir, own_cache):
    """The other way round: int8 embeddings stay served by int8 under any preference that
    does not choose another model; nothing is re-encoded behind the user's back."""
    _needs_default()
    path = tmp_path / "fast.duplens"
    with Project.open(path, create=True) as project:
        project.model.configure(device="cpu")
        project.rows.import_table(data_dir / "questions.csv", ["question"], id_column="qid")
        project.vectors.encode()
        before, encoded = project.model.row(), project.info()["encoded"]
    with Project.open(path) as reopened:
        reopened.model.configure(device="cpu", backend="torch")
        assert reopened.model.encoder().spec.backend == CPU_DEFAULT_BACKEND
        assert reopened.vectors.encode().encoded == 0
        assert reopened.model.row()["id"] == before["id"]
        assert reopened.info()["encoded"] == encoded


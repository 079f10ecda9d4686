"""What the command line imports: `--help`, `info` and `search` answer without torch,
transformers, sentence-transformers or scikit-learn (the regression guard of a CLI that
answers in about a second), and search's torch-free encoder gives torch's embeddings."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from engine.encoding import folder_steps, torch_free_encoder
from tests.engine.cli.test_cli import ROOT, run, run_process

HEAVY = {"torch", "transformers", "sentence_transformers", "sklearn"}
DATA = ROOT / "tests" / "data"
# Runs `python -m engine.cli ARGS` as the console script does, then writes its exit status
# and every module it imported to the file named first.
_CHILD = """
import json, runpy, sys
out = sys.argv.pop(1)
try:
    runpy.run_module("engine.cli", run_name="__main__", alter_sys=True)
    status = 0
except SystemExit as exc:
    status = exc.code
with open(out, "w") as fh:
    json.dump({"status": status, "modules": sorted({m.split(".")[0] for m in sys.modules})},
              fh)
"""


def in_child(tmp_path: Path, *args: str) -> tuple[int, set[str], str]:
    """(exit status, top-level packages imported, stdout) of `duplens ARGS` in a fresh
    process."""
    out = tmp_path / "child.json"
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(out), *args], capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert out.exists(), proc.stderr
    done = json.loads(out.read_text())
    return done["status"], set(done["modules"]), proc.stdout


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """The test questions, imported by `duplens import --backend torch` (torch's embeddings:
    a project made before fast-by-default), which also checks the model's ONNX export
    against torch (made the first time) so that searches need no torch."""
    path = tmp_path_factory.mktemp("imports") / "questions.duplens"
    run("import", str(path), str(DATA / "questions.csv"), "--column", "question",
        "--id-column", "qid", "--backend", "torch")
    return path


@pytest.mark.slow
def test_an_int8_projects_search_runs_the_shipped_fast_model_without_torch(tmp_path):
    """A project imported with openvino-int8 is searched by OpenVINO from the shipped int8
    model, with no torch."""
    from engine.encoding.backends import BACKENDS, missing_modules
    from tests.required import unavailable

    if missing_modules(BACKENDS["openvino-int8"]):
        unavailable("OPENVINO", "OpenVINO is an extra: pip install 'duplens[openvino]'")
    path = tmp_path / "fast.duplens"
    run("import", str(path), str(DATA / "questions.csv"), "--column", "question",
        "--id-column", "qid", "--device", "cpu", "--backend", "openvino-int8")
    status, modules, out = in_child(tmp_path, "search", str(path), "capital of australia",
                                    "-k", "2", "--json")
    assert status == 0 and {h["id"] for h in json.loads(out)} == {"q6", "q7"}
    assert not modules & HEAVY and "openvino" in modules


def test_help_imports_no_third_party_package(tmp_path):
    status, modules, out = in_child(tmp_path, "--help")
    assert status == 0 and "search" in out
    assert not modules & (HEAVY | {"numpy", "sqlalchemy", "pandas", "scipy", "onnxruntime",
                                   "tokenizers", "tqdm", "openpyxl"})


@pytest.mark.slow
def test_info_and_label_load_the_store_only(project, tmp_path):
    status, modules, out = in_child(tmp_path, "info", str(project), "--json")
    assert status == 0 and json.loads(out)["items"] == 48
    # info reads counts: no service, no NumPy (a fifth of its time when it imported them)
    assert not modules & (HEAVY | {"pandas", "pyarrow", "scipy", "onnxruntime", "tokenizers",
                                   "openpyxl", "numpy", "engine.project",
                                   "engine.services.vectors"})
    copy = tmp_path / "copy.duplens"
    shutil.copy(project, copy)
    status, modules, _ = in_child(tmp_path, "label", str(copy), "q1", "q2", "not")
    assert status == 0
    assert not modules & (HEAVY | {"pandas", "pyarrow", "scipy", "onnxruntime", "tokenizers"})


@pytest.mark.slow
def test_match_of_a_small_file_needs_no_torch(project, tmp_path):
    small = tmp_path / "small.csv"
    small.write_text("question\nWhat is the capital of Australia?\nhow do i learn python\n",
                     encoding="utf-8")
    status, modules, out = in_child(tmp_path, "match", str(project), str(small), "--column",
                                    "question", "-k", "1", "--json")
    assert status == 0 and [r["matches"][0]["id"] in {"q6", "q7", "q1"}
                            for r in json.loads(out)] == [True, True]
    assert not modules & HEAVY and "onnxruntime" in modules


@pytest.mark.slow
def test_search_answers_without_torch_with_torchs_results(project, tmp_path, monkeypatch):
    query = "what is australia's capital city"
    status, modules, out = in_child(tmp_path, "search", str(project), query, "-k", "5",
                                    "--json")
    assert status == 0
    assert not modules & (HEAVY | {"pandas", "pyarrow", "scipy"})
    assert "onnxruntime" in modules            # the torch-free encoder served it
    light = json.loads(out)
    monkeypatch.setenv("DUPLENS_FAST_QUERIES", "0")   # torch only, as before
    torch_hits = json.loads(run("search", str(project), query, "-k", "5", "--json").stdout)
    assert [h["id"] for h in light] == [h["id"] for h in torch_hits]
    assert [h["score"] for h in light] == pytest.approx([h["score"] for h in torch_hits],
                                                        abs=1e-4)


def test_real_process_exit_status(tmp_path):
    assert run_process("--help").returncode == 0
    proc = run_process("search", check_code=2)
    assert proc.stderr.strip().startswith("duplens search: ")
    proc = run_process("info", str(tmp_path / "none.duplens"), check_code=2)
    assert proc.stderr.strip().splitlines() == ["duplens: none.duplens: no such project "
                                                "(import a file to create it)"]


# -- the torch-free encoder ---------------------------------------------------------------------
@pytest.mark.slow
def test_torch_free_encoder_gives_torchs_embeddings(encoder):
    assert torch_free_encoder.verify(encoder) >= torch_free_encoder.MIN_COSINE
    row = {"name": encoder.spec.name, "fingerprint": encoder.spec.fingerprint,
           "dim": encoder.dim, "max_seq_length": encoder.max_seq_length}
    light = torch_free_encoder.load(Path(encoder.spec.location), row, batch_size=16)
    assert light is not None and light.dim == encoder.dim
    import csv

    with (DATA / "questions.csv").open(encoding="utf-8") as fh:
        texts = [r["question"] for r in csv.DictReader(fh)]
    long = " ".join(texts) * 3            # past the model's window: truncated alike
    texts += [long, long.upper(), "  spaced  ", ""]
    reference = encoder.model.encode(texts, normalize_embeddings=True, convert_to_numpy=True)
    batched = light.encode(texts)
    single = np.concatenate([light.encode_query(t) for t in texts])
    assert (batched * reference).sum(axis=1).min() >= torch_free_encoder.MIN_COSINE
    assert (single * reference).sum(axis=1).min() >= torch_free_encoder.MIN_COSINE
    assert light.truncation_flags(texts) == encoder.truncation_flags(texts)
    assert light.token_counts(texts) == encoder.token_counts(texts)


@pytest.mark.slow
def test_unchecked_or_unsupported_models_get_torch(encoder, tmp_path, monkeypatch):
    """No marker (never checked here), no export, or steps this encoder does not do (a
    default prompt): `load` says None and the project loads torch."""
    folder = Path(encoder.spec.location)
    row = {"name": encoder.spec.name, "fingerprint": encoder.spec.fingerprint,
           "dim": encoder.dim, "max_seq_length": encoder.max_seq_length}
    assert torch_free_encoder.verify(encoder) is not None
    assert torch_free_encoder.load(folder, row) is not None
    monkeypatch.setenv("DUPLENS_FAST_QUERIES", "0")
    assert torch_free_encoder.load(folder, row) is None
    monkeypatch.delenv("DUPLENS_FAST_QUERIES")
    prompted = tmp_path / "prompted"
    prompted.mkdir()
    for item in folder.iterdir():
        (prompted / item.name).symlink_to(item)
    (prompted / "config_sentence_transformers.json").unlink()
    (prompted / "config_sentence_transformers.json").write_text(json.dumps(
        {"prompts": {"query": "query: "}, "default_prompt_name": "query"}))
    assert folder_steps.read_steps(prompted) is None
    assert torch_free_encoder.load(prompted, row) is None
    monkeypatch.setenv("DUPLENS_CACHE_DIR", str(tmp_path / "empty-cache"))   # no export
    assert torch_free_encoder.load(folder, row) is None


@pytest.mark.slow
def test_a_search_that_needed_torch_prepares_the_next(project, tmp_path, monkeypatch):
    """With the export cached but never checked here, search loads torch, answers, then
    checks the export, so the next search needs no torch."""
    cache = tmp_path / "cache"
    export = torch_free_encoder.export_file(_fingerprint(project))
    shutil.copytree(export.parent, cache / "backends" / export.parent.name,
                    ignore=shutil.ignore_patterns("torch-free-*"))
    monkeypatch.setenv("DUPLENS_CACHE_DIR", str(cache))
    assert not list(cache.glob("backends/*/torch-free-*.json"))
    first = run("search", str(project), "capital of australia", "-k", "1", "--json")
    assert json.loads(first.stdout)[0]["id"] in {"q6", "q7"}
    assert "preparing this model" not in first.stderr    # the export was there
    assert len(list(cache.glob("backends/*/torch-free-*.json"))) == 1
    status, modules, out = in_child(tmp_path, "search", str(project), "capital of australia",
                                    "-k", "1", "--json")
    assert status == 0 and not modules & HEAVY
    assert json.loads(out)[0]["id"] == json.loads(first.stdout)[0]["id"]


def _fingerprint(project: Path) -> str:
    info = json.loads(run("info", str(project), "--json").stdout)
    import sqlite3

    con = sqlite3.connect(f"file:{project}?mode=ro", uri=True)
    try:
        return con.execute("SELECT fingerprint FROM models WHERE name = ?",
                           (info["model"],)).fetchone()[0]
    finally:
        con.close()


# -- constants the parser spells out instead of importing ------------------------------------
def test_export_forms_are_the_engines():
    from engine.cli import duplicates
    from engine.services import exports

    assert (duplicates.ALL, duplicates.ONLY_CLUSTERS, duplicates.DEDUPLICATED) == (
        exports.ALL, exports.ONLY_CLUSTERS, exports.DEDUPLICATED)

"""The documents benchmark's SemHash arm with a model distilled here: SemHash's own code on a
model2vec model made from the bundled MiniLM (real distill, real SemHash), its threshold
chosen on validation, and the model made once and then read from the cache."""

from __future__ import annotations

import pytest

from benchmarks import document_corpus as dc
from benchmarks import documents
from tests.benchmarks.test_document_corpus import built  # noqa: F401  (a fixture)

pytestmark = pytest.mark.slow


def test_semhash_runs_on_a_model_distilled_here_and_finds_near_copies(built, tmp_path,  # noqa: F811
                                                                      monkeypatch):
    pytest.importorskip("semhash")
    pytest.importorskip("skeletoken")
    monkeypatch.setenv("DUPLENS_BENCH_CACHE", str(tmp_path))
    made = built[0]
    half = dc.split_groups(made, 1)
    ids = list(made.texts)
    texts = [made.texts[i] for i in ids]

    first = documents._semhash_distilled(ids, texts, made, half)
    assert first["ran"], first
    assert first["model"]["from"] == "all-MiniLM-L6-v2" and "distill_seconds" in first["model"]
    assert [p.name for p in tmp_path.glob("model2vec-*/model.safetensors")]
    assert first["threshold"] == documents.SEMHASH_THRESHOLD
    tuned = first["extra_arms"]["semhash_distilled_tuned"]
    curve = tuned["validation_f1_by_threshold"]
    assert curve[f"{tuned['threshold']['value']:.2f}"] == max(
        f1 for t, f1 in curve.items() if float(t) in documents.TUNING_GRID)
    # A copy with 2% of its words changed averages to nearly the same static vector.
    assert tuned["test"]["near_copy"]["recall"] == 1.0

    again = documents._semhash_distilled(ids, texts, made, half)
    assert "distill_seconds" not in again["model"]            # read from the cache
    assert again["test"] == first["test"]

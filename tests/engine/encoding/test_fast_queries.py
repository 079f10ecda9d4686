"""Single queries through onnxruntime (`SentenceEncoder.prepare_fast_queries`): used only
when installed and proven to give torch's embeddings, never in the way when not."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from engine.encoding.encoder import SentenceEncoder

TEXTS = ["How do I learn Python quickly?", "Why is the sky blue?", "é " * 5,
         "a long question " * 200]   # past the 256-token window: truncated the same way

needs_onnxruntime = pytest.mark.skipif(importlib.util.find_spec("onnxruntime") is None,
                                       reason="needs duplens[onnx]")


@pytest.fixture
def fresh(encoder, tmp_path, monkeypatch):
    """A new encoder over the session's weights, exporting into a private cache."""
    monkeypatch.setenv("DUPLENS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("DUPLENS_FAST_QUERIES", raising=False)
    return SentenceEncoder(encoder.model, encoder.spec, "cpu")


@needs_onnxruntime
def test_fast_queries_give_torchs_embeddings(fresh):
    torch_vectors = [fresh.encode_query(t) for t in TEXTS]
    assert fresh.prepare_fast_queries() == "onnxruntime"
    assert fresh.query_fallback_reason == ""
    assert fresh._query_model[0].backend == "onnx"
    bulk = fresh.model[0]                              # bulk batches stay with torch
    assert bulk.backend == "torch" and type(bulk.model).__name__ == "BertModel"
    for text, expected in zip(TEXTS, torch_vectors, strict=True):
        got = fresh.encode_query(text)
        assert got.shape == (1, fresh.dim) and got.dtype == np.float32
        assert float((got * expected).sum()) > 0.99999
    assert fresh.prepare_fast_queries() == "onnxruntime"   # idempotent


def test_without_onnxruntime_queries_stay_with_torch(fresh, monkeypatch):
    monkeypatch.setattr("engine.encoding.backends.missing_modules", lambda b: ["onnxruntime"])
    before = fresh.encode_query(TEXTS[0])
    assert fresh.prepare_fast_queries() == "torch"
    assert fresh.query_fallback_reason == "onnxruntime is not installed"
    assert np.array_equal(fresh.encode_query(TEXTS[0]), before)


def test_the_switch_turns_it_off(fresh, monkeypatch):
    monkeypatch.setenv("DUPLENS_FAST_QUERIES", "0")
    assert fresh.prepare_fast_queries() == "torch"
    assert fresh.query_fallback_reason == "turned off by DUPLENS_FAST_QUERIES=0"


def test_a_runtime_that_disagrees_with_torch_is_not_used(fresh, monkeypatch):
    import torch
    from transformers.modeling_outputs import BaseModelOutput

    class Wrong(torch.nn.Module):
        """A transformer stand-in that answers noise: what a broken export would do."""

        config = fresh.model[0].auto_model.config

        def forward(self, input_ids=None, **_):
            generator = torch.Generator().manual_seed(0)
            shape = (*input_ids.shape, fresh.dim)
            return BaseModelOutput(last_hidden_state=torch.randn(shape, generator=generator))

    monkeypatch.setattr("engine.encoding.runtime.query_runner", lambda model, fp: Wrong())
    before = fresh.encode_query(TEXTS[1])
    assert fresh.prepare_fast_queries() == "torch"
    assert fresh.query_fallback_reason.startswith("onnxruntime and torch disagree")
    assert np.array_equal(fresh.encode_query(TEXTS[1]), before)
    assert type(fresh.model[0].model).__name__ == "BertModel"

"""The fp16-on-CUDA gate's two halves (benchmarks/gpu_gate.py), run on the CPU with a small
made-up gate: a dump judged against torch on the same machine loses nothing, a dump of other
texts is refused, and the weight digest tells the halved model from the float32 one."""

from __future__ import annotations

import json

import numpy as np
import pytest

from benchmarks import gpu_gate, quality_gate
from engine.training.pairs import LabelledPair

QUESTIONS = [f"How do I {verb} a {thing}?" for verb in ("fix", "paint", "sell", "clean")
             for thing in ("bike", "car", "boat", "house", "phone", "laptop")]


def _data() -> quality_gate.GateData:
    pairs = [LabelledPair("How do I fix a bike?", "How can I repair my bicycle?", 1.0),
             LabelledPair("How do I sell a car?", "How do I paint a boat?", 0.0),
             LabelledPair("How do I clean a phone?", "How can I clean my phone?", 1.0),
             LabelledPair("How do I paint a house?", "How do I sell a laptop?", 0.0)]
    return quality_gate.GateData(
        sts_a=["A man plays a guitar.", "A dog runs.", "The sky is blue."],
        sts_b=["A man is playing a guitar.", "A cat sleeps.", "It rains today."],
        sts_gold=np.array([4.8, 0.6, 0.4]), quora=pairs[:2], sample=pairs[2:],
        questions=QUESTIONS, duplicates=np.array([[0, 1], [6, 7]]), threshold=0.8)


def test_gate_texts_once_each_in_a_fixed_order():
    texts = gpu_gate.gate_texts(_data())
    assert len(texts) == len(set(texts))
    assert texts[:3] == ["A man plays a guitar.", "A dog runs.", "The sky is blue."]
    assert set(QUESTIONS) <= set(texts)
    assert gpu_gate.texts_digest(texts) != gpu_gate.texts_digest(texts[::-1])


def test_a_dump_judged_on_the_same_machine_loses_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("DUPLENS_CACHE_DIR", str(tmp_path / "cache"))
    data = _data()
    meta = gpu_gate.dump(tmp_path / "dump", "cpu", data)
    assert meta["texts"] == len(gpu_gate.gate_texts(data)) and meta["files"]
    result = gpu_gate.judge(tmp_path / "dump", data)
    row = result["cuda_fp16"]
    for key in ("stsb_spearman", "quora_ap", "sample_pairs_ap", "partner_top5"):
        assert row[f"{key}_loss"] == pytest.approx(0, abs=1e-3)
    assert row["cut_f1"] == 1.0 and result["gate"]["passed"]
    # The dump's model was float32: not the halved model the judge expects from CUDA.
    assert result["weights_match"] is False
    shown = gpu_gate.present(result)
    assert shown["headline"][0]["met"] is False
    assert any("not the product's model" in note for note in shown["notes"])


def test_a_dump_of_other_texts_is_refused(tmp_path):
    data = _data()
    texts = gpu_gate.gate_texts(data)
    (tmp_path / "gate_vectors_0.npy").write_bytes(b"")
    meta = {"texts_sha256": gpu_gate.texts_digest(texts[1:]), "texts": len(texts) - 1,
            "files": ["gate_vectors_0.npy"]}
    (tmp_path / "gate_meta.json").write_text(json.dumps(meta), encoding="utf-8")
    with pytest.raises(SystemExit, match="other texts"):
        gpu_gate.load_dump(tmp_path, texts)


def test_weights_carried_in_fp16_halve_back_to_the_products_fp16_model(tmp_path, encoder):
    """devtools/gpu_machine_bundle.py stores the weights as fp16 and the GPU machine widens
    them to float32; halving those on CUDA must give the bundled model's halved weights."""
    import copy

    from safetensors.torch import load_file, save_file

    halved = copy.deepcopy(encoder.model).half()
    carried = tmp_path / "model.fp16.safetensors"
    save_file({k: v.contiguous() for k, v in halved.state_dict().items()}, str(carried))
    widened = copy.deepcopy(encoder.model)
    widened.load_state_dict({k: v.float() if v.is_floating_point() else v
                             for k, v in load_file(str(carried)).items()})
    assert gpu_gate.weights_digest(widened) != gpu_gate.weights_digest(halved)
    assert gpu_gate.weights_digest(widened.half()) == gpu_gate.weights_digest(halved)

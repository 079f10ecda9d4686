import numpy as np
import pytest

from engine.encoding.encode_job import encode_missing
from engine.encoding.model_spec import pick_device, resolve_model
from engine.errors import ModelError
from engine.progress import CancelToken
from engine.store import embeddings as embedding_store


def test_default_model_is_the_packaged_all_minilm(encoder):
    spec = resolve_model(None)
    assert spec.name == "all-MiniLM-L6-v2"
    assert spec.fingerprint.startswith("sha256:53aa5117")
    assert spec.fingerprint.endswith("d9db")
    assert encoder.dim == 384


def test_embeddings_are_normalised_and_meaningful(encoder):
    v = encoder.encode(["How do I learn Python quickly?", "Fastest way to learn Python?",
                        "Why do cats purr?"])
    assert v.dtype == np.float32 and v.shape == (3, 384)
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-4)
    assert v[0] @ v[1] > 0.7 > v[0] @ v[2]


def test_long_texts_are_flagged_truncated_and_huge_ones_are_cheap(encoder):
    short = "a short question?"
    long = "word " * 400
    huge = "x" * 5_000_000
    assert encoder.truncation_flags([short, long, huge]) == [False, True, True]
    assert encoder.encode([huge]).shape == (1, 384)


def test_model_path_that_is_not_a_sentence_transformers_model(tmp_path):
    (tmp_path / "notes.txt").write_text("hi")
    with pytest.raises(ModelError, match="is not a sentence-transformers model"):
        resolve_model(str(tmp_path))
    with pytest.raises(ModelError, match="no such model folder"):
        resolve_model(str(tmp_path / "missing"))
    with pytest.raises(ModelError, match="is a file"):
        resolve_model(str(tmp_path / "notes.txt"))


def test_hub_names_resolve_without_network():
    spec = resolve_model("sentence-transformers/all-mpnet-base-v2")
    assert not spec.is_local and spec.fingerprint == "hub:sentence-transformers/all-mpnet-base-v2"


def test_device_choice():
    assert pick_device("cpu") == "cpu"
    assert pick_device("auto") in ("cuda", "mps", "cpu")
    with pytest.raises(ModelError, match="unknown device"):
        pick_device("tpu")


def test_cancel_commits_what_was_encoded_and_resume_finishes(new_project, tmp_path, encoder):
    project = new_project()
    csv = tmp_path / "many.csv"
    csv.write_text("text\n" + "\n".join(f"question number {i} about topic {i % 7}"
                                        for i in range(300)))
    project.rows.import_table(csv, ["text"])
    model_id = project.model.id()
    cancel = CancelToken()
    seen = []

    def progress(p):
        seen.append(p.done)
        if p.done >= 64:
            cancel.cancel()

    report = encode_missing(project.store, encoder, model_id, progress=progress,
                            cancel=cancel, chunk_texts=1000)
    assert report.cancelled and 64 <= report.encoded < 300
    with project.store.read() as conn:
        assert embedding_store.count_embeddings(conn, model_id) == report.encoded
    rest = project.vectors.encode()
    assert not rest.cancelled and rest.encoded == 300 - report.encoded
    with project.store.read() as conn:
        assert embedding_store.count_embeddings(conn, model_id) == 300
        assert embedding_store.missing_text_ids(conn, model_id) == []
    assert len(project.vectors.index()) == 300

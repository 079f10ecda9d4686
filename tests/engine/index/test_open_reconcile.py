"""Opening a project: a saved index whose stamp still holds is used as it is; any doubt
(another content version, a different count, no stamp) reconciles it in full."""

import json

import numpy as np
import pytest

from engine.index.persist import stamp_key
from engine.index.reconcile import reconcile
from engine.project import Project
from engine.services import live_index
from engine.store import change_counters
from engine.store import embeddings as embedding_store
from engine.store.schema import indexes, meta


def _reopen(project, encoder, monkeypatch):
    """Reopen the project's file, counting full reconciles."""
    path = project.path
    project.close()
    calls = []
    real = live_index.reconcile

    def counting(store, index, model_id, **options):
        calls.append(model_id)
        return real(store, index, model_id, **options)

    monkeypatch.setattr(live_index, "reconcile", counting)
    reopened = Project.open(path)
    reopened.model.attach(encoder, is_default=True)
    return reopened, calls


def _stamp(project) -> dict:
    raw = project.store.get_meta(stamp_key(project.model.id()))
    return json.loads(raw) if raw else {}


def test_a_matching_stamp_skips_the_reconcile(open_questions, encoder, monkeypatch):
    expected = [h.id for h in open_questions.search("how do I fix a flat tire", k=3)]
    reopened, calls = _reopen(open_questions, encoder, monkeypatch)
    try:
        assert [h.id for h in reopened.search("how do I fix a flat tire", k=3)] == expected
        assert calls == [] and len(reopened.vectors.index()) == 46
    finally:
        reopened.close()


def test_another_content_change_count_reconciles_and_then_stamps(open_questions, encoder,
                                                                 monkeypatch):
    with open_questions.store.write() as conn:
        change_counters.bump(conn, change_counters.CONTENT)
    reopened, calls = _reopen(open_questions, encoder, monkeypatch)
    try:
        assert len(reopened.vectors.index()) == 46 and len(calls) == 1
        with reopened.store.read() as conn:
            now = change_counters.read(conn, change_counters.CONTENT)
        assert _stamp(reopened)["version"] == now
    finally:
        reopened.close()
    again, calls = _reopen(reopened, encoder, monkeypatch)
    try:
        assert len(again.vectors.index()) == 46 and calls == []  # the stamp was written back
    finally:
        again.close()


@pytest.mark.parametrize("tamper", ["stamp_embeddings", "index_count", "no_stamp"])
def test_a_tampered_record_reconciles(open_questions, encoder, monkeypatch, tamper):
    model_id = open_questions.model.id()
    with open_questions.store.write() as conn:
        if tamper == "stamp_embeddings":
            stamp = _stamp(open_questions)
            stamp["embeddings"] += 1
            open_questions.store.set_meta(stamp_key(model_id), json.dumps(stamp), conn)
        elif tamper == "index_count":
            conn.execute(indexes.update().where(indexes.c.model_id == model_id)
                         .values(count=45))
        else:
            conn.execute(meta.delete().where(meta.c.key == stamp_key(model_id)))
    reopened, calls = _reopen(open_questions, encoder, monkeypatch)
    try:
        assert len(reopened.vectors.index()) == 46 and calls == [model_id]
    finally:
        reopened.close()


def test_embeddings_written_behind_the_index_are_found_on_open(open_questions, encoder,
                                                              monkeypatch, tmp_path):
    src = tmp_path / "more.csv"
    src.write_text("question\nHow do penguins keep warm in Antarctica?\n", encoding="utf-8")
    open_questions.rows.import_table(src, ["question"])
    model_id = open_questions.model.id()
    with open_questions.store.read() as conn:
        (text_id,) = embedding_store.missing_text_ids(conn, model_id)
    with open_questions.store.write() as conn:     # stored, but the saved index never saw it
        embedding_store.add_embeddings(conn, model_id, [text_id],
                                    encoder.encode(["How do penguins keep warm?"]), [False])
    reopened, calls = _reopen(open_questions, encoder, monkeypatch)
    try:
        assert len(reopened.vectors.index()) == 47 and len(calls) == 1
        assert reopened.search("penguins in the cold", k=1)[0].text.startswith("How do pen")
    finally:
        reopened.close()


def test_deleting_rows_keeps_the_stamp_exact(open_questions, encoder, monkeypatch):
    hit = open_questions.search("which city is the capital of australia", k=1)[0]
    before = open_questions.store.get_meta("content_version")
    assert open_questions.rows.delete([hit.item_id]) == 1
    assert int(open_questions.store.get_meta("content_version")) == int(before) + 1
    reopened, calls = _reopen(open_questions, encoder, monkeypatch)
    try:
        assert calls == [] and len(reopened.vectors.index()) == 45
        assert hit.item_id not in [h.item_id for h in reopened.search(hit.text, k=5)]
    finally:
        reopened.close()


def test_reimporting_a_deleted_rows_text_brings_it_back_at_once(open_questions, encoder,
                                                                monkeypatch, tmp_path):
    hit = open_questions.search("which city is the capital of australia", k=1)[0]
    open_questions.rows.delete([hit.item_id])
    assert hit.text not in [h.text for h in open_questions.search(hit.text, k=3)]
    src = tmp_path / "again.csv"
    src.write_text(f"question\n{hit.text}\n", encoding="utf-8")
    report = open_questions.rows.import_table(src, ["question"])
    assert len(report.revived_texts) == 1
    assert open_questions.search(hit.text, k=1)[0].text == hit.text  # no encode, no reopen
    open_questions.vectors.encode()  # nothing new: the revived text is already embedded
    open_questions.vectors.save_index()
    reopened, calls = _reopen(open_questions, encoder, monkeypatch)
    try:
        assert calls == [] and len(reopened.vectors.index()) == 46
        assert reopened.search(hit.text, k=1)[0].text == hit.text
    finally:
        reopened.close()


def test_loaded_index_is_what_a_full_reconcile_gives(open_questions, encoder, monkeypatch):
    reopened, calls = _reopen(open_questions, encoder, monkeypatch)
    try:
        index = reopened.vectors.index()
        assert calls == []
        live = np.setdiff1d(index.ids(), np.fromiter(index.deleted, np.int64))
        with reopened.store.read() as conn:
            embedded = embedding_store.embedded_text_ids(conn, reopened.model.id())
        assert np.array_equal(np.sort(live), np.sort(embedded))
        changed = reconcile(reopened.store, index, reopened.model.id()).changed
        assert not changed
    finally:
        reopened.close()

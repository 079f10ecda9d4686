"""A running project catching up with another analyst's large import keeps answering
searches meanwhile (`LiveIndex._catch_up` adds without the index lock), claims the new
content version only once every row is in, and then finds every new row.

On both stores (`store_location`): the catch-up is the same code on SQLite and PostgreSQL.
Nothing is timed. The catch-up is held after its first batch until a search issued then
has answered (or a minute has passed): a search that had to wait for the whole catch-up, as
when the catch-up held the index lock throughout, never answers in that minute.
"""

import threading

import numpy as np
import pytest

from engine.index.reconcile import live_ids
from engine.progress import no_progress
from engine.project import Project
from engine.services import live_index
from engine.store import change_counters
from engine.store import embeddings as embedding_store
from engine.store.items import texts_by_id

# Two batches of `iter_embeddings`' 500: a search lands between them.
NEW_ROWS = 1_000
WAIT_S = 60.0     # only a failing run waits this long


def _new_rows(path) -> list[str]:
    texts = [f"printer {i} router {i % 37}" for i in range(NEW_ROWS)]
    path.write_text("question\n" + "\n".join(texts) + "\n", encoding="utf-8")
    return texts


@pytest.mark.slow
def test_a_search_answers_during_a_large_catch_up_and_every_row_is_found_after(
        store_location, encoder, data_dir, tmp_path, monkeypatch):
    mine = Project.open(store_location, create=True)
    mine.model.attach(encoder, is_default=True)
    mine.rows.import_table(data_dir / "questions.csv", ["question"], id_column="qid")
    mine.vectors.encode()
    index = mine.vectors.index()
    live = mine.vectors._live            # the version bookkeeping under test
    before, old_count = len(index), live.change_count_of(index)
    base_ids = index.ids()
    assert old_count is not None

    theirs = Project.open(store_location)          # the other analyst
    theirs.model.attach(encoder, is_default=True)
    texts = _new_rows(tmp_path / "new.csv")
    theirs.rows.import_table(tmp_path / "new.csv", ["question"])
    theirs.vectors.encode()
    with theirs.store.read() as conn:
        new_count = change_counters.read(conn, change_counters.CONTENT)
    theirs.close()
    assert len(index) == before and new_count != old_count

    first_batch_in, searched = threading.Event(), threading.Event()
    answered_while_held: list[bool] = []
    real = live_index.reconcile

    def held_after_the_first_batch(store, index, model_id, *, progress=no_progress, **kw):
        def step(p):
            progress(p)
            if p.done and not first_batch_in.is_set():
                first_batch_in.set()
                answered_while_held.append(searched.wait(WAIT_S))
        return real(store, index, model_id, progress=step, **kw)

    monkeypatch.setattr(live_index, "reconcile", held_after_the_first_batch)
    monkeypatch.setattr(live_index, "FOLLOW_SECONDS", 0.0)   # poll on the next call
    failures: list[BaseException] = []

    def catch_up() -> None:
        try:
            mine.vectors.index()                   # notices the new version, catches up
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            failures.append(exc)

    catcher = threading.Thread(target=catch_up)
    catcher.start()
    assert first_batch_in.wait(WAIT_S * 2), "the catch-up never added its first batch"
    added = np.setdiff1d(index.ids(), base_ids)    # the first batch (not searched yet)
    with mine.store.read() as conn:
        early = texts_by_id(conn, added[:1].tolist())[int(added[0])]
    hits = mine.vectors.search(early, k=1)
    held, claimed = len(index), live.change_count_of(index)
    searched.set()
    catcher.join()
    assert not failures, failures

    assert answered_while_held == [True], "the search waited for the whole catch-up"
    assert before < held < before + NEW_ROWS       # it answered with rows still to add
    assert hits[0].text == early                   # rows already added are found at once
    assert claimed == old_count                  # never a count not fully applied
    assert len(index) == before + NEW_ROWS and live.change_count_of(index) == new_count
    with mine.store.read() as conn:
        embedded = embedding_store.embedded_text_ids(conn, mine.vectors.model_id())
    assert set(live_ids(index).tolist()) == set(embedded.tolist())
    for text in (texts[NEW_ROWS // 2], texts[-1]):
        assert mine.vectors.search(text, k=1)[0].text == text
    mine.close()

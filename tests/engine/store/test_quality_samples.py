"""`store.quality_samples` reads the measuring service leans on: one draw by id, the latest
sample while it is open, the project's seed, made once and kept, and the pairs judged on
any sample (what a new one carries)."""

from __future__ import annotations

import pytest

from engine.store import items
from engine.store import quality_samples as sample_store
from engine.store import sources as source_store
from engine.store.database import Store


@pytest.fixture
def store(tmp_path):
    opened = Store.open(tmp_path / "project.duplens", create=True)
    yield opened
    opened.close()


def _two_texts(store: Store) -> tuple[int, int]:
    with store.write() as conn:
        source = source_store.add_source(conn, file_name="f.csv", file_path="/f.csv", sha256="s",
                                  mapping_key="m", format={}, text_columns=["q"],
                                  columns=["q"])
        items.add_rows(conn, source, [items.NewRow(i, None, t, t, {})
                                      for i, t in enumerate(["x", "y"])])
        ids = items.text_ids_for_keys(conn, ["x", "y"])
    return ids["x"], ids["y"]


def test_the_seed_is_made_once_and_kept(store):
    with store.write() as conn:
        seed = sample_store.project_seed(conn)
    with store.write() as conn:
        assert sample_store.project_seed(conn) == seed
    assert store.get_meta(sample_store.SEED_KEY) == str(seed)


def test_a_draw_by_its_id_and_the_latest_sample_while_open(store):
    a, b = _two_texts(store)
    with store.write() as conn:
        assert sample_store.latest_open_sample(conn) is None
        sample = sample_store.create_sample(conn, "sig", {"threshold": 0.8}, "ann")
        sample_store.add_draws(conn, sample["id"], [
            {"stratum": 1, "text_a": a, "text_b": b, "similarity": 0.9, "stratum_size": 3,
             "probability": 1 / 3}])
        drawn = sample_store.draws(conn, sample["id"])[0]
        assert sample_store.draw(conn, drawn["id"]) == drawn
        assert sample_store.draw(conn, drawn["id"] + 1) is None
        assert sample_store.latest_open_sample(conn)["id"] == sample["id"]
        sample_store.create_sample(conn, "other", {"threshold": 0.8}, "ann")
        newer = sample_store.latest_open_sample(conn)
        assert newer["id"] != sample["id"] and newer["signature"] == "other"


def test_the_pairs_judged_on_any_sample_and_those_a_newer_one_lacks(store):
    a, b = _two_texts(store)
    row = {"stratum": 1, "text_a": a, "text_b": b, "similarity": 0.9, "stratum_size": 3,
           "probability": 1 / 3}
    with store.write() as conn:
        old = sample_store.create_sample(conn, "old", {"threshold": 0.8}, "ann")
        sample_store.add_draws(conn, old["id"], [row])
        assert sample_store.judged_pairs(conn) == set()
        new = sample_store.create_sample(conn, "new", {"threshold": 0.8}, "ann")
        assert sample_store.draw_of_pair(conn, new["id"], a, b) is None
        stale = sample_store.draw_of_pair(conn, old["id"], a, b)
        sample_store.set_draw_verdict(conn, stale["id"], 1, "ann")   # judged after closing
        assert sample_store.judged_pairs(conn) == {(a, b)}
        assert sample_store.judged_elsewhere(conn, new["id"])
        sample_store.add_draws(conn, new["id"], [row])
        assert sample_store.draw_of_pair(conn, new["id"], a, b)["verdict"] is None
        assert not sample_store.judged_elsewhere(conn, new["id"])

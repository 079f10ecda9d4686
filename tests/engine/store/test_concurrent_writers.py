"""Several analysts writing one server project at once.

Each test opens two `Store`s on the same database (two connection pools, as two analysts'
processes have) and makes their write transactions overlap for real: the first one writes and
stays open while the second runs into it, then the first commits. The statements these
replaced (a delete then an insert, a select then an insert) fail here with a unique
violation for the second writer; a test with two real processes covers the counter.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import func, select

from engine.errors import ProjectError
from engine.index.hnsw import HnswIndex
from engine.index.persist import load_index, save_index, stamp_key
from engine.store import change_counters, items, pair_verdicts, version_rows
from engine.store import embeddings as embedding_store
from engine.store import sources as source_store
from engine.store.blobs import get_blob, put_blob
from engine.store.database import Store
from engine.store.schema import embeddings, models, pair_labels, texts
from tests.engine.index.index_files import embed_texts

ROOT = Path(__file__).resolve().parents[3]


class Analyst(Store):
    """A store that can tell whether another session of its database waits for a lock."""

    server = None

    def someone_waits(self) -> bool:
        return self.server.sql(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
            f"AND datname = '{self.name}'")[0][0] > 0


@pytest.fixture
def two(postgres_url, postgres_server):
    """Two stores on one new server project: two analysts."""
    Analyst.server = postgres_server
    first = Analyst.open(postgres_url, create=True)
    second = Analyst.open(postgres_url)
    yield first, second
    first.close()
    second.close()


def overlap(first: Analyst, second: Analyst, write_first, write_second):
    """`write_first` in a transaction of `first` that stays open until `write_second`, run
    in a transaction of `second` on another thread, waits for one of its locks; then the
    first commits. The second's error, if any, is raised. Returns (the first's result,
    the second's)."""
    results: dict[str, object] = {}

    def run_second() -> None:
        try:
            with second.write() as conn:
                results["second"] = write_second(conn)
        except Exception as exc:  # noqa: BLE001 - handed to the test below
            results["error"] = exc

    with first.write() as conn:
        results["first"] = write_first(conn)
        worker = threading.Thread(target=run_second)
        worker.start()
        deadline = time.monotonic() + 30
        while not first.someone_waits():
            assert worker.is_alive() and time.monotonic() < deadline, \
                f"the second writer never waited for the first: {results}"
            time.sleep(0.01)
    worker.join(60)
    if "error" in results:
        raise results["error"]
    return results["first"], results["second"]


def _model(conn, fingerprint: str = "sha256:abc") -> int:
    return embedding_store.get_or_add_model(conn, name="m", location="default",
                                    fingerprint=fingerprint, dim=4, max_seq_length=8)


def _rows(keys: list[str]) -> list[items.NewRow]:
    return [items.NewRow(i, None, k, k, {}) for i, k in enumerate(keys)]


def test_settings_written_at_once_keep_the_later_value(two):
    a, b = two
    overlap(a, b, lambda c: a.set_meta("shared", "first", c),
            lambda c: b.set_meta("shared", "second", c))
    assert a.get_meta("shared") == "second"


def test_content_change_count_bumps_in_turn(two):
    a, b = two
    with a.write() as conn:
        start = change_counters.bump(conn, change_counters.CONTENT)

    def bump(conn):
        return change_counters.bump(conn, change_counters.CONTENT)

    got = overlap(a, b, bump, bump)
    assert got == (start + 1, start + 2)
    with a.read() as conn:
        assert change_counters.read(conn, change_counters.CONTENT) == start + 2


def test_one_pair_judged_by_two_analysts_has_one_verdict_the_later(two):
    a, b = two
    with a.write() as conn:
        source = source_store.add_source(conn, file_name="f.csv", file_path="/f.csv", sha256="s",
                                  mapping_key="m", format={}, text_columns=["q"],
                                  columns=["q"])
        items.add_rows(conn, source, _rows(["x", "y"]))
    overlap(a, b, lambda c: pair_verdicts.set_verdict(c, 1, 2, 1),
            lambda c: pair_verdicts.set_verdict(c, 2, 1, 0))
    with a.read() as conn:
        assert conn.execute(select(func.count()).select_from(pair_labels)).scalar() == 1
        assert pair_verdicts.get_verdict(conn, 1, 2) == 0
    overlap(a, b, lambda c: pair_verdicts.set_canonical(c, [], [1]),
            lambda c: pair_verdicts.set_canonical(c, [], [1, 2]))
    with a.read() as conn:
        assert pair_verdicts.canonical_among(conn, [1, 2]) == {1, 2}


def test_a_model_registered_by_two_analysts_at_once_is_one_row(two):
    a, b = two
    first, second = overlap(a, b, _model, _model)
    assert first == second
    with a.read() as conn:
        assert conn.execute(select(func.count()).select_from(models)).scalar() == 1


def test_overlapping_imports_share_their_new_texts(two):
    a, b = two

    def add(keys):
        def write(conn):
            source = source_store.add_source(conn, file_name=f"{keys[0]}.csv", file_path="/x",
                                      sha256=keys[0], mapping_key="m", format={},
                                      text_columns=["q"], columns=["q"])
            return items.add_rows(conn, source, _rows(keys))
        return write

    created = overlap(a, b, add(["apple", "pear"]), add(["pear", "plum"]))
    assert created == (2, 1)                      # "pear" was the first import's
    with a.read() as conn:
        assert conn.execute(select(func.count()).select_from(texts)).scalar() == 3
        assert items.count_items(conn) == 4 and items.count_texts(conn) == 3


def test_the_same_file_imported_at_once_is_refused_for_the_second(two):
    a, b = two
    values = dict(file_name="f.csv", file_path="/f.csv", sha256="same", mapping_key="m",
                  format={}, text_columns=["q"], columns=["q"])
    with pytest.raises(ProjectError, match="imported into the project by someone else"):
        overlap(a, b, lambda c: source_store.add_source(c, **values),
                lambda c: source_store.add_source(c, **values))


def test_the_same_texts_encoded_by_two_analysts_are_stored_once(two):
    a, b = two
    with a.write() as conn:
        model = _model(conn)
        source = source_store.add_source(conn, file_name="f.csv", file_path="/f.csv", sha256="s",
                                  mapping_key="m", format={}, text_columns=["q"],
                                  columns=["q"])
        items.add_rows(conn, source, _rows(["x", "y", "z"]))
    vecs = np.eye(3, 4, dtype=np.float32)
    versions = overlap(
        a, b, lambda c: embedding_store.add_embeddings(c, model, [1, 2], vecs[:2], [False] * 2),
        lambda c: embedding_store.add_embeddings(c, model, [2, 3], vecs[1:], [False] * 2))
    assert versions[1] == versions[0] + 1
    with a.read() as conn:
        assert conn.execute(select(func.count()).select_from(embeddings)).scalar() == 3
        assert embedding_store.missing_text_ids(conn, model) == []


def test_a_blob_replaced_by_two_analysts_is_one_of_them_whole(two):
    a, b = two
    with a.write() as conn:
        put_blob(conn, "graph", b"old" * 10, chunk_bytes=7)
    overlap(a, b, lambda c: put_blob(c, "graph", b"A" * 50, chunk_bytes=7),
            lambda c: put_blob(c, "graph", b"B" * 20, chunk_bytes=7))
    with a.read() as conn:
        assert get_blob(conn, "graph") == b"B" * 20


def _index(n: int, seed: int) -> HnswIndex:
    rng = np.random.default_rng(seed)
    vecs = rng.normal(size=(n, 8)).astype(np.float32)
    index = HnswIndex(8)
    index.add(np.arange(1, n + 1), vecs / np.linalg.norm(vecs, axis=1, keepdims=True))
    return index


def test_saving_one_index_from_two_analysts_keeps_the_newer_whole(two):
    a, b = two
    with a.write() as conn:
        model = _model(conn)
        embed_texts(conn, model, range(1, 51), 8)   # the indexes' labels are these texts
        old = change_counters.bump(conn, change_counters.CONTENT)
        new = change_counters.bump(conn, change_counters.CONTENT)
    # the newer index is saved first; an older one saved after it does not replace it
    overlap(a, b, lambda c: save_index(c, model, _index(30, 1), change_count=new),
            lambda c: save_index(c, model, _index(20, 2), change_count=old))
    with a.read() as conn:
        loaded, why = load_index(conn, model, 8)
        assert why == "" and len(loaded) == 30
        assert json.loads(a.get_meta(stamp_key(model)))["version"] == new
    # two saves of the same version one after the other: the later one is the saved one
    overlap(a, b, lambda c: save_index(c, model, _index(40, 3), change_count=new),
            lambda c: save_index(c, model, _index(50, 4), change_count=new))
    with a.read() as conn:
        loaded, why = load_index(conn, model, 8)
        assert why == "" and len(loaded) == 50


def test_version_numbers_from_two_analysts_never_collide(two):
    a, b = two

    def register(fingerprint):
        def write(conn):
            version_rows.lock_numbering(conn)
            number = version_rows.highest_model_id(conn) + 1
            version_rows.add_model_version(
                conn, number, name=f"v{number}", location=f"p.models/v{number}",
                fingerprint=fingerprint, dim=4, max_seq_length=8, created_at=time.time())
            return number
        return write

    assert overlap(a, b, register("sha256:one"), register("sha256:two")) == (1, 2)
    with a.write() as conn:      # the id sequence moved past the chosen numbers
        assert _model(conn, "sha256:three") == 3


_BUMPER = """
import sys, time
from pathlib import Path
from engine.store import change_counters
from engine.store.database import Store
url, go, n = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
store = Store.open(url, create=True)
while not go.exists():
    time.sleep(0.005)
seen = []
for _ in range(n):
    with store.write() as conn:
        seen.append(change_counters.bump(conn, change_counters.CONTENT))
store.close()
print(" ".join(map(str, seen)))
"""


def test_two_processes_create_the_schema_and_bump_the_counter_together(postgres_url,
                                                                       tmp_path):
    go = tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-c", _BUMPER, postgres_url, str(go), "40"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=env, cwd=ROOT) for _ in range(2)]
    time.sleep(1.0)
    go.touch()
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err for _, err in outs]
    seen = [int(v) for out, _ in outs for v in out.split()]
    assert sorted(seen) == list(range(1, 81))     # every bump its own number
    store = Store.open(postgres_url)
    with store.read() as conn:
        assert change_counters.read(conn, change_counters.CONTENT) == 80
    store.close()

"""Two analysts on one server project at once, as two real processes (`tests.analyst_process`):
verdicts, undo, searching while the other imports, and one neighbour graph for both."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import select

from engine.project import Project
from engine.store.dialects import lock
from engine.store.schema import cluster_ids, items

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "questions.csv"


class Analyst:
    """A running `tests.analyst_process` on a project."""

    def __init__(self, location: str) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.analyst_process", location],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     cwd=ROOT, env=env)
        assert self.read() == {"ready": True}

    def send(self, **command) -> None:
        self.proc.stdin.write(json.dumps(command) + "\n")
        self.proc.stdin.flush()

    def read(self) -> dict:
        line = self.proc.stdout.readline()
        assert line, f"the analyst's process ended (exit {self.proc.poll()})"
        return json.loads(line)

    def ask(self, **command) -> dict:
        self.send(**command)
        return self.read()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.send(do="quit")
            self.proc.wait(60)


@pytest.fixture
def team(postgres_url, encoder):
    """A server project holding tests/data/questions.csv (encoded), its row ids in order."""
    with Project.open(postgres_url, create=True) as project:
        project.model.attach(encoder, is_default=True)
        project.rows.import_table(DATA, ["question"], id_column="qid")
        project.vectors.encode()
        with project.store.read() as conn:
            ids = list(conn.execute(select(items.c.id).order_by(items.c.id)).scalars())
    analysts: list[Analyst] = []

    def start() -> Analyst:
        analysts.append(Analyst(postgres_url))
        return analysts[-1]

    yield postgres_url, ids, start
    for analyst in analysts:
        analyst.close()


def test_two_analysts_judging_at_once_lose_no_verdict(team):
    url, ids, start = team
    first, second = start(), start()
    mine = [[ids[0], ids[i], 1] for i in range(1, 21)]
    theirs = [[ids[1], ids[i], 0] for i in range(2, 22)]
    first.send(do="label", pairs=mine)   # both at once: their transactions interleave
    second.send(do="label", pairs=theirs)
    assert first.read() == {"labelled": 20} and second.read() == {"labelled": 20}
    with Project.open(url) as project:
        stored = {(p["item_a"], p["item_b"]): p["label"] for p in project.verdicts.pairs()}
    expected = {(a, b): label for a, b, label in mine + theirs}
    assert stored == expected


def test_one_analysts_undo_never_undoes_the_others_verdict(team):
    url, ids, start = team
    first, second = start(), start()
    first.ask(do="label", pairs=[[ids[0], ids[1], 1]])
    second.ask(do="label", pairs=[[ids[2], ids[3], 1]])
    # The first's undo takes back its own verdict only.
    assert first.ask(do="undo") == {"undone": "mark duplicate"}
    assert second.ask(do="label_of", a=ids[2], b=ids[3]) == {"label": 1}
    assert second.ask(do="label_of", a=ids[0], b=ids[1]) == {"label": None}

    # A conflict: the same pair, the second analyst's verdict comes last and stands…
    first.ask(do="label", pairs=[[ids[4], ids[5], 1]])
    second.ask(do="label", pairs=[[ids[4], ids[5], 0]])
    assert first.ask(do="label_of", a=ids[4], b=ids[5]) == {"label": 0}
    # …and the first's undo does not take it back; it says why instead.
    answer = first.ask(do="undo")
    assert answer["error"] == "Superseded"
    assert "someone else" in answer["message"]
    assert second.ask(do="label_of", a=ids[4], b=ids[5]) == {"label": 0}
    # The second's own undo still works: back to what the pair held before it (the first's).
    assert second.ask(do="undo") == {"undone": "mark not duplicate"}
    assert first.ask(do="label_of", a=ids[4], b=ids[5]) == {"label": 1}


@pytest.mark.slow
def test_rows_another_analyst_imports_show_up_in_a_running_search(team, tmp_path):
    url, _, start = team
    searcher = start()
    query = "how do I descale an espresso machine"
    assert "n1" not in searcher.ask(do="search", text=query)["ids"]   # model and index loaded
    new = tmp_path / "new.csv"
    new.write_text("qid,question\nn1,How do I descale my espresso machine?\n"
                   "n2,Which paint is best for a bathroom ceiling?\n", encoding="utf-8")
    searcher.send(do="wait_for", text=query, id="n1", timeout=120)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-m", "engine.cli", "import", url, str(new), "--column",
                    "question", "--id-column", "qid"], check=True, cwd=ROOT, env=env,
                   capture_output=True, timeout=300)
    imported_at = time.time()
    seen = searcher.read()
    assert seen["seen_at"] is not None, "the running search never saw the imported row"
    print(f"seen {seen['seen_at'] - imported_at:.2f} s after the import ended "
          f"({seen['polls']} searches)")


def test_the_neighbour_graph_is_built_by_one_analyst_and_read_by_the_other(team,
                                                                          postgres_server):
    url, _, start = team
    first, second = start(), start()
    with Project.open(url) as project:
        model_id = project.vectors.model_id()
        database = project.store.name
        project.vectors.index()          # saved and stamped: both load the same index
        # Hold the graph's build lock while both ask for the graph, so they truly overlap.
        with project.store.write() as conn:
            lock(conn, f"build:knn/{model_id}/10")
            first.send(do="graph")
            second.send(do="graph")
            deadline = time.monotonic() + 120
            while postgres_server.sql(
                    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                    f"AND datname = '{database}'")[0][0] < 2:
                assert time.monotonic() < deadline, "the analysts never waited for the lock"
                time.sleep(0.05)
    answers = [first.read(), second.read()]
    assert sorted(a["built"] for a in answers) == [False, True]
    assert answers[0]["texts"] == answers[1]["texts"] == 46


def test_two_analysts_cutting_at_once_share_one_set_of_cluster_ids(team, postgres_server):
    """Both cut at the same moment (held at the ids' lock so they truly overlap), at two
    thresholds: no new number is handed out twice, and each threshold gives every analyst
    the same ids afterwards."""
    url, _, start = team
    first, second = start(), start()
    with Project.open(url) as project:
        project.clusters.graph()          # built and stored: neither waits on its lock
        database = project.store.name
        with project.store.write() as conn:
            lock(conn, "cluster-ids")
            first.send(do="cut", threshold=0.85)
            second.send(do="cut", threshold=0.6)
            deadline = time.monotonic() + 120
            while postgres_server.sql(
                    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                    f"AND datname = '{database}'")[0][0] < 2:
                assert time.monotonic() < deadline, "the analysts never waited for the lock"
                time.sleep(0.05)
    at_085, at_06 = first.read(), second.read()
    assert "error" not in at_085 and "error" not in at_06
    with Project.open(url) as project, project.store.read() as conn:
        numbers = list(conn.execute(select(cluster_ids.c.id)).scalars())
    assert len(numbers) == len(set(numbers)) >= len(set(at_085["ids"].values()))
    assert second.ask(do="cut", threshold=0.85) == at_085     # the other analyst's ids
    assert first.ask(do="cut", threshold=0.6) == at_06

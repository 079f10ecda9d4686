"""One analyst's process on a project, driven line by line: the tests' second window.

`python -m tests.analyst_process LOCATION` opens the project and answers one JSON command
per line of stdin with one JSON line on stdout, so a test can run two real processes and
interleave their steps exactly (or send both a command at once to make them overlap).
Reviewing goes through `ReviewHistory`, as the window's review does.
"""

from __future__ import annotations

import json
import sys
import time

from engine.errors import DuplensError
from engine.progress import Progress
from engine.project import Project
from engine.review.history import ReviewHistory


def main(location: str) -> None:
    project = Project.open(location)
    history = ReviewHistory(project.verdicts)
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        command = json.loads(line)
        if command["do"] == "quit":
            break
        try:
            answer = ACTIONS[command["do"]](project, history, command)
        except DuplensError as exc:
            answer = {"error": type(exc).__name__, "message": str(exc)}
        print(json.dumps(answer), flush=True)
    project.close()


def _label(project, history, command) -> dict:
    for a, b, label in command["pairs"]:
        history.judge(a, b, label)
    return {"labelled": len(command["pairs"])}


def _undo(project, history, command) -> dict:
    change = history.undo()
    return {"undone": change.description if change else None}


def _label_of(project, history, command) -> dict:
    return {"label": project.verdicts.verdict(command["a"], command["b"])}


def _search(project, history, command) -> dict:
    return {"ids": [hit.id for hit in project.search(command["text"], command.get("k", 5))]}


def _wait_for(project, history, command) -> dict:
    """Search until the row `id` answers `text`: when (time.time()) and after how many."""
    deadline = time.monotonic() + command["timeout"]
    polls = 0
    while time.monotonic() < deadline:
        polls += 1
        if command["id"] in {hit.id for hit in project.search(command["text"], 5)}:
            return {"seen_at": time.time(), "polls": polls}
        time.sleep(0.1)
    return {"seen_at": None, "polls": polls}


def _graph(project, history, command) -> dict:
    """The neighbour graph; `built` says whether this process searched to make it."""
    steps: list[Progress] = []
    graph = project.clusters.graph(progress=steps.append)
    return {"built": bool(steps), "texts": len(graph.ids)}


def _cut(project, history, command) -> dict:
    """Clusters at `threshold`, recorded: row id -> its stored cluster id."""
    clusters = project.clusters.cut(command["threshold"])
    return {"ids": {str(m.item_id): c.cluster_id for c in clusters
                    for m in (*c.members, *c.rejected)}}


ACTIONS = {"label": _label, "undo": _undo, "label_of": _label_of, "search": _search,
           "wait_for": _wait_for, "graph": _graph, "cut": _cut}

if __name__ == "__main__":
    main(sys.argv[1])

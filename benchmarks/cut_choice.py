"""How the cut treats documents, chosen on validation data: the centre rule alone against the
centre rule with documents kept whole (`engine.dedup.cut`: a document joins a centre only
within the threshold of every document already in its cluster).

Run by `benchmarks.documents` on the project its Duplens arm imported, so the graph is the
product's own (windows, signatures, MinHash candidates): both rules cut that one graph at
the project's threshold, and the clusters' pairs are scored on the validation half only
(the product's run is what the test half reports). The same rule for every text is then
tried on questions, where no text is a document and the product keeps the centre rule:
the sample questions cut as an analyst's project cuts them, scored by their answer key,
and the questions of Quora's validation pairs (`benchmarks.finetune_quora.quora_splits`,
seed 0) in one project, scored on the labelled pairs a cluster holds (precision: of the
labelled pairs that share a cluster, the duplicates; recall: of the labelled duplicates,
those sharing one). Both projects use the product's default backend, as a user's would.
"""

from __future__ import annotations

import csv
import itertools
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

QUICK_PAIRS = 500
SEED = 0
RULES = ("centre rule", "documents kept whole")
Scorer = Callable[[int, int, int], dict]


def documents_side(project_path: str, threshold: float,
                   scored: Callable[[set[frozenset]], dict]) -> dict:
    """Both rules on the project's graph at `threshold`; `scored(pairs)` scores found pairs
    of external ids on the validation half (`benchmarks.documents.score`)."""
    from sqlalchemy import select

    from engine.dedup.cut import cut_clusters
    from engine.project import Project
    from engine.store.schema import items

    with Project.open(project_path) as project:
        graph = project.clusters.graph()
        with project.store.read() as conn:
            ext = {int(t): str(e) for e, t in conn.execute(
                select(items.c.ext_id, items.c.text_id).where(~items.c.deleted))}
    documents = int(graph.documents.sum()) if graph.documents is not None else 0
    out = {"threshold": threshold, "texts": len(graph.ids), "documents": documents}
    for rule, g in zip(RULES, (graph.with_documents(None), graph), strict=True):
        out[rule] = scored(cluster_pairs(g, cut_clusters(g, threshold), ext))
    return out


def questions_side(threshold: float, quick: bool, prf: Scorer) -> dict:
    """The centre rule against every text kept whole, on questions; `prf(right, found,
    truth)` makes the figures (`benchmarks.documents.prf`)."""
    import duplens_data
    from benchmarks.finetune_quora import quora_splits

    with duplens_data.path("sample_questions.csv").open(encoding="utf-8") as fh:
        sample = [(r["id"], r["question"]) for r in csv.DictReader(fh)]
    with duplens_data.path("sample_questions_groups.csv").open(encoding="utf-8") as fh:
        groups: dict[str, list[str]] = {}
        for r in csv.DictReader(fh):
            groups.setdefault(r["group"], []).append(r["id"])
    key = {frozenset(p) for ids in groups.values() for p in itertools.combinations(ids, 2)}

    def by_key(found: set[frozenset]) -> dict:
        return prf(len(found & key), len(found), len(key))

    data = quora_splits(SEED, QUICK_PAIRS if quick else None)
    named: dict[str, str] = {}
    labels: dict[frozenset, bool] = {}
    for pair in data.validation:
        for text in (pair.text_a, pair.text_b):
            named.setdefault(text, f"q{len(named)}")
        labels[frozenset((named[pair.text_a], named[pair.text_b]))] = pair.label >= 0.5
    duplicates = {p for p, d in labels.items() if d}

    def by_labels(found: set[frozenset]) -> dict:
        labelled = {p for p in found if p in labels}
        return prf(len(labelled & duplicates), len(labelled), len(duplicates))

    return {"threshold": threshold,
            "sample questions": _both_rules(sample, threshold, by_key),
            "Quora validation pairs": {**_both_rules([(i, t) for t, i in named.items()],
                                                     threshold, by_labels),
                                       "labelled_pairs": len(labels)}}


def _both_rules(rows: list[tuple[str, str]], threshold: float,
                scored: Callable[[set[frozenset]], dict]) -> dict:
    """`rows` (id, text) imported into a new project, encoded by the default model, and cut
    by both rules (every text a document for the second)."""
    from sqlalchemy import select

    from engine.dedup.cut import cut_clusters
    from engine.project import Project
    from engine.store.schema import items

    with tempfile.TemporaryDirectory(prefix="duplens-cut-choice-") as tmp:
        table = Path(tmp) / "rows.csv"
        with table.open("w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh)
            writer.writerow(["id", "text"])
            writer.writerows(rows)
        with Project.open(Path(tmp) / "rows.duplens", create=True) as project:
            project.rows.import_table(str(table), ["text"], id_column="id")
            project.vectors.encode()
            graph = project.clusters.graph()
            with project.store.read() as conn:
                ext = {int(t): str(e) for e, t in conn.execute(
                    select(items.c.ext_id, items.c.text_id))}
    whole = graph.with_documents(np.ones(len(graph.ids), dtype=bool))
    return {"texts": len(graph.ids),
            **{rule: scored(cluster_pairs(g, cut_clusters(g, threshold), ext))
               for rule, g in zip(RULES, (graph, whole), strict=True)}}


def cluster_pairs(graph, clusters, ext: dict[int, str]) -> set[frozenset]:
    """Every pair of rows' external ids that share a cluster."""
    return {frozenset((ext[int(graph.ids[a])], ext[int(graph.ids[b])]))
            for c in clusters for a, b in itertools.combinations(c.members.tolist(), 2)}


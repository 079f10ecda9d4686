"""The cut after an import in a project of questions holding documents, timed, for comparing
two versions of the code on the same data.

    PYTHONPATH=TREE python devtools/mixed_recut_timing.py BASE_PROJECT N OUT.json

BASE_PROJECT: a project of N questions built as the weekly benchmark builds one
(`benchmarks.weekly._small_project(N)`, cached under benchmarks/results/tmp/). A copy of it
gets 40 documents of the documents benchmark's corpus (Python's documentation, seed 0),
encoded, and is cut at 0.8 (the graph built); then a week's import (2,000 questions with
the weekly benchmark's vectors, and 5 documents: 3 near copies and 2 copies under a new
introduction) is encoded, and the cut after it is timed: the graph's update, the documents'
edges scored, the cut, the row clusters. Writes the seconds and a digest of the clusters to
OUT.json. Run it with each version's tree first on PYTHONPATH: equal digests mean equal
clusters.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
import time
from pathlib import Path

import numpy as np

# Appended, so that a tree first on PYTHONPATH is the one measured.
sys.path.append(str(Path(__file__).resolve().parents[1]))


def main(base_project: Path, n: int, out: Path) -> dict:
    from benchmarks import corpus, scale_1m
    from benchmarks import document_corpus as dc
    from benchmarks.data import write_questions_csv
    from benchmarks.documents import cache_folder
    from benchmarks.weekly import CachedVectors
    from engine.project import Project

    work = out.with_name("mixed-recut.duplens")
    for leftover in work.parent.glob(work.name + "*"):
        shutil.rmtree(leftover) if leftover.is_dir() else leftover.unlink()
    shutil.copyfile(base_project, work)
    docs, _ = dc.read_documents(dc.fetch_package(cache_folder()).sources)
    chosen = [docs[i] for i in np.random.default_rng(0).permutation(len(docs))[:41]]
    first, introduction = chosen[:40], chosen[40]
    base = scale_1m.base_rows()
    queries, pool = corpus.query_and_pool()
    real = np.concatenate([corpus.embed(pool), corpus.embed(queries)])[base]
    week = [t + " [week 2]" for t in scale_1m.row_texts(n + 2000, base)[n:]]
    vectors = dict(zip(week, scale_1m.row_vectors(real, n, n + 2000, seed=1), strict=True))
    copies = [d.text.replace(" the ", " a ", 3) for d in first[:3]] + \
        [introduction.text + "\n\n" + d.text for d in first[3:5]]
    result: dict = {"questions": n, "documents": len(first), "added": len(week) + len(copies)}
    with Project.open(work) as project:
        project.model.attach(corpus.encoder(), is_default=True)
        project.rows.import_table(write_questions_csv(work.with_name("documents.csv"),
                                                      [d.text for d in first]), ["question"])
        project.vectors.encode(executor=CachedVectors({}))
        started = time.perf_counter()
        project.clusters.cut(0.8)
        result["first_cut_s"] = round(time.perf_counter() - started, 2)
        project.rows.import_table(write_questions_csv(work.with_name("week2.csv"),
                                                      week + copies), ["question"])
        project.vectors.encode(executor=CachedVectors(vectors))
        started = time.perf_counter()
        clusters = project.clusters.cut(0.8)
        result["cut_after_import_s"] = round(time.perf_counter() - started, 2)
    kept = sorted(tuple(sorted(m.item_id for m in c.members)) for c in clusters)
    result["clusters"] = len(kept)
    result["clusters_sha256"] = hashlib.sha256(repr(kept).encode()).hexdigest()
    out.write_text(json.dumps(result, indent=1), encoding="utf-8")
    return result


if __name__ == "__main__":
    print(main(Path(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])))

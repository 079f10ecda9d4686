"""What a wizard's first page shows (`training_input`) agrees with what `finetune` accepts;
deleting a discarded version removes it wholly and refuses versions still needed."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import func, select

from engine.errors import InputError
from engine.progress import CancelToken
from engine.store.schema import blobs, embeddings, indexes
from engine.training.collect import training_input
from engine.training.pairs import MIN_PAIRS
from tests.engine.training.test_project_versions import (
    DUPLICATES,
    NOT_DUPLICATES,
    QUICK,
    make_project,
)

pytestmark = pytest.mark.slow
DATA = Path(__file__).resolve().parents[2] / "data"


def write_csv(path: Path, rows: list[tuple[str, str, int]]) -> Path:
    lines = ["question1,question2,is_duplicate"]
    lines += [f"{a},{b},{label}" for a, b, label in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_training_input_counts_review_and_file_pairs_as_finetune_would(tmp_path, encoder):
    project = make_project(tmp_path / "q.duplens", encoder)
    try:
        review = training_input(project.verdicts.pairs())
        assert review.review == len(DUPLICATES) + len(NOT_DUPLICATES) and review.file is None
        assert (review.summary.positives, review.summary.negatives) == \
            (len(DUPLICATES), len(NOT_DUPLICATES))
        assert review.can_train and review.pairs == project.versions.training_pairs()

        both = training_input(project.verdicts.pairs(), DATA / "labelled_pairs.csv")
        assert both.pairs == project.versions.training_pairs(DATA / "labelled_pairs.csv")
        assert both.file is not None and both.file.kind == "pairs"
        assert 0 < both.file_added < len(both.file.pairs)  # some were judged in review too
        assert both.summary.pairs == review.review + both.file_added
        assert both.can_train

        (tmp_path / "bad.csv").write_text("question1,question2,verdict\na,b,1\n",
                                          encoding="utf-8")
        with pytest.raises(InputError, match="cannot tell which columns"):
            training_input(project.verdicts.pairs(), tmp_path / "bad.csv")
    finally:
        project.close()


def test_too_few_or_one_verdict_is_refused_with_finetunes_own_message(tmp_path, encoder):
    few = make_project(tmp_path / "few.duplens", encoder,
                       labels=(DUPLICATES[:2], NOT_DUPLICATES[:1]))
    try:
        small = training_input(few.verdicts.pairs())
        assert not small.can_train and small.summary.pairs == 3
        with pytest.raises(InputError) as refused:
            few.versions.finetune(options=QUICK)
        assert small.problem == str(refused.value)
        assert f"fewer than {MIN_PAIRS}" in small.summary.warnings[0]

        same = [(f"How do I fix my bike part {i}?", f"Fixing my bike part {i}", 1)
                for i in range(MIN_PAIRS + 2)]
        one_sided = training_input([], write_csv(tmp_path / "dups.csv", same))
        assert not one_sided.can_train and one_sided.summary.negatives == 0
        assert "labelled duplicate" in one_sided.problem
        assert any("Every pair is labelled a duplicate" in w
                   for w in one_sided.summary.warnings)
    finally:
        few.close()


def count(project, table, model_id):
    with project.store.read() as conn:
        return conn.execute(select(func.count()).select_from(table)
                            .where(table.c.model_id == model_id)).scalar()


def test_delete_removes_an_unused_version_and_refuses_needed_ones(tmp_path, encoder):
    project = make_project(tmp_path / "q.duplens", encoder)
    try:
        models_dir = tmp_path / "q.duplens.models"
        v2 = project.versions.finetune(options=QUICK).version_id
        project.versions.activate(v2)                  # v3 is trained from v2
        v3 = project.versions.finetune(options=QUICK).version_id
        assert project.versions.list()[-1]["parent_id"] == v2
        with pytest.raises(InputError, match="is the active model"):
            project.versions.delete(v2)
        project.versions.activate(1)
        with pytest.raises(InputError, match="was trained from it"):
            project.versions.delete(v2)
        project.versions.activate(v2)
        with pytest.raises(InputError, match="was not trained in this project"):
            project.versions.delete(1)                 # the bundled model is never deleted
        project.versions.activate(1)

        # v3 half-activated: some embeddings and a saved index to remove with it.
        cancel = CancelToken()

        def stop(event):
            if event.stage == "encoding" and event.done > 0:
                cancel.cancel()

        assert project.versions.activate(v3, progress=stop, cancel=cancel,
                                      chunk_texts=8).cancelled
        assert count(project, embeddings, v3) > 0 and count(project, indexes, v3) == 1
        assert project.versions.delete(v3).endswith(f"v{v3}")
        assert [v["id"] for v in project.versions.list()] == [1, v2]
        assert count(project, embeddings, v3) == count(project, indexes, v3) == 0
        with project.store.read() as conn:
            names = set(conn.execute(select(blobs.c.name)).scalars())
        assert not any(n.startswith((f"hnsw/{v3}", f"knn/{v3}/")) for n in names)
        assert sorted(p.name for p in models_dir.iterdir()) == [f"v{v2}"]

        assert project.versions.delete(v2)             # no child left: it can go now
        assert [v["id"] for v in project.versions.list()] == [1]
        assert list(models_dir.iterdir()) == []
        with pytest.raises(InputError, match="no model version"):
            project.versions.delete(v2)
        assert project.model.row()["id"] == 1 and project.search("python", 3)
    finally:
        project.close()

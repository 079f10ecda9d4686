"""Long texts read whole: windows that cover every token, and short texts as before."""

from __future__ import annotations

import numpy as np
import pytest

from engine.encoding import windows
from engine.encoding.windows import MAX_WINDOWS, content_tokens, plan_windows, plans_for_long

# A text of 1,466 word pieces with the bundled model: well past its 256.
LONG = " ".join(f"Section {i}: the committee reviewed clause {i * 7} and its amendments,"
                f" noting objections from member states." for i in range(90))


def _tokens(encoder, text):
    (offsets, word_ids), = encoder.token_spans([text])
    return offsets, word_ids


def test_windows_cover_every_token_and_overlap(encoder):
    offsets, word_ids = _tokens(encoder, LONG)
    plan = plan_windows(offsets, word_ids, encoder.max_seq_length)
    size = content_tokens(encoder.max_seq_length)
    assert len(offsets) > 3 * size and len(plan.windows) > 3 and not plan.cut_short
    covered = np.zeros(len(offsets), dtype=bool)
    token_starts = np.array([o[0] for o in offsets])
    for w in plan.windows:
        covered[(token_starts >= w.start) & (token_starts < w.end)] = True
        # Cut at word starts: the span tokenises to exactly the pieces it was planned with.
        assert encoder.token_counts([LONG[w.start:w.end]])[0] - 2 == w.tokens <= size
    assert covered.all()
    for before, after in zip(plan.windows, plan.windows[1:], strict=False):
        assert before.start < after.start < before.end      # consecutive windows overlap
    assert plan.windows[-1].end == offsets[-1][1] and plan.windows[-1].tokens == size


def test_long_texts_are_tokenised_a_few_at_a_time_with_the_same_plans(encoder, monkeypatch):
    """The offsets of every word piece are Python objects: a chunk of 2,048 documents
    tokenised at once held half a gigabyte of them. The plans come out the same."""
    texts = [LONG[i:] for i in range(0, 70, 10)] + ["short"]
    long_at = list(range(7))
    asked: list[int] = []

    def spans(batch):
        asked.append(len(batch))
        return encoder.token_spans(batch)

    whole = plans_for_long(texts, long_at, encoder.token_spans, encoder.max_seq_length)
    monkeypatch.setattr(windows, "SPANS_AT_ONCE", 3)
    parts = plans_for_long(texts, long_at, spans, encoder.max_seq_length)
    assert asked == [3, 3, 1]
    assert parts == whole and sorted(parts) == long_at


def test_a_short_text_is_one_window_and_a_huge_one_is_cut_short():
    offsets = [(i * 2, i * 2 + 1) for i in range(100)]
    plan = plan_windows(offsets, list(range(100)), 256)
    assert [(w.start, w.end, w.tokens) for w in plan.windows] == [(0, 199, 100)]
    many = [(i * 2, i * 2 + 1) for i in range(200 * MAX_WINDOWS)]
    huge = plan_windows(many, list(range(len(many))), 256)
    assert huge.cut_short and len(huge.windows) == MAX_WINDOWS


def test_a_word_longer_than_a_window_is_cut_inside_it():
    offsets = [(i, i + 1) for i in range(1000)]
    plan = plan_windows(offsets, [0] * 1000, 256)     # one 1,000-piece word
    assert plan.windows[0].tokens == 254 and plan.windows[-1].end == 1000


def _project_of(new_project, tmp_path, rows, name):
    import csv

    src = tmp_path / f"{name}.csv"
    with src.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["text"])
        for row in rows:
            writer.writerow([row])
    project = new_project(f"{name}.duplens")
    project.rows.import_table(src, ["text"])
    return project, project.vectors.encode()


def _stored(project, text_ids) -> np.ndarray:
    """The embeddings as stored (the index normalises them again)."""
    from engine.store.embeddings import read_vectors

    with project.store.read() as conn:
        return read_vectors(conn, project.vectors.model_id(), 384, text_ids)


def _text_ids(project) -> dict[str, int]:
    from sqlalchemy import select

    from engine.store.schema import texts

    with project.store.read() as conn:
        return {text: int(i) for i, text in conn.execute(select(texts.c.id, texts.c.text))}


QUESTIONS = ["How do I learn Python quickly?", "What is the capital of Australia?",
             "Why is the sky blue?"]


def test_texts_that_fit_one_window_keep_their_vectors_bit_for_bit(new_project, tmp_path,
                                                                  encoder):
    """What the job did before texts had windows: batches planned by token count, each
    encoded as one call (`plan_batches`, `encode_batch`); the vectors must not move."""
    from engine.encoding.encode_job import plan_batches

    project, report = _project_of(new_project, tmp_path, QUESTIONS, "questions")
    assert (report.encoded, report.windowed, report.windows) == (3, 0, 0)
    ids = _text_ids(project)
    by_id = {ids[q]: q for q in sorted(QUESTIONS, key=ids.__getitem__)}   # as the job reads
    counts = dict(zip(by_id, encoder.token_counts(list(by_id.values())), strict=True))
    before = {}
    for batch in plan_batches(list(by_id), by_id, encoder.batch_size, counts):
        encoded = encoder.encode_batch(batch)
        before.update(zip(encoded.text_ids, encoded.vectors, strict=True))
    stored = _stored(project, list(by_id))
    assert np.array_equal(stored, np.stack([before[t] for t in by_id]))


def test_a_long_text_is_read_whole_and_its_windows_stored(new_project, tmp_path, encoder):
    """The text's embedding is the normalised mean of its windows', which are stored with
    their spans (float16); every word of it is read; short texts beside it are unchanged
    but for padding (they may share a batch with windows)."""
    from engine.store.text_windows import read_windows

    project, report = _project_of(new_project, tmp_path, [*QUESTIONS, LONG], "docs")
    assert (report.encoded, report.windowed, report.truncated) == (4, 1, 0)
    assert project.info()["truncated"] == 0
    ids = _text_ids(project)
    stored = _stored(project, [ids[q] for q in QUESTIONS])
    assert np.allclose(stored, encoder.encode(QUESTIONS), atol=1e-5)
    with project.store.read() as conn:
        windows = read_windows(conn, project.vectors.model_id(), encoder.dim,
                               list(ids.values()))
    assert list(windows) == [ids[LONG]]
    spans, vectors = windows[ids[LONG]]
    assert spans[0][0] == 0 and spans[-1][1] == len(LONG) and len(spans) == report.windows
    expected = encoder.encode([LONG[a:b] for a, b in spans])
    assert np.allclose(vectors.astype(np.float32), expected, atol=2e-3)
    mean = expected.mean(axis=0)
    text_vector = _stored(project, [ids[LONG]])[0]
    assert np.allclose(text_vector, mean / np.linalg.norm(mean), atol=1e-5)
    # A passage from its middle finds it: the text's vector holds every part of it.
    middle = LONG[len(LONG) // 2: len(LONG) // 2 + 400]
    assert project.search(middle, k=1)[0].text == LONG


def test_a_passage_from_a_documents_middle_finds_it_and_shows_where(new_project, tmp_path,
                                                                    encoder):
    """Search scores a long text from its windows and says which passage matched."""
    project, _ = _project_of(new_project, tmp_path, [*QUESTIONS, LONG], "search")
    start = LONG.index("Section 47:")
    query = LONG[start:LONG.index("Section 49:")]
    hit = project.search(query, k=1)[0]
    assert hit.text == LONG and hit.passage is not None
    a, b = hit.passage
    # The stretch read close up (a query of under half a window): most of the query, and
    # little else (`engine.documents.close_up`).
    assert min(b, start + len(query)) - max(a, start) >= 0.7 * len(query)
    assert b - a < 1.5 * len(query)
    assert hit.score > 0.8
    assert hit.as_json()["passage"] == [a, b]
    question = project.search(QUESTIONS[1], k=1)[0]
    assert question.passage is None and "passage" not in question.as_json()
    assert question.score == pytest.approx(1.0, abs=1e-5)


def test_duplens_search_prints_the_passage_of_a_long_hit(new_project, tmp_path, capsys):
    from engine.cli.dispatch import main

    project, _ = _project_of(new_project, tmp_path, [*QUESTIONS, LONG], "cli")
    path = project.store.path
    project.close()
    start = LONG.index("Section 60:")
    query = LONG[start:LONG.index("Section 62:")]
    assert main(["search", str(path), query, "-k", "1"]) == 0
    line = capsys.readouterr().out.strip().splitlines()[0]
    assert "  …" in line and "Section 0:" not in line     # the passage, not the opening


def test_time_left_is_the_jobs_own_where_it_gives_one_and_a_steps_loss_stays_put():
    """`seconds_left` is keyword-only: a training step's loss, given after the message as it
    always was, still lands in `loss` (it once landed in the time left, and the window's
    loss curve stayed empty)."""
    from engine.progress import Progress
    from engine.training.trainer import TrainingProgress

    assert Progress("encoding", 10, 110, rate=5.0).eta_seconds == 20.0
    assert Progress("encoding", 10, 110, rate=5.0, seconds_left=60.0).eta_seconds == 60.0
    assert Progress("encoding", 110, 110, rate=5.0, seconds_left=60.0).eta_seconds is None
    step = TrainingProgress("training", 2, 3, 1.0, "loss 0.5000", 0.5)
    assert (step.loss, step.seconds_left) == (0.5, None)

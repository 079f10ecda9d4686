"""A passage from a document's middle finds that document even where its mean vector is far
from the passage: more than `WIDE_CANDIDATES` other documents are nearer by mean vector."""

from __future__ import annotations

import csv
import json

from engine.keystroke_search import WIDE_CANDIDATES, search
from engine.store.items import items_by_ids

# The document: about cooking, with one paragraph about a harbour's tides in its middle.
COOKING = [f"Recipe note {i}: fold the butter into the flour, rest the dough for {i + 10} "
           f"minutes, then bake the pastry until golden and serve it with stewed apples."
           for i in range(60)]
PASSAGE = ("The harbour master kept a small notebook of the spring tides. In March the water "
           "climbed over the old stone steps twice, the ferry to the island stayed tied up "
           "for three days while the sea wall was mended, and the fishermen dragged their "
           "boats above the shingle line before the evening surge. He wrote that the highest "
           "water came an hour after the moon rose, and that the gulls moved inland the "
           "morning before every storm, which he trusted more than the printed tables.")
DOCUMENT = " ".join(COOKING[:30]) + "\n\n" + PASSAGE + "\n\n" + " ".join(COOKING[30:])
LATER = ("The lighthouse keeper's daughter painted the harbour every winter: grey water, the "
         "red buoy by the channel, the crane on the north quay and the ferry's wake cutting "
         "across the bay. Her pictures hung in the chandlery beside the tide tables, and "
         "sailors bought them before the long voyages south, saying that the painted sea "
         "looked calmer than the real one ever did in January.")
# Others: about the harbour and the sea throughout, none holding the passage.
OTHERS = [" ".join(f"Harbour log {n}.{i}: the tide gauge on pier {(n + i) % 9} read "
                   f"{(n * 7 + i) % 40 / 10 + 1:.1f} metres at dawn, and boats waited at the "
                   f"moorings for the flood tide before sailing past the breakwater."
                   for i in range(16)) for n in range(WIDE_CANDIDATES + 10)]


def _project(new_project, tmp_path, cooking: str = DOCUMENT, others: list[str] = OTHERS):
    """A project of the cooking document and the harbour logs, encoded."""
    path = tmp_path / "documents.csv"
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["id", "text"])
        writer.writerow(["cooking", cooking])
        for n, text in enumerate(others):
            writer.writerow([f"harbour{n}", text])
    project = new_project()
    project.rows.import_table(path, ["text"], id_column="id")
    project.vectors.encode()
    return project


def test_a_passage_finds_its_document_beyond_the_nearest_mean_vectors(new_project, tmp_path):
    project = _project(new_project, tmp_path)
    encoder, index, model_id = project.vectors.serving()
    windows = project.vectors.windows(model_id, project.vectors.generation(), index)
    assert len(windows.windowed) == len(OTHERS) + 1        # every text read in windows
    # The ground this stands on: by mean vector, the cooking document is not among the
    # WIDE_CANDIDATES nearest the passage, so the search as it was could not find it.
    text_ids, _ = index.query(encoder.encode([PASSAGE]), WIDE_CANDIDATES)
    cooking = project.search(COOKING[3], 1)[0]
    assert cooking.id == "cooking"
    with project.store.read() as conn:
        cooking_text = items_by_ids(conn, [cooking.item_id])[cooking.item_id]["text_id"]
    assert cooking_text not in set(text_ids[0].tolist())
    before = search(project.store, encoder, index, PASSAGE, 5,
                    windows.without_finder().without_words())
    assert "cooking" not in [h.id for h in before]

    hit = project.search(PASSAGE, 5)[0]
    assert hit.id == "cooking"
    start = DOCUMENT.index(PASSAGE)
    a, b = hit.passage
    assert a < start + len(PASSAGE) and start < b           # the passage shown holds it
    assert windows.finder() is windows.finder()              # read once per generation

    # Check a file: the passage as a row of a checked file finds it the same way.
    checked = tmp_path / "checked.csv"
    with checked.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["text"])
        writer.writerow([PASSAGE])
    rows = list(project.matching.check_file(checked, ["text"], k=1).rows)
    assert rows[0].matches[0].id == "cooking"
    assert rows[0].matches[0].passage is not None

    # A document added later is found once its windows are in: the windows are read again
    # for the index's new generation.
    added = tmp_path / "added.csv"
    with added.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["id", "text"])
        writer.writerow(["baking", " ".join(COOKING[5:35]) + "\n\n" + LATER + "\n\n"
                         + " ".join(COOKING[35:])])
    project.rows.import_table(added, ["text"], id_column="id")
    project.vectors.encode()
    encoder, index, model_id = project.vectors.serving()
    now = project.vectors.windows(model_id, project.vectors.generation(), index)
    assert "baking" not in [h.id for h in search(project.store, encoder, index, LATER, 5,
                                                 now.without_finder().without_words())]
    assert project.search(LATER, 5)[0].id == "baking"
    assert now.finder() is not windows.finder() and len(now.finder()) > len(windows.finder())


# A typed sentence inside the cooking document: its window is mostly about pastry, so the
# harbour logs' windows (about tides throughout) are nearer the sentence than it is.
SENTENCE = "He wrote that the highest water came an hour after the moon rose over the bay."
TYPED_IN = " ".join(COOKING[:12]) + " " + SENTENCE + " " + " ".join(COOKING[12:24])


def test_a_typed_sentence_is_read_close_up_and_finds_its_document(new_project, tmp_path):
    project = _project(new_project, tmp_path, TYPED_IN, OTHERS[:5])
    encoder, index, model_id = project.vectors.serving()
    windows = project.vectors.windows(model_id, project.vectors.generation(), index)
    assert len(windows.windowed) == 6
    # The ground: scored by its windows alone, the cooking document is not first.
    before = search(project.store, encoder, index, SENTENCE, 6, windows, close_up=0)
    assert before[0].id != "cooking"
    assert "cooking" in [h.id for h in before]                # a candidate read close up

    hits = project.search(SENTENCE, 6)
    assert hits[0].id == "cooking"
    ours = next(h for h in before if h.id == "cooking")
    assert hits[0].score > ours.score                         # the stretch, not the window
    a, b = hits[0].passage
    start = TYPED_IN.index(SENTENCE)
    assert (a, b) == (start, start + len(SENTENCE))           # the sentence, exactly
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    # The command line's overlap is the passage's too, as the window's is: against the
    # whole document (twenty-four cooking sentences round it) it would be small.
    from engine.review.overlap import overlap
    from tests.engine.cli.test_cli import run

    printed = json.loads(run("search", str(project.store.path), SENTENCE, "-k", "3",
                             "--json").stdout)
    assert printed[0]["id"] == "cooking" and printed[0]["passage"] == [a, b]
    assert printed[0]["overlap"] == round(overlap(SENTENCE, TYPED_IN[a:b]).jaccard, 4) > 0.5
    assert overlap(SENTENCE, TYPED_IN).jaccard < 0.3

    # Check a file: the same sentence as a row scores the document as the search does, in
    # a batch with another short row read close up beside it.
    checked = tmp_path / "checked.csv"
    with checked.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["text"])
        writer.writerow(["The tide gauge on the pier read two metres at dawn."])
        writer.writerow([SENTENCE])
    rows = list(project.matching.check_file(checked, ["text"], k=3).rows)
    best = rows[1].matches[0]
    assert best.id == "cooking"
    assert abs(best.score - hits[0].score) < 2e-3
    assert best.passage == hits[0].passage
    assert rows[1].overlaps[0].jaccard > 0.5          # the row's words against the passage
    # The export names the passage of a long match beside its whole text.
    frame = project.matching.check_file(checked, ["text"], k=3).frame()
    a, b = hits[0].passage
    assert frame.loc[1, "match_1_passage"] == TYPED_IN[a:b]
    assert frame.loc[1, "match_1_text"] == TYPED_IN
    assert list(frame.columns).index("match_1_passage") == \
        list(frame.columns).index("match_1_text") + 1


def test_a_typed_sentence_finds_its_document_by_its_words_beyond_the_close_up(
        new_project, tmp_path):
    """Among more look-alike documents than the close-up reads, the document holding a
    typed sentence is ranked by its windows below them all and is never read close up;
    the words it shares name it, it is read, and it comes first in the search and in
    Check a file alike."""
    from engine.documents.close_up import CLOSE_UP_CANDIDATES

    project = _project(new_project, tmp_path, TYPED_IN, OTHERS)
    encoder, index, model_id = project.vectors.serving()
    windows = project.vectors.windows(model_id, project.vectors.generation(), index)
    assert len(windows.windowed) > CLOSE_UP_CANDIDATES + 1
    unread = search(project.store, encoder, index, SENTENCE, 5, windows.without_words())
    assert "cooking" not in [h.id for h in unread]          # the ground: not found without
    hits = project.search(SENTENCE, 5)
    assert hits[0].id == "cooking"
    a, b = hits[0].passage
    start = TYPED_IN.index(SENTENCE)                         # the passage is the sentence's
    assert len(set(range(a, b)) & set(range(start, start + len(SENTENCE)))) >= \
        0.6 * len(SENTENCE)

    checked = tmp_path / "checked.csv"
    with checked.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["text"])
        writer.writerow([SENTENCE])
    row = next(iter(project.matching.check_file(checked, ["text"], k=3).rows))
    assert row.matches[0].id == "cooking"
    assert abs(row.matches[0].score - hits[0].score) < 2e-3

"""Reading labelled files and summarising them."""

from __future__ import annotations

import openpyxl
import pytest

from engine.errors import InputError
from engine.text import norm_key
from engine.training import LabelledPair, Triplet, read_labelled_file, summarise


def write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def test_reads_quora_style_pairs_with_ids_as_keys(data_dir):
    found = read_labelled_file(data_dir / "labelled_pairs.csv")
    assert found.kind == "pairs" and len(found.pairs) == 40 and found.label_scale == 1.0
    assert found.columns == {"text_a": "question1", "text_b": "question2",
                             "label": "is_duplicate", "key_a": "qid1", "key_b": "qid2"}
    first = found.pairs[0]
    assert (first.text_a, first.label, first.key_a, first.key_b, first.row) == (
        "How do I learn Python quickly?", 1.0, "id:q1", "id:q2", 1)
    assert sum(p.is_duplicate for p in found.pairs) == 24
    assert found.note == ""


def test_sts_scores_from_0_to_5_are_divided_by_5(tmp_path):
    path = write(tmp_path / "sts.csv", "sentence1,sentence2,score\n"
                 "A man plays a guitar.,A man is playing guitar.,4.6\n"
                 "A cat sleeps.,Stocks fell sharply.,0\n"
                 "A dog runs.,A dog is running fast.,3\n")
    found = read_labelled_file(path)
    assert found.label_scale == 5.0 and "divided by 5" in found.note
    assert [p.label for p in found.pairs] == pytest.approx([0.92, 0.0, 0.6])
    assert [p.is_duplicate for p in found.pairs] == [True, False, True]
    # With no id columns, the key is the normalised text: identical questions share it.
    assert found.pairs[0].key_a == norm_key("a man  PLAYS a guitar.")


def test_percentages_and_explicit_columns(tmp_path):
    path = write(tmp_path / "p.csv", "left;right;pct\nHello there;Hi there;80\nA;B;5\n")
    found = read_labelled_file(path, text_columns=("left", "right"), label_column="pct")
    assert found.label_scale == 100.0
    assert [p.label for p in found.pairs] == pytest.approx([0.8, 0.05])


def test_reads_triplets_as_positive_and_negative_pairs(tmp_path):
    path = write(tmp_path / "t.csv", "Anchor,Positive,Negative\n"
                 "How to learn Python?,Best way to learn Python?,How to cook rice?\n"
                 "Why is the sky blue?,What makes the sky blue?,Why is grass green?\n")
    found = read_labelled_file(path)
    assert found.kind == "triplets"
    assert found.triplets[1] == Triplet("Why is the sky blue?", "What makes the sky blue?",
                                        "Why is grass green?")
    assert [(p.text_b, p.label) for p in found.pairs[:2]] == [
        ("Best way to learn Python?", 1.0), ("How to cook rice?", 0.0)]


def test_reads_xlsx_with_boolean_labels_and_skips_empty_texts(tmp_path):
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.append(["question1", "question2", "is_duplicate"])
    sheet.append(["How do I learn Python?", "Fastest way to learn Python?", True])
    sheet.append(["", "Orphan question", None])  # skipped: no text, so its label is moot
    sheet.append(["Why is the sky blue?", "How do planes fly?", 0])
    book.save(tmp_path / "pairs.xlsx")
    found = read_labelled_file(tmp_path / "pairs.xlsx")
    assert [p.label for p in found.pairs] == [1.0, 0.0]
    assert found.skipped_rows == [2]


@pytest.mark.parametrize(("text", "message"), [
    ("question1,question2\na,b\n", r"cannot tell which columns.*columns are: question1, "
                                   r"question2"),
    ("question1,question2,is_duplicate\na,b,1\nc,d,maybe\ne,f,yes\n",
     r"'is_duplicate' must hold numbers; data row 2 has 'maybe' \(1 such rows\)"),
    ("question1,question2,is_duplicate\na,b,1\nc,d,\n", "data row 2 has ''"),
    ("question1,question2,is_duplicate\na,b,-1\n", "must not be negative; data row 1"),
    ("question1,question2,is_duplicate\na,b,1\nc,d,250\n", "scores up to 100; data row 2"),
    ("question1,question2,is_duplicate\n", "no data rows"),
    ("", "empty"),
    ("question1,question2,is_duplicate\n,b,1\n", "no usable rows"),
])
def test_bad_files_fail_with_one_clear_line(tmp_path, text, message):
    path = write(tmp_path / "bad.csv", text)
    with pytest.raises(InputError, match=message) as caught:
        read_labelled_file(path)
    assert "\n" not in str(caught.value) and "bad.csv" in str(caught.value)


def test_named_columns_must_exist(tmp_path):
    path = write(tmp_path / "p.csv", "a,b,label\nx,y,1\n")
    with pytest.raises(InputError, match='no column "q2"'):
        read_labelled_file(path, text_columns=("a", "q2"))


def test_summary_counts_and_advice():
    pairs = [LabelledPair(f"q{i}", f"p{i}", 1.0 if i < 2 else 0.0) for i in range(30)]
    summary = summarise(pairs)
    assert (summary.pairs, summary.positives, summary.negatives, summary.questions) == (
        30, 2, 28, 60)
    assert len(summary.warnings) == 1 and "7% of the pairs are duplicates" in summary.warnings[0]

    few = summarise(pairs[:5])
    assert any("Only 5 labelled pairs" in w for w in few.warnings)
    only_dups = summarise([LabelledPair("a", "b", 1.0)] * 25)
    assert len(only_dups.warnings) == 1 and "add pairs labelled 0" in only_dups.warnings[0]
    no_dups = summarise([LabelledPair("a", "b", 0.0)] * 25)
    assert any("No pair is labelled a duplicate" in w for w in no_dups.warnings)
    balanced = summarise([LabelledPair(f"q{i}", "x", float(i % 2)) for i in range(40)])
    assert balanced.warnings == [] and balanced.questions == 41


def test_anchor_positive_columns_with_a_label_are_pairs(tmp_path):
    path = write(tmp_path / "ap.csv", "anchor,positive,label\nHi,Hello,1\nHi,Bye,0\n")
    found = read_labelled_file(path)
    assert found.kind == "pairs" and [p.label for p in found.pairs] == [1.0, 0.0]


def test_labels_outside_0_1_are_refused():
    with pytest.raises(ValueError, match="label must be in"):
        LabelledPair("a", "b", 3.0)

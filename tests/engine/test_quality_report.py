"""The quality report's page: recall quoted down to the floor first, the whole file's beside
it, the sentence on the pairs below, and the curve drawing the recall it names; without a
floor, the page as it always was."""

from __future__ import annotations

import re

from engine.estimation.estimators import Estimate, Figure, Floored
from engine.estimation.floor_words import below_floor_words
from engine.quality_report import curve_svg, render
from engine.services.measuring import Measurement

BELOW = {"pairs": 5_670_123, "answered": 30, "duplicates_found": 0, "estimate": 0.0,
         "at_most": 697_843.2}


def _estimate(threshold: float, recall: float, floored_recall: float | None) -> Estimate:
    floored = (None if floored_recall is None else
               Floored(0.5, Figure(floored_recall, floored_recall - 0.1, floored_recall + 0.1),
                       Figure(120, 110, 135), BELOW, Figure(0.7, 0.6, 0.8)))
    return Estimate(threshold, Figure(0.9, 0.85, 0.95), Figure(recall, 0.05, 0.95),
                    Figure(0.55, 0.1, 0.9), Figure(240, 110, 700_000), None, 96, 400, True,
                    [{"stratum": "0.80-0.85", "pairs": 300, "flagged": 96, "answered": 40,
                      "duplicates_found": 30, "missed_could_be": 0}], floored)


def _measurement(floored: bool) -> Measurement:
    thresholds = (0.5, 0.6, 0.7, 0.8, 0.9)
    curve = [_estimate(t, 0.4 - t / 10, (1.5 - t) if floored else None) for t in thresholds]
    return Measurement(_estimate(0.85, 0.4, 0.8 if floored else None), 0.85, 400, 0,
                       {"ann": 400}, "recall", 50, "all-MiniLM-L6-v2", None, curve=curve)


def _text(page: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", page))


def _rows(page: str) -> list[tuple[str, str, str]]:
    """The figures table's rows: (name, estimate, interval)."""
    return re.findall(r"<tr><td>([^<]*)</td><td class='num'>([^<]*)</td>"
                      r"<td class='num'>([^<]*)</td></tr>", page)


def test_without_a_floor_the_page_quotes_the_whole_file():
    page = render(_measurement(floored=False), "questions.duplens")
    text = _text(page)
    assert ("They are about 40% of all the duplicate pairs in the file (between 5.0% and "
            "95%); the rest were missed.") in text
    assert "The file holds about 240 duplicate pairs in all (between 110 and 700,000)." in text
    assert _rows(page)[:4] == [
        ("Precision: share of flagged pairs that are duplicates", "90%", "85% – 95%"),
        ("Recall: share of all duplicate pairs that are flagged", "40%", "5.0% – 95%"),
        ("F1: precision and recall in one number", "55%", "10% – 90%"),
        ("Duplicate pairs in the file", "240", "110 – 700,000")]
    assert "<p class='whole'>" not in page
    assert "whole file" not in text and "below 0.50" not in text and "0.50 or more" not in text
    assert ">recall (estimated)</text>" in page


def test_recall_is_quoted_down_to_the_floor_with_the_whole_file_beside_it():
    page = render(_measurement(floored=True), "questions.duplens")
    text = _text(page)
    # First what a threshold can trade: recall and duplicates down to 0.50.
    lead = re.search(r"<p class='lead'>(.*?)</p>", page).group(1)
    assert _text(lead).endswith(
        "They are about 80% of the duplicate pairs scoring 0.50 or more (between 70% and "
        "90%); the rest of those were missed. The pairs scoring 0.50 or more hold about 120 "
        "duplicate pairs (between 110 and 135).")
    # Then the whole file, and what the pairs below could hide.
    whole = re.search(r"<p class='whole'>(.*?)</p>", page).group(1)
    assert _text(whole) == (
        "Counting every duplicate pair in the file, however low it scores, they are about 40% "
        "of them (between 5.0% and 95%), and the file holds about 240 duplicate pairs in all "
        "(between 110 and 700,000). Pairs scoring below 0.50, which no threshold setting can "
        "flag: 5,670,123. 30 of them were checked, no duplicate found; at most 698,000 "
        "duplicates could be among them (95% sure).")
    # The table: the floored recall first, the whole file's next to it.
    assert _rows(page)[:7] == [
        ("Precision: share of flagged pairs that are duplicates", "90%", "85% – 95%"),
        ("Recall: share of the duplicate pairs scoring 0.50 or more that are flagged", "80%",
         "70% – 90%"),
        ("Recall, whole file: share of every duplicate pair, however low it scores, that is "
         "flagged", "40%", "5.0% – 95%"),
        ("F1: precision and recall scoring 0.50 or more in one number", "70%", "60% – 80%"),
        ("F1, whole file", "55%", "10% – 90%"),
        ("Duplicate pairs scoring 0.50 or more", "120", "110 – 135"),
        ("Duplicate pairs in the whole file", "240", "110 – 700,000")]
    assert "0.50 is the lowest threshold Duplens lets you set" in text
    assert "Recall here counts the duplicate pairs scoring 0.50 or more" in text
    assert ">recall, pairs scoring 0.50 or more (estimated)</text>" in page


def _line(svg: str, colour: str) -> list[tuple[float, float]]:
    points = re.search(rf"<polyline points='([^']*)' fill='none' stroke='{colour}'", svg)
    return [tuple(map(float, p.split(","))) for p in points.group(1).split()]


def test_the_curve_draws_the_recall_down_to_the_floor():
    m = _measurement(floored=True)
    recall = _line(curve_svg(m.curve, 0.85), "#c2571a")
    # Plot height 300 from y=16: a recall of r sits at 16 + (1 - r) * 300. The floored recall
    # is 1.5 - t (1.0 at 0.5, 0.6 at 0.9); the whole file's (0.35 to 0.31) is not drawn.
    assert [round(y, 1) for _x, y in recall] == [16.0, 46.0, 76.0, 106.0, 136.0]
    whole = _line(curve_svg(_measurement(floored=False).curve, 0.85), "#c2571a")
    assert [round(y, 1) for _x, y in whole] == [211.0, 214.0, 217.0, 220.0, 223.0]


def test_the_pairs_below_in_words():
    def words(**below) -> str:
        return below_floor_words(Floored(0.5, Figure(1, 1, 1), Figure(1, 1, 1),
                                         {**BELOW, **below}))
    assert words(answered=1).endswith(
        "5,670,123. 1 of them was checked, no duplicate found; at most 698,000 duplicates "
        "could be among them (95% sure).")
    assert "40 of them were checked, 1 was a duplicate; at most 1,240 duplicates" in words(
        answered=40, duplicates_found=1, at_most=1_234.5)
    assert "12 of them were checked, 2 were duplicates; at most 43 duplicates" in words(
        answered=12, duplicates_found=2, at_most=42.3)
    assert words(answered=0, at_most=None).endswith(
        "5,670,123. None of them has been checked yet; how many duplicates they hide cannot "
        "be said yet.")

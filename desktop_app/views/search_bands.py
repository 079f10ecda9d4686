"""Which band of the search's answer each hit falls in, and the words that name the bands.

A user typed three clear paraphrases of existing questions; they scored 0.72-0.75 against a
0.80 threshold and the panel said "Nothing close". So the answer has two bands:

- **may already exist**: at or above the window's threshold, as before;
- **similar**: under the threshold but at or above a floor the user picks ("Show similar
  from", `similar_floor.SimilarFloor`): near misses, listed apart and muted so that they
  are seen without being read as duplicates;

and a hit under the floor is not listed. No Qt here, so the rule and its words are tested
without a window; the panel only lays them out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from engine.review.calibration import format_threshold

# The similar band starts here until the user picks another floor. A similarity, not a
# distance below the threshold, because what a band holds depends on the score itself:
# measured with the bundled model on the sample questions' answer key (each of the 769
# rows of duplens_data/sample_questions.csv with a duplicate asked against the other rows,
# its 10 nearest), at a 0.80 threshold the best duplicate reaches the threshold for 31.5%
# of them, and lands in [0.65, 0.80) for another 47.5%, where 522 of the 928 hits (56%)
# are duplicates; [0.60, 0.65) would add 10.1% more but 80% of its hits are not
# duplicates, [0.50, 0.60) 8.1% at 96% not. 0.65 is also where the bars turn from amber to
# grey at the default threshold (`score_delegate.RELATED_BELOW` under 0.80).
DEFAULT_FLOOR = 0.65


class Scored(Protocol):
    """A hit as far as the bands care: `engine.keystroke_search.SearchHit` is one."""

    @property
    def score(self) -> float: ...


HitT = TypeVar("HitT", bound=Scored)


@dataclass(frozen=True)
class Bands(Generic[HitT]):
    """One answer split by score: what is listed in each band, and what is not."""

    exists: list[HitT]     # at or above the threshold: "This may already exist"
    similar: list[HitT]    # in [floor, threshold): near misses, marked as such
    hidden: int            # hits under the floor, not listed
    best: float | None     # the best score of the whole answer; None: no hits

    @property
    def listed(self) -> int:
        return len(self.exists) + len(self.similar)


def floor_in_force(chosen: float, threshold: float) -> float:
    """The band's floor: the one chosen, never above the threshold (a threshold moved under
    it leaves no similar band; moved back up, the chosen floor holds again)."""
    return min(chosen, threshold)


def split(hits: Sequence[HitT], threshold: float, floor: float) -> Bands[HitT]:
    """`hits` (best first) into the two bands; `floor` is the one in force."""
    exists = [h for h in hits if h.score >= threshold]
    similar = [h for h in hits if floor <= h.score < threshold]
    best = max((h.score for h in hits), default=None)
    return Bands(exists, similar, len(hits) - len(exists) - len(similar), best)


def headline(bands: Bands, threshold: float, floor: float) -> str:
    """The line above the list: whether something may already exist, else how many near
    misses there are and from where ("" for an answer with no hits at all)."""
    at, low = format_threshold(threshold), format_threshold(floor)
    if bands.best is None:
        return ""
    if bands.exists:
        return f"This may already exist (similarity ≥ {at}):"
    if bands.similar:
        return f"Nothing reaches {at} · {len(bands.similar)} similar from {low}:"
    if floor < threshold:
        return f"Nothing close (none reaches {at}, none similar from {low})"
    return f"Nothing close (none reaches {at})"


def similar_heading(threshold: float, floor: float) -> str:
    """The row that parts the similar band from the hits above the threshold."""
    return (f"Similar, below the threshold {format_threshold(threshold)} "
            f"(from {format_threshold(floor)})")


def summary(bands: Bands, floor: float, so_far: str = "") -> str:
    """The status line under the list; `so_far` says the index is still being filled."""
    if bands.best is None:
        return f"Nothing similar{so_far or ' yet'}."
    if not bands.listed:
        return (f"The nearest scores {bands.best:.2f}, under {format_threshold(floor)}"
                f"{so_far}: lower \"Show similar from\" to list it.")
    if bands.listed == 1:
        return f"The most similar row{so_far}"
    return f"{bands.listed} most similar rows{so_far}"

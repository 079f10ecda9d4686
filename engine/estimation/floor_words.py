"""The recall floor in words, so that the command line, the window and the report say the
same thing: recall quoted down to a similarity, the whole file's beside it, and one sentence
on what the pairs below could hide.

Why a floor at all is in `engine.estimation.strata` (RECALL_FLOOR).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:     # the command line imports these words with no NumPy loaded
    from engine.estimation.estimators import Floored


def recall_label(floored: Floored) -> str:
    """"recall (similarity >= 0.50)": the figure quoted first."""
    return f"recall (similarity >= {floored.floor:.2f})"


def floor_hint(floored: Floored) -> str:
    """"scoring 0.50 or more": which pairs the quoted recall counts, for people."""
    return f"scoring {floored.floor:.2f} or more"


def below_floor_words(floored: Floored) -> str:
    """The pairs below the floor for a reader who is no statistician (the command line, the
    window and the report): "Pairs scoring below 0.50, which no threshold setting can flag:
    5,670,123. 30 of them were checked, no duplicate found; at most 698,000 duplicates
    could be among them (95% sure)." The bound is rounded up to three figures: it stays an
    upper bound."""
    b = floored.below
    checked, found = b["answered"], b["duplicates_found"]
    if checked == 0:
        seen = "None of them has been checked yet"
    elif found == 0:
        seen = f"{_of_them(checked)} checked, no duplicate found"
    else:
        seen = (f"{_of_them(checked)} checked, {found:,} "
                f"{'was a duplicate' if found == 1 else 'were duplicates'}")
    most = b["at_most"]
    bound = (f"at most {_round_up(most):,} duplicates could be among them (95% sure)"
             if most is not None else "how many duplicates they hide cannot be said yet")
    return (f"Pairs scoring below {floored.floor:.2f}, which no threshold setting can flag: "
            f"{b['pairs']:,}. {seen}; {bound}.")


def _of_them(n: int) -> str:
    return f"{n:,} of them {'was' if n == 1 else 'were'}"


def _round_up(x: float) -> int:
    """`x` rounded up to three significant figures (697,843 -> 698,000; 42.3 -> 43)."""
    whole = math.ceil(x - 1e-9)
    if whole < 1000:
        return max(whole, 0)
    step = 10 ** (len(str(whole)) - 3)
    return -(-whole // step) * step

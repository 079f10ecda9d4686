"""Where a text longer than the model's window is cut into overlapping windows.

The model reads at most `max_seq_length` word pieces (256 for the bundled model, about 190
words); before, a longer text was encoded from its beginning only, so two documents with
the same opening scored 1.000 and a copy with a new introduction 0.1-0.4. Now such a text
is read whole, as windows of the model's own length that overlap by half.

Windows are character spans of the text, not token lists: each is encoded as a text of
its own, by whichever encoder and executor runs the import (torch, OpenVINO, a Ray
cluster), exactly as a short text is. A window starts and ends at the start of a word (a
token whose word differs from the previous token's), so tokenising the span again gives
the same word pieces the whole text had there, and never more than the window holds.

Why half: every token then lies in the middle half of some window (it is read with at
least a quarter window of context on each side), and a passage copied into another
document at any offset overlaps one of that document's windows by at least three
quarters, which is what lets window-to-window matches find it. It costs about twice the
tokens of reading the text once; `benchmarks/documents.py` measures the import.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

# Special tokens the model adds around each window ([CLS] and [SEP] for BERT models).
SPECIAL_TOKENS = 2
# A window starts half a window after the previous one.
STRIDE_SHARE = 0.5
# A text is read whole up to this many windows (about 24,000 words with the bundled model);
# the rest of a longer cell is left out and the text counts as read from its start, so a
# several-megabyte cell cannot hold an import for minutes.
MAX_WINDOWS = 256
# Long texts tokenised together for their offsets (`plans_for_long`).
SPANS_AT_ONCE = 32


@dataclass(frozen=True)
class Window:
    """One window of a text: characters [start, end) holding `tokens` word pieces."""

    start: int
    end: int
    tokens: int


@dataclass(frozen=True)
class WindowPlan:
    """How a text is read: its windows, and whether any of it was left out."""

    windows: tuple[Window, ...]
    cut_short: bool          # longer than MAX_WINDOWS windows: the tail was not read


# A tokenizer's (character offsets, word ids) per text, None where it cannot say
# (`SentenceEncoder.token_spans`).
TokenSpans = Callable[[Sequence[str]], list | None]


def plans_for_long(texts: Sequence[str], long_at: Sequence[int], token_spans: TokenSpans,
                   max_seq_length: int) -> dict[int, WindowPlan]:
    """{position: plan} of the texts at `long_at` (those past the model's window) that are
    read in several windows; the rest are read in one, as always (a slow tokenizer gives
    no offsets: then every text is). The encode job and a checked file both cut texts
    here, so a checked row is read exactly as an imported one."""
    plans: dict[int, WindowPlan] = {}
    # A few texts at a time: every word piece's offsets are Python objects (about 150 bytes
    # a piece), so a chunk of 2,048 documents of 1,000 words tokenised at once held about
    # half a gigabyte of them; only the plans (a few numbers a window) are kept.
    for start in range(0, len(long_at), SPANS_AT_ONCE):
        part = long_at[start:start + SPANS_AT_ONCE]
        tokens = token_spans([texts[i] for i in part])
        if tokens is None:
            return {}
        for i, (offsets, word_ids) in zip(part, tokens, strict=True):
            plan = plan_windows(offsets, word_ids, max_seq_length)
            if len(plan.windows) > 1:
                plans[i] = plan
    return plans


def content_tokens(max_seq_length: int) -> int:
    """Word pieces of the text one window holds (the model's length less its specials)."""
    return max(1, max_seq_length - SPECIAL_TOKENS)


def plan_windows(offsets: Sequence[tuple[int, int]], word_ids: Sequence[int | None],
                 max_seq_length: int, *, max_windows: int = MAX_WINDOWS) -> WindowPlan:
    """The windows of a text whose tokens (no special tokens) have these character
    `offsets` and `word_ids` (the word each token belongs to; None where unknown).

    Windows cover every token, consecutive ones overlap, and all but a text's last few
    are full; the last window ends at the last token and is full too where the text is
    long enough (a short tail window would read a few words out of context).
    """
    n = len(offsets)
    size = content_tokens(max_seq_length)
    if n <= size:
        return WindowPlan((Window(offsets[0][0] if n else 0, offsets[-1][1] if n else 0, n),),
                          False)
    stride = max(1, int(size * STRIDE_SHARE))
    starts = _word_starts(word_ids, n)
    windows: list[Window] = []
    begin = 0
    while True:
        if begin + size >= n:
            windows.append(_window(offsets, begin, n))
            return WindowPlan(tuple(windows), False)
        end = _back_to_word_start(starts, begin + size, begin)
        windows.append(_window(offsets, begin, end))
        if len(windows) == max_windows:
            return WindowPlan(tuple(windows), True)
        # The next window: half a window on, or where a full window ends with the text.
        target = min(begin + stride, max(n - size, begin + 1))
        following = _back_to_word_start(starts, target, begin)
        begin = min(max(following, begin + 1), end)


def _window(offsets: Sequence[tuple[int, int]], first: int, stop: int) -> Window:
    return Window(int(offsets[first][0]), int(offsets[stop - 1][1]), stop - first)


def _word_starts(word_ids: Sequence[int | None], n: int) -> list[bool]:
    """Whether each token starts a word (a token of unknown word starts one)."""
    out = [True] * n
    for i in range(1, n):
        current = word_ids[i]
        out[i] = current is None or current != word_ids[i - 1]
    return out


def _back_to_word_start(starts: list[bool], position: int, floor: int) -> int:
    """The last word start at or before `position` and after `floor`; `position` itself
    where a word is longer than the window (it is then cut inside the word)."""
    at = position
    while at > floor and not starts[at]:
        at -= 1
    return at if at > floor else position

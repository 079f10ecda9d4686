"""Documents that hold a short query's words, read close up beside those its windows rank
first.

The close-up (`engine.documents.close_up`) reads a short query's first
`CLOSE_UP_CANDIDATES` long hits, ranked by their windows. A typed sentence is a small part
of the window holding it, so among documents that read alike its document can rank below
them and is never read. The database's full-text index (`engine.store.text_words`) names
the documents holding the query's words; the first `WORD_CANDIDATES` of them are read
close up too, wherever their windows ranked them. They are scored as every other
candidate, so a document sharing words but not meaning does not rise.

No I/O here: the caller gives the ranked candidates and the word search's answer.
"""

from __future__ import annotations

import numpy as np

# Documents named by the query's words that are read close up, chosen with
# `CLOSE_UP_CANDIDATES` on validation queries by `benchmarks/close_up_choice.py` (see
# there): with 10 long hits, 3 named found the document first for 92.3% of queries (mean
# of pasted and typed), 5 for 92.6%, 10 for 92.3%, none for 67.8%, at 281, 319 and 393 ms
# a pasted passage's search on 2 cores.
WORD_CANDIDATES = 3


def with_word_hits(text_ids: np.ndarray, sims: np.ndarray, word_ids: list[int]
                   ) -> tuple[np.ndarray, np.ndarray]:
    """The candidates (`text_ids`, `sims`) and, after them, the texts of `word_ids` they
    lack, with similarity 0 until they are scored (a long text is scored from its
    windows)."""
    have = set(np.asarray(text_ids).tolist())
    new = [t for t in dict.fromkeys(int(t) for t in word_ids) if t not in have]
    if not new:
        return text_ids, sims
    return (np.concatenate([np.asarray(text_ids, dtype=np.int64),
                            np.asarray(new, dtype=np.int64)]),
            np.concatenate([np.asarray(sims, dtype=np.float32),
                            np.zeros(len(new), dtype=np.float32)]))


def promoted(order: np.ndarray, text_ids: np.ndarray, windowed: np.ndarray,
             word_ids: list[int], count: int) -> tuple[np.ndarray, int]:
    """`order` (candidate positions, best first) with the long candidates among `word_ids`
    that are not among its first `count` long ones moved to just after them, and how many
    moved: the close-up then reads `count` plus that many long hits. The close-up orders
    every hit by score again, so the move changes what is read, not the ranking."""
    order = np.asarray(order)
    if count <= 0:
        return order, 0
    ids = np.asarray(text_ids)[order]
    long_rank = np.flatnonzero(np.isin(ids, windowed))
    first = set(ids[long_rank[:count]].tolist())
    wanted = {int(t) for t in word_ids} - first
    moving = np.flatnonzero(np.isin(ids, list(wanted)) & np.isin(ids, windowed))
    if not len(moving):
        return order, 0
    cut = int(long_rank[count - 1]) + 1    # some long hit moves, so there are `count`
    kept = np.setdiff1d(np.arange(len(order)), moving, assume_unique=True)
    head = kept[kept < cut]
    tail = kept[kept >= cut]
    return np.concatenate([order[head], order[moving], order[tail]]), len(moving)

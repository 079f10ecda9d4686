"""Long texts' MinHash signatures (`engine.documents.minhash`), one per text, model-free.

Computed when a text is first encoded (the import's encode step), so finding near-exact
copies later reads them instead of shingling every document again.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection, select

from engine.store.dialects import insert_missing
from engine.store.items import live_text_ids
from engine.store.schema import text_signatures


def add_signatures(conn: Connection, text_ids: Sequence[int], blobs: Sequence[bytes]) -> None:
    """Store signatures inside the caller's transaction; a text that has one keeps it."""
    if not text_ids:
        return
    insert_missing(conn, text_signatures,
                   [{"text_id": int(t), "signature": b} for t, b in zip(text_ids, blobs,
                                                                        strict=True)],
                   ["text_id"])


def live_signatures(conn: Connection) -> dict[int, bytes]:
    """{text id: signature bytes} of every live text that has one."""
    live = set(live_text_ids(conn))
    return {int(t): bytes(b) for t, b in conn.execute(
        select(text_signatures.c.text_id, text_signatures.c.signature)) if int(t) in live}


def signatures_of(conn: Connection, text_ids: Sequence[int]) -> dict[int, bytes]:
    """{text id: signature bytes} of those of `text_ids` that have one."""
    wanted = sorted({int(t) for t in text_ids})
    out: dict[int, bytes] = {}
    for start in range(0, len(wanted), 500):
        out.update((int(t), bytes(b)) for t, b in conn.execute(
            select(text_signatures.c.text_id, text_signatures.c.signature)
            .where(text_signatures.c.text_id.in_(wanted[start:start + 500]))))
    return out

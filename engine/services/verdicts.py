"""`Verdicts`: the analyst's verdicts on pairs of rows and their canonical choices.

Verdicts are stored per pair of rows, not per cluster (clusters are re-cut at every
threshold, so a cluster id means nothing the next time); they are the training data of
fine-tuning (each becomes a training pair's label), and the points the threshold curve is
drawn from. `ReviewHistory` undoes and redoes through this service (it is its
`VerdictStore`).
"""

from __future__ import annotations

import numpy as np

from engine.errors import InputError
from engine.index.reconcile import live_ids
from engine.pair_metrics import ThresholdCurve, threshold_curve
from engine.review.calibration import Calibration, calibrate
from engine.services.vectors import Vectors
from engine.store import pair_verdicts as verdict_store
from engine.store.database import Store

ASKED = "asked"   # the origin of a verdict the model asked for


class Verdicts:
    """Read and write verdicts and canonical choices; score the judged pairs."""

    def __init__(self, store: Store, vectors: Vectors) -> None:
        self._store = store
        self._vectors = vectors

    # -- verdicts --------------------------------------------------------------------------
    def verdict(self, item_a: int, item_b: int) -> int | None:
        """The verdict on two rows: 1 duplicate, 0 not, None none."""
        with self._store.read() as conn:
            return verdict_store.get_verdict(conn, item_a, item_b)

    def set_verdict(self, item_a: int, item_b: int, verdict: int | None, *,
                    origin: str = "review") -> None:
        """Store the analyst's verdict on two rows (1 duplicate, 0 not, None forget).

        `origin` says where the verdict was given: "review", or "asked" when the model asked
        for it (`engine.services.asking`), so fine-tuning can tell how many were asked for."""
        if verdict not in (0, 1, None):
            raise InputError(f"a verdict is 0 or 1, not {verdict!r}")
        if item_a == item_b:
            raise InputError("a pair needs two different rows")
        with self._store.write() as conn:
            verdict_store.set_verdict(conn, item_a, item_b, verdict, origin)

    def asked(self) -> int:
        """How many of the verdicts the model asked for (`duplens ask`, "Ask me")."""
        with self._store.read() as conn:
            return verdict_store.count_by_origin(conn, ASKED)

    def replace_verdict(self, item_a: int, item_b: int, expected: int | None,
                        verdict: int | None) -> bool:
        """Set the verdict only if it still is `expected` (False: another analyst changed it
        since, and it stays theirs)."""
        with self._store.write() as conn:
            return verdict_store.replace_verdict(conn, item_a, item_b, expected, verdict)

    def pairs(self) -> list[dict]:
        """Every judged pair of live rows (`text_a`, `text_b`, `label`: the verdict, ids…):
        training data."""
        with self._store.read() as conn:
            return verdict_store.all_verdicts(conn)

    def counts(self) -> dict[str, int]:
        with self._store.read() as conn:
            counts = verdict_store.count_verdicts(conn)
        return {"duplicate": counts.get(1, 0), "not_duplicate": counts.get(0, 0)}

    # -- canonical choices -----------------------------------------------------------------
    def canonical(self, item_ids: list[int]) -> set[int]:
        """Which of these rows the analyst chose as the canonical row of their cluster."""
        with self._store.read() as conn:
            return verdict_store.canonical_among(conn, item_ids)

    def set_canonical(self, clear: list[int], chosen: list[int]) -> None:
        with self._store.write() as conn:
            verdict_store.set_canonical(conn, clear, chosen)

    def replace_canonical(self, item_ids: list[int], expected: list[int],
                          chosen: list[int]) -> bool:
        """Make `chosen` canonical among `item_ids` only if the choice there still is
        `expected` (False: another analyst changed it since)."""
        with self._store.write() as conn:
            return verdict_store.replace_canonical(conn, item_ids, expected, chosen)

    # -- scoring ---------------------------------------------------------------------------
    def curve(self) -> ThresholdCurve:
        """Precision and recall of each threshold on the judged pairs, scored by the active
        model (pairs whose texts are not encoded yet are left out)."""
        pairs = self.pairs()
        index = self._vectors.index()
        # Asked after every verdict in the review: a vectorised membership test, not a Python set
        # of every indexed id.
        live = live_ids(index)
        a_ids = np.asarray([p["text_id_a"] for p in pairs], dtype=np.int64)
        b_ids = np.asarray([p["text_id_b"] for p in pairs], dtype=np.int64)
        keep = np.isin(a_ids, live) & np.isin(b_ids, live)
        if not keep.any():
            return threshold_curve(np.zeros(0), np.zeros(0))
        a = index.vectors(a_ids[keep])
        b = index.vectors(b_ids[keep])
        scores = np.einsum("ij,ij->i", a, b)
        verdicts = np.asarray([p["label"] for p in pairs])[keep]
        return threshold_curve(scores, verdicts)

    def calibration(self) -> Calibration | None:
        """The best-F1 threshold on the judged pairs (`engine.review.calibration`)."""
        return calibrate(self.curve())

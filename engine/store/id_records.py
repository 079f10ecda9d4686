"""The records the stable-id rules start from and end with: each id's record, what the
project recorded at its last cut (`Before`), and one assignment's outcome (`Assignment`).

Plain data: `engine.store.cluster_records` reads `Before` out of the store and writes an
`Assignment` into it; `engine.dedup.id_rules` decides the one from the other.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field


@dataclass
class IdRecord:
    id: int
    anchor: int | None          # the row (item id) the id follows
    retired: bool = False
    merged_into: int | None = None
    # The row that led the id's cluster at the last recorded cut (None: not recorded). Unlike
    # the sticky anchor it follows every cut's centre, since that is the canonical the
    # analyst is shown and exports give: "the canonical changed since import N" reads it.
    canonical: int | None = None


@dataclass
class Before:
    """What the project recorded at its last cut."""

    members: dict[int, int]                 # item id -> cluster id, rows in a cluster
    records: dict[int, IdRecord]            # every id ever handed out
    next_id: int                            # the first number never used
    dead: set[int] = field(default_factory=set)   # anchors no longer in the project

    def __post_init__(self) -> None:
        self._sizes: Counter[int] | None = None
        self._anchored: dict[int, list[int]] | None = None

    @property
    def sizes(self) -> Counter[int]:
        """Earlier rows per id (rows in the project: deleting a row forgets it)."""
        if self._sizes is None:
            self._sizes = Counter(self.members.values())
        return self._sizes

    def anchored_at(self, item: int) -> list[int]:
        """Ids whose anchor is this row (several when merged ids share it)."""
        if self._anchored is None:
            anchored: dict[int, list[int]] = defaultdict(list)
            for rec in self.records.values():
                if rec.anchor is not None:
                    anchored[rec.anchor].append(rec.id)
            self._anchored = dict(anchored)
        return self._anchored.get(item, [])


@dataclass
class Assignment:
    ids: list[int]                          # per cut cluster, in the cut's order
    how: list[str]                          # per cut cluster: kept, merged, new, split, revived
    minted: dict[int, int | None]           # new id -> the id it split from (None: new)
    retired: dict[int, int | None]          # id -> the id it merged into (None: gone)
    revived: set[int]
    anchors: dict[int, int]                 # id -> its anchor, where new or moved
    changed: dict[int, tuple[int | None, int | None]]   # item -> (id before, id now)
    next_id: int
    # id -> (its canonical row before, the row that leads its cluster now), where they differ
    canonicals: dict[int, tuple[int | None, int]] = field(default_factory=dict)

    @property
    def writes_nothing(self) -> bool:
        return not (self.minted or self.retired or self.revived or self.anchors
                    or self.changed or self.canonicals)

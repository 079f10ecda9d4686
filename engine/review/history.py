"""Undo and redo in the review: verdicts on pairs and canonical choices.

Every action is recorded as the state it replaced and the state it set, so undoing writes the
old state back (to the project file, like the action itself) and redoing writes the new one
again. The history lives for one review session; the verdicts and choices themselves are in the
project.

On a team project another analyst may change the same verdict in between. A new verdict
simply replaces the one stored (the last writer wins, and the other's window shows it when
it reloads its clusters), but undo and redo only take back what this history set: each
writes only while the stored state still is the one this history left (one locked
compare-and-set, `VerdictStore.replace_verdict`). When it is not, the other analyst's
verdict stays, the change leaves this history, and `Superseded` says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from engine.dedup.row_clusters import Cluster
from engine.errors import ProjectError


class Superseded(ProjectError):
    """An undo or redo found the verdict changed by someone else since; theirs is kept.
    `change` is the change that could not be taken back (its rows show the other's)."""

    def __init__(self, message: str, change: Change) -> None:
        super().__init__(message)
        self.change = change


class VerdictStore(Protocol):
    """What the history needs from a project (`Project.verdicts` provides it)."""

    def verdict(self, item_a: int, item_b: int) -> int | None: ...
    def set_verdict(self, item_a: int, item_b: int, verdict: int | None) -> None: ...
    def canonical(self, item_ids: list[int]) -> set[int]: ...
    def set_canonical(self, clear: list[int], chosen: list[int]) -> None: ...
    def replace_verdict(self, item_a: int, item_b: int, expected: int | None,
                        verdict: int | None) -> bool: ...
    def replace_canonical(self, item_ids: list[int], expected: list[int],
                          chosen: list[int]) -> bool: ...


@dataclass(frozen=True)
class VerdictChange:
    """A pair's verdict went from `before` to `after` (None: no verdict)."""

    item_a: int
    item_b: int
    before: int | None
    after: int | None
    description: str


@dataclass(frozen=True)
class CanonicalChange:
    """The canonical choices among a cluster's rows went from `before` to `after`."""

    item_ids: tuple[int, ...]
    before: tuple[int, ...]
    after: tuple[int, ...]
    description: str


Change = VerdictChange | CanonicalChange


class ReviewHistory:
    """Performs review actions on a project and can take them back, in order."""

    def __init__(self, store: VerdictStore, limit: int = 1000) -> None:
        self._store = store
        self._limit = limit
        self._done: list[Change] = []
        self._undone: list[Change] = []

    # -- actions ---------------------------------------------------------------------------
    def judge(self, item_a: int, item_b: int, verdict: int | None, description: str = ""
              ) -> VerdictChange:
        """Mark a pair duplicate (1), not duplicate (0), or forget its verdict (None)."""
        if item_a == item_b:
            raise ValueError("a row cannot be compared with itself")
        before = self._store.verdict(item_a, item_b)
        change = VerdictChange(item_a, item_b, before, verdict,
                               description or _verdict_words(verdict))
        self._apply(change)
        return change

    def move_out(self, cluster: Cluster, item_id: int) -> VerdictChange:
        """Take a member out of its cluster: it is "not duplicate" of the canonical."""
        return self.judge(cluster.canonical.item_id, item_id, 0, "move out of the cluster")

    def set_canonical(self, cluster: Cluster, item_id: int) -> CanonicalChange:
        """Make `item_id` the cluster's canonical row (other choices in it are cleared)."""
        ids = tuple(cluster.item_ids())
        if item_id not in ids:
            raise ValueError(f"row {item_id} is not in cluster {cluster.cluster_id}")
        before = tuple(sorted(self._store.canonical(list(ids))))
        change = CanonicalChange(ids, before, (item_id,), "set canonical")
        self._apply(change)
        return change

    # -- history ---------------------------------------------------------------------------
    @property
    def can_undo(self) -> bool:
        return bool(self._done)

    @property
    def can_redo(self) -> bool:
        return bool(self._undone)

    def undo(self) -> Change | None:
        """Take back the last change; `Superseded` (and it leaves the history) when another
        analyst changed the same verdict since."""
        if not self._done:
            return None
        change = self._done.pop()
        self._take_back(change, undo=True)
        self._undone.append(change)
        return change

    def redo(self) -> Change | None:
        """Do the last undone change again, on the same terms as `undo`."""
        if not self._undone:
            return None
        change = self._undone.pop()
        self._take_back(change, undo=False)
        self._done.append(change)
        return change

    def _take_back(self, change: Change, *, undo: bool) -> None:
        """Write the state undo (or redo) asks for, only over the state this history left."""
        if isinstance(change, VerdictChange):
            expected, value = ((change.after, change.before) if undo
                               else (change.before, change.after))
            if self._store.replace_verdict(change.item_a, change.item_b, expected, value):
                return
            what = f"the verdict on rows {change.item_a} and {change.item_b}"
        else:
            expected, chosen = ((change.after, change.before) if undo
                                else (change.before, change.after))
            if self._store.replace_canonical(list(change.item_ids), list(expected),
                                             list(chosen)):
                return
            what = "the canonical choice of that cluster"
        raise Superseded(f"{what} was changed by someone else since; "
                         f"{'undo' if undo else 'redo'} left their change as it is", change)

    def _apply(self, change: Change) -> None:
        self._write(change, undo=False)
        self._done.append(change)
        del self._done[:-self._limit]
        self._undone.clear()

    def _write(self, change: Change, *, undo: bool) -> None:
        if isinstance(change, VerdictChange):
            value = change.before if undo else change.after
            self._store.set_verdict(change.item_a, change.item_b, value)
        else:
            chosen = change.before if undo else change.after
            self._store.set_canonical(list(change.item_ids), list(chosen))


def _verdict_words(verdict: int | None) -> str:
    return {1: "mark duplicate", 0: "mark not duplicate"}.get(verdict, "clear the verdict")

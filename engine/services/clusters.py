"""`Clusters`: duplicate clusters cut from the neighbour graph, with the analyst's verdicts
and canonical choices laid over them, and the review's plots drawn from the same graph.

The graph (each text's nearest others) is built once per model and index state, kept in
memory and in the project file; moving the threshold re-cuts it without searching or
re-reading (the rows of clustered texts are kept between cuts, `RowsByText`).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, replace

import numpy as np

from engine.dedup.clustered_rows import RowsByText
from engine.dedup.graph import DEFAULT_FLOOR, KnnGraph, build_knn_graph, texts_near
from engine.dedup.graph_update import update_graph
from engine.dedup.last_cut import LastCut, assemble, plan
from engine.dedup.recut import full_cut, recut_clusters
from engine.dedup.row_clusters import Cluster, expand_keyed, rank_row_clusters, texts_in_no_cluster
from engine.dedup.row_clusters import text_clusters_as_ids as as_ids
from engine.errors import InputError
from engine.progress import CancelToken, ProgressCallback, no_progress
from engine.review.calibration import DEFAULT_THRESHOLD
from engine.review.histogram import Histogram, similarity_histogram
from engine.review.layout import MAP_SAMPLE, EmbeddingMap
from engine.review.verdict_joins import Joined, join_by_verdicts
from engine.review.verdict_overlay import apply_verdicts
from engine.services.cluster_ids import ClusterIds
from engine.services.document_graph import marked_documents, scored_for_documents, similarities_to
from engine.services.graph_save import GraphSave, build_once_per_team
from engine.services.review_plots import cluster_map
from engine.services.vectors import Vectors
from engine.store import change_counters
from engine.store import items as item_store
from engine.store import pair_verdicts as verdict_store
from engine.store.blobs import delete_blobs_under, get_blob
from engine.store.database import Store
from engine.store.saved_indexes import saved_row

DEFAULT_NEIGHBOURS = 10
# A cut also reads the rows of texts that would join this much lower: the slider's next
# steps down then read nothing (benchmarks/mining.py times re-cuts 0.05 down and up).
PREFETCH_MARGIN = 0.05
# The graph is updated rather than built again while the texts added and removed are at
# most this share of it (each costs about WIDEN searches where a build costs one per text).
UPDATE_SHARE = 0.3


@dataclass(frozen=True)
class _Updated:
    """The graph `before` (the one the last cut was made on) updated into `after`; the texts
    whose rows changed between the two."""

    before: KnnGraph
    after: KnnGraph
    touched: np.ndarray


def _live_ids(index) -> np.ndarray:
    """The texts the index serves (live rows' embedded texts: the index's one rule,
    `engine.index.reconcile`), without reading every row's text id from the store."""
    # A sort and a lookup, not np.setdiff1d: its np.unique hashes (0.5-1 s at 1M ids, 2 busy cores).
    ids = np.sort(np.asarray(index.ids(), dtype=np.int64))
    if not index.deleted:
        return ids
    deleted = np.sort(np.fromiter(index.deleted, dtype=np.int64, count=len(index.deleted)))
    at = np.minimum(np.searchsorted(deleted, ids), len(deleted) - 1)
    return ids[deleted[at] != ids]


def _few_changed(graph: KnnGraph, live: np.ndarray) -> bool:
    """Whether the texts added and removed since `graph` (both sorted) are few enough to
    update it. Counted by one lookup, or none when texts were only appended (a week's
    import), not `np.setxor1d`, which sorts both again (0.1-0.4 s at 1M texts)."""
    ids = graph.ids
    if len(live) >= len(ids) and np.array_equal(live[:len(ids)], ids):
        changed = len(live) - len(ids)
    elif not len(ids) or not len(live):
        changed = len(ids) + len(live)
    else:
        at = np.minimum(np.searchsorted(ids, live), len(ids) - 1)
        kept = int(np.count_nonzero(ids[at] == live))
        changed = (len(live) - kept) + (len(ids) - kept)
    return changed <= UPDATE_SHARE * max(len(ids), 1)


def _with_ids(raw: list[Cluster], decided: list[Cluster]) -> list[Cluster]:
    """The clusters as cut, with the ids and merges their decided forms were labelled with."""
    return [replace(c, cluster_id=d.cluster_id, merged_from=d.merged_from)
            for c, d in zip(raw, decided, strict=True)]


@contextmanager
def _no_gc_pauses() -> Iterator[None]:
    """Defer Python's cyclic garbage collector for a short, allocation-heavy step.

    A cut makes tens of thousands of cluster and member objects while the project keeps
    rows of the clustered texts: the collector's full passes over all of them took about a
    third of a re-cut at 100k rows. What the step frees has no cycles; collection resumes
    right after."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class Clusters:
    """The neighbour graph, cuts of it at a threshold, verdicts over them, review plots."""

    def __init__(self, store: Store, vectors: Vectors, kept_rows: RowsByText,
                 ids: ClusterIds) -> None:
        self._store = store
        self._vectors = vectors
        self._kept = kept_rows
        self._ids = ids
        self._graph: KnnGraph | None = None
        self._graph_key: tuple | None = None
        self._update: _Updated | None = None     # how the graph changed since the last cut
        self._last: LastCut | None = None        # the last cut, kept for the next import
        # One graph update or cut at a time: the window cuts on its review thread while an
        # import's job places the new rows (`follow_imports`) on another.
        self._lock = threading.RLock()
        self._saving: GraphSave | None = None   # the graph being written, under _lock

    def graph(self, k: int = DEFAULT_NEIGHBOURS, *, progress: ProgressCallback = no_progress,
              cancel: CancelToken | None = None) -> KnnGraph:
        """Each text's k nearest others, completed with every pair at the graph's floor (0.75)
        or above where a text has more than k (`engine.dedup.graph`); cached in memory and in
        the project file, keyed by the saved index it was built from. When the index gained
        or lost texts since the graph was made, the graph is updated for them
        (`engine.dedup.graph_update`) instead of built again."""
        with self._lock:
            return self._then_saved(self._graph_now, k, progress, cancel)

    def _graph_now(self, k: int, progress: ProgressCallback, cancel: CancelToken | None
                   ) -> KnnGraph:
        index = self._vectors.index()
        model_id = self._vectors.model_id()
        with self._store.read() as conn:
            signature = saved_row(conn, model_id)
        stamp = (f"{signature['sha256'] if signature else 'unsaved'}:{len(index)}:{k}"
                 f":{DEFAULT_FLOOR}")
        key = (model_id, stamp)
        if self._graph is not None and self._graph_key == key:
            return self._graph
        name = f"knn/{model_id}/{k}"
        graph = None
        if signature is not None and self._store.get_meta(name) == stamp:
            graph = self._stored(name, k=k, labels=index.ids())
        if graph is None and not self._store.is_file and not self._store.read_only \
                and signature is not None:
            graph = self._build_once_per_team(index, k, name, stamp, progress, cancel)
        if graph is not None:   # read back: which texts are documents is not kept
            graph = marked_documents(self._store, model_id, graph)
        else:
            graph = self._make(index, k, name, progress, cancel)
            if not self._store.read_only and signature is not None:
                # Kept for the next review, written on another thread while the cut goes
                # on (`_then_saved` waits for it): see `GraphSave`.
                self._saving = GraphSave(self._store, name, stamp, graph)
        self._graph, self._graph_key = graph, key
        return graph

    def forget_graph(self) -> None:
        """Drop the active model's graph (memory and project): texts' vectors changed in
        place (`engine.reread`), which an update, seeing no text come or go, would miss."""
        with self._lock:
            model_id = self._vectors.model_id()
            self._graph = self._graph_key = self._update = None
            self._last = None
            if self._store.read_only:
                return
            with self._store.write() as conn:
                delete_blobs_under(conn, f"knn/{model_id}/")

    def _then_saved(self, work, *args):
        """`work(*args)`, then wait for the graph it started writing, if any (its error, not
        a full disk, is raised here unless `work` raised its own)."""
        try:
            result = work(*args)
        except BaseException:
            saving, self._saving = self._saving, None
            if saving is not None:
                with suppress(Exception):
                    saving.wait()
            raise
        saving, self._saving = self._saving, None
        if saving is not None:
            saving.wait()
        return result

    def _stored(self, name: str, *, k: int | None = None,
                labels: np.ndarray | None = None) -> KnnGraph | None:
        """The graph stored under `name`, checked before anything indexes with it
        (`engine.dedup.graph_check`: `k` and the index's `labels` where given); None when
        there is none, or another layout, or a crafted or damaged one: built again."""
        with self._store.read() as conn:
            data = get_blob(conn, name)
        try:
            return KnnGraph.from_bytes(data, k=k, labels=labels) if data else None
        except (ValueError, KeyError, OSError):
            return None

    def _make(self, index, k: int, name: str, progress: ProgressCallback,
              cancel: CancelToken | None) -> KnnGraph:
        """The graph of the index's texts now: updated from the last one made for this model
        (in memory, else the one stored) when few texts came or went, else built whole;
        then its document edges scored from their windows (`scored_for_documents`)."""
        graph = self._from_vectors(index, k, name, progress, cancel)
        scored = scored_for_documents(self._store, self._vectors.model_id(), index.dim,
                                      graph, self._vectors.bulk_reader)
        if self._update is not None and self._update.after is graph:   # the cut's "after"
            self._update = replace(self._update, after=scored)
        return scored

    def _from_vectors(self, index, k: int, name: str, progress: ProgressCallback,
                      cancel: CancelToken | None) -> KnnGraph:
        """The graph as the texts' vectors find it (before documents are scored)."""
        model_id = self._vectors.model_id()
        base = self._graph if (self._graph is not None and self._graph_key is not None
                               and self._graph_key[0] == model_id and self._graph.k == k) \
            else None
        if base is None:
            stored = self._stored(name)
            base = stored if stored is not None and stored.k == k else None
        live = _live_ids(index)
        if base is None or base.floor != DEFAULT_FLOOR or not _few_changed(base, live):
            self._update = None
            return self._build(index, k, progress, cancel)
        with self._vectors.bulk_reader(model_id, index.dim) as vectors:
            update = update_graph(base, index, live, vectors=vectors, progress=progress,
                                  cancel=cancel)
        earlier = self._update
        if earlier is not None and earlier.after is base:   # two updates since the last cut
            touched = np.union1d(earlier.touched, update.touched)
            self._update = _Updated(earlier.before, update.graph, touched)
        else:
            self._update = _Updated(base, update.graph, update.touched)
        return update.graph

    def _build(self, index, k: int, progress: ProgressCallback,
               cancel: CancelToken | None) -> KnnGraph:
        with self._store.read() as conn:
            live = np.fromiter(item_store.live_text_ids(conn), dtype=np.int64)
        with self._vectors.bulk_reader(self._vectors.model_id(), index.dim) as vectors:
            return build_knn_graph(index, k, np.intersect1d(index.ids(), live),
                                   vectors=vectors, progress=progress, cancel=cancel)

    def _build_once_per_team(self, index, k: int, name: str, stamp: str,
                             progress: ProgressCallback, cancel: CancelToken | None
                             ) -> KnnGraph:
        """The graph made once per team (`build_once_per_team`)."""
        return build_once_per_team(self._store, name, stamp, k, index.ids(),
                                   lambda: self._make(index, k, name, progress, cancel))

    def cut(self, threshold: float = DEFAULT_THRESHOLD, k: int = DEFAULT_NEIGHBOURS, *,
            verdicts: bool = True, progress: ProgressCallback = no_progress,
            cancel: CancelToken | None = None) -> list[Cluster]:
        """Duplicate clusters at `threshold`, biggest first; re-cutting reuses the graph.

        With `verdicts`, the analyst's stored verdicts are laid over the cut
        (`review.verdict_overlay`: canonical choices lead, no two rows judged "not
        duplicate" stay together, a cluster left with one row is none; then
        `review.verdict_joins`: rows judged "duplicate" share a cluster unless a "not"
        forbids it); without, the clusters are exactly as cut, which is what
        `apply_verdicts` takes. Either way
        each cluster carries its stored id (`ClusterIds.label`, decided on the clusters as
        the verdicts make them), and the cut is recorded as the project's assignment.

        After an import (or a deletion) at the threshold of the last cut, only what changed
        is cut and built again (`engine.dedup.recut`, `engine.dedup.last_cut`); the result
        is the same as cutting it all.
        """
        raw, decided = self.cut_both(threshold, k, progress=progress, cancel=cancel)
        return decided if verdicts else raw

    def cut_both(self, threshold: float = DEFAULT_THRESHOLD, k: int = DEFAULT_NEIGHBOURS, *,
                 progress: ProgressCallback = no_progress, cancel: CancelToken | None = None
                 ) -> tuple[list[Cluster], list[Cluster]]:
        """(as cut, as decided) of one cut: `cut(verdicts=False)` and `cut()` at once, for
        the review, which keeps both (a verdict given there is laid over the cluster as cut)."""
        if not 0.0 < threshold <= 1.0:
            raise InputError(f"threshold must be between 0 and 1, not {threshold}")
        with self._lock:
            made = self._then_saved(self._cut_with_graph, threshold, k, progress, cancel)
        # A cluster the verdicts left with one row is none (the rows moved out of it are in
        # no cluster either), nor is one a "duplicate" verdict joined to another: what every
        # view, count and export reads.
        return made.raw, [c for c in (*made.decided, *made.extra) if len(c.members) > 1]

    def _cut_with_graph(self, threshold: float, k: int, progress: ProgressCallback,
                        cancel: CancelToken | None) -> LastCut:
        graph = self._graph_now(k, progress, cancel)
        with _no_gc_pauses():
            with self._store.read() as conn:
                self._kept.check(change_counters.read(conn, change_counters.ROWS))
                decided_by = verdict_store.fingerprint(conn)
                joining = verdict_store.duplicate_pairs(conn)
            touched = self._kept.take_touched()
            last, update = self._last, self._update
            same = last is not None and last.threshold == threshold and last.k == k \
                and last.verdicts == decided_by and touched is not None \
                and last.ids_change_count == self._ids.stored()
            if same and update is not None and update.before is last.state.graph \
                    and update.after is graph:
                made = self._cut_again(last, graph, update.touched, touched, joining)
            elif same and last.state.graph is graph:
                made = self._cut_again(last, graph, np.zeros(0, np.int64), touched, joining)
            else:
                made = self._cut_whole(graph, threshold, k, decided_by, joining)
            made.ids_change_count = self._ids.seen()
            self._last, self._update = made, None
        return made

    def _cut_whole(self, graph: KnnGraph, threshold: float, k: int, decided_by: tuple,
                   joining: list[tuple[int, int, int, int]]) -> LastCut:
        state = full_cut(graph, threshold)
        text_clusters = as_ids(state.clusters, graph.ids)
        clustered = {t for ids, _ in text_clusters for t in ids}
        with self._store.read() as conn:
            exact = [t for t in self._kept.texts_with_copies(conn) if t not in clustered]
            # Texts that join when the slider moves down a little are read now, with the
            # rest, so that the next re-cut reads nothing (one read instead of two).
            nearby = texts_near(graph, round(threshold - PREFETCH_MARGIN, 6))
            rows = self._kept.rows(conn, [*clustered, *exact], also=nearby)
        keyed = rank_row_clusters(expand_keyed(text_clusters, rows, exact, self._kept.member))
        raw = [Cluster("", ms) for _, ms in keyed]
        decided, extra = self._decided(raw, joining, graph, threshold=threshold)
        raw = _with_ids(raw, decided)
        return LastCut(state, k, decided_by, [key for key, _ in keyed], raw, decided,
                       extra=extra)

    def _cut_again(self, last: LastCut, graph: KnnGraph, touched_texts: np.ndarray,
                   touched_rows: set[int], joining: list[tuple[int, int, int, int]]
                   ) -> LastCut:
        """The cut at the last cut's threshold after rows came or went: the text clusters
        replayed where the graph changed, row clusters built only where they changed. A
        cluster holding a row judged "duplicate" of another is always built: what it joins
        depends on other clusters (`engine.review.verdict_joins`); few clusters hold one."""
        touched_rows = touched_rows | {t for *_, ta, tb in joining for t in (ta, tb)}
        again = recut_clusters(last.state, graph, touched_texts)
        with self._store.read() as conn:
            exact = texts_in_no_cluster(self._kept.texts_with_copies(conn),
                                        again.state.clusters, graph.ids)
            what = plan(last, again.state.clusters, graph.ids, again.changed, exact,
                        touched_rows)
            wanted = [t for ids, _ in what.build_text for t in ids] + what.build_exact
            rows = self._kept.rows(conn, wanted)
        built = expand_keyed(what.build_text, rows, what.build_exact, self._kept.member)
        raw = [Cluster("", ms) for _, ms in built]
        decided, extra = self._decided(
            raw, joining, graph, threshold=last.threshold, every_cluster=False,
            released=[*what.released, *(i for c in last.extra for i in c.item_ids())])
        raw = _with_ids(raw, decided)
        keys, raw, decided, ranks = assemble(last, what, built, raw, decided)
        return LastCut(again.state, last.k, last.verdicts, keys, raw, decided, ranks=ranks,
                       extra=extra)

    def _decided(self, raw: list[Cluster], joining: list[tuple[int, int, int, int]],
                 graph: KnnGraph, **label) -> tuple[list[Cluster], list[Cluster]]:
        """`raw` with the verdicts laid over each cluster, joined where "duplicate" verdicts
        tie clusters (or rows in none) together, and labelled with their ids: (one per
        cluster of `raw`, the clusters made of rows the cut left out)."""
        joined = self._joined(self.apply_verdicts(raw), joining, graph)
        labelled = self._ids.label([*joined.clusters, *joined.extra], **label)
        return labelled[:len(raw)], labelled[len(raw):]

    def _joined(self, decided: list[Cluster], joining: list[tuple[int, int, int, int]],
                graph: KnnGraph) -> Joined:
        """`join_by_verdicts` over the clusters holding a row of a "duplicate" verdict and
        the rows of those verdicts in no cluster (those whose text is in the graph: a row
        not encoded yet joins once it is)."""
        named = {i for a, b, *_ in joining for i in (a, b)}
        involved = [at for at, c in enumerate(decided) if not named.isdisjoint(c.item_ids())]
        held = {i for at in involved for i in decided[at].item_ids()}
        text_of = {i: t for a, b, ta, tb in joining for i, t in ((a, ta), (b, tb))}
        out = {i: t for i, t in text_of.items() if i not in held}
        known = set(graph.ids[np.isin(graph.ids, list(out.values()))].tolist()) if out else set()
        with self._store.read() as conn:
            rows = self._kept.rows(conn, sorted({t for t in out.values() if t in known}))
            loose = {item["id"]: self._kept.member(item, 0.0) for found in rows.values()
                     for item in found if item["id"] in out}
            ids = [*held, *loose]
            verdicts = verdict_store.verdicts_among(conn, ids) if loose or involved else {}
            chosen = verdict_store.canonical_among(conn, ids) if verdicts else set()
        if not verdicts:
            return Joined(decided)
        part = join_by_verdicts([decided[at] for at in involved], loose, verdicts, chosen,
                                self._similarities)
        joined = list(decided)
        for at, c in zip(involved, part.clusters, strict=True):
            joined[at] = c
        return Joined(joined, part.extra)

    def follow_imports(self, k: int = DEFAULT_NEIGHBOURS, *,
                       progress: ProgressCallback = no_progress,
                       cancel: CancelToken | None = None) -> tuple[float, list[Cluster]] | None:
        """After an import is encoded: cut again at the threshold the ids were last
        recorded at, so the new rows join their clusters (and take their ids) as part of
        that import; None when no cut was ever recorded (the first review does it)."""
        threshold = self._ids.recorded_threshold()
        if threshold is None:
            return None
        return threshold, self.cut(threshold, k, progress=progress, cancel=cancel)

    def apply_verdicts(self, clusters: list[Cluster]) -> list[Cluster]:
        """Clusters as cut → clusters as the analyst's stored verdicts and choices make them.

        A cluster none of whose rows has a verdict or a canonical choice is already what
        `apply_verdicts` would make of it (centre first, the rest by similarity, no
        verdicts), so it is passed on as it is: most clusters, most of the time.
        """
        ids = [i for c in clusters for i in c.item_ids()]
        with self._store.read() as conn:
            verdicts = verdict_store.verdicts_among(conn, ids)
            chosen = verdict_store.canonical_among(conn, ids)
        involved = chosen | {i for pair in verdicts for i in pair}
        if not involved:
            return clusters
        return [apply_verdicts(c, verdicts, chosen, self._similarities)
                if not involved.isdisjoint(c.item_ids()) else c for c in clusters]

    def _similarities(self, text_id: int, others) -> list[float]:
        """The one similarity of a text to others (`similarities_to`)."""
        index = self._vectors.index()
        return similarities_to(self._store, self._vectors.model_id(), index.dim, text_id,
                               list(others), self._vectors.vectors)

    # -- plots -----------------------------------------------------------------------------
    def histogram(self, k: int = DEFAULT_NEIGHBOURS, bins: int = 60) -> Histogram:
        """How similar each text is to its nearest other text, from the cached graph."""
        return similarity_histogram(self.graph(k).nearest_similarities(), bins)

    def map(self, threshold: float = DEFAULT_THRESHOLD, limit: int = MAP_SAMPLE,
            k: int = DEFAULT_NEIGHBOURS) -> EmbeddingMap:
        """A 2-D PCA map of (a sample of) the texts, coloured by cluster at `threshold`."""
        return cluster_map(self._store, self._vectors, self.graph(k), threshold, limit)

"""`ClustersModel`: the list of duplicate clusters, one line each, for the review screen.

A list model rather than widget items: tens of thousands of clusters at a low threshold are
only painted when visible, and one cluster changing after a verdict updates one row. Each
line starts with the cluster's stored id (`C000123`, the one exports write), and, while the
review shows what changed since an import, what changed ("new", "joined", "merged").
"""

from __future__ import annotations

from PySide6.QtCore import QAbstractListModel, QModelIndex, QPersistentModelIndex, Qt

from engine.dedup.row_clusters import Cluster

CLUSTER_ROLE = Qt.ItemDataRole.UserRole + 20

_Index = QModelIndex | QPersistentModelIndex


class ClustersModel(QAbstractListModel):
    def __init__(self, parent: object | None = None) -> None:
        super().__init__(parent)  # type: ignore[arg-type]
        self._clusters: list[Cluster] = []
        self._changes: dict[str, set[str]] = {}
        self._rows = 0
        self._reviewed = 0

    def set_clusters(self, clusters: list[Cluster],
                     changes: dict[str, set[str]] | None = None) -> None:
        """`changes`: cluster id -> what changed since an import, shown on its line."""
        self.beginResetModel()
        self._clusters = list(clusters)
        self._changes = dict(changes or {})
        self._rows = sum(len(c.members) for c in self._clusters)
        self._reviewed = sum(c.reviewed for c in self._clusters)
        self.endResetModel()

    def update(self, position: int, cluster: Cluster) -> None:
        """One cluster after a verdict; the counts follow it without a pass over all."""
        if 0 <= position < len(self._clusters):
            old = self._clusters[position]
            self._rows += len(cluster.members) - len(old.members)
            self._reviewed += int(cluster.reviewed) - int(old.reviewed)
            self._clusters[position] = cluster
            index = self.index(position)
            self.dataChanged.emit(index, index)

    def counts(self) -> tuple[int, int, int]:
        """(clusters, rows in them, clusters with a verdict on every member)."""
        return len(self._clusters), self._rows, self._reviewed

    def cluster(self, position: int) -> Cluster | None:
        return self._clusters[position] if 0 <= position < len(self._clusters) else None

    def position_of(self, cluster_id: str) -> int | None:
        for pos, c in enumerate(self._clusters):
            if c.cluster_id == cluster_id:
                return pos
        return None

    def rowCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008 - Qt's idiom
        return 0 if parent.isValid() else len(self._clusters)

    def data(self, index: _Index, role: int = Qt.ItemDataRole.DisplayRole) -> object:
        cluster = self.cluster(index.row()) if index.isValid() else None
        if cluster is None:
            return None
        if role == CLUSTER_ROLE:
            return cluster
        if role == Qt.ItemDataRole.DisplayRole:
            mark = "✓ " if cluster.reviewed else ""
            text = " ".join(cluster.canonical.text.split())
            changed = "".join(f"{kind} · " for kind in sorted(
                self._changes.get(cluster.cluster_id, ())))
            return (f"{mark}{cluster.cluster_id} · {changed}{len(cluster.members)} rows · "
                    f"{cluster.score:.2f} · {text}")
        if role == Qt.ItemDataRole.ToolTipRole:
            moved = f", {len(cluster.rejected)} moved out" if cluster.rejected else ""
            merged = (f"; {', '.join(cluster.merged_from)} merged into it"
                      if cluster.merged_from else "")
            return (f"Cluster {cluster.cluster_id}: {len(cluster.members)} rows{moved}; "
                    f"mean similarity to the canonical {cluster.score:.3f}{merged}\n\n"
                    f"{cluster.canonical.text}")
        return None

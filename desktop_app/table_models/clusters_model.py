"""`ClustersModel`: the list of duplicate clusters, one line each, for the review screen.

A list model rather than widget items: tens of thousands of clusters at a low threshold are
only painted when visible, and one cluster changing after a decision updates one row.
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
        self._rows = 0
        self._reviewed = 0

    def set_clusters(self, clusters: list[Cluster]) -> None:
        self.beginResetModel()
        self._clusters = list(clusters)
        self._rows = sum(len(c.members) for c in self._clusters)
        self._reviewed = sum(c.reviewed for c in self._clusters)
        self.endResetModel()

    def update(self, position: int, cluster: Cluster) -> None:
        """One cluster after a decision; the counts follow it without a pass over all."""
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

    def position_of(self, cluster_id: int) -> int | None:
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
            return f"{mark}{len(cluster.members)} rows · {cluster.score:.2f} · {text}"
        if role == Qt.ItemDataRole.ToolTipRole:
            moved = f", {len(cluster.rejected)} moved out" if cluster.rejected else ""
            return (f"Cluster {cluster.cluster_id}: {len(cluster.members)} rows{moved}; "
                    f"mean similarity to the canonical {cluster.score:.3f}\n\n"
                    f"{cluster.canonical.text}")
        return None

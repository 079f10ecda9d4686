"""The `Project` facade: an open project file and the services that work on it.

`Project` opens the store and owns what the services share (the active model, its index in
memory, the rows cuts keep, notices); each concern is a service reached as an attribute:

    project.model / .vectors       which model serves, loaded; encoding, the index, search
    project.rows                   importing, deleting, browsing rows
    project.clusters / .ids        clusters with the verdicts laid over them; their ids
    project.verdicts / .threshold  verdicts on pairs; the one threshold every cut uses
    project.versions / .exports    fine-tuning and model versions; spreadsheets out
    project.asking / .measuring    the pairs the model is least sure of; how right it is
    project.matching / .documents  a file's rows looked up; two long texts' shared passages

A new feature is a method on the one service it belongs to, or a new service, not a method
here; a sequence spanning services is an engine module (`engine.add_file`). `search` stays a
one-line delegate: the CLI and the window call it on every keystroke.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from engine.dedup.clustered_rows import RowsByText
from engine.keystroke_search import SearchHit
from engine.services.active_model import ActiveModel
from engine.services.asking import Asking
from engine.services.cluster_ids import ClusterIds
from engine.services.clusters import Clusters
from engine.services.documents import Documents
from engine.services.exports import Exports
from engine.services.live_index import LiveIndex
from engine.services.matching import Matching
from engine.services.measuring import Measuring
from engine.services.project_threshold import Threshold
from engine.services.rows import Rows
from engine.services.summary import summarize
from engine.services.vectors import Vectors
from engine.services.verdicts import Verdicts
from engine.services.versions import ModelVersions
from engine.store.database import Store


class Project:
    """An open Duplens project file; use `Project.open`, and `close()` (or `with`) after."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.notices: list[str] = []     # things the user should hear about (index rebuilt…)
        live = LiveIndex(store, self._notice)
        kept_rows = RowsByText()         # rows of clustered texts, kept between re-cuts
        self.model = ActiveModel(store, on_switch=live.drop_unless)
        self.vectors = Vectors(store, self.model, live)
        self.rows = Rows(store, live, kept_rows)
        self.verdicts = Verdicts(store, self.vectors)
        self.threshold = Threshold(store, self.model, self.verdicts)
        self.ids = ClusterIds(store, self._notice)
        self.clusters = Clusters(store, self.vectors, kept_rows, self.ids)
        verdicts, threshold = self.verdicts, self.threshold
        self.versions = ModelVersions(store, self.model, live, verdicts, self.clusters, threshold)
        self.documents = Documents(store, self.vectors, self.threshold)
        self.exports = Exports(store, self.documents)
        self.asking = Asking(store, self.vectors, self.clusters, verdicts, threshold, self.versions)
        self.matching = Matching(store, self.model, self.vectors, threshold)
        self.measuring = Measuring(store, self.model, self.vectors, self.clusters, verdicts,
                                   threshold)
        if store.snapshot:
            self._notice(f"{store.name}: the disk is full: opened as last saved, read-only, "
                         "until there is room again")

    @classmethod
    def open(cls, path: str | os.PathLike, **how: Any) -> Project:
        return cls(Store.open(path, **how))   # how: create, read_only, on_upgrade

    @property
    def path(self) -> Path:
        return self.store.path

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Project:
        return self

    def __exit__(self, *_exc) -> None:
        self.close()

    def _notice(self, message: str) -> None:
        logging.getLogger("duplens").warning(message)
        self.notices.append(message)

    def info(self) -> dict:
        """Counts and state, cheap: no model or index is loaded to answer."""
        return summarize(self.store, self.model.row())

    def search(self, text: str, k: int = 10) -> list[SearchHit]:
        """The k most similar existing rows (`Vectors.search`)."""
        return self.vectors.search(text, k)

"""`ExportLines`: the export's rows as lines: a page at a time as CSV bytes, or one by one.

An exported row is the row's original cells (its id column from the stored id) followed by
what the review found (`exports.ADDED_COLUMNS`). `line` builds it row by row for XLSX and
the filtered exports. `csv_page` turns a page of stored rows (`store.items.CellPage`) into
CSV bytes with Arrow: the JSON cells parsed by Arrow's JSON reader, every column encoded by
`engine.io.csv_columns`, the review's cells made once per placed row. That is what lets a
million-row export keep up with pandas (benchmarks/export_rows.py). The row-by-row path,
`line` through the csv module, is the definition: a page whose cells Arrow cannot read
exactly as `json.loads` does (a number or a NaN among them) is written that way
(`reference_page`), and tests/engine/services/test_export_lines.py checks on random hostile
cells that both write the bytes `writers.write_rows` writes.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Collection, Mapping, Sequence

import numpy as np

from engine.dedup.row_clusters import NOT_DUPLICATE, Cluster, Member
from engine.io.writers import neutralise_cell
from engine.store.items import CellPage

Placed = Mapping[int, tuple[Cluster, Member]]

_NO_REVIEW = ",,,,,"    # the six review columns of a row in no cluster, empty


class ExportLines:
    """The lines of one export: `sources` (id -> source row), the output's original
    `columns`, where each placed row sits in the cut (`placed`: item id -> (cluster,
    member)) and, for `csv_page`, the rows it leaves out (`drop`: item ids)."""

    def __init__(self, sources: Mapping[int, dict], columns: Sequence[str],
                 placed: Placed, drop: Collection[int] = (), threshold: str = "",
                 documents: Mapping[int, tuple[float, float, float]] | None = None) -> None:
        self._sources = sources
        # Where the project holds documents: each row's (resemblance, share in canonical,
        # share of canonical) against its cluster's canonical (`DOCUMENT_COLUMNS`).
        self._documents = documents
        self._threshold = threshold   # the cut's threshold, as the last column says it
        self._columns = list(columns)
        self._placed = placed
        self._dropped = frozenset(drop)
        self._drop = np.fromiter(self._dropped, dtype=np.int64, count=len(self._dropped))
        self._review: dict[int, str] | None = None   # item id -> its review fields as CSV

    def line(self, item: dict) -> list[object]:
        """One output row from a stored row (`extra` parsed): the original cells (missing
        ones empty) and the review's columns."""
        cells = dict(item["extra"])
        id_column = self._sources[item["source_id"]]["id_column"]
        if id_column:
            cells[id_column] = item["ext_id"] or ""
        line: list[object] = ["" if (v := cells.get(c)) is None else v for c in self._columns]
        first_seen = item["source_id"]   # the import (batch) that brought the row
        return [*line, *review_cells(self._placed.get(item["id"])), first_seen,
                self._threshold, *self._document_cells(item["id"])]

    def _document_cells(self, item_id: int) -> list[object]:
        """The document columns of a row: none in a project of questions; empty for a row
        with no long text in its pair, or no pair (a canonical, a row in no cluster)."""
        if self._documents is None:
            return []
        found = self._documents.get(item_id)
        return ["", "", ""] if found is None else [round(v, 4) for v in found]

    def csv_page(self, page: CellPage) -> tuple[bytes | memoryview, int]:
        """The page's kept rows as CSV bytes, computed column by column with Arrow, and how
        many; the same bytes as `reference_page`, which it falls back on when Arrow cannot
        read the cells exactly as `json.loads` does (only strings and nulls are taken)."""
        import pyarrow as pa

        try:
            return self._arrow_page(page)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            return self.reference_page(page)

    def reference_page(self, page: CellPage) -> tuple[bytes, int]:
        """The page's kept rows as the csv module writes them (excel dialect,
        neutralised), and how many: the definition `csv_page` must match."""
        out = io.StringIO()
        writer = csv.writer(out)
        kept = 0
        for item_id, source_id, ext_id, cells in page.rows():
            if item_id in self._dropped:
                continue
            item = {"id": item_id, "source_id": source_id, "ext_id": ext_id,
                    "extra": json.loads(cells)}
            writer.writerow([neutralise_cell(v) for v in self.line(item)])
            kept += 1
        return out.getvalue().encode("utf-8"), kept

    def _arrow_page(self, page: CellPage) -> tuple[memoryview, int]:
        import pyarrow as pa
        import pyarrow.compute as pc

        from engine.io.csv_columns import csv_lines, csv_text_fields

        keep = (pa.array(~np.isin(page.ids, self._drop)) if len(self._drop) else None)
        ids = page.ids if keep is None else page.ids[keep.to_numpy(zero_copy_only=False)]
        if len(ids) == 0:
            return memoryview(b""), 0
        batch = pa.array(page.source_ids)
        stored_ids = None
        fields = []
        if self._columns:
            table = _parse_cells(page.cells, self._columns)
            if table.num_rows != len(page.ids):
                raise pa.ArrowInvalid("the cells are not one JSON text a line")
            for name in self._columns:
                column = table.column(name).combine_chunks()
                owners = self._id_column_sources(name)
                if owners:
                    if stored_ids is None:
                        stored_ids = pc.fill_null(pa.array(page.ext_ids, pa.string()), "")
                    column = pc.if_else(pc.is_in(batch, value_set=pa.array(owners, pa.int64())),
                                        stored_ids, column)
                fields.append(csv_text_fields(column if keep is None
                                              else pc.filter(column, keep)))
        if keep is not None:
            batch = pc.filter(batch, keep)
        review = self._review_fields()
        fields.append(pa.array([review.get(i, _NO_REVIEW) for i in ids.tolist()], pa.string()))
        fields.append(pc.cast(batch, pa.string()))      # first_seen: never text, never quoted
        fields.append(pa.array([self._threshold] * len(ids), pa.string()))   # a number
        if self._documents is not None:
            cells = [self._document_cells(i) for i in ids.tolist()]
            for n in range(3):                   # numbers as `line` writes them, or empty
                fields.append(pa.array([str(c[n]) for c in cells], pa.string()))
        return csv_lines(fields), len(ids)

    def _id_column_sources(self, name: str) -> list[int]:
        """The sources whose id column is `name`: their rows take the stored id there."""
        return [sid for sid, s in self._sources.items()
                if s["id_column"] and s["id_column"] == name]   # as `line`: "" is none

    def _review_fields(self) -> dict[int, str]:
        """Each placed row's six review cells as CSV text, made once per export (only rows
        in a cluster have any)."""
        if self._review is None:
            # Here, not at the top: csv_columns imports pyarrow, which `info` and `search`,
            # importing the project's services, should not wait for.
            from engine.io.csv_columns import csv_field

            self._review = {}
            words: dict[object, str] = {}     # the few distinct verdicts and flags
            last = None
            for item_id, found in self._placed.items():
                cluster, member = found
                if cluster is not last:       # `placed` lists a cluster's rows together
                    last, cluster_id, canonical_id = (cluster, csv_field(cluster.cluster_id),
                                                      csv_field(cluster.canonical.id))
                _, _, _, score, canonical, verdict = review_cells(found)
                if (canonical, verdict) not in words:
                    words[canonical, verdict] = f"{csv_field(canonical)},{csv_field(verdict)}"
                self._review[item_id] = (
                    f"{cluster_id},{canonical_id},{canonical_id if is_dropped(found) else ''},"
                    f"{csv_field(score)},{words[canonical, verdict]}")
        return self._review


def review_cells(found: tuple[Cluster, Member] | None) -> list[object]:
    """cluster_id, canonical_id, duplicate_of, similarity, is_canonical, decision (the
    export's column names; `decision` holds the member's `verdict`)."""
    if found is None:
        return ["", "", "", "", "", ""]
    cluster, m = found
    canonical = m.item_id == cluster.canonical.item_id
    duplicate = is_dropped(found)
    return [cluster.cluster_id, cluster.canonical.id,
            cluster.canonical.id if duplicate else "", round(m.score, 4), canonical,
            m.verdict or "unreviewed"]


def is_dropped(found: tuple[Cluster, Member] | None) -> bool:
    """A duplicate the deduplicated form leaves out: in a cluster, not its canonical, and
    not moved out by the analyst (a verdict that moves a row out takes it out of the
    cluster, `verdict_overlay`; such a row is in no cluster and stays)."""
    if found is None:
        return False
    cluster, m = found
    return m.item_id != cluster.canonical.item_id and m.verdict != NOT_DUPLICATE


def _parse_cells(ndjson: bytes, columns: Sequence[str]):
    """The JSON cells of a page (one object a line) as a table of string columns, in
    `columns`' order; keys outside them ignored, as the row-by-row path does. A value that
    is not a string or null raises, so that page takes the reference path."""
    import pyarrow as pa
    import pyarrow.json as pj

    schema = pa.schema([(name, pa.string()) for name in columns])
    return pj.read_json(
        pa.BufferReader(ndjson),
        read_options=pj.ReadOptions(use_threads=True, block_size=1 << 20),
        parse_options=pj.ParseOptions(explicit_schema=schema,
                                      unexpected_field_behavior="ignore"))

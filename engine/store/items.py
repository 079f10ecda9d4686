"""Reading and writing texts and items (the imported rows); the imports themselves (sources)
are `engine.store.sources`."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import (
    ColumnElement,
    Connection,
    Result,
    String,
    Text,
    and_,
    cast,
    func,
    insert,
    or_,
    select,
)

from engine.store.dialects import binary_order, insert_missing, leading_number
from engine.store.schema import items, texts

# NumPy is imported where ids are gathered into arrays: `duplens info` reads counts only.
if TYPE_CHECKING:
    import numpy as np

# Stay well under every database's limit on bound parameters in one statement.
_IN_BATCH = 500
_ID_SLICE = 2_000    # ids read per step when ordering a table: about a millisecond of GIL


@dataclass(frozen=True)
class NewRow:
    """One spreadsheet row ready to store."""

    row: int
    ext_id: str | None
    text: str
    norm_key: str
    extra: dict[str, str]


def text_ids_for_keys(conn: Connection, keys: Iterable[str]) -> dict[str, int]:
    """Existing text ids of the given normalised keys."""
    keys = list(dict.fromkeys(keys))
    found: dict[str, int] = {}
    for start in range(0, len(keys), _IN_BATCH):
        batch = keys[start:start + _IN_BATCH]
        found.update(conn.execute(
            select(texts.c.norm_key, texts.c.id).where(texts.c.norm_key.in_(batch))
        ).all())
    return found


def add_rows(conn: Connection, source_id: int, rows: Sequence[NewRow]) -> int:
    """Store rows, creating a text for each new normalised form; returns new texts created.

    A text another process created meanwhile (two analysts importing overlapping files) is
    used, not created twice: the insert skips taken keys and the ids are read afterwards.
    New texts go in key order, so two such imports wait for each other's keys in one order.
    """
    known = text_ids_for_keys(conn, (r.norm_key for r in rows))
    new_texts = {}
    for r in rows:
        if r.norm_key not in known and r.norm_key not in new_texts:
            new_texts[r.norm_key] = r.text
    created = 0
    if new_texts:
        created = insert_missing(conn, texts, [{"norm_key": k, "text": new_texts[k]}
                                               for k in sorted(new_texts)], ["norm_key"])
        known.update(text_ids_for_keys(conn, new_texts))
    conn.execute(insert(items), [
        {"source_id": source_id, "row": r.row, "ext_id": r.ext_id, "text": r.text,
         "text_id": known[r.norm_key], "extra": r.extra, "deleted": False}
        for r in rows
    ])
    return created


def text_ids_of_rows(conn: Connection, item_ids: Sequence[int]) -> set[int]:
    found: set[int] = set()
    for start in range(0, len(item_ids), _IN_BATCH):
        found.update(conn.execute(select(items.c.text_id).where(
            items.c.id.in_(list(item_ids[start:start + _IN_BATCH])))).scalars())
    return found


def text_ids_of_source(conn: Connection, source_id: int) -> set[int]:
    return set(conn.execute(select(items.c.text_id).where(items.c.source_id == source_id)
                            .distinct()).scalars())


def live_row_counts(conn: Connection, text_ids: Sequence[int]) -> dict[int, int]:
    """text id -> its live rows, for these texts (those with none left out)."""
    found: dict[int, int] = {}
    wanted = list(text_ids)
    for start in range(0, len(wanted), _IN_BATCH):
        found.update(conn.execute(
            select(items.c.text_id, func.count()).where(
                items.c.text_id.in_(wanted[start:start + _IN_BATCH]), ~items.c.deleted)
            .group_by(items.c.text_id)).all())
    return found


def count_items(conn: Connection) -> int:
    return conn.execute(select(func.count()).select_from(items).where(~items.c.deleted)).scalar()


def count_texts(conn: Connection) -> int:
    """Distinct live texts, i.e. what has to be encoded and indexed."""
    return conn.execute(
        select(func.count(func.distinct(items.c.text_id))).where(~items.c.deleted)
    ).scalar()


def live_text_ids(conn: Connection) -> set[int]:
    return set(conn.execute(
        select(items.c.text_id).where(~items.c.deleted).distinct()
    ).scalars())


def texts_by_id(conn: Connection, text_ids: Sequence[int]) -> dict[int, str]:
    out: dict[int, str] = {}
    for start in range(0, len(text_ids), _IN_BATCH):
        batch = list(text_ids[start:start + _IN_BATCH])
        out.update(conn.execute(
            select(texts.c.id, texts.c.text).where(texts.c.id.in_(batch))
        ).all())
    return out


def items_for_texts(conn: Connection, text_ids: Sequence[int]) -> dict[int, list[dict]]:
    """Live items of each text, oldest first (the first is the text's representative)."""
    out: dict[int, list[dict]] = {}
    cols = (items.c.id, items.c.text_id, items.c.source_id, items.c.row, items.c.ext_id,
            items.c.text)
    names = [c.name for c in cols]
    for start in range(0, len(text_ids), _IN_BATCH):
        batch = list(text_ids[start:start + _IN_BATCH])
        rows = conn.execute(
            select(*cols).where(items.c.text_id.in_(batch), ~items.c.deleted)
            .order_by(items.c.id)
        ).all()
        # Plain tuples zipped into dicts: a RowMapping per row, then a dict of it, took
        # twice as long (a first cut at 100k rows reads about 80k texts' rows).
        for r in rows:
            out.setdefault(r[1], []).append(dict(zip(names, r, strict=True)))
    return out


def texts_with_copies(conn: Connection) -> list[int]:
    """Texts shared by more than one live row: exact duplicates."""
    return list(conn.execute(
        select(items.c.text_id).where(~items.c.deleted).group_by(items.c.text_id)
        .having(func.count() > 1)
    ).scalars())


def items_by_ids(conn: Connection, item_ids: Sequence[int]) -> dict[int, dict]:
    """Whole rows (with their other columns) for export and display."""
    out: dict[int, dict] = {}
    for start in range(0, len(item_ids), _IN_BATCH):
        batch = list(item_ids[start:start + _IN_BATCH])
        for r in conn.execute(select(items).where(items.c.id.in_(batch))).mappings():
            out[r["id"]] = dict(r)
    return out


def mark_items_deleted(conn: Connection, item_ids: Sequence[int]) -> set[int]:
    """Flag rows as deleted; returns the texts that no live row uses any more."""
    touched: set[int] = set()
    for start in range(0, len(item_ids), _IN_BATCH):
        batch = list(item_ids[start:start + _IN_BATCH])
        touched.update(conn.execute(
            select(items.c.text_id).where(items.c.id.in_(batch))).scalars())
        conn.execute(items.update().where(items.c.id.in_(batch)).values(deleted=True))
    still_used = set()
    touched_list = list(touched)
    for start in range(0, len(touched_list), _IN_BATCH):
        batch = touched_list[start:start + _IN_BATCH]
        still_used.update(conn.execute(
            select(items.c.text_id).where(items.c.text_id.in_(batch), ~items.c.deleted)
        ).scalars())
    return touched - still_used


def items_page(conn: Connection, offset: int, limit: int) -> list[dict]:
    """One page of live rows in import order, for virtualised tables over huge projects."""
    cols = (items.c.id, items.c.source_id, items.c.row, items.c.ext_id, items.c.text,
            items.c.text_id, items.c.extra)
    return [dict(r) for r in conn.execute(
        select(*cols).where(~items.c.deleted).order_by(items.c.id).offset(offset).limit(limit)
    ).mappings()]



def items_after(conn: Connection, after_id: int, limit: int) -> list[dict]:
    """Up to `limit` live rows with ids above `after_id`, in import order, whole (for
    export). Keyset paging: each page is one index range scan, where OFFSET would rescan
    every earlier row and make a million-row export quadratic."""
    cols = (items.c.id, items.c.source_id, items.c.row, items.c.ext_id, items.c.extra)
    return [dict(r) for r in conn.execute(
        select(*cols).where(items.c.id > after_id, ~items.c.deleted)
        .order_by(items.c.id).limit(limit)
    ).mappings()]


@dataclass(frozen=True)
class CellPage:
    """A page of live rows for the every-row CSV export, by column: ids (ascending), the
    import each came from, the id column's values, and the original cells as JSON texts,
    one a line (`cells`: exactly one line per row, no line break inside one)."""

    ids: np.ndarray           # int64
    source_ids: np.ndarray    # int64
    ext_ids: list[str | None]
    cells: bytes

    def rows(self) -> list[tuple[int, int, str | None, bytes]]:
        """The page as one tuple per row (id, source_id, ext_id, JSON cells)."""
        return list(zip(self.ids.tolist(), self.source_ids.tolist(), self.ext_ids,
                        self.cells.split(b"\n"), strict=True))


def cell_page_after(conn: Connection, after_id: int, limit: int) -> CellPage | None:
    """Up to `limit` live rows with ids above `after_id` (None when there are none), for
    the every-row CSV export (`services.export_lines`), which parses a whole page's cells at
    once. On SQLite the database hands the page over as one row of aggregated text, built
    while the GIL is free (an export reads in one thread and encodes in another), where a
    Python tuple per row cost most of a million-row export's time; on PostgreSQL, and on a
    page the aggregate cannot carry exactly, the driver's plain tuples are used."""
    if conn.dialect.name == "sqlite":
        count, page = _sqlite_cell_page(conn, after_id, limit)
        if not count or page is not None:
            return page
    cols = (items.c.id, items.c.source_id, items.c.ext_id, cast(items.c.extra, Text))
    rows = _driver_rows(conn, select(*cols).where(items.c.id > after_id, ~items.c.deleted)
                        .order_by(items.c.id).limit(limit))
    if not rows:
        return None
    ids, source_ids, ext_ids, cells = zip(*rows, strict=True)
    # A JSON text stored with a line break in it (not one SQLAlchemy wrote) is written
    # again on one line: the same cells, one line per row.
    lines = [c if "\n" not in c else json.dumps(json.loads(c)) for c in cells]
    import numpy as np

    return CellPage(np.array(ids, dtype=np.int64), np.array(source_ids, dtype=np.int64),
                    list(ext_ids), "\n".join(lines).encode("utf-8"))


_SQLITE_PAGE = (
    "SELECT count(*), group_concat(id), group_concat(source_id), json_group_array(ext_id),"
    " group_concat(extra, char(10)) FROM (SELECT id, source_id, ext_id, extra FROM items"
    " WHERE id > ? AND NOT deleted ORDER BY id LIMIT ?)")


def _sqlite_cell_page(conn: Connection, after_id: int, limit: int
                      ) -> tuple[int, CellPage | None]:
    """The page's row count and the page as SQLite aggregates it (every aggregate sees the
    rows in the same order); no page when what came back is not exactly one ascending id,
    source, id value and line of cells per row (then the caller reads tuples)."""
    cursor = conn.connection.cursor()
    try:
        count, ids, source_ids, ext_ids, cells = cursor.execute(
            _SQLITE_PAGE, (after_id, limit)).fetchone()
    finally:
        cursor.close()
    if not count:
        return 0, None
    import numpy as np

    page = CellPage(np.fromstring(ids, dtype=np.int64, sep=","),
                    np.fromstring(source_ids, dtype=np.int64, sep=","),
                    json.loads(ext_ids), cells.encode("utf-8"))
    exact = (len(page.ids) == len(page.source_ids) == len(page.ext_ids) == count
             and page.cells.count(b"\n") == count - 1 and bool(np.all(np.diff(page.ids) > 0)))
    return count, page if exact else None


def _driver_rows(conn: Connection, stmt) -> list[tuple]:
    """`stmt`'s rows as the DB-API driver returns them (plain tuples, no type processing:
    only for columns whose driver values are already what the caller wants), read inside
    `conn`'s transaction."""
    compiled = stmt.compile(dialect=conn.dialect)
    params = (tuple(compiled.params[name] for name in compiled.positiontup)
              if compiled.positional else compiled.params)
    cursor = conn.connection.cursor()
    try:
        cursor.execute(str(compiled), params)
        return cursor.fetchall()
    finally:
        cursor.close()


# -- browsing: which live rows a table shows, in which order ---------------------------------
def row_filter(text_filter: str, columns: Sequence[str] | None) -> ColumnElement[bool]:
    """Live rows whose text, or one of `columns`' cells, contains `text_filter` (any case).

    `columns=None` looks at the text only. `%` and `_` are matched literally. JSON cell
    lookups compile per dialect (SQLite json_extract, PostgreSQL ->>).
    """
    condition: ColumnElement[bool] = ~items.c.deleted
    if not text_filter:
        return condition
    matches = [items.c.text.icontains(text_filter, autoescape=True)]
    matches += [items.c.extra[c].as_string().icontains(text_filter, autoescape=True)
                for c in columns or ()]
    return and_(condition, or_(*matches))


IdSink = Callable[["np.ndarray"], object]   # gets each slice of ids as it is read, in order


def filtered_item_ids(conn: Connection, condition: ColumnElement[bool], *,
                      descending: bool = False, on_part: IdSink | None = None) -> np.ndarray:
    """Ids of the rows matching `condition`, in import (id) order, as int64."""
    order = items.c.id.desc() if descending else items.c.id.asc()
    return _id_array(conn.execute(select(items.c.id).where(condition).order_by(order)),
                     on_part)


def sort_value(key: str) -> ColumnElement:
    """The value rows are sorted on for `key`: "text", "public_id" (the row's own id, else
    its row number) or an original column's name (a JSON cell, compiled per dialect)."""
    if key == "text":
        return items.c.text
    if key == "public_id":
        return func.coalesce(func.nullif(items.c.ext_id, ""), cast(items.c.row, String))
    return items.c.extra[key].as_string()


def sample_sort_values(conn: Connection, key: str, condition: ColumnElement[bool],
                       limit: int) -> list:
    """Up to `limit` non-empty values of `key`, to tell numbers from words before sorting."""
    value = sort_value(key)
    return list(conn.execute(
        select(value).where(condition, value.is_not(None), value != "").limit(limit)
    ).scalars())


def sorted_item_ids(conn: Connection, key: str, condition: ColumnElement[bool], *,
                    numeric: bool, descending: bool,
                    on_part: IdSink | None = None) -> np.ndarray:
    """Ids of the rows matching `condition` sorted by `key`'s value, as numbers or as
    lower-cased text, outer spaces ignored; empty values last either way; ties in import
    order. The database
    sorts (in C, on its own temporary storage): only ids come back."""
    value = sort_value(key)
    value = func.trim(value)   # a cell's leading spaces must not decide its place
    empty = or_(value.is_(None), value == "")
    # "1,200": thousands separators are dropped, as `engine.browse.looks_numeric` does
    # the number a cell starts with (else 0), the same on both dialects (see store.dialects)
    sort_key = (leading_number(func.replace(value, ",", "")) if numeric
                else binary_order(func.lower(value)))
    sort_key = sort_key.desc() if descending else sort_key.asc()
    return _id_array(conn.execute(select(items.c.id).where(condition)
                                  .order_by(empty, sort_key, items.c.id)), on_part)


def _id_array(result: Result, on_part: IdSink | None = None) -> np.ndarray:
    """A one-column result of ids as int64, read in slices: the driver and SQLAlchemy's
    compiled row code never release the GIL within one call, so reading a million ids in
    one go would freeze the window for seconds; between slices other threads run.
    `on_part` sees each slice at once: a million ids take seconds to read (2.7 s measured
    on a 1M-row project), the first slice a millisecond, so a table shows rows at once."""
    import numpy as np

    parts = []
    for part in result.partitions(_ID_SLICE):
        ids = np.fromiter((row[0] for row in part), dtype=np.int64, count=len(part))
        parts.append(ids)
        if on_part is not None:
            on_part(ids)
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def public_id(item: dict) -> str:
    """What users call a row: their own id when they gave an id column, else its row number."""
    return str(item["ext_id"]) if item.get("ext_id") not in (None, "") else str(item["row"])


def live_items_by_public_id(conn: Connection, public: str) -> list[dict]:
    """The live rows users call `public` (`public_id`): their own id, or, for rows without
    one, a row number. More than one when several files share ids or row numbers."""
    from sqlalchemy import or_

    without_id = or_(items.c.ext_id.is_(None), items.c.ext_id == "")
    condition = items.c.ext_id == public
    if public.strip().isdigit():
        condition = or_(condition, without_id & (items.c.row == int(public)))
    rows = conn.execute(select(items).where(condition, ~items.c.deleted)
                        .order_by(items.c.id)).mappings().all()
    return [dict(r) for r in rows]

"""`store.copied_texts`: live rows of texts that more than one live row holds."""

from __future__ import annotations

from engine.store import items
from engine.store import sources as source_store
from engine.store.copied_texts import rows_with_copies
from engine.store.database import Store


def test_rows_with_copies_count_live_rows_of_the_given_texts(tmp_path):
    store = Store.open(tmp_path / "project.duplens", create=True)
    try:
        with store.write() as conn:
            source = source_store.add_source(conn, file_name="f.csv", file_path="/f.csv",
                                      sha256="s", mapping_key="m", format={},
                                      text_columns=["q"], columns=["q"])
            keys = ["x", "x", "x", "y", "y", "z", "w", "w"]
            items.add_rows(conn, source, [items.NewRow(i, None, k, k, {})
                                          for i, k in enumerate(keys)])
            ids = items.text_ids_for_keys(conn, ["x", "y", "z", "w"])
            y_rows = [r["id"] for r in items.items_for_texts(conn, [ids["y"]])[ids["y"]]]
            items.mark_items_deleted(conn, y_rows[:1])      # y keeps one live row
        with store.read() as conn:
            copies, copied = rows_with_copies(conn, [ids["x"], ids["y"], ids["z"]])
        assert (copies, copied) == (3, {ids["x"]})           # w is not one of the texts
    finally:
        store.close()

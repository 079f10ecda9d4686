"""Reading spreadsheets in (CSV/TSV, Excel, Parquet, JSON Lines) and writing results out."""

from engine.io.readers import (
    detect_format,
    iter_table,
    preview_table,
    read_columns,
    require_columns,
)
from engine.io.records import ReadReport, TableFormat, TablePreview
from engine.io.writers import export_table, neutralise_cell, write_rows

__all__ = [
    "ReadReport",
    "TableFormat",
    "TablePreview",
    "detect_format",
    "export_table",
    "iter_table",
    "neutralise_cell",
    "preview_table",
    "read_columns",
    "require_columns",
    "write_rows",
]

"""The project schema, as SQLAlchemy Core tables shared by SQLite and PostgreSQL.

Nothing dialect-specific lives here (see `store.sqlite`, `store.postgres`). On PostgreSQL
JSON is `json`, LargeBinary `bytea`, Boolean `boolean` and integer keys SERIAL; lengths of
String columns are enforced there, so only values of a fixed format get one.
Texts are stored once per normalised form (`texts`), so exact duplicates are encoded and
indexed once; `items` are the spreadsheet rows that point at them.
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

metadata = MetaData()

meta = Table(
    "meta",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("value", Text, nullable=False),
)

sources = Table(
    "sources",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("file_name", Text, nullable=False),
    Column("file_path", Text, nullable=False),
    Column("sha256", String(64), nullable=False),
    # Which part of the file was imported and how: re-importing the same file with the same
    # mapping adds nothing, another mapping of the same file is a new source.
    Column("mapping_key", String(64), nullable=False),
    # quoted: PostgreSQL 16 reads `format JSON` as the SQL/JSON clause FORMAT JSON
    Column("format", JSON, nullable=False, quote=True),
    Column("text_columns", JSON, nullable=False),
    Column("id_column", Text),
    Column("columns", JSON, nullable=False),
    Column("rows_read", Integer, nullable=False, default=0),
    Column("rows_imported", Integer, nullable=False, default=0),
    Column("rows_empty", Integer, nullable=False, default=0),
    Column("bad_lines", JSON, nullable=False, default=list),
    Column("imported_at", Float, nullable=False),
    # Each import is a batch (schema v5): who imported it, and when it was taken back out
    # (`duplens imports --delete`); a removed batch keeps its row, so batch numbers (the
    # source ids) are never handed out twice, and frees its file's key for a re-import.
    Column("imported_by", Text),
    Column("removed_at", Float),
    UniqueConstraint("sha256", "mapping_key", name="uq_sources_file_mapping"),
)

texts = Table(
    "texts",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("norm_key", String(40), nullable=False, unique=True),
    Column("text", Text, nullable=False),
)

items = Table(
    "items",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("source_id", Integer, ForeignKey("sources.id", ondelete="CASCADE"), nullable=False),
    Column("row", Integer, nullable=False),
    Column("ext_id", Text),
    Column("text", Text, nullable=False),
    Column("text_id", Integer, ForeignKey("texts.id"), nullable=False),
    Column("extra", JSON, nullable=False, default=dict),
    Column("deleted", Boolean, nullable=False, default=False),
    Index("ix_items_text_id", "text_id"),
    Index("ix_items_source_row", "source_id", "row"),
)

models = Table(
    "models",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("name", Text, nullable=False),
    Column("location", Text, nullable=False),
    # "sha256:<hex>", "folder:<hex>" or "hub:<name>", plus "+<backend>": no fixed length
    Column("fingerprint", Text, nullable=False, unique=True),
    Column("dim", Integer, nullable=False),
    Column("max_seq_length", Integer, nullable=False),
    Column("parent_id", Integer, ForeignKey("models.id")),
    Column("objective", Text),
    Column("metrics", JSON, nullable=False, default=dict),
    Column("created_at", Float, nullable=False),
    # Schema v9: a second opinion's row (a cross-encoder judge, `engine.training.
    # judge_versions`) names the version it was trained with; NULL for every encoder.
    Column("judge_of", Integer, ForeignKey("models.id")),
)

embeddings = Table(
    "embeddings",
    metadata,
    Column("model_id", Integer, ForeignKey("models.id", ondelete="CASCADE"), primary_key=True),
    Column("text_id", Integer, ForeignKey("texts.id", ondelete="CASCADE"), primary_key=True),
    Column("vector", LargeBinary, nullable=False),
    Column("truncated", Boolean, nullable=False, default=False),
)

# Metadata of the persisted HNSW index of one model; the bytes live in `blobs`.
indexes = Table(
    "indexes",
    metadata,
    Column("model_id", Integer, ForeignKey("models.id", ondelete="CASCADE"), primary_key=True),
    Column("dim", Integer, nullable=False),
    Column("params", JSON, nullable=False),
    Column("deleted", JSON, nullable=False, default=list),
    Column("count", Integer, nullable=False),
    Column("sha256", String(64), nullable=False),
    Column("size", Integer, nullable=False),
    Column("saved_at", Float, nullable=False),
)

# Large binary values split into chunks, so that no single value nears SQLite's blob limit.
blobs = Table(
    "blobs",
    metadata,
    Column("name", String(200), primary_key=True),
    Column("seq", Integer, primary_key=True),
    Column("data", LargeBinary, nullable=False),
)

# The analyst's verdicts on pairs of items (the table keeps its old name, `pair_labels`, and
# the verdict its column `label`): the training data of the fine-tuning wizard.
pair_labels = Table(
    "pair_labels",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("item_a", Integer, ForeignKey("items.id", ondelete="CASCADE"), nullable=False),
    Column("item_b", Integer, ForeignKey("items.id", ondelete="CASCADE"), nullable=False),
    Column("label", Integer, nullable=False),
    Column("origin", String(32), nullable=False, default="review"),
    Column("created_at", Float, nullable=False),
    UniqueConstraint("item_a", "item_b", name="uq_pair_labels_pair"),
)


# Items an analyst chose as the canonical one of their duplicate cluster (schema v2).
# Clusters are re-cut at every threshold, so the choice is kept per item, not per cluster.
canonical_items = Table(
    "canonical_items",
    metadata,
    Column("item_id", Integer, ForeignKey("items.id", ondelete="CASCADE"), primary_key=True),
    Column("created_at", Float, nullable=False),
)


# Pairs the model asked the analyst to judge (schema v3, `duplens ask`, "Ask me"): a verdict
# on one of them is stored with origin "asked", whichever way the verdict comes in.
offered_pairs = Table(
    "offered_pairs",
    metadata,
    Column("item_a", Integer, ForeignKey("items.id", ondelete="CASCADE"), primary_key=True),
    Column("item_b", Integer, ForeignKey("items.id", ondelete="CASCADE"), primary_key=True),
    Column("offered_at", Float, nullable=False),
)


# Verdicts given while checking a file against the project (schema v4), before its rows are
# in it: a row of the file is no item a pair's verdict could name yet. Keyed by the file's bytes
# (sha256, as `sources` keys an import) and data row number, with the row's text as checked
# and the existing item it was judged against; adopted as verdicts on pairs of items (origin
# "match") once an import of the same file adds the row with that text, then deleted.
pending_verdicts = Table(
    "pending_verdicts",
    metadata,
    Column("file_sha256", String(64), primary_key=True),
    Column("row", Integer, primary_key=True),
    Column("file_name", Text, nullable=False),
    Column("text", Text, nullable=False),
    Column("item_id", Integer, ForeignKey("items.id", ondelete="CASCADE"), nullable=False),
    Column("label", Integer, nullable=False),
    Column("created_at", Float, nullable=False),
)


# Stable cluster ids (schema v5, `engine.dedup.id_rules`): every id ever handed out, never
# deleted, so a new cluster always gets a number never used before. `anchor_item` is the
# row the id follows (its canonical); `merged_into` says which id a retired one became.
# Batches are source ids: `created_batch` / `changed_batch` are the latest import when the
# id was made / last retired, revived or split from (`split_from`). `canonical_item` (v7) is
# the row that led the id's cluster at the last recorded cut, which a centre moved by a
# threshold or an import changes while the anchor stays (NULL: not recorded yet).
cluster_ids = Table(
    "cluster_ids",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("anchor_item", Integer),
    Column("retired", Boolean, nullable=False, default=False),
    Column("merged_into", Integer),
    Column("split_from", Integer),
    Column("created_batch", Integer, nullable=False),
    Column("changed_batch", Integer, nullable=False),
    Column("created_at", Float, nullable=False),
    Column("canonical_item", Integer),
)

# The rows in a cluster at the last recorded cut, and the id of that cluster.
item_clusters = Table(
    "item_clusters",
    metadata,
    Column("item_id", Integer, ForeignKey("items.id", ondelete="CASCADE"), primary_key=True),
    Column("cluster_id", Integer, nullable=False),
    Index("ix_item_clusters_cluster", "cluster_id"),
)

# A row's cluster id (NULL: in none) before its first change while `batch` was the latest
# import: what "changed since import N" compares with.
cluster_history = Table(
    "cluster_history",
    metadata,
    Column("batch", Integer, primary_key=True, autoincrement=False),
    Column("item_id", Integer, ForeignKey("items.id", ondelete="CASCADE"), primary_key=True),
    Column("cluster_id", Integer),
)

# An id's canonical row (NULL: not recorded) before its first change while `batch` was the
# latest import (schema v7): what "the canonical changed since import N" compares with.
canonical_history = Table(
    "canonical_history",
    metadata,
    Column("batch", Integer, primary_key=True, autoincrement=False),
    Column("cluster_id", Integer, primary_key=True, autoincrement=False),
    Column("item_id", Integer),
)


# Pairs drawn at random to measure quality (schema v6, `duplens estimate`, "Measure
# quality"). A sample is one design over one population of pairs (the graph it was drawn
# from: `signature`); a new model or index makes a new sample and closes the old one.
quality_samples = Table(
    "quality_samples",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("signature", String(64), nullable=False),
    # the strata (bounds, sizes), the threshold designed for, the seed of the random numbers
    Column("design", JSON, nullable=False),
    Column("created_at", Float, nullable=False),
    Column("created_by", Text, nullable=False),
    Column("closed_at", Float),
)

# One drawn pair of texts, its stratum, its chance of being drawn, and the verdict.
quality_draws = Table(
    "quality_draws",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("sample_id", Integer, ForeignKey("quality_samples.id", ondelete="CASCADE"),
           nullable=False),
    Column("seq", Integer, nullable=False),              # order of drawing in the sample
    Column("stratum", Integer, nullable=False),
    Column("text_a", Integer, ForeignKey("texts.id"), nullable=False),   # smaller id first
    Column("text_b", Integer, ForeignKey("texts.id"), nullable=False),
    Column("similarity", Float, nullable=False),
    Column("stratum_size", Integer, nullable=False),     # pairs in the stratum (N_h)
    Column("probability", Float, nullable=False),        # 1 / (N_h - drawn before it in h)
    Column("verdict", Integer),                          # 1 duplicate, 0 not, NULL not yet
    Column("answered_by", Text),                         # OS user, or the PostgreSQL role
    Column("answered_at", Float),
    Column("reused", Boolean, nullable=False, default=False),   # an earlier verdict, not asked
    Column("offered_to", Text),                          # shown to this analyst, not judged yet
    Column("offered_at", Float),
    UniqueConstraint("sample_id", "text_a", "text_b", name="uq_quality_draws_pair"),
    Index("ix_quality_draws_sample", "sample_id", "seq"),
)

# The windows of a text longer than the model's window (schema v8), one row per text and
# model: `spans` the windows' character spans (int32 start, end pairs, little-endian),
# `vectors` their normalised embeddings (float16, n x dim). The text's own embedding (in
# `embeddings`) is the normalised mean of these; a text read in one window has no row.
text_windows = Table(
    "text_windows",
    metadata,
    Column("model_id", Integer, ForeignKey("models.id", ondelete="CASCADE"), primary_key=True),
    Column("text_id", Integer, ForeignKey("texts.id", ondelete="CASCADE"), primary_key=True),
    Column("spans", LargeBinary, nullable=False),
    Column("vectors", LargeBinary, nullable=False),
)

# A long text's MinHash signature (schema v8; `engine.documents.minhash`): 256 uint64 hash
# values of its 5-word shingles, little-endian. Model-free, so one row per text; texts too
# short for MinHash to mean anything have none.
text_signatures = Table(
    "text_signatures",
    metadata,
    Column("text_id", Integer, ForeignKey("texts.id", ondelete="CASCADE"), primary_key=True),
    Column("signature", LargeBinary, nullable=False),
)

"""`Matching`: check a new file against the project without adding it (a gazetteer lookup).

Each row of the file is encoded with the project's active model, in batches as the file
streams, and looked up in the project's index: its k nearest existing rows, exact copies
folded as in `search`. The rows are also compared with the earlier rows of the same file, so
a file that repeats itself says so (`duplicate_in_file_of`). Nothing is written to the
project: adding the rows is a separate, explicit step (`add`), which imports the file the
way `import` does and encodes the new texts again. Re-encoding rather than storing the
vectors computed here keeps one path into the store (the resumable encode job, which knows
which texts are new and commits chunk by chunk); it costs one more pass of encoding.

`stream` hands the rows on as each batch is matched, so `duplens match --out` writes them
as they come (`write_matches`) and holds one batch, not the file; `check_file` keeps them
all for the window, which shows them, with the verdicts given on an earlier check of the
same file. Those verdicts ("duplicate of this" / "new") are kept in the project until the
file's rows are added (`keep_verdicts`, `engine.store.pending_verdicts`): an import of the
file turns them into verdicts on pairs of items, and fine-tuning learns from them meanwhile.
A batch's searches run as one hnswlib call on every core (hnswlib releases the GIL), so they cost a
small share of encoding the batch.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import hnswlib
import numpy as np

from engine.documents import minhash
from engine.documents.close_up import CLOSE_UP_CANDIDATES
from engine.documents.word_candidates import promoted, with_word_hits
from engine.encoding.read_whole import encode_whole
from engine.errors import InputError, ProjectError
from engine.importer import file_sha256
from engine.index.hnsw import HnswIndex
from engine.io import (
    ReadReport,
    detect_format,
    iter_table,
    read_columns,
    require_columns,
    write_rows,
)
from engine.keystroke_search import (
    WIDE_CANDIDATES,
    SearchHit,
    Windows,
    hits_for,
    read_close_up_each,
    reads_close_up,
)
from engine.progress import CancelToken, Progress, ProgressCallback, RateMeter, no_progress
from engine.review.overlap import Overlap, overlap
from engine.services.active_model import ActiveModel
from engine.services.project_threshold import Threshold
from engine.services.summary import summarize
from engine.services.vectors import Vectors
from engine.store import pending_verdicts
from engine.store.database import Store
from engine.store.pending_verdicts import PendingVerdict
from engine.text import join_cells, norm_key

if TYPE_CHECKING:  # pragma: no cover - pandas is imported when a file is read
    import pandas as pd

    from engine.encoding.encoder import SentenceEncoder

# Rows encoded and searched together. The encoder sorts a call's texts by length, so a wide
# call pads less: 5,000 Quora questions went through the bf16 encoder at 607-696 texts/s in
# calls of 1,024 and 904-929 in one call (2 cores); `duplens match` of 5,000 rows took
# 9.1-9.3 s at 4,096 against 10.5-10.7 s at 1,024 (benchmarks/match_default.py's setup).
BATCH_ROWS = 4096
# A cap on the search beam for a match's top k (see `match_ef`); None: the index's own.
# At 1M items (benchmarks/match_throughput.py, scale_1m's project, 500 Quora questions that
# are in it, load average ~7-13) recall@3 against exact search was 1.0 at ef 64, 128 and
# 512 and 0.998 at 32; 1,024 searches on 2 cores took 537 ms at 128 against 1,608 at 512.
MATCH_EF: int | None = 128
VERDICT_COLUMN = "verdict"
VERDICT_WORDS = {1: "duplicate", 0: "new"}


@dataclass
class FileRow:
    """One row of the checked file, its nearest existing rows, and an earlier twin."""

    row: int                       # the 1-based data row number in the file
    id: str                        # the id column's value, else the row number
    text: str
    cells: dict[str, str]          # the file's own columns
    matches: list[SearchHit] = field(default_factory=list)
    overlaps: list[Overlap] = field(default_factory=list)   # words shared with each match
    duplicate_in_file_of: str | None = None   # id of an earlier row of this file, if any

    def as_json(self) -> dict:
        return {"row": self.row, "id": self.id, "text": self.text,
                "matches": [{"id": h.id, "text": h.text, "score": round(h.score, 6),
                             "overlap": round(o.jaccard, 4), "differing": list(o.differing)}
                            for h, o in zip(self.matches, self.overlaps, strict=True)]}

    def best_score(self) -> float | None:
        return self.matches[0].score if self.matches else None


@dataclass
class MatchResult:
    """Every row of the file in file order, with the settings they were checked with."""

    file_name: str
    columns: list[str]
    k: int
    threshold: float
    rows: list[FileRow] = field(default_factory=list)
    bad_lines: list[int] = field(default_factory=list)
    threshold_reason: str = ""     # why the threshold is what it is ("" : the caller's)
    sha256: str = ""               # the file's bytes: what its kept verdicts are keyed by
    # Verdicts kept from an earlier check of this file that still apply (the row's text and
    # its best match unchanged): file row number → 1 duplicate / 0 new.
    verdicts: dict[int, int] = field(default_factory=dict)
    can_keep: bool = True          # verdicts can be kept in the project (not read-only)
    passages: bool = False         # the project holds long texts: the export has passages

    def likely_duplicates(self) -> int:
        return sum(1 for r in self.rows if (r.best_score() or 0.0) >= self.threshold)

    def frame(self, verdicts: dict[int, int] | None = None) -> pd.DataFrame:
        """The export as a table (`export_header` / `export_record`, the same cells the
        streamed `--out` writes); with `verdicts` (file row → 1 / 0), a last `verdict`
        column says "duplicate", "new" or nothing for each row."""
        import pandas as pd

        frame = pd.DataFrame.from_records(
            [export_record(r, self.columns, self.k, self.threshold, self.passages)
             for r in self.rows],
            columns=export_header(self.columns, self.k, self.passages))
        if verdicts is not None:
            frame[VERDICT_COLUMN] = [VERDICT_WORDS.get(verdicts.get(r.row), "")
                                     for r in self.rows]
        return frame


@dataclass
class MatchStream:
    """A check in progress: the settings up front, then `rows` as each batch is done, so a
    writer holds one batch, not the file. `bad_lines` is complete once `rows` is spent."""

    file_name: str
    columns: list[str]
    k: int
    threshold: float
    rows: Iterator[FileRow]
    bad_lines: list[int] = field(default_factory=list)
    threshold_reason: str = ""     # why the threshold is what it is ("": the caller's)
    passages: bool = False         # the project holds long texts: the export has passages


def export_header(columns: list[str], k: int, passages: bool = False) -> list[str]:
    """The export's columns: the file's columns, then `match_i_id/text/score/overlap` for i
    up to k (the overlap beside the score: the share of words both texts use; with
    `passages`, a project holding long texts, `match_i_passage` after the text: the part
    of a long match that matched, which the overlap is measured against), then
    `likely_duplicate` (best score at or above the threshold), `duplicate_in_file_of`, and
    `threshold`: the one `likely_duplicate` was decided at, so the file says it."""
    parts = ("id", "text", *(("passage",) if passages else ()), "score", "overlap")
    matches = [f"match_{i + 1}_{part}" for i in range(k) for part in parts]
    return [*columns, *matches, "likely_duplicate", "duplicate_in_file_of", "threshold"]


def export_record(r: FileRow, columns: list[str], k: int, threshold: float,
                  passages: bool = False) -> list[object]:
    """One row of the export, in `export_header`'s order (a short match's passage empty)."""
    rec: list[object] = [r.cells.get(c, "") for c in columns]
    for i in range(k):
        hit = r.matches[i] if i < len(r.matches) else None
        passage = ([hit.text[hit.passage[0]:hit.passage[1]] if hit and hit.passage else
                    None] if passages else [])
        rec += ([hit.id, hit.text, *passage, round(hit.score, 6),
                 round(r.overlaps[i].jaccard, 4)] if hit else
                [None, None, *passage, None, None])
    rec += [(r.best_score() or 0.0) >= threshold, r.duplicate_in_file_of, threshold]
    return rec


class Matching:
    """Look a file's rows up in the project; add them when the user says so."""

    def __init__(self, store: Store, model: ActiveModel, vectors: Vectors,
                 threshold: Threshold) -> None:
        self._store = store
        self._model = model
        self._vectors = vectors
        self._threshold = threshold

    def check_file(self, path: str | os.PathLike, text_columns: list[str], **kwargs
                   ) -> MatchResult:
        """The k nearest existing rows of every row of `path`, all held in memory (the
        window shows them as a table); the project is unchanged. Takes `stream`'s
        arguments."""
        stream = self.stream(path, text_columns, **kwargs)
        result = MatchResult(stream.file_name, stream.columns, stream.k, stream.threshold,
                             threshold_reason=stream.threshold_reason,
                             can_keep=not self._store.read_only, passages=stream.passages)
        result.rows.extend(stream.rows)
        result.bad_lines = list(stream.bad_lines)
        result.sha256 = file_sha256(Path(path))
        with self._store.read() as conn:
            kept = pending_verdicts.for_file(conn, result.sha256)
        for r in result.rows:
            v = kept.get(r.row)
            if v is not None and r.matches and r.matches[0].item_id == v.item_id \
                    and norm_key(v.text) == norm_key(r.text):
                result.verdicts[r.row] = v.verdict
        return result

    def stream(self, path: str | os.PathLike, text_columns: list[str], *,
               id_column: str | None = None, sheet: str | None = None,
               encoding: str | None = None, delimiter: str | None = None,
               quoting: bool | None = None, k: int = 3, threshold: float | None = None,
               progress: ProgressCallback = no_progress, cancel: CancelToken | None = None,
               batch_rows: int = BATCH_ROWS, close_up: int | None = None) -> MatchStream:
        """Check `path` batch by batch: the file's columns and settings now (a bad file or
        column is refused here, before any encoding), its rows as they are matched.
        `threshold` defaults to the project threshold (`engine.services.project_threshold`:
        set by hand, else calibrated on the verdicts, else the model's default), and the stream says
        why (`threshold_reason`). `close_up`: how many long hits a short row reads close up
        (`read_close_up_each`; None: as the search, 0: none, the check as it was, which
        `benchmarks/check_documents.py` runs beside it)."""
        path = Path(path)
        if k < 1:
            raise InputError(f"k must be at least 1, not {k}")
        if not text_columns:
            raise InputError(f"{path.name}: choose at least one text column")
        fmt = detect_format(path, sheet=sheet, encoding=encoding, delimiter=delimiter,
                            quoting=quoting)
        columns = read_columns(path, fmt)
        require_columns(path, columns,
                        list(dict.fromkeys([*text_columns, *([id_column] if id_column else [])])))
        if summarize(self._store, self._model.row()).get("encoded", 0) == 0:
            raise ProjectError(f"{self._store.path.name}: has no encoded rows to match "
                               "against; import and encode some first")
        reason = ""
        if threshold is None:
            project = self._threshold.current()
            threshold, reason = project.value, project.reason
        read = ReadReport()
        batches = _batches(iter_table(path, fmt, report=read), text_columns, id_column,
                           batch_rows)
        _, index, model_id = self._vectors.serving()
        long_texts = self._vectors.windows(model_id, self._vectors.generation(), index).any()
        stream = MatchStream(path.name, columns, k, threshold, iter(()),
                             threshold_reason=reason, passages=long_texts)
        stream.rows = self._matched(batches, k, threshold, read, stream, progress, cancel,
                                    close_up)
        return stream

    def _matched(self, batches: Iterator[list[FileRow]], k: int, threshold: float,
                 read: ReadReport, stream: MatchStream, progress: ProgressCallback,
                 cancel: CancelToken | None, close_up: int | None = None
                 ) -> Iterator[FileRow]:
        encoder, index, model_id = self._vectors.serving()
        windows = self._vectors.windows(model_id, self._vectors.generation(), index)
        twins = InFileTwins(encoder.dim, threshold)
        meter = RateMeter()
        ef = match_ef(index, k)
        threads = os.cpu_count() or 1
        done = 0
        for batch in batches:
            if cancel is not None:
                cancel.raise_if_cancelled()
            texts = [r.text for r in batch]
            whole = encode_whole(encoder, texts)
            vectors = whole.vectors
            if windows.any() or any(w is not None for w in whole.windows):
                def close_up_read(rows: int, done: int = done) -> None:
                    if cancel is not None:
                        cancel.raise_if_cancelled()
                    progress(Progress("matching", done + rows, 0, meter.rate(done + rows)))

                found = self._by_windows(encoder, index, vectors, whole.windows, windows, k,
                                         ef, threads, texts, close_up_read, close_up)
            else:
                text_ids, sims = index.query(vectors, k, ef=ef, threads=threads)
                found = hits_for(self._store, text_ids, sims)
            for r, hits, twin in zip(batch, found,
                                     twins.add(vectors, [r.id for r in batch]), strict=True):
                r.matches = hits[:k]
                # A document's overlap with the row is its passage's: the rest of it is not
                # what matched, and the words of thousands per hit would be slow.
                r.overlaps = [overlap(r.text, h.text[h.passage[0]:h.passage[1]]
                                      if h.passage else h.text) for h in r.matches]
                r.duplicate_in_file_of = twin
            yield from batch
            done += len(batch)
            progress(Progress("matching", done, 0, meter.rate(done)))
        stream.bad_lines = list(read.bad_lines)

    def _by_windows(self, encoder: SentenceEncoder, index: HnswIndex, vectors: np.ndarray,
                    row_windows: list, windows: Windows, k: int, ef: int, threads: int,
                    texts: list[str], each: Callable[[int], None] | None = None,
                    close_up: int | None = None) -> list[list[SearchHit]]:
        """Each row's hits where long texts are involved: more candidates from the index
        and from every stored window (`Windows.widen`), scored window by window, and by
        MinHash where the row is long (`Windows.rescore`), as the project's graph scores
        pairs; a short row's first long hits, and the documents holding its words
        (`Windows.by_words`), read close up as the search reads a typed query
        (`read_close_up_each`, calling `each` between its chunks of rows), so a row
        and the same text searched score a document alike; the k best live ones kept, each
        long hit with its nearest passage."""
        wide = max(1, min(len(index), max(k, WIDE_CANDIDATES)))
        text_ids, sims = index.query(vectors, wide, ef=max(ef, wide), threads=threads)
        nears = [row_windows[row][1] if row_windows[row] is not None else vectors[row:row + 1]
                 for row in range(len(vectors))]
        count = CLOSE_UP_CANDIDATES if close_up is None else close_up
        short = reads_close_up(encoder, texts) if count > 0 else [False] * len(texts)
        by_words = windows.by_words([t for t, yes in zip(texts, short, strict=True) if yes])
        words = iter(by_words)
        out: list[list[SearchHit]] = []
        counts: list[int] = []
        for row, (ids, row_sims) in enumerate(windows.widen_each(text_ids, sims, nears)):
            word_ids = next(words) if short[row] else []
            ids, row_sims = with_word_hits(ids, row_sims, word_ids)
            signature = (minhash.signature(texts[row]) if row_windows[row] is not None
                         and minhash.wants_signature(texts[row]) else None)
            scores, passages = windows.rescore(ids, row_sims, vectors[row], row_windows[row],
                                               signature)
            order, moved = promoted(np.argsort(-scores, kind="stable"), ids,
                                    windows.windowed, word_ids, count)
            counts.append(count + moved)
            out.append(hits_for(self._store, ids[order][None, :], scores[order][None, :],
                                passages)[0])
        return [hits[:k] for hits in read_close_up_each(encoder, texts, vectors, out,
                                                         counts, each, short)]

    def keep_verdicts(self, file_sha256: str, file_name: str,
                      verdicts: Sequence[PendingVerdict]) -> bool:
        """Keep the analyst's verdicts on rows of a checked file (`file_sha256`, from
        `MatchResult.sha256`) in the project until the file's rows are added; a verdict
        with verdict None is forgotten. Importing the file turns them into verdicts on pairs
        (`Rows.import_table`). False, and nothing kept, on a project open read-only."""
        if self._store.read_only:
            return False
        with self._store.write() as conn:
            pending_verdicts.keep(conn, file_sha256, file_name, verdicts)
        return True

    def pending_pairs(self) -> list[dict]:
        """The kept verdicts as pairs of texts (`engine.store.pending_verdicts.as_pairs`):
        training data before the rows are added."""
        with self._store.read() as conn:
            return pending_verdicts.as_pairs(conn)


def write_matches(stream: MatchStream, path: str | os.PathLike) -> int:
    """Write the export (.csv or .xlsx) row by row as `stream` is matched; returns rows
    written. The file appears whole at the end (`write_rows` replaces it in one step), so
    a cancelled or failed check leaves no partial file and an earlier one untouched."""
    return write_rows(path, export_header(stream.columns, stream.k, stream.passages),
                      (export_record(r, stream.columns, stream.k, stream.threshold,
                                     stream.passages) for r in stream.rows))


def match_ef(index: HnswIndex, k: int) -> int:
    """The beam for a match's k nearest: the index's own beam (set for recall@10, 512 at
    1M items), capped at MATCH_EF when set, never below k."""
    ef = index.query_ef() if MATCH_EF is None else min(index.query_ef(), MATCH_EF)
    return max(k, ef)


def _batches(frames: Iterator[pd.DataFrame], text_columns: list[str], id_column: str | None,
             size: int) -> Iterator[list[FileRow]]:
    """Rows with some text, `size` at a time (a row of empty text cells has nothing to
    match and is left out, as `import` leaves it out)."""
    batch: list[FileRow] = []
    for frame in frames:
        cells = frame.to_dict("records")
        for number, row in zip(frame.index.tolist(), cells, strict=True):
            text = join_cells([row[c] for c in text_columns])
            if not text:
                continue
            ident = (row.get(id_column) if id_column else None) or str(number)
            batch.append(FileRow(int(number), str(ident), text, row))
            if len(batch) >= size:
                yield batch
                batch = []
    if batch:
        yield batch


class InFileTwins:
    """Rows of the file that repeat an earlier row of it: an hnswlib index of the rows seen
    so far, plus a brute-force look within the batch (whose rows are not indexed yet)."""

    def __init__(self, dim: int, threshold: float) -> None:
        self._index = hnswlib.Index(space="ip", dim=dim)
        self._index.init_index(max_elements=BATCH_ROWS, ef_construction=100, M=16)
        self._index.set_ef(64)
        self._ids: list[str] = []
        self._threshold = threshold

    def add(self, vectors: np.ndarray, ids: list[str]) -> list[str | None]:
        best = np.full(len(ids), -np.inf, dtype=np.float32)
        best_of = np.full(len(ids), -1, dtype=np.int64)
        seen = len(self._ids)
        if seen:
            labels, dists = self._index.knn_query(vectors, k=1)
            best = 1.0 - dists[:, 0]
            best_of = labels[:, 0].astype(np.int64)
        within = vectors @ vectors.T
        order = np.arange(len(ids))
        within[order[None, :] >= order[:, None]] = -np.inf   # only earlier rows of the batch
        if len(ids) > 1:
            j = within.argmax(axis=1)
            s = within[np.arange(len(ids)), j]
            better = s > best
            best = np.where(better, s, best)
            best_of = np.where(better, seen + j, best_of)
        self._index.resize_index(max(self._index.get_max_elements(), seen + len(ids)))
        self._index.add_items(vectors, np.arange(seen, seen + len(ids)))
        self._ids.extend(ids)
        return [self._ids[o] if s >= self._threshold else None
                for s, o in zip(best.tolist(), best_of.tolist(), strict=True)]

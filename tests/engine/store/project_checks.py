"""What a project file must still be after two processes wrote it or a disk filled up:
rows readable, and a saved index that agrees with the stored embeddings."""

from __future__ import annotations

import csv
import errno
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import func, select

from engine.index.persist import current_change_count, load_index
from engine.store import embeddings
from engine.store.database import Store
from engine.store.schema import items
from tests.required import unavailable

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data"


def split_questions(folder: Path) -> tuple[Path, Path]:
    """tests/data/questions.csv in two halves: two files to import into one project."""
    with (DATA / "questions.csv").open(newline="", encoding="utf-8") as fh:
        header, *rows = list(csv.reader(fh))
    halves = []
    for name, part in (("first", rows[: len(rows) // 2]), ("second", rows[len(rows) // 2:])):
        path = folder / f"{name}.csv"
        with path.open("w", newline="", encoding="utf-8") as fh:
            csv.writer(fh).writerows([header, *part])
        halves.append(path)
    return halves[0], halves[1]


def cli(*args: str, busy_timeout: float | None = None, **popen) -> subprocess.Popen:
    """`python -m engine.cli ARGS` from this tree, as a real process."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if busy_timeout is not None:
        env["DUPLENS_BUSY_TIMEOUT_S"] = str(busy_timeout)
    return subprocess.Popen([sys.executable, "-m", "engine.cli", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            **popen)


def state(path: Path) -> dict:
    """Rows, embeddings and the saved index of the project's models, read without writing."""
    store = Store.open(path, read_only=True)
    try:
        with store.read() as conn:
            out = {"rows": conn.execute(select(func.count()).select_from(items)).scalar(),
                   "models": {}}
            for model in embeddings.list_models(conn):
                embedded = set(embeddings.embedded_text_ids(conn, model["id"]).tolist())
                index, why = load_index(conn, model["id"], model["dim"])
                indexed = (set(index.ids().tolist()) - set(index.deleted)
                           if index is not None else None)
                stamped = current_change_count(conn, model["id"], index) if index else None
                out["models"][model["id"]] = {"embedded": embedded, "indexed": indexed,
                                              "why": why, "stamped": stamped}
        return out
    finally:
        store.close()


def assert_index_agrees(path: Path) -> dict:
    """Every model's saved index holds exactly its embeddings, or is stamped as unknown
    (then the next open reconciles it); a stamped index that disagrees is the bug."""
    found = state(path)
    for model in found["models"].values():
        if model["indexed"] is None or model["stamped"] is not None:
            assert model["indexed"] in (None, model["embedded"]), model["why"]
    return found


@contextmanager
def small_disk(folder: Path, size: str = "20m") -> Iterator[Path]:
    """A real file system of `size` mounted at `folder` (tmpfs), unmounted afterwards; the
    test is skipped, with the reason, when this is not root or the mount fails, and fails
    instead with DUPLENS_REQUIRE_MOUNTS=1 (CI)."""
    if os.name != "posix" or os.geteuid() != 0:
        unavailable("MOUNTS", "mounting a small tmpfs needs root")
    folder.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs",
                           str(folder)], capture_output=True, text=True)
    if done.returncode != 0:
        unavailable("MOUNTS", f"cannot mount a tmpfs at {folder}: {done.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def fill(disk: Path, leave: int = 0) -> Path:
    """Fill `disk` up, then give back `leave` bytes: the next writes run out of room."""
    filler = disk / "filler"
    # Unbuffered: a buffered file keeps the part of the last block the disk refused and
    # fails again on close, depending on how the free space falls against the block size.
    with filler.open("wb", buffering=0) as fh:
        try:
            while True:
                fh.write(b"\0" * 65536)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    os.truncate(filler, max(0, filler.stat().st_size - leave))
    return filler


def fill_completely(disk: Path) -> Path:
    """Fill `disk` to its last free block (`fill` leaves a few dozen kB: its buffered 64 kB
    writes stop at the first that does not fit), so that even the 32 kB `-shm` file a
    SQLite reader maps cannot be made."""
    filler = disk / "filler"
    with filler.open("ab", buffering=0) as fh:
        for size in (1 << 20, 65536, 4096, 512, 1):
            try:
                while True:
                    fh.write(b"\0" * size)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
    assert os.statvfs(disk).f_bavail == 0
    return filler

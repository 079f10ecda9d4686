"""A model version's folder as one tar blob in the project database: `model-folder/<id>`.

A server has no "beside the project file", so a version's sentence-transformers folder is
kept inside the database, where every analyst's process finds it: `duplens copy` carries
folders this way between a file and a server, and a version fine-tuned on a server project
is stored this way from the start (`engine.training.server_versions`). One format, one
name, so a copy and a server project read each other's blobs. Blobs are chunked
(`store.blobs`): a 90 MB model is 90 rows of 1 MiB.
"""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

from sqlalchemy import Connection, select

from engine.errors import ProjectError
from engine.store.blobs import get_blob, put_blob
from engine.store.schema import blobs

FOLDER_BLOB = "model-folder/"


def folder_blob_name(model_id: int) -> str:
    return f"{FOLDER_BLOB}{int(model_id)}"


def tar_folder(folder: Path) -> bytes:
    """The folder's files as an uncompressed tar (weights do not compress)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        tar.add(folder, arcname=".")
    return buffer.getvalue()


def untar_folder(data: bytes, folder: Path) -> None:
    """Unpack a `tar_folder` result into `folder`, which must not exist yet. Links out of
    the folder, absolute paths and device files are refused (tarfile's "data" filter): the
    blob came from a database other people write to."""
    if folder.exists():
        raise ProjectError(f"{folder}: already exists; copy to a new place")
    folder.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tar:
        tar.extractall(folder, filter="data")


def put_folder(conn: Connection, model_id: int, folder: Path) -> None:
    """Store `folder` as model `model_id`'s folder blob, inside the caller's transaction."""
    put_blob(conn, folder_blob_name(model_id), tar_folder(folder))


def get_folder(conn: Connection, model_id: int) -> bytes | None:
    """Model `model_id`'s folder blob, or None when the project keeps none for it."""
    return get_blob(conn, folder_blob_name(model_id))


def stored_folder_ids(conn: Connection) -> set[int]:
    """The models whose folder is stored in the database (one query, reads no data)."""
    names = conn.execute(select(blobs.c.name).where(blobs.c.seq == 0).where(
        blobs.c.name.like(FOLDER_BLOB + "%"))).scalars()
    return {int(name[len(FOLDER_BLOB):]) for name in names
            if name[len(FOLDER_BLOB):].isdigit()}

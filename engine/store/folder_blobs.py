"""A model version's folder as one tar blob in the project database: `model-folder/<id>`.

A server has no "beside the project file", so a version's sentence-transformers folder is
kept inside the database, where every analyst's process finds it: `duplens copy` carries
folders this way between a file and a server, and a version fine-tuned on a server project
is stored this way from the start (`engine.training.version_blobs`). One format, one
name, so a copy and a server project read each other's blobs. Blobs are chunked
(`store.blobs`): a 90 MB model is 90 rows of 1 MiB.
"""

from __future__ import annotations

import io
import shutil
import tarfile
from pathlib import Path, PurePosixPath

from sqlalchemy import Connection, select

from engine.errors import ProjectError
from engine.store.blobs import get_blob, put_blob
from engine.store.schema import blobs

FOLDER_BLOB = "model-folder/"
_COPY_CHUNK = 1 << 20        # a weights file is copied out of the tar a MiB at a time


def folder_blob_name(model_id: int) -> str:
    return f"{FOLDER_BLOB}{int(model_id)}"


def tar_folder(folder: Path) -> bytes:
    """The folder's files as an uncompressed tar (weights do not compress)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        tar.add(folder, arcname=".")
    return buffer.getvalue()


def untar_folder(data: bytes, folder: Path) -> None:
    """Unpack a `tar_folder` result into `folder`, which must not exist yet.

    The blob came from a database other people write to, so only plain files and folders
    whose names stay inside `folder` are unpacked; a link, a device, an absolute path, a
    `..`, a backslash or a drive colon is refused before anything is written. Done here
    rather than with tarfile's "data" filter because Python 3.11 before 3.11.4 (Debian 12's
    python3) has no filter argument, and a model folder holds nothing else.
    """
    if folder.exists():
        raise ProjectError(f"{folder}: already exists; copy to a new place")
    with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tar:
        members = tar.getmembers()
        targets = [_target(folder, m) for m in members]
        folder.mkdir(parents=True)
        for member, target in zip(members, targets, strict=True):
            if member.isdir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            source = tar.extractfile(member)
            if source is None:        # cannot happen: _target let only plain files through
                raise ProjectError(f"a stored model folder's {member.name!r} has no data")
            with source, target.open("wb") as out:
                shutil.copyfileobj(source, out, _COPY_CHUNK)


def _target(folder: Path, member: tarfile.TarInfo) -> Path:
    """Where `member` goes inside `folder`; ProjectError for anything but a plain file or
    folder whose name stays inside it."""
    name = PurePosixPath(member.name)
    if not (member.isfile() or member.isdir()):
        raise ProjectError(f"a stored model folder holds {member.name!r}, which is not a "
                           f"plain file or folder; refusing to unpack it")
    if name.is_absolute() or ".." in name.parts or "\\" in member.name or ":" in member.name:
        raise ProjectError(f"a stored model folder names {member.name!r}, outside itself; "
                           f"refusing to unpack it")
    return folder.joinpath(*[part for part in name.parts if part != "."])


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

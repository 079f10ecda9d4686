"""Model versions of a server project: folders kept in the database, unpacked per user.

A file project keeps a version's folder beside the file; a server project has no "beside",
so the folder is stored in the database as the tar blob `model-folder/<id>`
(`store.folder_blobs`, the form `duplens copy` uses), written in the same transaction as
the version's `models` row: a crash leaves both or neither, never a row without its folder.

Loading a model needs a folder on disk, so each user's computer keeps the unpacked folder
in its cache (`cache_root()/server-models/<server and database>/v<id>-<weights sha256>`),
keyed by what the version is, so a version deleted and its number reused on the server
never meets an old folder. The cache is not trusted: every time it is used, its weights
are hashed (about 0.2 s for the bundled model's 90 MB) and compared with the sha256 the row
recorded; a folder that differs (edited, half-deleted) is thrown away and unpacked again
from the blob, and a blob that does not match its row is refused (`ModelError`).
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import shutil
import tempfile
from pathlib import Path

from engine.encoding.backends import cache_root, split_fingerprint
from engine.encoding.model_spec import DEFAULT_MODEL, resolve_model
from engine.errors import ModelError
from engine.store import embeddings as embedding_store
from engine.store.database import Store
from engine.store.folder_blobs import get_folder, untar_folder

CACHE_FOLDER = "server-models"
_PARTIAL = ".partial-"   # folders being unpacked or trained; never used as a version


def project_cache(store: Store) -> Path:
    """This server project's folder in the user's cache: one per server and database (the
    login is left out: two logins to one database see the same versions)."""
    url = store.location.url
    where = f"{url.host or 'localhost'}:{url.port or 5432}/{url.database}"
    readable = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{url.host or 'localhost'}-{url.database}")
    digest = hashlib.sha256(where.encode("utf-8")).hexdigest()[:12]
    return cache_root() / CACHE_FOLDER / f"{readable[:60]}-{digest}"


def cached_path(store: Store, row: dict) -> Path:
    """Where version `row`'s folder is unpacked on this computer (it may not be yet)."""
    weights = split_fingerprint(row["fingerprint"])[0].removeprefix("sha256:")
    return project_cache(store) / f"v{row['id']}-{weights[:16]}"


def server_location(store: Store, number: int) -> str:
    """How a server version's location is recorded: the name its folder gets beside a file
    when the project is copied to one (`<database>.models/v<N>`, as `duplens copy` names
    it), so the rules for "the project's own versions" read both kinds alike."""
    return f"{store.name}.models/v{int(number)}"


def staging_folder(store: Store) -> Path:
    """A fresh folder to train into, in this project's cache (same disk as the cached
    versions, so keeping the trained folder there is a rename)."""
    parent = project_cache(store)
    parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=_PARTIAL, dir=parent))


def keep_trained(store: Store, row: dict, folder: Path) -> None:
    """Put the folder a version was just trained in into the cache, sparing this computer
    the unpacking; anything in the way is replaced."""
    target = cached_path(store, row)
    shutil.rmtree(target, ignore_errors=True)
    # (another process may have unpacked it meanwhile: `version_folder` checks theirs)
    with contextlib.suppress(OSError):
        folder.rename(target)


def row_by_location(store: Store, location: str) -> dict | None:
    """The version recorded at `location`: its own row (a quantised backend's row of the
    same version, which has no parent, shares the location)."""
    with store.read() as conn:
        rows = [r for r in embedding_store.list_models(conn) if r["location"] == location]
    rows.sort(key=lambda r: r["parent_id"] is not None)
    return rows[-1] if rows else None


def location_of(store: Store, fingerprint: str) -> str:
    """How a server project records a model just loaded (not the bundled one): the location
    of its version with these weights; `ModelError` when it is none of its versions."""
    weights = split_fingerprint(fingerprint)[0]
    with store.read() as conn:
        for row in embedding_store.list_models(conn):
            if row["parent_id"] is not None and \
                    split_fingerprint(row["fingerprint"])[0] == weights:
                return row["location"]
    raise ModelError(f"{store.name}: a server project uses the bundled model or versions "
                     f"fine-tuned in it; to use another model, copy the project to a file "
                     f"(duplens copy)")


def model_source(store: Store, location: str) -> str | None:
    """What `load_encoder` takes for a server project's model row: None for the bundled
    model, the checked cached folder of one of its own versions.

    A server project loads nothing else: a folder path or Hub name in a shared database
    would mean one analyst's computer's folder, or a download, on everybody's.
    """
    if location == DEFAULT_MODEL:
        return None
    row = row_by_location(store, location)
    if row is None or row["parent_id"] is None:
        raise ModelError(f"{store.name}: its model {location} is neither the bundled model "
                         f"nor a version fine-tuned in the project; a server project loads "
                         f"only those")
    return str(version_folder(store, row))


def version_folder(store: Store, row: dict) -> Path:
    """Version `row`'s folder on this computer, unpacked from the database when missing or
    when its weights are not those the row recorded."""
    target = cached_path(store, row)
    if _matches(target, row):
        return target
    with store.read() as conn:
        data = get_folder(conn, row["id"])
    if data is None:
        raise ModelError(f"{row['name']}: the project {store.name} holds no folder for it "
                         f"(model-folder/{row['id']})")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=_PARTIAL, dir=target.parent))
    aside: Path | None = None
    try:
        untar_folder(data, staging / "model")
        unpacked = resolve_model(str(staging / "model")).fingerprint  # refuses unsafe ones
        if unpacked != split_fingerprint(row["fingerprint"])[0]:
            raise ModelError(f"{row['name']}: the folder stored in {store.name} does not hold "
                             f"the weights this version was saved with")
        if target.exists():
            # edited or damaged: moved aside first, so nobody loads a half-removed folder
            aside = Path(tempfile.mkdtemp(prefix=_PARTIAL, dir=target.parent))
            target.rename(aside / "old")
        try:
            (staging / "model").rename(target)
        except OSError:
            if not _matches(target, row):   # unless another process put a good one there
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        if aside is not None:
            shutil.rmtree(aside, ignore_errors=True)
    return target


def forget(store: Store, model_id: int) -> None:
    """Remove this computer's unpacked folders of a deleted version."""
    for folder in project_cache(store).glob(f"v{int(model_id)}-*"):
        shutil.rmtree(folder, ignore_errors=True)


def _matches(folder: Path, row: dict) -> bool:
    """The folder holds the weights `row` recorded (`resolve_model` also checks that
    nothing in it would run code)."""
    if not folder.is_dir():
        return False
    try:
        found = resolve_model(str(folder)).fingerprint
    except ModelError:
        return False
    return found == split_fingerprint(row["fingerprint"])[0]

"""Model versions of a project: where their folders live, how they are recorded, copying
one out (`engine.training.version_list` lists them).

A fine-tuned model is a plain sentence-transformers folder kept beside the project file, in
`<project file name>.models/v<N>/`, where N is the version's id (its row in `models`), so the
folder a user finds on disk and the number the window and `duplens models` show agree. Its
location is stored relative to the project file's folder: a project moved or copied together
with its `.models` folder keeps working. Each folder also holds `duplens_version.json`, what
the version is (parent, objective, data hash, metrics, options, date), so a folder copied out
or found on its own still says where it came from; sentence-transformers ignores the file.

A version appears all at once: its folder is renamed into place and its row inserted in the
same write transaction, and the folder is removed again if the transaction fails. Rows keep
their folder's fingerprint (the weights' sha256), as any model folder's does, so opening the
project loads the version and finds its embeddings under the same id.

A server project has no "beside": its versions' folders are kept in the database and
unpacked per computer (`engine.training.version_blobs`); the functions here take the
`Store` and send a server project's cases there.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Connection

from engine import model_trust
from engine.encoding.backends import split_fingerprint
from engine.encoding.model_spec import DEFAULT_MODEL, default_model_path, resolve_model
from engine.errors import InputError, ModelError, UntrustedModelLocation
from engine.index import side_file
from engine.index.persist import blob_name
from engine.store import embeddings as embedding_store
from engine.store import version_rows as version_store
from engine.store.database import Store
from engine.store.folder_blobs import folder_blob_name, put_folder
from engine.training import version_blobs
from engine.training.judge_versions import JUDGE_DIM, KeptJudge

if TYPE_CHECKING:  # pragma: no cover - pairs imports pandas, which finding a folder needs not
    from engine.training.pairs import LabelledPair

VERSION_FILE = "duplens_version.json"
MODELS_SUFFIX = ".models"
STAGING_PREFIX = ".partial-"  # folders being written; never listed, never loaded
_VERSION_DIR = re.compile(r"^v(\d+)$")
_OWN_VERSION = re.compile(re.escape(MODELS_SUFFIX) + r"/v\d+$")
# In the metrics of a version's fast form's row (`engine.training.fast_form`): the version's
# id. That row shares the version's folder and is shown, kept and deleted as part of it.
SIBLING_KEY = "fast_form_of"


def sibling_of(row: dict) -> int | None:
    """The version whose fast form `row` is, or None."""
    value = (row.get("metrics") or {}).get(SIBLING_KEY)
    return int(value) if value is not None else None


def models_folder(project_path: Path) -> Path:
    """`questions.duplens` -> `questions.duplens.models`, beside it."""
    return project_path.with_name(project_path.name + MODELS_SUFFIX)


def stored_location(project_path: Path, folder: Path) -> str:
    """How a version's folder is recorded: relative to the project's folder, with '/'."""
    return Path(os.path.relpath(folder, project_path.parent)).as_posix()


def location_for(project_path: Path, source: str) -> str:
    """How a loaded model's location is recorded: a folder among the project's own versions
    relative to the project (so the project can move), anything else as given.

    Anything else is also approved for this project in the user's config
    (`engine.model_trust`): a model is recorded once this user chose it (or approved it), so
    their own project opens it again without asking; a project from elsewhere does ask.
    """
    try:
        folder = Path(source).resolve()
        folder.relative_to(models_folder(project_path).resolve())
    except (OSError, ValueError):
        own = model_folder(project_path, source)
        if not _needs_no_consent(project_path, own):
            model_trust.approve(project_path, model_trust.location_key(
                source if own is None else own, is_hub=own is None))
        return source
    return stored_location(project_path, folder)


def model_folder(project_path: Path | None, location: str) -> Path | None:
    """The folder a model row's location names, or None for a Hub model.

    Relative locations (the project's own versions) are read against the project's folder,
    absolute ones (a folder the user pointed at) are used as they are, and "default" is the
    bundled model's package folder. A relative name that is no folder there, and does not
    look like one of the project's versions, is a Hub name such as "org/model".
    """
    if location == DEFAULT_MODEL:
        return default_model_path()
    path = Path(location)
    if path.is_absolute():
        return path
    if project_path is None:    # a server project: nothing is "beside" it
        return None
    inside = project_path.parent / path
    if inside.exists() or _OWN_VERSION.search(location):
        return inside
    return None


def model_source(project_path: Path, location: str) -> str | None:
    """What `load_encoder` takes for a model row: None for the default, else a path or name.

    Raises `UntrustedModelLocation` for a location outside the project's own versions (and
    not the bundled model) that the user has not approved for this project: opening a
    project from someone else never loads a model from elsewhere, nor downloads one,
    unasked. What a model folder holds is checked when it is resolved
    (`engine.encoding.model_safety`), wherever it is.
    """
    if location == DEFAULT_MODEL:
        return None
    check_consent(project_path, location)
    folder = model_folder(project_path, location)
    return str(folder) if folder is not None else location


def check_consent(project_path: Path, location: str) -> None:
    """Raise `UntrustedModelLocation` unless the project may load `location` as it is: the
    default, one of its own versions, or a location the user approved for it."""
    key = _consent_key(project_path, location)
    if key is not None and not model_trust.is_approved(project_path, key):
        raise UntrustedModelLocation(project_path, key,
                                     is_hub=model_folder(project_path, location) is None)


def approve_locations(store: Store, project_path: Path) -> list[str]:
    """Approve every model location the project names outside its own versions (the CLI's
    --trust-model-location); returns those that were not approved before."""
    with store.read() as conn:
        locations = [row["location"] for row in embedding_store.list_models(conn)]
    added = []
    for location in locations:
        key = _consent_key(project_path, location)
        if key is not None and model_trust.approve(project_path, key):
            added.append(key)
    return added


def _consent_key(project_path: Path, location: str) -> str | None:
    """How a consent to load `location` for this project is keyed (`model_trust`), or None
    when it needs none: the default model, or a folder inside the project's own versions."""
    if location == DEFAULT_MODEL:
        return None
    folder = model_folder(project_path, location)
    if _needs_no_consent(project_path, folder):
        return None
    return model_trust.location_key(location if folder is None else folder,
                                    is_hub=folder is None)


def _needs_no_consent(project_path: Path, folder: Path | None) -> bool:
    """A folder inside the project's own `.models` folder, or the bundled model's (symbolic
    links followed: a link there that points elsewhere is elsewhere)."""
    if folder is None:
        return False
    try:
        resolved = folder.resolve()
        own = models_folder(project_path).resolve()
        return (resolved != own and resolved.is_relative_to(own)) or \
            resolved == default_model_path().resolve()
    except OSError:
        return False


def data_hash(pairs: Sequence[LabelledPair]) -> str:
    """sha256 of the pairs as a sorted list, each pair's texts in sorted order.

    Independent of row order and of which side a text is on, so the same labels give the
    same hash whether they came from the review screen or a file.
    """
    lines = sorted(json.dumps([*sorted((p.text_a, p.text_b)), round(float(p.label), 6)],
                              ensure_ascii=False) for p in pairs)
    return hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()


def new_staging_folder(store: Store) -> Path:
    """A fresh hidden folder inside the models folder, on the same disk as the versions,
    so that finishing a version is a rename and not a copy (a server project's: in this
    computer's cache of its versions)."""
    if not store.is_file:
        return version_blobs.staging_folder(store)
    parent = models_folder(store.path)
    parent.mkdir(exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=parent))


def _next_number(conn: Connection, project_path: Path) -> int:
    """One more than any model id and any `v<N>` folder (a folder a crash left behind)."""
    highest = version_store.highest_model_id(conn)
    folder = models_folder(project_path)
    if folder.is_dir():
        for entry in folder.iterdir():
            match = _VERSION_DIR.match(entry.name)
            if match:
                highest = max(highest, int(match.group(1)))
    return highest + 1


def version_path(store: Store, row: dict) -> Path:
    """Where version `row`'s folder is on this computer: beside the project file, or a
    server project's cached copy (`version_blobs.cached_path`)."""
    if store.is_file:
        return store.path.parent / row["location"]
    return version_blobs.cached_path(store, row)


def register_version(store: Store, trained: Path, *, name_root: str,
                     parent_id: int | None, objective: str, metrics: dict, record: dict,
                     dim: int, max_seq_length: int, judge: KeptJudge | None = None) -> int:
    """Move the finished folder `trained` into place as `v<N>` and add its row; returns N.

    `record` is written into the folder as `duplens_version.json`, with the version number
    added. `judge`: the run's second opinion, kept as `v<N+1>` with a row naming N
    (`engine.training.judge_versions`). Either every folder and row exists afterwards, or
    none does. On a server each folder goes into the database as its tar blob in the rows'
    transaction, and then into this computer's cache.
    """
    fingerprint = resolve_model(str(trained)).fingerprint
    if not fingerprint.startswith("sha256:"):
        raise ModelError(f"{trained.name}: the trained model has no weights file")
    placed: list[Path] = []
    try:
        with store.write() as conn:
            version_store.lock_numbering(conn)   # one new version at a time
            clash = version_store.model_with_fingerprint(conn, fingerprint)
            if clash is not None:
                raise ModelError(f"training left the weights exactly as they were (the same as "
                                 f"version {clash}); train for more steps")
            clash = judge and version_store.model_with_fingerprint(conn, judge.fingerprint)
            if clash:   # `judge_to_keep` looked before: another run kept the same one since
                raise ModelError(f"the second opinion's weights are version {clash}'s; run "
                                 f"again to keep the new version without it")
            number = _next_number(conn, store.path) if store.is_file else \
                version_store.highest_model_id(conn) + 1
            version_store.add_model_version(
                conn, number, name=f"{name_root} v{number}",
                location=_place(store, conn, number, trained, record, placed),
                fingerprint=fingerprint, dim=dim, max_seq_length=max_seq_length,
                parent_id=parent_id, objective=objective, metrics=metrics,
                created_at=time.time())
            if judge is not None:
                version_store.add_model_version(
                    conn, number + 1, name=f"{name_root} v{number} second opinion",
                    location=_place(store, conn, number + 1, judge.folder,
                                    {"second_opinion_of": number, **judge.record}, placed),
                    fingerprint=judge.fingerprint, dim=JUDGE_DIM,
                    max_seq_length=judge.max_seq_length, parent_id=parent_id,
                    objective=None, metrics=judge.metrics, created_at=time.time(),
                    judge_of=number)
    except BaseException:
        for folder in placed:
            shutil.rmtree(folder, ignore_errors=True)
        raise
    if not store.is_file:
        version_blobs.keep_trained(store, {"id": number, "fingerprint": fingerprint},
                                   trained)
        if judge is not None:
            version_blobs.keep_trained(
                store, {"id": number + 1, "fingerprint": judge.fingerprint}, judge.folder)
    return number


def _place(store: Store, conn: Connection, number: int, folder: Path, record: dict,
           placed: list[Path]) -> str:
    """Write `record` (with `number`) into `folder` and put the folder where version
    `number` lives: renamed to `v<number>` beside a file (added to `placed`), or into the
    database as its blob; returns the location its row records."""
    (folder / VERSION_FILE).write_text(json.dumps({"version": number, **record}, indent=1,
                                                  ensure_ascii=False), encoding="utf-8")
    if not store.is_file:
        put_folder(conn, number, folder)
        return version_blobs.server_location(store, number)
    target = models_folder(store.path) / f"v{number}"
    folder.rename(target)
    placed.append(target)
    return stored_location(store.path, target)


def delete_version(store: Store, model_id: int) -> str:
    """Remove a trained version nobody uses: its row, embeddings, index, cached neighbour
    graphs and folder, and its second opinion's (`judge_versions`); returns its name. What
    "Discard" in the wizard does.

    Only the project's own versions (folders in `<project>.models/`) can go, never the active
    one, one that other versions were trained from (their record names it), or a model the
    user pointed at (that folder is theirs). The folders are moved aside inside the
    transaction and deleted after it commits, so a failure leaves the version and its judge
    whole. On a server their folder blobs go in the same transaction, and this computer's
    cached copies after it.
    """
    moved: list[Path] = []
    aside: Path | None = None
    try:
        with store.write() as conn:
            row = embedding_store.get_model_row(conn, model_id)
            if row is None:
                raise InputError(f"{store.name}: has no model version {model_id}")
            active = version_store.active_model_id(conn)
            fast = [r["id"] for r in embedding_store.list_models(conn)
                    if sibling_of(r) == model_id]   # a version's fast form goes with it
            judges = [embedding_store.get_model_row(conn, i)   # and its second opinion
                      for i in version_store.judge_ids(conn, model_id)]
            if active in {str(i) for i in (model_id, *fast)}:
                raise InputError(f"{row['name']}: is the active model; make another version "
                                 f"active before deleting it")
            if sibling_of(row) is not None:
                raise InputError(f"{row['name']}: is how version {sibling_of(row)} runs fast, "
                                 f"and goes when that version is deleted")
            if not _OWN_VERSION.search(row["location"]):
                raise InputError(f"{row['name']}: was not trained in this project; only "
                                 f"its own versions can be deleted")
            children = version_store.child_names(conn, model_id)
            if children:
                raise InputError(f"{row['name']}: {', '.join(children)} was trained from it; "
                                 f"it is kept as their parent")
            for gone in (*(j["id"] for j in judges), model_id, *fast):   # judges name it
                version_store.delete_model(
                    conn, gone, blob_names=[blob_name(gone), folder_blob_name(gone)],
                    prefix=f"knn/{gone}/")
                side_file.forget(conn, gone)   # its index's copy beside the project
            for gone in (row, *judges) if store.is_file else ():
                folder = model_folder(store.path, gone["location"])
                if folder is not None and folder.exists():
                    aside = aside or Path(tempfile.mkdtemp(prefix=STAGING_PREFIX,
                                                           dir=folder.parent))
                    folder.rename(aside / folder.name)
                    moved.append(folder)
    except BaseException:
        for folder in moved:
            (aside / folder.name).rename(folder)
        raise
    finally:
        if aside is not None:
            shutil.rmtree(aside, ignore_errors=True)
    for gone in (row, *judges) if not store.is_file else ():
        version_blobs.forget(store, gone["id"])
    return row["name"]


def root_name(conn: Connection, model_id: int | None) -> str:
    """The name of the model a chain of versions started from (for naming a new version),
    without a backend's tag: a version trained from the bundled model's bf16 form is the
    model's version, and runs however its own check decides (`engine.training.fast_form`)."""
    seen: set[int] = set()
    name = "model"
    while model_id is not None and model_id not in seen:
        seen.add(model_id)
        row = embedding_store.get_model_row(conn, model_id)
        if row is None:
            break
        tag = split_fingerprint(row["fingerprint"])[1]
        name = row["name"] if tag is None else row["name"].removesuffix(f" ({tag})")
        if row["parent_id"] is None:
            break
        model_id = row["parent_id"]
    return re.sub(r" v\d+$", "", name)


def copy_out_folder(source: Path, destination: Path) -> Path:
    """Copy a model folder to `destination` (new, or an empty folder); it appears complete.

    The copy is made beside the destination and renamed into place, so an interrupted copy
    leaves no half-copied model that would load with missing files.
    """
    if not source.is_dir():
        raise ModelError(f"{source}: the model folder is missing")
    if destination.exists() and (not destination.is_dir() or any(destination.iterdir())):
        raise ModelError(f"{destination}: already exists and is not an empty folder")
    if not destination.parent.is_dir():
        raise ModelError(f"{destination}: folder {destination.parent} does not exist")
    staging = Path(tempfile.mkdtemp(prefix=f".{destination.name}{STAGING_PREFIX}",
                                    dir=destination.parent))
    try:
        shutil.copytree(source, staging / "model",
                        ignore=shutil.ignore_patterns(STAGING_PREFIX + "*", "__pycache__"))
        if destination.exists():
            destination.rmdir()
        (staging / "model").rename(destination)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return destination


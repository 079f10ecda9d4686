"""`ActiveModel`: which model a project searches with, and that model loaded.

The stored choice (`meta.active_model_id` and its `models` row) and the loaded
`SentenceEncoder` change together here, under one lock, so a search never pairs a query of
one model with another model's index. The previous model is kept loaded as a spare after a
switch (and a just-trained version before one), so switching straight back is instant.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from engine.encoding import backend_choice
from engine.encoding.backends import get_backend, is_auto, split_fingerprint, stored_fingerprint
from engine.encoding.encoder import SentenceEncoder
from engine.encoding.loading import load_encoder, load_stored_encoder
from engine.encoding.model_spec import DEFAULT_MODEL, default_model_path
from engine.errors import ProjectError
from engine.store import embeddings as embedding_store
from engine.store.database import Store


@dataclass(frozen=True)
class ModelPreferences:
    """How models are loaded from now on: device, batch size, backend ("auto" or None: a
    new project gets the fastest backend that keeps quality here (`backend_choice`), and
    a project keeps the backend its embeddings were made with), whether single queries get
    the faster runtime (`SentenceEncoder.prepare_fast_queries`; the window asks for it),
    and whether the active model may be served without torch from its checked ONNX export
    (`engine.encoding.torch_free_encoder`; the command line's search and match ask for it: they
    encode a few texts, and importing torch would be most of their time)."""

    device: str = "auto"
    batch_size: int = 64
    backend: str | None = None
    fast_queries: bool = False
    torch_free: bool = False


class ActiveModel:
    """The project's active model: its stored row and its loaded encoder."""

    def __init__(self, store: Store, on_switch: Callable[[int], None]) -> None:
        self._store = store
        self._on_switch = on_switch  # told the new model id when another model serves
        self.preferences = ModelPreferences()
        self.lock = threading.Lock()  # guards the encoder and the id together
        self._encoder: SentenceEncoder | None = None
        self._id: int | None = None
        self._spare: tuple[int, SentenceEncoder] | None = None

    def configure(self, **changes) -> ModelPreferences:
        """Change some preferences (`ModelPreferences` fields); models loaded later use them."""
        self.preferences = dataclasses.replace(self.preferences, **changes)
        return self.preferences

    # -- the stored choice -----------------------------------------------------------------
    def row(self) -> dict | None:
        """The active model's `models` row, None before any model was used."""
        model_id = self._store.get_meta("active_model_id")
        if model_id is None:
            return None
        with self._store.read() as conn:
            return embedding_store.get_model_row(conn, int(model_id))

    def id(self) -> int:
        """The active model's id, loading the default model for a new project. Cached: the
        per-keystroke search asks for it on every call."""
        if self._id is not None:
            return self._id
        active = self.row()
        if active is None:
            self.encoder()
            active = self.row()
        self._id = int(active["id"])
        return self._id

    def is_default(self) -> bool:
        """True when the active model is the bundled default (or none is set yet)."""
        active = self.row()
        return active is None or active["location"] == DEFAULT_MODEL

    def source(self, location: str) -> str | None:
        """A stored model location as `load_encoder` takes it: the project's own versions
        are stored relative to the project file, so they are found wherever it moved."""
        from engine.training import version_blobs
        from engine.training.version_folders import model_source

        if not self._store.is_file:   # a version's folder comes from the database
            return version_blobs.model_source(self._store, location)
        return model_source(self._store.path, location)

    def serving_backend(self, row: dict, preferred: str | None = None) -> str:
        """The backend that serves `row`'s stored embeddings (`backend_choice.for_stored`)."""
        return backend_choice.for_stored(row["fingerprint"],
                                         preferred or self.preferences.backend,
                                         self.preferences.device)

    def new_backend(self, model: str | None, device: str | None = None) -> str:
        """The backend a model chosen now is loaded with, by the preferences
        (`backend_choice.for_new_model`). A version fine-tuned in the project gets its fast
        form after training, checked on the project's pairs, and is activated through it
        (`engine.training.fast_form`), not through here."""
        return backend_choice.for_new_model(model, self.preferences.backend,
                                            device or self.preferences.device)

    def choose(self, model: str | None = None, *, device: str = "auto",
               backend: str | None = None, batch_size: int = 64) -> None:
        """Apply a model asked for by name before encoding (`add_file.ModelChoice`): a named
        model, device or backend is loaded now (a named backend as named; with no model
        named, the one that keeps the project's embeddings); with none named, the project
        keeps its own model, and a new project gets the default model with the backend
        `new_backend` gives it."""
        active = self.row()
        chosen = backend
        if chosen is None and active is not None and model is None:
            chosen = self.serving_backend(active)   # the project's own
        if model is not None or active is None or device != "auto" or backend:
            location = model if model is not None else (
                self.source(active["location"]) if active is not None else None)
            self.use(location, device=device, batch_size=batch_size, backend=chosen)
        self.configure(batch_size=batch_size)

    def accepts(self, encoder: SentenceEncoder) -> bool:
        """Whether an encoder loaded before the project was opened (the window's preloaded
        default model) serves it as its own would: the model the project has embeddings
        of, or for a new project the default model with the backend it would get."""
        active = self.row()
        if active is None:
            if Path(encoder.spec.location) != default_model_path():
                return False
            weights = split_fingerprint(encoder.spec.fingerprint)[0]
            wanted = stored_fingerprint(weights, get_backend(self.new_backend(None,
                                                                             encoder.device)))
            return wanted == encoder.spec.fingerprint
        return (active["location"] == DEFAULT_MODEL
                and active["fingerprint"] == encoder.spec.fingerprint)

    # -- the loaded encoder ----------------------------------------------------------------
    def loaded(self) -> SentenceEncoder | None:
        """The encoder if one is loaded; never loads."""
        with self.lock:
            return self._encoder

    def snapshot(self) -> tuple[SentenceEncoder | None, int | None]:
        """The loaded encoder and the id it serves, read together; never loads."""
        with self.lock:
            return self._encoder, self._id

    def encoder(self) -> SentenceEncoder:
        """The active model, loaded on first use (the default model for a new project).

        Opening keeps the embeddings the project has: a quantised backend preference applies
        when a model is chosen (`use`), never by re-encoding on open."""
        encoder = self.loaded()
        if encoder is not None:
            return encoder
        active = self.row()
        light = self._torch_free(active)
        if light is not None:
            with self.lock:
                self._encoder, self._id = light, int(active["id"])
            return light
        if self._store.read_only:
            if active is None:
                raise ProjectError(f"{self._store.name}: has no encoded items yet")
            prefs = self.preferences
            encoder = load_stored_encoder(
                self.source(active["location"]), active["fingerprint"], device=prefs.device,
                batch_size=prefs.batch_size, backend=prefs.backend, check_weights=False)
            self._prepare(encoder)
            with self.lock:
                self._encoder = encoder
            return encoder
        if active is None:
            return self.use(None)
        return self.use(self.source(active["location"]), backend=self.serving_backend(active),
                        stored=True)

    def use(self, model: str | None = None, *, device: str | None = None,
            batch_size: int | None = None, backend: str | None = None,
            stored: bool = False) -> SentenceEncoder:
        """Load a model (default, folder or hub name) and make it the active one, with
        `backend` or else the preferred one (`new_backend`); with a quantised backend it is
        a model of its own (its rows are encoded again). `stored`: the backend serves the
        project's own embeddings, which a CPU that runs it slowly still serves."""
        prefs = self.preferences
        device = device or prefs.device
        encoder = load_encoder(model, device=device,
                               batch_size=batch_size or prefs.batch_size,
                               backend=backend or self.new_backend(model, device),
                               stored=stored)
        self.attach(encoder, is_default=model in (None, "", DEFAULT_MODEL))
        return encoder

    def reload(self, backend: str | None = None) -> SentenceEncoder:
        """Load the active model again through `backend` (say, after the user picked a
        faster one), keeping which model is active: a fine-tuned version stays the model.
        "auto" keeps the backend the active model's embeddings were made with."""
        if backend is not None:
            self.configure(backend=backend)
        active = self.row()
        if active is None:
            return self.use(None)
        chosen = self.preferences.backend
        keeps = is_auto(chosen)   # the embeddings' own backend, not a new choice
        if keeps:
            chosen = self.serving_backend(active)
        return self.use(self.source(active["location"]), backend=chosen, stored=keeps)

    def attach(self, encoder: SentenceEncoder, *, is_default: bool) -> int:
        """Make an already loaded encoder the active model (tests and the window share one
        loaded model between projects); returns its model id."""
        from engine.training.judge_versions import refuse_as_encoder
        from engine.training.version_blobs import location_of
        from engine.training.version_folders import location_for

        spec = encoder.spec
        if is_default:
            location = DEFAULT_MODEL
        elif self._store.is_file:
            location = location_for(self._store.path, spec.location)
        else:
            location = location_of(self._store, spec.fingerprint)
        # Opening a project attaches its model every time: when the project already holds
        # this choice, nothing is written, so a read-only file or a full disk still opens.
        with self._store.read() as conn:
            model_id = embedding_store.find_model(conn, spec.fingerprint)
            found = None if model_id is None else embedding_store.get_model_row(conn, model_id)
        if found is not None:
            refuse_as_encoder(found)   # a version's second opinion loaded as a model
        noted = (self._store.get_meta("active_model_id"), self._store.get_meta("last_device"))
        if model_id is None or noted != (str(model_id), encoder.device):
            with self._store.write() as conn:
                model_id = embedding_store.get_or_add_model(
                    conn, name=spec.name, location=location, fingerprint=spec.fingerprint,
                    dim=encoder.dim, max_seq_length=encoder.max_seq_length)
                self._store.set_meta("active_model_id", str(model_id), conn)
                self._store.set_meta("last_device", encoder.device, conn)
        self._prepare(encoder)
        with self.lock:
            self._encoder, self._id = encoder, model_id
        self._on_switch(model_id)
        return model_id

    def switch(self, model_id: int, encoder: SentenceEncoder) -> None:
        """Serve `model_id` with `encoder` from now on (the stored choice too); the model
        that served until now is kept as the spare. The caller holds the index lock, so
        that the index changes in the same step."""
        with self._store.write() as conn:
            self._store.set_meta("active_model_id", str(model_id), conn)
            self._store.set_meta("last_device", encoder.device, conn)
        with self.lock:
            previous = (self._id, self._encoder)
            self._encoder, self._id = encoder, model_id
        if previous[0] is not None and previous[1] is not None:
            self._spare = (previous[0], previous[1])

    # -- the spare -------------------------------------------------------------------------
    def keep_spare(self, model_id: int, encoder: SentenceEncoder) -> None:
        """Keep a loaded model that does not serve (a version just trained, or one whose
        activation was stopped), so activating it needs no load from disk."""
        self._spare = (model_id, encoder)

    def spare(self, model_id: int) -> SentenceEncoder | None:
        spare = self._spare
        return spare[1] if spare is not None and spare[0] == model_id else None

    def forget_spare(self, model_id: int) -> None:
        if self._spare is not None and self._spare[0] == model_id:
            self._spare = None

    def _torch_free(self, active: dict | None) -> SentenceEncoder | None:
        """The active model served without torch from the export its stored embeddings
        come from (torch's: the "onnx" one; a quantised backend's: its own), checked to
        give them, when the preferences allow it, on the CPU; else None
        (`torch_free_encoder.load` says why not in the log)."""
        prefs = self.preferences
        if not prefs.torch_free or active is None or prefs.device not in ("auto", "cpu"):
            return None
        from engine.encoding import torch_free_encoder

        source = self.source(active["location"])   # the project's consent rules apply
        folder = default_model_path() if source is None else Path(source)
        if not folder.is_dir():   # a hub name: torch's loader finds its snapshot
            return None
        return torch_free_encoder.load(folder, active, batch_size=prefs.batch_size)

    def verify_torch_free(self, on_export: Callable[[], object] | None = None
                          ) -> float | None:
        """Check the loaded torch model's ONNX export against it, so that later searches
        can skip torch (`torch_free_encoder.verify`: makes the export when missing, calling
        `on_export` first); None when nothing was checked. For the command line, after its
        work is done."""
        encoder = self.loaded()
        if encoder is None or encoder.device != "cpu":
            return None
        from engine.encoding import torch_free_encoder

        return torch_free_encoder.verify(encoder, on_export)

    def _prepare(self, encoder: SentenceEncoder) -> None:
        if self.preferences.fast_queries:
            encoder.prepare_fast_queries()
            if encoder.query_runtime == "onnxruntime":   # the export is there: check it once
                from engine.encoding import torch_free_encoder

                torch_free_encoder.verify(encoder)


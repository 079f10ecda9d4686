"""`ModelVersions`: fine-tuning the active model into new versions, and switching between them.

A version is a plain sentence-transformers folder beside the project with its `models` row
(`engine.training.version_folders`); a server project keeps the folder in its database and each
computer a checked copy (`engine.training.version_blobs`). Training never touches the
active model; activating encodes and indexes every text with the version while search
keeps using the active one, and only then switches, in one step, under the live index's
lock. A run with a second opinion keeps its judge as a version beside the new one
(`engine.training.judge_versions`), which scores pairs when it read the held-out pairs
better than its version did.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from engine.encoding import backend_choice
from engine.encoding.encode_job import CHUNK_TEXTS
from engine.encoding.encoder import SentenceEncoder
from engine.encoding.loading import load_stored_encoder
from engine.encoding.model_spec import ModelSpec
from engine.errors import InputError, ModelError, ProjectError
from engine.progress import CancelToken, Progress, ProgressCallback, no_progress
from engine.services.active_model import ActiveModel
from engine.services.live_index import LiveIndex
from engine.services.verdicts import Verdicts
from engine.store import embeddings as embedding_store
from engine.store import items as items_store
from engine.store.database import Store

if TYPE_CHECKING:  # pragma: no cover
    from engine.services.clusters import Clusters
    from engine.services.project_threshold import Threshold
    from engine.training.activation import ActivationReport
    from engine.training.hard_negatives import NegativePool
    from engine.training.options import TrainingOptions
    from engine.training.pairs import LabelledPair
    from engine.training.second_opinion import SilverSource
    from engine.training.session import FinetuneReport

# Project texts hard negatives are mined from, at most: exact similarities of a few thousand
# questions against 200,000 texts, and their vectors (300 MB at 384 dimensions), stay cheap.
NEGATIVE_POOL_TEXTS = 200_000


class ModelVersions:
    """Train, list, activate, copy out and delete the project's model versions, and ask the
    active version's second opinion (the judge its run kept) about pairs."""

    def __init__(self, store: Store, model: ActiveModel, live: LiveIndex,
                 verdicts: Verdicts, clusters: Clusters | None = None,
                 threshold: Threshold | None = None) -> None:
        self._store = store
        self._model = model
        self._live = live
        self._verdicts = verdicts
        # The neighbour graph and the model's threshold a second opinion picks silver pairs
        # from (`_silver_source`); without them a run cannot have one.
        self._clusters = clusters
        self._threshold = threshold
        self._activation_lock = threading.Lock()  # one activation at a time
        # The active version's second opinion, once loaded: (judge id, CrossEncoder).
        self._judge: tuple[int, object] | None = None
        self._judge_lock = threading.Lock()  # one load, and one scoring, at a time

    @property
    def _path(self) -> Path | None:
        return self._store.path   # None on a server project

    def _writable(self) -> None:
        if self._store.read_only:
            raise ProjectError(f"{self._store.name}: the project is open read-only")

    def _row(self, version_id: int) -> dict:
        with self._store.read() as conn:
            row = embedding_store.get_model_row(conn, int(version_id))
        if row is None:
            raise InputError(f"{self._store.name}: has no model version {version_id} "
                             f"(see 'duplens models')")
        return row

    # -- training --------------------------------------------------------------------------
    def training_pairs(self, extra_file: str | os.PathLike | None = None, **file_options
                       ) -> list[LabelledPair]:
        """The verdicts given in review, those on checked files' rows not added yet
        (`engine.training.collect.checked_pairs`), plus those of a labelled file
        (`read_labelled_file` keywords in `file_options`); a pair given twice counts once,
        with the first of these labels (a verdict is a training pair's label here)."""
        from engine.store import pending_verdicts
        from engine.training.collect import (
            checked_pairs,
            extend_pairs,
            file_pairs,
            merge_pairs,
            review_pairs,
        )

        with self._store.read() as conn:
            checked = checked_pairs(pending_verdicts.as_pairs(conn))
        pairs = extend_pairs(review_pairs(self._verdicts.pairs()), checked)
        if extra_file is None:
            return pairs
        return merge_pairs(pairs, file_pairs(extra_file, **file_options))

    def finetune(self, objective: str | None = None, *,
                 pairs: Sequence[LabelledPair] | None = None,
                 extra_file: str | os.PathLike | None = None,
                 file_options: dict | None = None, options: TrainingOptions | None = None,
                 held_out: float = 0.5, seed: int = 0, min_pairs: int | None = None,
                 progress: ProgressCallback = no_progress, cancel: CancelToken | None = None
                 ) -> FinetuneReport:
        """Train the active model on labelled pairs (the verdicts, by default) and save the
        result as a new version.

        `pairs` defaults to `training_pairs(extra_file, **file_options)`; given, the file's
        pairs are added to them. `objective` defaults to `DEFAULT_OBJECTIVE`. The pairs are
        split without sharing questions (`held_out` of them measured, not trained on), the
        active model is measured, a copy trained and measured, and the copy saved as version
        N in `<project>.models/vN/` with its `models` row. The version is not activated
        (`activate`). Too few pairs, or one verdict only, raise InputError with advice
        before any model is loaded; `cancel` raises `Cancelled`; either way, and on any
        error, nothing is saved and the active model is untouched. Progress stages:
        `engine.training.session.FINETUNE_STAGES`. Searching goes on meanwhile.

        On a CPU whose default backend is a fast one, the saved version's fast form is then
        made and checked ("converting", `engine.training.fast_form`): activating the version
        encodes with it when it passed. Stopping is not heard there (the version is saved by
        then, and the step takes seconds); a conversion that fails leaves the version with
        torch, and the report's `fast_form` says why.

        With `options.second_opinion` (silver pairs at most), a judge trained on the training
        part labels pairs of the project's neighbour graph around the active model's
        threshold (`engine.training.second_opinion`): the graph is built first if the
        project has none for the active model.
        """
        from engine.training.collect import file_pairs, merge_pairs
        from engine.training.objectives import DEFAULT_OBJECTIVE
        from engine.training.pairs import MIN_PAIRS
        from engine.training.session import check_pairs, run_finetune

        self._writable()
        objective = objective or DEFAULT_OBJECTIVE
        min_pairs = MIN_PAIRS if min_pairs is None else min_pairs
        if pairs is None:
            pairs = self.training_pairs(extra_file, **(file_options or {}))
        elif extra_file is not None:
            pairs = merge_pairs(pairs, file_pairs(extra_file, **(file_options or {})))
        check_pairs(pairs, objective, min_pairs)  # before the slow model load
        encoder = self._model.encoder()
        report, trained = run_finetune(
            self._store, encoder, self._parent(), pairs, objective,
            options=options, held_out=held_out, seed=seed, min_pairs=min_pairs,
            progress=progress, cancel=cancel, pool=self._negative_pool(objective, options),
            silver=self._silver_source(options))
        return self._convert(report, trained, encoder, progress)

    def _silver_source(self, options: TrainingOptions | None) -> SilverSource | None:
        """The project's graph, the active model's own threshold and its texts, for a second
        opinion; None when the run has none."""
        from engine.training.second_opinion import SilverSource

        if options is None or not options.second_opinion:
            return None
        if self._clusters is None or self._threshold is None:
            raise InputError(f"{self._store.name}: a second opinion needs the project's "
                             f"neighbour graph, which this project object cannot reach")
        clusters, store = self._clusters, self._store

        def texts(ids):
            with store.read() as conn:
                return items_store.texts_by_id(conn, list(ids))

        def text_ids(keys):
            with store.read() as conn:
                return items_store.text_ids_for_keys(conn, keys)

        return SilverSource(
            lambda progress, cancel: clusters.graph(progress=progress, cancel=cancel),
            float(self._threshold.model_default().value), texts, text_ids)

    def _parent(self) -> dict | None:
        """The row a version trained now comes from: the active model's, or when that is a
        version's fast form, the version's (the form shares its weights and is listed as
        part of it)."""
        from engine.training.version_folders import sibling_of

        active = self._model.row()
        version = sibling_of(active) if active is not None else None
        return active if version is None else self._row(version)

    def _convert(self, report: FinetuneReport, trained, like: SentenceEncoder,
                 progress: ProgressCallback) -> FinetuneReport:
        """Make and check the new version's fast form where versions get one, and keep the
        model activation will serve loaded (the fast form when it passed, else `trained`)."""
        from engine.training import fast_form

        prefs = self._model.preferences
        backend = backend_choice.for_trained_version(prefs.backend, prefs.device)
        if backend is None or like.device != "cpu":
            self._keep_trained(report.version_id, trained, like)
            return report
        check, fast, sibling = fast_form.convert(
            self._store, self._row(report.version_id), trained, report.split.held_out,
            report.after.average_precision, backend=backend, batch_size=like.batch_size,
            progress=progress)
        if fast is not None and sibling is not None:
            self._model.keep_spare(sibling, fast)
        else:
            self._keep_trained(report.version_id, trained, like)
        return dataclasses.replace(report, fast_form=check.as_dict())

    def _negative_pool(self, objective: str, options: TrainingOptions | None
                       ) -> NegativePool | None:
        """The project's own indexed texts with their vectors under the active model (the
        one trained), for mining hard negatives as sentence-transformers'
        `mine_hard_negatives` does from a corpus: nothing is encoded again. None when the
        objective mines nothing. At most `NEGATIVE_POOL_TEXTS`, a seeded sample beyond."""
        from engine.training.hard_negatives import NegativePool
        from engine.training.objectives import mines_negatives
        from engine.training.options import TrainingOptions

        options = options or TrainingOptions()
        if not mines_negatives(objective, options):
            return None
        index = self._live.get(self._model.id())
        with self._store.read() as conn:
            live = items_store.live_text_ids(conn)
            ids = np.asarray(sorted(set(index.ids().tolist()) & live), dtype=np.int64)
            if len(ids) > NEGATIVE_POOL_TEXTS:
                rng = np.random.default_rng(options.seed)
                ids = np.sort(rng.choice(ids, NEGATIVE_POOL_TEXTS, replace=False))
            texts = items_store.texts_by_id(conn, ids.tolist())
        return NegativePool([texts[int(i)] for i in ids], index.vectors(ids))

    def _keep_trained(self, model_id: int, model, like: SentenceEncoder) -> None:
        """Keep a just-trained model loaded, served as the active one is (fp16 on CUDA)."""
        from engine.training.version_folders import version_path

        row = self._row(model_id)
        if like.device.startswith("cuda"):
            model.half()
        spec = ModelSpec(row["name"], str(version_path(self._store, row)),
                         row["fingerprint"], True)
        self._model.keep_spare(model_id, SentenceEncoder(model, spec, like.device,
                                                         like.batch_size))

    # -- versions --------------------------------------------------------------------------
    def list(self) -> list[dict]:
        """Every model the project has used, oldest first: id, name, location, folder,
        available, parent_id, objective, metrics (before/after for trained versions),
        created_at, active, encoded (live texts embedded with it), texts, indexed, and
        second_opinion (the judge its run kept, `judge_versions.judge_entry`, or None).
        Cheap: loads no model."""
        from engine.training.version_list import list_versions

        active = self._model.row()
        return list_versions(self._store, active["id"] if active else None)

    def activate(self, version_id: int, *, progress: ProgressCallback = no_progress,
                 cancel: CancelToken | None = None, chunk_texts: int = CHUNK_TEXTS
                 ) -> ActivationReport:
        """Make a model version the one search, duplicates and plots use.

        Loads it, encodes every live text it has not encoded yet (resumable), completes and
        saves its index, and only then switches, in one step: search keeps answering with
        the current model until then, from any thread. Cancelling (`cancel`) returns a report
        with `cancelled` set, the current model still active and what was encoded kept, so
        activating again resumes. A version used before switches back without encoding.
        Progress stages: `engine.training.activation.ACTIVATION_STAGES`.

        A version whose fast form passed its check is encoded and served by that form
        (`fast_form.serving_row`: its sibling row, whose id the report then names) while the
        backend is left to Duplens and models run on the CPU.
        """
        from engine.training.activation import ActivationReport, prepare_model_index
        from engine.training.fast_form import serving_row
        from engine.training.judge_versions import refuse_as_encoder

        self._writable()
        refuse_as_encoder(self._row(version_id))   # a second opinion encodes nothing
        with self._activation_lock:
            started = time.perf_counter()
            prefs = self._model.preferences
            row = serving_row(self._store, self._row(version_id), prefs.backend, prefs.device)
            report = ActivationReport(row["id"])
            active = self._model.row()
            if active is not None and active["id"] == row["id"]:
                self._model.encoder()
                report.activated = report.already_active = True
                return report
            encoder = self._load(row, progress)
            if cancel is not None and cancel.cancelled:
                report.cancelled = True
                self._model.keep_spare(row["id"], encoder)
                return report
            index = prepare_model_index(self._store, encoder, row["id"], report=report,
                                        progress=progress, cancel=cancel,
                                        chunk_texts=chunk_texts)
            if index is None:
                self._model.keep_spare(row["id"], encoder)
            else:
                with self._live.lock:  # search sees the old pair or the new one, never mixed
                    self._live.install(row["id"], index)
                    self._model.switch(row["id"], encoder)
                report.activated = True
            report.seconds = time.perf_counter() - started
            return report

    def _load(self, row: dict, progress: ProgressCallback) -> SentenceEncoder:
        """The version's encoder: the spare one when it is that version, else from disk,
        after checking the folder still holds the weights the version was recorded with."""
        from engine.training.activation import STAGE_LOADING
        from engine.training.version_folders import model_folder

        spare = self._model.spare(row["id"])
        if spare is not None:
            return spare
        # (a server project's version is checked, and unpacked if need be, by `source`)
        folder = model_folder(self._path, row["location"]) if self._store.is_file else None
        if folder is not None and not folder.is_dir():
            raise ModelError(f"{row['name']}: its folder {folder} is missing")
        progress(Progress(STAGE_LOADING, 0, 1))
        prefs = self._model.preferences
        encoder = load_stored_encoder(
            self._model.source(row["location"]), row["fingerprint"], device=prefs.device,
            batch_size=prefs.batch_size, backend=prefs.backend)
        progress(Progress(STAGE_LOADING, 1, 1))
        return encoder

    def copy_out(self, version_id: int, folder: str | os.PathLike) -> Path:
        """Copy a version's model folder out to `folder` (new or empty), loadable with plain
        `SentenceTransformer(folder)`; the bundled default model is copied from its package,
        a server project's version from this computer's checked copy of its stored folder."""
        from engine.training.version_folders import copy_out_folder

        row = self._row(version_id)
        source = self._folder(row)
        if source is None:
            raise ModelError(f"{row['name']}: is a Hugging Face Hub model, not stored on this "
                             f"computer; there is no folder to copy out")
        return copy_out_folder(source, Path(folder))

    def _folder(self, row: dict) -> Path | None:
        """Where a model row's folder is on this computer: beside a file, the bundled
        model's package, or a server version's checked copy (unpacked if need be); None
        for a Hub model."""
        from engine.training.version_blobs import version_folder
        from engine.training.version_folders import model_folder

        if self._store.is_file or row["parent_id"] is None:
            return model_folder(self._path, row["location"])
        return version_folder(self._store, row)

    def delete(self, version_id: int) -> str:
        """Delete a trained version that is not active and no other version came from (the
        wizard's "Discard"): its folder, row, embeddings and index; returns its name."""
        from engine.training.version_folders import delete_version

        self._writable()
        with self._activation_lock:  # never while that version is being activated
            name = delete_version(self._store, int(version_id))
            self._model.forget_spare(int(version_id))
        with self._judge_lock:
            self._judge = None   # it may have been the deleted version's
        return name

    # -- second opinions --------------------------------------------------------------------
    def judge_for(self, version_id: int) -> Path | None:
        """The folder of the second opinion (judge) kept with version `version_id` on this
        computer (a server project's unpacked and checked), None when the run that made the
        version had none (`engine.training.judge_versions`). `list` says whether it is
        offered (its held-out AP above the version's)."""
        from engine.store.version_rows import judge_ids

        self._row(version_id)
        with self._store.read() as conn:
            found = judge_ids(conn, int(version_id))
        return self._folder(self._row(found[0])) if found else None

    def second_opinion(self) -> dict | None:
        """The active version's second opinion as `list` shows it (`judge_entry`) when it is
        offered, else None: what the window asks before showing a judge's column."""
        from engine.training.version_list import listed_judge

        active = self._parent()
        judge = listed_judge(self._store, active["id"]) if active is not None else None
        return judge if judge is not None and judge["offered"] else None

    def second_opinion_scores(self, pairs: Sequence[tuple[str, str]], *,
                              progress: ProgressCallback = no_progress,
                              cancel: CancelToken | None = None) -> list[float]:
        """The active version's judge's probability (0..1) that each pair of texts is a
        duplicate, in order. InputError when it has none that is offered (`second_opinion`):
        a judge no better than the model on the held-out pairs is not asked. Loaded once,
        from safetensors, offline (`judge_versions.load_judge`); progress stage
        `cross_encoder.SCORING_STAGE`, `cancel` heard between chunks of pairs."""
        from engine.training.cross_encoder import score_pairs
        from engine.training.judge_versions import load_judge

        judge = self.second_opinion()
        if judge is None:
            raise InputError(f"{self._store.name}: the active model has no second opinion that "
                             f"read its held-out pairs better than it did")
        with self._judge_lock:
            if self._judge is None or self._judge[0] != judge["id"]:
                folder = self._folder(self._row(judge["id"]))
                self._judge = (judge["id"], load_judge(folder, self._model.preferences.device))
            scores = score_pairs(self._judge[1], list(pairs), progress=progress, cancel=cancel)
        return [float(x) for x in scores]

"""`Threshold`: the project's one threshold, read the same way by every view and command.

The rule (set by hand, else calibrated on the verdicts, else the model's default) lives in
`engine.review.calibration.project_threshold`; this service gathers what it needs from the
project: the hand-set value (`meta.threshold_by_hand`), the verdicts' calibration and the
active model's recorded default (`engine.encoding.model_threshold`).
"""

from __future__ import annotations

import functools

from engine.encoding.model_threshold import ModelThreshold, for_fingerprint, for_row
from engine.errors import InputError, ProjectError
from engine.review.calibration import Calibration, ProjectThreshold, project_threshold
from engine.services.active_model import ActiveModel
from engine.services.verdicts import Verdicts
from engine.store import embeddings as embedding_store
from engine.store.database import Store

BY_HAND_KEY = "threshold_by_hand"


class Threshold:
    """The project threshold: read it, set it by hand, hand it back."""

    def __init__(self, store: Store, model: ActiveModel, verdicts: Verdicts) -> None:
        self._store = store
        self._model = model
        self._verdicts = verdicts

    def current(self, calibration: Calibration | None = None) -> ProjectThreshold:
        """The threshold every view and command uses unless the user gives another.
        `calibration`: the verdicts' one when the caller has it already (it scores every
        judged pair)."""
        if calibration is None:
            calibration = self._verdicts.calibration()
        return project_threshold(calibration, self.model_default(), self.by_hand())

    def model_default(self) -> ModelThreshold:
        """The active model's recorded default (the bundled model's before any is used)."""
        row = self._model.row()
        if row is None:
            return _bundled_default()
        with self._store.read() as conn:
            return for_row(row, lambda model_id: embedding_store.get_model_row(conn, model_id))

    def by_hand(self) -> float | None:
        """The threshold the analyst set for this project, None when they have not."""
        value = self._store.get_meta(BY_HAND_KEY)
        try:
            return float(value) if value else None
        except ValueError:
            return None   # an unreadable setting is no setting: the rule goes on

    def set_by_hand(self, value: float | None) -> ProjectThreshold:
        """Set the project threshold (None: hand it back to the verdicts and the model)."""
        if value is not None and not 0.0 < float(value) <= 1.0:
            raise InputError(f"threshold must be between 0 and 1, not {value}")
        if self._store.read_only:
            raise ProjectError(f"{self._store.name}: the project is open read-only")
        self._store.set_meta(BY_HAND_KEY, "" if value is None else repr(round(float(value), 4)))
        return self.current()


@functools.cache
def _bundled_default() -> ModelThreshold:
    """A project that has used no model yet will use the bundled one (its fingerprint hashes
    the weights: once per process)."""
    from engine.encoding.model_spec import resolve_model

    return for_fingerprint(resolve_model(None).fingerprint)

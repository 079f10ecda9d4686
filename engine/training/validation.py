"""Early stopping: a validation part of the training pairs, measured after every epoch.

The part is split off the training pairs the way the held-out pairs are (`split_pairs`, by
question groups), so no validation question is trained on, and the held-out pairs are never
looked at: choosing the epoch on them would flatter the "after" figure. After each epoch the
model's average precision on the validation pairs is measured; the best epoch's weights are
kept (a copy in memory, about 90 MB for the bundled model) and put back at the end, and
training stops once `patience` epochs in a row have not beaten the best.

Measuring is quiet (no progress stage of its own: it takes seconds, between two training
steps) but stops when the run is cancelled.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.errors import InputError
from engine.progress import CancelToken
from engine.training.held_out import held_out_metrics
from engine.training.pairs import LabelledPair
from engine.training.split import split_pairs

if TYPE_CHECKING:  # pragma: no cover
    from sentence_transformers import SentenceTransformer
    from transformers import TrainerCallback

# Fewer validation pairs than this, or fewer than this many of either verdict, and an
# epoch's score is mostly noise: training then runs every epoch without validation.
MIN_VALIDATION_PAIRS = 40
MIN_VALIDATION_CLASS = 5


@dataclass(frozen=True)
class ValidationSplit:
    train: list[LabelledPair]
    validation: list[LabelledPair]  # empty: no validation
    note: str = ""  # for the user, when validation was asked for but not done


def split_validation(pairs: Sequence[LabelledPair], fraction: float, seed: int
                     ) -> ValidationSplit:
    """`fraction` of `pairs` set aside by question groups; all of them to train on when
    `fraction` is 0 or the part would be too small to tell epochs apart."""
    if fraction <= 0:
        return ValidationSplit(list(pairs), [])
    try:
        split = split_pairs(pairs, held_out=fraction, seed=seed)
    except InputError:
        split = None
    if split is not None:
        duplicates = sum(p.is_duplicate for p in split.held_out)
        others = len(split.held_out) - duplicates
        if (len(split.held_out) >= MIN_VALIDATION_PAIRS
                and min(duplicates, others) >= MIN_VALIDATION_CLASS and split.train):
            return ValidationSplit(split.train, split.held_out)
    return ValidationSplit(list(pairs), [], (
        f"no validation: {fraction:.0%} of {len(pairs)} training pairs is too few to measure "
        f"epochs on (at least {MIN_VALIDATION_PAIRS} pairs with {MIN_VALIDATION_CLASS} of "
        f"each verdict are needed); every epoch was trained and the last one kept"))


def early_stopping(model: SentenceTransformer, validation: Sequence[LabelledPair],
                   patience: int, cancel: CancelToken) -> TrainerCallback:
    """A trainer callback measuring `model` on `validation` after each epoch, stopping after
    `patience` epochs without a better average precision; `restore()` puts the best epoch's
    weights back. Made here because transformers is imported only when training."""
    from transformers import TrainerCallback

    class EarlyStopping(TrainerCallback):
        def __init__(self) -> None:
            self.scores: list[tuple[int, float]] = []  # (epoch, validation AP)
            self.best_epoch: int | None = None
            self.best_state: dict | None = None
            self.stopped_early = False
            self.at_best = False  # the weights now are the best epoch's

        def on_step_end(self, args, state, control, **kwargs):
            self.at_best = False
            return control

        def on_epoch_end(self, args, state, control, **kwargs):
            if cancel.cancelled:
                control.should_training_stop = True
                return control
            score = held_out_metrics(model, validation, cancel=cancel).average_precision
            epoch = len(self.scores) + 1
            self.scores.append((epoch, score))
            if self.best_epoch is None or score > dict(self.scores)[self.best_epoch]:
                self.best_epoch = epoch
                self.best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
                self.at_best = True
            elif epoch - self.best_epoch >= patience and epoch < args.num_train_epochs:
                self.stopped_early = True
                control.should_training_stop = True
            return control

        def restore(self) -> None:
            if self.best_state is not None and not self.at_best:
                model.load_state_dict(self.best_state)
            self.best_state = None  # the memory is not needed any more

    return EarlyStopping()

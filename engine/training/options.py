"""How to train: the options a person can set on the wizard's Advanced page or the CLI.

The defaults are the Sentence-BERT paper's (batch size 16, AdamW with linear warm-up over the
first 10% of the steps, one epoch; `weight_decay` is sentence-transformers' old `fit`
default) except the learning rate: 1e-4, not 2e-5. On Quora question pairs, the default
(contrastive) objective and 4,000 held-out pairs (benchmarks/finetune_quora.py,
docs/benchmarks.md), 1e-4 lifted held-out AP 76.27 -> 81.53 from 4,000 training pairs
(2e-5: 80.63) and -> 80.37 from 1,000 (2e-5: 77.67, 5e-5: 79.16, 2e-4: 80.30). At 2e-5
one short epoch moves the model little: the gain grew up to 1e-4. A second epoch gained more
at 1,000 pairs (81.26) but doubles the wait; a margin of 0.3 or 0.8, mined hard negatives, a
validation part for early stopping and the contrastive+mnrl objective all did worse there,
so they stay off by default and on the Advanced page / CLI.
"""

from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass(frozen=True)
class TrainingOptions:
    """How to train; see the module doc for where the defaults come from.

    `max_steps` cuts training short (for tests and quick trials); None runs every epoch.
    `margin` is the cosine distance non-duplicates are pushed beyond by the contrastive
    objectives (OnlineContrastiveLoss' own default, 0.5). `hard_negatives` adds, for each
    question of a duplicate pair, that many of its most similar texts outside its duplicate
    group as "not duplicate" pairs (contrastive objectives). `validation` sets that share of
    the training pairs aside (by question groups, like the held-out split) to measure after
    each epoch: the best epoch's weights are kept and training stops once `patience` epochs
    in a row did not improve on it; 0 trains every epoch and keeps the last.
    `second_opinion` (0: off) trains a judge (a cross-encoder) on the training pairs, which
    labels at most that many of the project's unlabelled pairs whose similarity lies within
    `silver_band` of the model's threshold; those "silver" pairs are trained on too
    (`engine.training.second_opinion`), but only when the judge read the held-out pairs
    better than the model (higher AP): `silver_always` labels silver even from a weaker
    judge, for the benchmark that measures what silver itself does; no window or command
    sets it. Options stored by versions made before these were added lack them:
    `from_stored` reads such a record's options with these defaults (off).
    """

    batch_size: int = 16
    learning_rate: float = 1e-4
    warmup_ratio: float = 0.1
    epochs: int = 1
    max_steps: int | None = None
    seed: int = 0
    weight_decay: float = 0.01
    margin: float = 0.5
    hard_negatives: int = 0
    validation: float = 0.0
    patience: int = 1
    second_opinion: int = 0
    silver_band: float = 0.15  # `silver.DEFAULT_BAND`
    silver_always: bool = False

    def __post_init__(self) -> None:
        if self.batch_size < 1 or self.epochs < 1:
            raise ValueError("batch_size and epochs must be at least 1")
        if not 0.0 <= self.warmup_ratio < 1.0:
            raise ValueError(f"warmup_ratio must be in [0, 1), not {self.warmup_ratio}")
        if self.max_steps is not None and self.max_steps < 1:
            raise ValueError("max_steps must be at least 1 (or None)")
        if self.learning_rate <= 0:
            raise ValueError("learning_rate must be positive")
        if not 0.0 < self.margin <= 2.0:
            raise ValueError(f"margin must be in (0, 2] (a cosine distance), not {self.margin}")
        if self.hard_negatives < 0:
            raise ValueError("hard_negatives must be 0 or more")
        if not 0.0 <= self.validation < 1.0:
            raise ValueError(f"validation must be in [0, 1), not {self.validation}")
        if self.patience < 1:
            raise ValueError("patience must be at least 1")
        if self.second_opinion < 0:
            raise ValueError("second_opinion must be 0 or more (silver pairs at most)")
        if not 0.0 < self.silver_band < 1.0:
            raise ValueError(f"silver_band must be above 0 and below 1, not {self.silver_band}")

    @classmethod
    def from_stored(cls, stored: dict) -> TrainingOptions:
        """The options a version's record or row stored (`dataclasses.asdict`): those it
        lacks (stored before they existed) take their defaults; unknown ones are ignored."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in stored.items() if k in known})

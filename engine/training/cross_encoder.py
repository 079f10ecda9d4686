"""A second opinion on pairs: a cross-encoder trained on the analyst's own verdicts.

The bi-encoder Duplens searches with embeds each text alone and compares the vectors: fast
enough for every pair of a collection, but it never reads two texts side by side. A
cross-encoder reads both texts at once through one transformer, so each word of one can
attend to the other's; it judges a pair better and is far too slow to search with.
Augmented SBERT (Thakur et al., NAACL 2021) uses it as a judge: trained on the gold pairs,
it labels unlabelled pairs ("silver", `engine.training.silver` picks them) and the
bi-encoder then trains on gold plus silver; the paper reports up to 6 points over the
bi-encoder trained on gold alone, in-domain. Only a few thousand pairs are scored, so the
judge's slowness costs minutes, not hours.

The judge starts from the bundled all-MiniLM-L6-v2's transformer (nothing is downloaded,
and it is the one transformer every install holds) with a new one-logit classification
head: binary cross-entropy on the 0/1 verdicts (`BinaryCrossEntropyLoss`, the library's
loss for duplicate pairs), and a sigmoid turns its logit into a probability in 0..1. `base`
may name another local sentence-transformers or cross-encoder folder instead.

The learning rate, 1e-4, was chosen on Quora validation (`benchmarks/judge_choice.py`):
a judge of 1,000 answers read the validation pairs at AP 64.4 with it, against 56.2 with
sentence-transformers' own default for cross-encoders (2e-5, made for tens of thousands of
steps; a new head gets 63 steps from 1,000 answers). The other settings are the library's (10%
warm-up, batch size 16). No judge with a new head read the pairs better than the
bi-encoder itself (AP 76.4), which is why the second opinion labels silver only when its
judge does (`engine.training.second_opinion`).

A residual judge (`prior`: its logit added to the calibrated bi-encoder's, its head
zeroed, `prior_loss`) did, by 0.17 AP (one epoch at 1e-4, the same study). A fine-tuning
run does not train one: its silver took 3.25 AP from the fine-tuned model on Quora
validation (three seeds, `benchmarks/ask_vs_random.py --judge-kind residual`), and a kept
one would need its bi-encoder's cosine and calibration wherever it scores a pair.

As with the bi-encoder (`engine.training.trainer`): loading runs no code from a folder
(safetensors only, no trust_remote_code, checked by `model_safety` first), nothing goes to
the Hub, the trainer reports nowhere and no model card is written (the library's card
copies training texts into the folder); the folder is written beside `output_dir` and
renamed into place when complete, so a cancelled or failed run leaves nothing behind.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from engine.encoding.model_safety import SAFE_LOAD, check_model_folder
from engine.encoding.model_spec import pick_device, resolve_model
from engine.errors import InputError, ModelError
from engine.progress import CancelToken, Progress, ProgressCallback, RateMeter, no_progress
from engine.training.pairs import LabelledPair
from engine.training.trainer import (
    check_output_folder,
    local_run_arguments,
    progress_relay,
    save_model_folder,
)

if TYPE_CHECKING:  # pragma: no cover
    from sentence_transformers import CrossEncoder

TRAINING_STAGE = "training second opinion"  # progress stage of the judge's training steps
SCORING_STAGE = "second opinion"  # progress stage of scoring pairs (pairs done of total)
LEARNING_RATE = 1e-4  # chosen on Quora validation (benchmarks/judge_choice.py)
WARMUP_RATIO = 0.1
MODEL_TYPE = "CrossEncoder"  # what config_sentence_transformers.json says of a judge's folder
_SCORE_CHUNK = 512  # pairs scored between progress reports and cancel checks


@dataclass(frozen=True)
class CrossEncoderResult:
    """What a judge's training made: its folder, and how long and on how much it trained."""

    folder: Path  # a sentence-transformers CrossEncoder folder (`load_cross_encoder`)
    pairs: int  # labelled pairs trained on
    seconds: float  # training proper, without loading or saving
    steps: int
    device: str = "cpu"
    loss_history: list[tuple[int, float]] = field(default_factory=list)  # (step, loss)
    # The judge as saved, on `device`: scoring silver pairs right after training needs no
    # reload (which on Windows would also keep the folder from being moved).
    model: CrossEncoder | None = field(default=None, repr=False, compare=False)


def train_cross_encoder(pairs: Sequence[LabelledPair], output_dir: str | os.PathLike[str], *,
                        base: str | None = None, epochs: int = 1, batch_size: int = 16,
                        learning_rate: float = LEARNING_RATE, seed: int = 0,
                        max_steps: int | None = None, device: str | None = None,
                        prior: Sequence[float] | None = None,
                        progress: ProgressCallback = no_progress,
                        cancel: CancelToken | None = None) -> CrossEncoderResult:
    """Train a judge on `pairs` (labels 0..1, the analyst's verdicts) and save it in
    `output_dir`, which must not exist yet or be an empty folder.

    `base`: a local model folder the judge starts from (None: the bundled model); a sentence
    encoder's transformer gets a new head, a one-logit cross-encoder keeps its own.
    `max_steps` cuts training short (tests, quick trials).
    `device`: where to train (None: the best one here, as for the bi-encoder).
    `prior`: a logit per pair (the calibrated bi-encoder's) that the judge's own logit is
    added to: a residual judge (`prior_loss`), whose head starts at zero. Score it with the
    same kind of prior (`score_pairs`).

    Progress goes to `progress` as stage `TRAINING_STAGE`, steps done of total with the
    loss, as `finetune` reports its own. Setting `cancel` stops after the current step and
    raises `Cancelled`, with nothing written; any other failure leaves nothing either.
    Raises InputError without pairs of both verdicts (a judge of one verdict learns nothing).
    """
    if epochs < 1 or batch_size < 1 or learning_rate <= 0:
        raise ValueError("epochs and batch_size must be at least 1, learning_rate positive")
    if max_steps is not None and max_steps < 1:
        raise ValueError("max_steps must be at least 1 (or None)")
    _check_verdicts(pairs)
    if prior is not None and len(prior) != len(pairs):
        raise ValueError(f"{len(prior)} prior logits for {len(pairs)} pairs")
    output_dir = Path(output_dir)
    check_output_folder(output_dir)
    cancel = cancel or CancelToken()
    cancel.raise_if_cancelled()

    from transformers import set_seed

    set_seed(seed)  # before loading: the new head's weights are drawn there
    judge = _new_judge(base, pick_device(device or "auto"))
    if prior is not None:
        _zero_head(judge)
    used_device = str(judge.device)
    cancel.raise_if_cancelled()
    with tempfile.TemporaryDirectory(prefix="duplens-judge-") as scratch:
        history, steps, seconds = _train(judge, pairs, epochs, batch_size, learning_rate,
                                         seed, max_steps, used_device, scratch, progress,
                                         cancel, prior)
    save_model_folder(judge, output_dir, cancel)
    return CrossEncoderResult(output_dir, len(pairs), seconds, steps, used_device, history,
                              judge)


def load_cross_encoder(folder: str | os.PathLike[str], device: str = "cpu") -> CrossEncoder:
    """The judge saved in `folder`, from local files only, on `device`.

    Raises ModelError for a folder that could run code when loaded (pickled weights without
    safetensors, classes from outside the libraries: `model_safety`), and for one that holds
    a sentence encoder rather than a judge: loading that as a cross-encoder would quietly
    put a random head on it and score pairs at chance.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise ModelError(f"{folder}: no such second-opinion model folder")
    check_model_folder(folder, str(folder))
    kind = _model_type(folder)
    if kind != MODEL_TYPE:
        raise ModelError(f"{folder}: holds a {kind} model, not a second-opinion "
                         f"(cross-encoder) model")
    from sentence_transformers import CrossEncoder

    try:
        return CrossEncoder(str(folder), device=pick_device(device), local_files_only=True,
                            **SAFE_LOAD)
    except Exception as exc:  # noqa: BLE001 - any loader failure is the folder's fault here
        raise ModelError(f"{folder}: cannot load the second-opinion model: "
                         f"{_first_line(exc)}") from exc


def score_pairs(model: CrossEncoder, pairs: Sequence[tuple[str, str]], batch_size: int = 64,
                *, prior: Sequence[float] | None = None,
                progress: ProgressCallback = no_progress,
                cancel: CancelToken | None = None) -> np.ndarray:
    """The judge's probability that each pair is a duplicate, float32 in [0, 1], in order.

    The sigmoid is applied here whatever the folder's config names, so the numbers are
    probabilities for any one-logit judge. Scored in chunks of `_SCORE_CHUNK` pairs, with
    progress (stage `SCORING_STAGE`, pairs done of total) and a cancel check after each:
    labelling thousands of silver pairs on a CPU takes minutes.
    `prior`: for a residual judge, the logit per pair its own is added to before the sigmoid.
    """
    import torch

    cancel = cancel or CancelToken()
    total = len(pairs)
    if prior is not None and len(prior) != total:
        raise ValueError(f"{len(prior)} prior logits for {total} pairs")
    activation = torch.nn.Identity() if prior is not None else torch.nn.Sigmoid()
    scores = np.zeros(total, dtype=np.float32)
    meter = RateMeter()
    progress(Progress(SCORING_STAGE, 0, total))
    for start in range(0, total, _SCORE_CHUNK):
        cancel.raise_if_cancelled()
        chunk = [(a, b) for a, b in pairs[start:start + _SCORE_CHUNK]]
        got = np.asarray(model.predict(chunk, batch_size=batch_size, show_progress_bar=False,
                                       activation_fn=activation, convert_to_numpy=True),
                         dtype=np.float64).reshape(-1)
        if prior is not None:
            got = 1.0 / (1.0 + np.exp(-(got + np.asarray(prior[start:start + len(chunk)],
                                                         dtype=np.float64))))
        scores[start:start + len(chunk)] = got
        done = start + len(chunk)
        progress(Progress(SCORING_STAGE, done, total, meter.rate(done)))
    return np.clip(scores, 0.0, 1.0)


# -- helpers --------------------------------------------------------------------------------


def _check_verdicts(pairs: Sequence[LabelledPair]) -> None:
    duplicates = sum(p.is_duplicate for p in pairs)
    if duplicates == 0 or duplicates == len(pairs):
        have = "no" if not pairs else "only duplicate" if duplicates else "only not-duplicate"
        raise InputError(f"a second opinion learns from both verdicts; the {len(pairs)} "
                         f"labelled pairs have {have} verdicts: label some of each")


def _new_judge(base: str | None, device: str) -> CrossEncoder:
    """A judge with a new one-logit head on `base`'s transformer (None: the bundled model).

    A sentence-transformers folder is converted by the library (its pooling dropped, a
    sequence-classification head added), offline and from safetensors only.
    """
    spec = resolve_model(base)  # checks the folder: safetensors, no code of its own
    if not spec.is_local:
        raise ModelError(f"{spec.name}: a second opinion trains from a model folder on this "
                         f"computer; Duplens does not download models")
    from sentence_transformers import CrossEncoder

    try:
        judge = CrossEncoder(spec.location, num_labels=1, device=device,
                             local_files_only=True, **SAFE_LOAD)
    except Exception as exc:  # noqa: BLE001 - any loader failure is the model's fault here
        raise ModelError(f"{spec.name}: cannot start a second opinion from it: "
                         f"{_first_line(exc)}") from exc
    judge.float()  # training needs float32 weights
    judge.model_card_data.local_files_only = True  # no Hub look-ups from the card data
    return judge


def _zero_head(judge: CrossEncoder) -> None:
    """Zero the one-logit head, so a residual judge starts as exactly its prior."""
    import torch

    heads = [m for m in judge.modules()
             if isinstance(m, torch.nn.Linear) and m.out_features == 1]
    if not heads:
        raise ModelError("the second opinion's model has no one-logit head to start at zero")
    with torch.no_grad():
        heads[-1].weight.zero_()
        if heads[-1].bias is not None:
            heads[-1].bias.zero_()


def _train(judge: CrossEncoder, pairs: Sequence[LabelledPair], epochs: int, batch_size: int,
           learning_rate: float, seed: int, max_steps: int | None, device: str, scratch: str,
           progress: ProgressCallback, cancel: CancelToken,
           prior: Sequence[float] | None = None) -> tuple[list[tuple[int, float]], int, float]:
    """Run the library's trainer; (loss history, steps, seconds). Raises Cancelled when
    asked to stop."""
    from datasets import Dataset
    from sentence_transformers.cross_encoder import (
        CrossEncoderTrainer,
        CrossEncoderTrainingArguments,
    )
    from sentence_transformers.cross_encoder.losses import BinaryCrossEntropyLoss
    from transformers import PrinterCallback

    args = CrossEncoderTrainingArguments(
        output_dir=scratch,  # nothing is saved there (save_strategy "no"); kept apart anyway
        per_device_train_batch_size=batch_size,
        learning_rate=learning_rate,
        warmup_steps=WARMUP_RATIO,  # a float in [0, 1) is a ratio in transformers 5
        num_train_epochs=epochs,
        max_steps=max_steps if max_steps is not None else -1,
        seed=seed,
        data_seed=seed,
        **local_run_arguments(device),
    )

    class Trainer(CrossEncoderTrainer):
        def add_model_card_callback(self, default_args_dict: dict) -> None:
            """No card is written, so nothing is gathered for one (see trainer.py)."""

    # Two text columns, then the label: the loss reads the columns in this order.
    dataset = Dataset.from_dict({"text_a": [p.text_a for p in pairs],
                                 "text_b": [p.text_b for p in pairs],
                                 "label": [float(p.label) for p in pairs]})
    relay = progress_relay(progress, cancel, TRAINING_STAGE)
    if prior is None:
        loss = BinaryCrossEntropyLoss(judge)
    else:
        from engine.training.prior_loss import PriorBinaryCrossEntropyLoss

        loss = PriorBinaryCrossEntropyLoss(judge, {(p.text_a, p.text_b): float(x)
                                                   for p, x in zip(pairs, prior, strict=True)})
    trainer = Trainer(model=judge, args=args, train_dataset=dataset, loss=loss,
                      callbacks=[relay])
    trainer.remove_callback(PrinterCallback)  # with tqdm off it prints every log line
    started = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - started
    cancel.raise_if_cancelled()
    return relay.history, int(trainer.state.global_step), seconds


def _model_type(folder: Path) -> str:
    """The `model_type` sentence-transformers wrote for the folder; as the library reads it,
    a folder that names none is a SentenceTransformer (older versions wrote no type)."""
    path = folder / "config_sentence_transformers.json"
    try:
        config = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelError(f"{folder}: {path.name} cannot be read ({exc})") from exc
    kind = config.get("model_type") if isinstance(config, dict) else None
    return kind if isinstance(kind, str) and kind else "SentenceTransformer"


def _first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__

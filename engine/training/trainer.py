"""Fine-tuning a sentence encoder on labelled pairs, with progress and cancellation.

The model being trained is always a private copy: a loaded model is deep-copied, a folder is
loaded afresh, so the model the app is searching with, and the folder it came from, never
change. The result is written to a hidden folder beside `output_dir` and renamed into place
only once training has finished, so a cancelled or failed run leaves nothing behind and a
finished one is never half-written. The folder is a plain sentence-transformers model:
`SentenceTransformer(output_dir)` loads it.

Nothing is downloaded or reported anywhere: only local models are trained, the trainer's
integrations are off (report_to="none"), and no model card is written, since the library's
card would copy training texts into the model folder and look models up on the Hub.

Training runs on the device the model is on (a folder loads on `device`, by default the best
one available); on CUDA with fp16 mixed precision, the weights staying in float32.
"""

from __future__ import annotations

import copy
import math
import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from engine.encoding.encoder import SentenceEncoder
from engine.encoding.model_safety import SAFE_LOAD
from engine.encoding.model_spec import ModelSpec, pick_device, resolve_model
from engine.errors import DiskFull, ModelError, user_error
from engine.progress import CancelToken, Progress, ProgressCallback, RateMeter, no_progress
from engine.training.hard_negatives import NegativePool
from engine.training.objectives import TrainingData, build_training_data, get_objective
from engine.training.options import TrainingOptions
from engine.training.pairs import LabelledPair
from engine.training.validation import early_stopping, split_validation

if TYPE_CHECKING:  # pragma: no cover
    from sentence_transformers import CrossEncoder, SentenceTransformer
    from transformers import TrainerCallback

    ModelSource = str | os.PathLike[str] | ModelSpec | SentenceTransformer | SentenceEncoder | None


@dataclass(frozen=True)
class TrainingProgress(Progress):
    """A training step's progress with the loss logged at that step, for a live loss curve.

    Callers that only draw a bar read it as a plain `Progress` (its `message` says the loss
    too); a loss curve needs the number itself, and parsing it back out of text would tie a
    view to the wording.
    """

    loss: float | None = None


@dataclass(frozen=True)
class TrainResult:
    output_dir: Path  # a sentence-transformers model folder
    objective: str
    loss_history: list[tuple[int, float]]  # (step, training loss at that step)
    steps: int
    seconds: float  # training proper, without loading, data preparation or saving
    examples: int  # rows the objective made of the pairs (pairs, triplets…)
    examples_seen: int  # rows trained on, counting repeats over epochs
    pairs: int  # labelled pairs given
    device: str
    notes: list[str] = field(default_factory=list)  # from the objective, for the user
    validation_pairs: int = 0  # training pairs set aside to choose the epoch (not trained on)
    validation: list[tuple[int, float]] = field(default_factory=list)  # (epoch, AP) measured
    best_epoch: int | None = None  # whose weights were kept; None without validation
    # The trained model itself, as saved (float32, on `device`): measuring it needs no reload
    # of the folder, which on Windows would also keep the folder from being moved.
    model: SentenceTransformer | None = field(default=None, repr=False, compare=False)

    @property
    def examples_per_second(self) -> float:
        return self.examples_seen / self.seconds if self.seconds > 0 else 0.0


def finetune(model: ModelSource, train_pairs: Sequence[LabelledPair], objective: str,
             options: TrainingOptions | None, output_dir: str | os.PathLike[str], *,
             progress: ProgressCallback = no_progress, cancel: CancelToken | None = None,
             device: str | None = None, pool: NegativePool | None = None) -> TrainResult:
    """Train a copy of `model` on `train_pairs` with `objective`; save it in `output_dir`.

    `model` is a loaded SentenceTransformer or SentenceEncoder (trained on its device), a
    local model folder or `ModelSpec`, or None for the bundled default model (loaded on
    `device`). `output_dir` must not exist yet, or be an empty folder.

    With `options.validation`, that share of the pairs is set aside and measured after each
    epoch; the best epoch is kept (`engine.training.validation`). `pool`: texts besides the
    pairs' own to mine hard negatives from (`engine.training.hard_negatives.NegativePool`).

    Progress goes to `progress` as stage "training" (steps done of total, steps per second,
    the loss in `message`; each step's report is a `TrainingProgress` carrying the loss as a
    number), after "mining negatives" when the objective mines (`mines_negatives`). Setting
    `cancel` stops training after the current step and raises `Cancelled`, with nothing
    written; any other failure also leaves nothing behind.
    """
    options = options or TrainingOptions()
    get_objective(objective)  # an unknown name fails before any slow work
    output_dir = Path(output_dir)
    check_output_folder(output_dir)
    cancel = cancel or CancelToken()

    from transformers import set_seed

    trainee = _training_copy(model, device)
    used_device = str(trainee.device)
    cancel.raise_if_cancelled()
    set_seed(options.seed)  # before the loss: SoftmaxLoss draws its classifier's weights
    parts = split_validation(train_pairs, options.validation, options.seed)
    data = build_training_data(objective, trainee, parts.train, options=options, pool=pool,
                               progress=progress, cancel=cancel)
    cancel.raise_if_cancelled()
    stopper = (early_stopping(trainee, parts.validation, options.patience, cancel)
               if parts.validation else None)

    with tempfile.TemporaryDirectory(prefix="duplens-trainer-") as scratch:
        history, steps, seconds = _train(trainee, data, options, used_device, scratch,
                                         progress, cancel, stopper)
    notes = [*data.notes, *([parts.note] if parts.note else [])]
    if stopper is not None:
        stopper.restore()
        notes.append(_validation_note(stopper, len(parts.validation)))
    save_model_folder(trainee, output_dir, cancel)
    return TrainResult(output_dir, objective, history, steps, seconds, data.examples,
                       _examples_seen(steps, options.batch_size, data.sizes),
                       len(train_pairs), used_device, notes, len(parts.validation),
                       list(stopper.scores) if stopper else [],
                       stopper.best_epoch if stopper else None, trainee)


def _validation_note(stopper, pairs: int) -> str:
    scores = ", ".join(f"{ap:.2f}" for _, ap in stopper.scores)
    stopped = " (stopped early)" if stopper.stopped_early else ""
    return (f"{pairs} training pairs were set aside to choose the epoch: average precision "
            f"after each epoch {scores}{stopped}; epoch {stopper.best_epoch} was kept")


def save_model_folder(model: SentenceTransformer | CrossEncoder, output_dir: Path,
                      cancel: CancelToken) -> None:
    """Write beside `output_dir`, then rename: the folder appears complete or not at all.
    Safetensors weights and no model card, whichever kind of model (`cross_encoder` saves
    its judge here too)."""
    output_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{output_dir.name}.partial-",
                                    dir=output_dir.parent))
    try:
        model.save(str(staging), create_model_card=False, safe_serialization=True)
        cancel.raise_if_cancelled()
        check_output_folder(output_dir)  # still free after training?
        if output_dir.exists():
            output_dir.rmdir()  # empty; a rename cannot replace a folder
        staging.rename(output_dir)
    except BaseException as exc:
        shutil.rmtree(staging, ignore_errors=True)
        full = user_error(exc, str(output_dir)) if isinstance(exc, Exception) else None
        if isinstance(full, DiskFull):  # torch/safetensors may wrap the OSError
            raise full from exc
        raise


def _examples_seen(steps: int, batch_size: int, sizes: Sequence[int]) -> int:
    """Rows trained on in `steps` batches over datasets of `sizes` rows, the last batch of
    each dataset in each epoch being short."""
    examples = sum(sizes)
    per_epoch = max(1, sum(math.ceil(n / batch_size) for n in sizes))
    epochs, rest = divmod(steps, per_epoch)
    return epochs * examples + min(rest * batch_size, examples)


def check_output_folder(output_dir: Path) -> None:
    """ModelError unless `output_dir` is free: missing, or an empty folder."""
    if output_dir.exists() and (not output_dir.is_dir() or any(output_dir.iterdir())):
        raise ModelError(f"{output_dir}: already exists and is not an empty folder; choose a "
                         f"new folder for the trained model")


def _training_copy(model: ModelSource, device: str | None) -> SentenceTransformer:
    """A float32 copy of `model` that training may change, never the caller's own."""
    if isinstance(model, SentenceEncoder) and model.spec.backend != "torch":
        # An ONNX/OpenVINO encoder holds no torch weights to train: load them afresh.
        trainee = _load_fresh(model.spec, device)
    elif isinstance(model, SentenceEncoder):
        with model._lock:  # the tokenizer must not be in use while it is copied
            trainee = copy.deepcopy(model.model)
    elif _is_sentence_transformer(model):
        trainee = copy.deepcopy(model)
    else:
        trainee = _load_fresh(model, device)
    trainee.float()  # Duplens loads fp16 on CUDA for search; training needs float32 weights
    trainee.model_card_data.local_files_only = True  # no Hub look-ups from the card data
    return trainee


def _is_sentence_transformer(model: object) -> bool:
    from sentence_transformers import SentenceTransformer

    return isinstance(model, SentenceTransformer)


def _load_fresh(source: str | os.PathLike[str] | ModelSpec | None,
                device: str | None) -> SentenceTransformer:
    from sentence_transformers import SentenceTransformer

    spec = source if isinstance(source, ModelSpec) else resolve_model(
        None if source is None else os.fspath(source))
    if not spec.is_local:
        raise ModelError(f"{spec.name}: training needs a model folder on this computer; "
                         f"Duplens does not download models to train them")
    try:
        return SentenceTransformer(spec.location, device=pick_device(device or "auto"),
                                   local_files_only=True, **SAFE_LOAD)
    except Exception as exc:  # noqa: BLE001 - any loader failure is the model's fault here
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ModelError(f"{spec.name}: cannot load the model: {detail}") from exc


def local_run_arguments(device: str) -> dict:
    """The training arguments every Duplens run shares, whatever it trains: the device
    (fp16 mixed precision on CUDA), nothing reported, pushed, saved or evaluated by the
    library (the caller saves the folder itself), a loss logged every step for the progress
    relay, and no tqdm bar on stderr."""
    on_cuda = device.startswith("cuda")
    return {"use_cpu": device == "cpu", "fp16": on_cuda, "dataloader_pin_memory": on_cuda,
            "report_to": "none", "push_to_hub": False, "save_strategy": "no",
            "eval_strategy": "no", "logging_strategy": "steps", "logging_steps": 1,
            "disable_tqdm": True}


def _train(model: SentenceTransformer, data: TrainingData, options: TrainingOptions,
           device: str, scratch: str, progress: ProgressCallback, cancel: CancelToken,
           stopper: TrainerCallback | None = None) -> tuple[list[tuple[int, float]], int, float]:
    """Run the trainer; (loss history, steps, seconds). Raises Cancelled when asked to stop."""
    from sentence_transformers.base.sampler import BatchSamplers
    from sentence_transformers.sentence_transformer import (
        SentenceTransformerTrainer,
        SentenceTransformerTrainingArguments,
    )
    from transformers import PrinterCallback

    args = SentenceTransformerTrainingArguments(
        output_dir=scratch,  # nothing is saved there (save_strategy "no"); kept apart anyway
        per_device_train_batch_size=options.batch_size,
        learning_rate=options.learning_rate,
        warmup_steps=options.warmup_ratio,  # a float in [0, 1) is a ratio in transformers 5
        weight_decay=options.weight_decay,
        num_train_epochs=options.epochs,
        max_steps=options.max_steps if options.max_steps is not None else -1,
        seed=options.seed,
        data_seed=options.seed,
        batch_sampler=(BatchSamplers.NO_DUPLICATES if data.no_duplicates
                       else BatchSamplers.BATCH_SAMPLER),
        **local_run_arguments(device),
    )
    class Trainer(SentenceTransformerTrainer):
        def add_model_card_callback(self, default_args_dict: dict) -> None:
            """No card is written, so nothing is gathered for one (the library's way to opt
            out; its default also draws a tqdm bar on stderr while sampling examples)."""

    relay = progress_relay(progress, cancel)
    trainer = Trainer(model=model, args=args, train_dataset=data.dataset, loss=data.loss,
                      callbacks=[relay] if stopper is None else [relay, stopper])
    # With tqdm off, transformers prints every log line to stdout instead.
    trainer.remove_callback(PrinterCallback)
    started = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - started
    cancel.raise_if_cancelled()
    return relay.history, int(trainer.state.global_step), seconds


def progress_relay(progress: ProgressCallback, cancel: CancelToken, stage: str = "training"
                   ) -> TrainerCallback:
    """A callback turning the trainer's step and log events into `Progress` of `stage`, and
    stopping it on cancel; made here because transformers is imported only when training.
    Any transformers trainer takes it (`cross_encoder` trains its judge with it).

    The loss is logged every step (logging_steps=1) and is only known at log time, so progress
    is reported from `on_log`; the cancel check also runs at every step end in case logging
    is skipped. The trainer checks `should_training_stop` right after both.
    """
    from transformers import TrainerCallback

    class ProgressRelay(TrainerCallback):
        def __init__(self) -> None:
            self.meter = RateMeter()
            self.history: list[tuple[int, float]] = []

        def on_train_begin(self, args, state, control, **kwargs):
            self.meter = RateMeter()
            progress(Progress(stage, 0, int(state.max_steps)))
            return stop_if_cancelled(control)

        def on_step_end(self, args, state, control, **kwargs):
            return stop_if_cancelled(control)

        def on_log(self, args, state, control, logs=None, **kwargs):
            if logs and "loss" in logs:
                step, loss = int(state.global_step), float(logs["loss"])
                self.history.append((step, loss))
                progress(TrainingProgress(stage, step, int(state.max_steps),
                                          self.meter.rate(step), f"loss {loss:.4f}",
                                          loss=loss))
            return stop_if_cancelled(control)

    def stop_if_cancelled(control):
        if cancel.cancelled:
            control.should_training_stop = True
        return control

    return ProgressRelay()

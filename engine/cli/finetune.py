"""`duplens finetune`: train the active model on the project's verdicts (each a training
pair's label), and on a file of labelled pairs if given."""

from __future__ import annotations

import argparse
import json

from engine.cli.common import (
    EXIT_CANCELLED,
    EXIT_OK,
    device_option,
    fraction,
    json_option,
    open_project,
    positive,
    project_argument,
    say,
    trust_option,
)
from engine.cli.models import activate
from engine.cli.stage_bars import StageBars
from engine.cli.stoppable import stoppable_bar
from engine.errors import InputError
from engine.progress import CancelToken

# engine.training.OBJECTIVES' names, spelled out: importing the training package for every
# command would slow `duplens info`; a test keeps the two lists the same.
OBJECTIVE_NAMES = ("softmax", "cosine", "triplet", "contrastive", "mnrl", "contrastive+mnrl")


def register(sub) -> None:
    p = sub.add_parser("finetune", help="train the project's active model on its verdicts "
                       "and save the result as a new model version (not activated)")
    project_argument(p)
    p.add_argument("--pairs", metavar="FILE", help="a file of labelled pairs to add to the "
                   "verdicts given in review (question1, question2, is_duplicate; sentence1, "
                   "sentence2, score; or anchor, positive, negative)")
    p.add_argument("--loss", choices=OBJECTIVE_NAMES, help="training objective (default: the "
                   "recommended one; the output names it)")
    # Training options default to engine.training.options.TrainingOptions' (not imported
    # here, see above): None means "the engine's default".
    p.add_argument("--epochs", type=positive, help="passes over the pairs (default: the "
                   "recommended number; the JSON output lists every option used)")
    p.add_argument("--batch-size", type=positive, help="pairs per training step (default: "
                   "the recommended size)")
    p.add_argument("--learning-rate", type=positive_float, metavar="RATE",
                   help="the optimiser's learning rate (default: the recommended one)")
    p.add_argument("--warmup", type=share, metavar="F", help="share of the steps with a "
                   "linear warm-up of the learning rate")
    p.add_argument("--margin", type=positive_float, help="cosine distance the contrastive "
                   "objectives push non-duplicates beyond")
    p.add_argument("--hard-negatives", type=count, metavar="N", help="mined 'not duplicate' "
                   "texts added per duplicate pair, the closest of the project's own indexed "
                   "texts outside its duplicate group (contrastive objectives; 0: none)")
    p.add_argument("--validation", type=share, metavar="F", help="share of the training "
                   "pairs set aside to keep the best epoch and stop early (0: none)")
    p.add_argument("--patience", type=positive, help="epochs without a better validation "
                   "score before training stops")
    p.add_argument("--max-steps", type=positive, help="stop after this many steps (the "
                   "second opinion's training too)")
    p.add_argument("--second-opinion", type=count, metavar="N", help="train a second "
                   "opinion (a cross-encoder) on the training pairs, let it label at most N "
                   "unlabelled pairs of the project near the model's threshold, never about "
                   "a held-out question, and train on those too (0: none, the default)")
    p.add_argument("--silver-band", type=band, metavar="B", help="how far from the model's "
                   "threshold (in cosine similarity) the second opinion's pairs may lie "
                   "(default 0.15)")
    p.add_argument("--held-out", type=fraction, default=0.5, metavar="F",
                   help="share of the pairs measured before and after, never trained on "
                        "(default 0.5)")
    p.add_argument("--seed", type=int, default=0, help="seed of the held-out split, the "
                   "shuffling and the training (default 0: the same run twice gives the same "
                   "model)")
    p.add_argument("--activate", action="store_true", help="make the new version the active "
                   "model (re-encodes every text with it)")
    device_option(p)
    json_option(p, "the report (every option used, the metrics before and after, the "
                "change in average precision with its 95%% interval)")
    trust_option(p)
    p.set_defaults(run=cmd_finetune)


def positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, not {value:g}")
    return value


def share(text: str) -> float:
    value = float(text)
    if not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(f"must be at least 0 and below 1, not {value:g}")
    return value


def band(text: str) -> float:
    value = float(text)
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"must be above 0 and below 1, not {value:g}")
    return value


def count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {value}")
    return value


def cmd_finetune(args, cancel: CancelToken) -> int:
    from engine.training.options import TrainingOptions

    given = {"batch_size": args.batch_size, "epochs": args.epochs,
             "learning_rate": args.learning_rate, "warmup_ratio": args.warmup,
             "margin": args.margin, "hard_negatives": args.hard_negatives,
             "validation": args.validation, "patience": args.patience,
             "second_opinion": args.second_opinion, "silver_band": args.silver_band}
    try:
        options = TrainingOptions(max_steps=args.max_steps, seed=args.seed,
                                  **{k: v for k, v in given.items() if v is not None})
    except ValueError as exc:
        raise InputError(f"finetune: {exc}") from None
    with open_project(args.project, trust_models=args.trust_model_location) as project:
        project.model.configure(device=args.device)
        with stoppable_bar("stopped: nothing was saved; the active model is unchanged",
                           bars=StageBars) as bar:
            report = project.versions.finetune(
                args.loss, extra_file=args.pairs, options=options, held_out=args.held_out,
                seed=args.seed, progress=bar, cancel=cancel)
        for note in report.notes:
            say(note)
        activation = activate(project, report.version_id, cancel) if args.activate else None
    result = report.as_json()
    result["activation"] = activation.as_json() if activation else None
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=1))
    else:
        _print_finetune(args.project, report, activation)
    if activation is not None and activation.cancelled:
        say(f"stopped: version {report.version_id} is saved but not active; what was encoded "
            f"is kept: run 'duplens models {args.project} --activate {report.version_id}' to "
            f"finish")
        return EXIT_CANCELLED
    return EXIT_OK


def _print_finetune(project_arg: str, report, activation) -> None:
    from engine.encoding.model_threshold import ENOUGH_OF_EACH, held_out_threshold
    from engine.training import fast_form
    from engine.training.ap_change import claim, evidence, interval_text

    split = report.split
    parent = f"v{report.parent_id}" if report.parent_id is not None else "base"
    print(f"version {report.version_id} ({report.name}): {report.objective} on "
          f"{len(split.train)} pairs, measured on {len(split.held_out)} held-out pairs")
    print(f"{'':16}{'AP':>8}{'best F1':>10}{'threshold':>11}")
    for label, m in ((f"before ({parent})", report.before),
                     (f"after (v{report.version_id})", report.after)):
        print(f"{label:16}{m.average_precision:8.2f}{m.f1:10.2f}{m.threshold:11.4f}")
    print(f"{claim(report.ap_change)}: {evidence(report.ap_change)}")
    print(f"held-out verdicts changed: {report.changes_fixed} now right, "
          f"{report.changes_broken} now wrong")
    opinion = report.second_opinion
    if opinion is not None:
        versus = (f", {interval_text(opinion.change)}" if opinion.change is not None
                  else "")
        print(f"second opinion: AP {opinion.judge.average_precision:.2f} on the held-out "
              f"pairs (the model before: {opinion.bi_encoder_ap:.2f}{versus}); "
              + (f"no silver pairs: {opinion.withheld}; " if opinion.withheld
                 else f"{len(opinion.silver)} silver pairs trained on, "
                      f"{opinion.silver_duplicates} of them duplicates; ")
              + _judge_kept(opinion))
    own = held_out_threshold(report.after.as_dict())
    print(f"its default threshold: {own.value:.2f} ({own.chosen_on})" if own is not None else
          f"its default threshold: its parent's (fewer than {ENOUGH_OF_EACH} held-out pairs "
          f"of a kind to choose its own)")
    if report.fast_form:
        print(fast_form.describe(report.fast_form))
    if activation is not None and activation.activated:
        print(f"saved in {report.location} and active ({activation.encoded} texts encoded)")
    else:
        print(f"saved in {report.location}; not active: run 'duplens models {project_arg} "
              f"--activate {report.version_id}' to use it")


def _judge_kept(opinion) -> str:
    """Where the judge is kept, and whether the held-out pairs show it better than the new
    version (then it is offered beside it), or why it was not kept."""
    from engine.training.ap_change import interval_text
    from engine.training.second_opinion import judge_shown_better

    if opinion.kept_as is None:
        return f"the second opinion itself was not kept ({opinion.not_kept or 'no folder'})"
    versus = opinion.versus_version
    better = versus is not None and judge_shown_better(versus)
    figures = (f"the new version's AP {versus.before:.2f}, {interval_text(versus)}"
               if versus is not None else "no comparison with the new version")
    return (f"kept as version {opinion.kept_as}, "
            f"{'shown above' if better else 'not shown above'} the new version ({figures})"
            f"{'' if better else ', so not offered'}")

"""`duplens finetune`: train the active model on the project's labelled pairs."""

from __future__ import annotations

import json

from engine.cli.common import (
    EXIT_CANCELLED,
    EXIT_OK,
    fraction,
    open_project,
    positive,
    say,
    trust_option,
)
from engine.cli.models import activate
from engine.cli.stage_bars import StageBars
from engine.errors import Cancelled
from engine.jobs import CancelToken

# engine.training.OBJECTIVES' names, spelled out: importing the training package for every
# command would slow `duplens info`; a test keeps the two lists the same.
OBJECTIVE_NAMES = ("softmax", "cosine", "triplet", "contrastive", "mnrl")


def register(sub) -> None:
    p = sub.add_parser("finetune", help="train the project's active model on its labelled "
                       "pairs and save the result as a new model version (not activated)")
    p.add_argument("project")
    p.add_argument("--pairs", metavar="FILE", help="labelled pairs to add to those marked in "
                   "review (question1, question2, is_duplicate; sentence1, sentence2, score; "
                   "or anchor, positive, negative)")
    p.add_argument("--loss", choices=OBJECTIVE_NAMES, help="training objective (default: the "
                   "recommended one; the output names it)")
    p.add_argument("--epochs", type=positive, default=1)
    p.add_argument("--batch-size", type=positive, default=16)
    p.add_argument("--max-steps", type=positive, help="stop after this many steps")
    p.add_argument("--held-out", type=fraction, default=0.5, metavar="F",
                   help="share of the pairs measured before and after, never trained on "
                        "(default 0.5)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--activate", action="store_true", help="make the new version the active "
                   "model (re-encodes every text with it)")
    p.add_argument("--device", default="auto")
    p.add_argument("--json", action="store_true")
    trust_option(p)
    p.set_defaults(run=cmd_finetune)


def cmd_finetune(args, cancel: CancelToken) -> int:
    from engine.training.finetune import TrainingOptions

    options = TrainingOptions(batch_size=args.batch_size, epochs=args.epochs,
                              max_steps=args.max_steps, seed=args.seed)
    with open_project(args.project, trust_models=args.trust_model_location) as project:
        project.model.configure(device=args.device)
        bar = StageBars()
        try:
            report = project.versions.finetune(args.loss, extra_file=args.pairs, options=options,
                                      held_out=args.held_out, seed=args.seed, progress=bar,
                                      cancel=cancel)
        except Cancelled:
            bar.close()
            say("stopped: nothing was saved; the active model is unchanged")
            return EXIT_CANCELLED
        bar.close()
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
    split = report.split
    parent = f"v{report.parent_id}" if report.parent_id is not None else "base"
    print(f"version {report.version_id} ({report.name}): {report.objective} on "
          f"{len(split.train)} pairs, measured on {len(split.held_out)} held-out pairs")
    print(f"{'':16}{'AP':>8}{'best F1':>10}{'threshold':>11}")
    for label, m in ((f"before ({parent})", report.before),
                     (f"after (v{report.version_id})", report.after)):
        print(f"{label:16}{m.average_precision:8.2f}{m.f1:10.2f}{m.threshold:11.4f}")
    print(f"held-out verdicts changed: {report.changes_fixed} now right, "
          f"{report.changes_broken} now wrong")
    if activation is not None and activation.activated:
        print(f"saved in {report.location} and active ({activation.encoded} texts encoded)")
    else:
        print(f"saved in {report.location}; not active: run 'duplens models {project_arg} "
              f"--activate {report.version_id}' to use it")

"""`duplens threshold`: the project threshold, where it comes from; set it by hand or hand
it back.

Every command and the window cut at this one threshold unless told another
(`engine.review.calibration`): set by hand, else calibrated on the verdicts, else the
model's default. Setting it here is what moving the window's slider does.
"""

from __future__ import annotations

import json

from engine.cli.common import EXIT_OK, json_option, open_project, project_argument, say
from engine.errors import InputError
from engine.progress import CancelToken
from engine.review.calibration import BY_HAND, ENOUGH_OF_EACH, MODEL_DEFAULT


def register(sub) -> None:
    p = sub.add_parser("threshold", help="the project threshold every command uses, and why; "
                       "set it by hand, or --clear to hand it back to the verdicts and the "
                       "model's default")
    project_argument(p)
    p.add_argument("value", nargs="?", type=float,
                   help="set the project threshold to this similarity (between 0 and 1)")
    p.add_argument("--clear", action="store_true",
                   help="forget the threshold set by hand: calibrated on the verdicts once "
                        "there are enough, else the model's default")
    json_option(p, "{value, source, reason, model_default}")
    p.set_defaults(run=cmd_threshold)


def cmd_threshold(args, _cancel: CancelToken) -> int:
    if args.value is not None and args.clear:
        raise InputError("give a threshold or --clear, not both")
    with open_project(args.project) as project:
        if args.value is not None:
            project.threshold.set_by_hand(args.value)
        elif args.clear:
            project.threshold.set_by_hand(None)
        current = project.threshold.current()
        model = project.threshold.model_default()
    if args.json:
        print(json.dumps({**current.as_dict(), "model_default": model.as_dict()},
                         ensure_ascii=False, indent=1))
        return EXIT_OK
    say(f"project {current.describe()}")
    if current.source != MODEL_DEFAULT:
        say(f"the model's default: {model.value:.2f} ({model.chosen_on})")
    if current.source != BY_HAND:
        say(f"from {ENOUGH_OF_EACH} verdicts of each kind (duplens label, ask, estimate), "
            f"the threshold calibrated on them is used; a value given here overrides both")
    return EXIT_OK

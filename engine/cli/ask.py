"""`duplens ask`: the pairs the model is least sure of, for the analyst to judge."""

from __future__ import annotations

import json

from engine.cli.common import (
    EXIT_OK,
    one_line,
    open_project,
    positive,
    project_argument,
    say,
    trust_option,
)
from engine.cli.stoppable import stoppable_bar
from engine.progress import CancelToken


def register(sub) -> None:
    p = sub.add_parser("ask", help="pairs the model is least sure of, spread out, never one "
                       "already judged (give your verdicts with 'duplens label')")
    project_argument(p)
    p.add_argument("-n", type=positive, default=20, help="how many pairs (default 20)")
    p.add_argument("--json", action="store_true",
                   help="print [{a: {id, text}, b: {id, text}, score}, ...]")
    trust_option(p)
    p.set_defaults(run=cmd_ask)


def cmd_ask(args, cancel: CancelToken) -> int:

    with open_project(args.project, trust_models=args.trust_model_location) as project:
        with stoppable_bar() as bar:
            pairs = project.asking.pairs(args.n, progress=bar, cancel=cancel)
        threshold = project.threshold.current().describe()
        for notice in project.notices:
            say(notice)
    if args.json:
        print(json.dumps([p.as_json() for p in pairs], ensure_ascii=False, indent=1))
        return EXIT_OK
    say(f"{len(pairs)} pairs near the {threshold}; give each a verdict with "
        f"duplens label {args.project} ID_A ID_B dup|not")
    for p in pairs:
        print(f"{p.score:.3f}  [{p.a.public_id}] {one_line(p.a.text, 60)}  |  "
              f"[{p.b.public_id}] {one_line(p.b.text, 60)}")
    return EXIT_OK

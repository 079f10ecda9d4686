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
    p.add_argument("--by-disagreement", action="store_true",
                   help="the pairs the model and its second opinion disagree on first (the "
                        "active version needs a judge that read its held-out pairs better "
                        "than it did; see 'duplens models')")
    p.add_argument("--json", action="store_true",
                   help="print [{a: {id, text}, b: {id, text}, score}, ...] (with "
                        "--by-disagreement, each pair's second_opinion too)")
    trust_option(p)
    p.set_defaults(run=cmd_ask)


def cmd_ask(args, cancel: CancelToken) -> int:

    with open_project(args.project, trust_models=args.trust_model_location) as project:
        with stoppable_bar() as bar:
            pairs = project.asking.pairs(args.n, by_disagreement=args.by_disagreement,
                                         progress=bar, cancel=cancel)
        threshold = project.threshold.current().describe()
        for notice in project.notices:
            say(notice)
    if args.json:
        print(json.dumps([p.as_json() for p in pairs], ensure_ascii=False, indent=1))
        return EXIT_OK
    order = ("where the model and its second opinion disagree first; the judge's chance "
             "of a duplicate after the score" if args.by_disagreement else "")
    say(f"{len(pairs)} pairs near the {threshold}" + (f", {order}" if order else "")
        + f"; give each a verdict with duplens label {args.project} ID_A ID_B dup|not")
    for p in pairs:
        judge = f"  judge {p.opinion:4.0%}" if p.opinion is not None else ""
        print(f"{p.score:.3f}{judge}  [{p.a.public_id}] {one_line(p.a.text, 60)}  |  "
              f"[{p.b.public_id}] {one_line(p.b.text, 60)}")
    return EXIT_OK

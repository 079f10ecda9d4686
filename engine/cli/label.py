"""`duplens label`: store or clear the analyst's verdict on a pair of rows."""

from __future__ import annotations

from engine.cli.common import EXIT_OK, open_project, project_argument, say
from engine.progress import CancelToken

VERDICTS = {"dup": 1, "not": 0, "clear": None}


def register(sub) -> None:
    p = sub.add_parser("label", help="store (dup, not) or forget (clear) the verdict on two "
                       "rows, named by their ids as the other commands print them")
    project_argument(p)
    p.add_argument("id_a", help="the first row's id, as search, match, duplicates or ask "
                   "print it")
    p.add_argument("id_b", help="the second row's id")
    p.add_argument("verdict", choices=list(VERDICTS), help="dup: the same question; not: "
                   "different; clear: forget the verdict")
    p.set_defaults(run=cmd_label)


def cmd_label(args, _cancel: CancelToken) -> int:
    with open_project(args.project) as project:
        a = project.rows.by_public_id(args.id_a)
        b = project.rows.by_public_id(args.id_b)
        # Origin "asked" when `duplens ask` offered the pair, else a review verdict.
        project.asking.answer(a["item_id"], b["item_id"], VERDICTS[args.verdict])
        counts = project.labels.counts()
    done = "cleared" if args.verdict == "clear" else f"labelled {args.verdict}"
    say(f"[{a['id']}] and [{b['id']}] {done}; {counts['duplicate']} duplicate and "
        f"{counts['not_duplicate']} not-duplicate pairs labelled")
    return EXIT_OK

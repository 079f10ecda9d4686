"""`duplens duplicates`: duplicate clusters at a threshold, printed, as JSON or exported."""

from __future__ import annotations

import json

from engine.cli.common import (
    EXIT_CANCELLED,
    EXIT_OK,
    json_option,
    nothing_indexed,
    one_line,
    open_project,
    project_argument,
    say,
    trust_option,
)
from engine.errors import Cancelled
from engine.progress import CancelToken
from engine.review.calibration import (
    DEFAULT_THRESHOLD,
    ENOUGH_OF_EACH,
    default_threshold,
    describe_threshold,
)

# engine.services.exports' export forms, spelled out: importing it (the store, NumPy) for
# every command would slow `duplens --help`; a test keeps the two the same.
ALL, ONLY_CLUSTERS, DEDUPLICATED = "all", "only-clusters", "deduplicated"


def register(sub) -> None:
    p = sub.add_parser("duplicates", help="duplicate clusters at a similarity threshold")
    project_argument(p)
    p.add_argument("--threshold", type=float, help="similarity at which rows are duplicates "
                   "(default: the project threshold, calibrated on its labelled pairs once "
                   f"there are {ENOUGH_OF_EACH} of each kind, else {DEFAULT_THRESHOLD})")
    p.add_argument("--neighbours", type=int, default=10,
                   help="neighbours searched per entry; where an entry has more above 0.75, "
                        "all of them are found by exact search")
    p.add_argument("--out", help="write every row, with its cluster, to a .csv or .xlsx file")
    form = p.add_mutually_exclusive_group()
    form.add_argument("--only-clusters", dest="form", action="store_const",
                      const=ONLY_CLUSTERS, help="with --out: only rows in a cluster")
    form.add_argument("--deduplicated", dest="form", action="store_const", const=DEDUPLICATED,
                      help="with --out: one row per cluster (its canonical) and every row "
                           "in none")
    json_option(p, "the clusters ([{cluster_id, canonical_id, members: [{id, text, score}]}])")
    trust_option(p)
    p.set_defaults(run=cmd_duplicates, form=ALL)


def cmd_duplicates(args, cancel: CancelToken) -> int:
    from engine.progress_bar import TqdmProgress

    with open_project(args.project, trust_models=args.trust_model_location) as project:
        empty = None if args.out else nothing_indexed(project, "no clusters")
        if empty:   # (an export still writes its file, with the rows there are)
            say(empty)
            if args.json:
                print("[]")
            return EXIT_OK
        threshold = args.threshold
        if threshold is None:
            calibration = project.labels.calibration()
            threshold = default_threshold(calibration)
            say(f"{describe_threshold(calibration)}; --threshold to choose another")
        bar = TqdmProgress()
        try:
            clusters = project.clusters.cut(threshold, args.neighbours, progress=bar,
                                          cancel=cancel)
        except Cancelled:
            bar.close()
            say("stopped")
            return EXIT_CANCELLED
        bar.close()
        for notice in project.notices:
            say(notice)
        if not clusters:
            # Said in words (exit 0: finding none is an answer): an empty output alone
            # leaves the user wondering whether anything ran.
            shown = f"{threshold:.3f}".rstrip("0").rstrip(".")
            say(f"no clusters at {shown} in {project.store.name}; a lower --threshold "
                "finds looser ones")
        if args.out:
            n = project.exports.rows(args.out, clusters, form=args.form)
            say(f"{len(clusters)} clusters, {n} rows written to {args.out}")
    if args.json:
        print(json.dumps([c.as_json() for c in clusters], ensure_ascii=False, indent=1))
    elif not args.out:
        for c in clusters:
            print(f"cluster {c.cluster_id} ({len(c.members)} rows)")
            for m in c.members:
                print(f"  {m.score:.3f}  [{m.id}]  {one_line(m.text)}")
    return EXIT_OK

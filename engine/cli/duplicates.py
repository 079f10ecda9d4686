"""`duplens duplicates`: duplicate clusters at a threshold, printed, as JSON or exported."""

from __future__ import annotations

import json
from collections import Counter

from engine.cli.common import (
    EXIT_INPUT,
    EXIT_OK,
    json_option,
    nothing_indexed,
    one_line,
    open_project,
    positive,
    project_argument,
    say,
    trust_option,
)
from engine.cli.stoppable import stoppable_bar
from engine.progress import CancelToken
from engine.review.calibration import THRESHOLD_HELP

# engine.services.exports' export forms, spelled out: importing it (the store, NumPy) for
# every command would slow `duplens --help`; a test keeps the two the same.
ALL, ONLY_CLUSTERS, DEDUPLICATED = "all", "only-clusters", "deduplicated"


def register(sub) -> None:
    p = sub.add_parser("duplicates", help="duplicate clusters at a similarity threshold")
    project_argument(p)
    p.add_argument("--threshold", type=float, help="similarity at which rows are duplicates "
                   f"(default: {THRESHOLD_HELP})")
    p.add_argument("--neighbours", type=int, default=10,
                   help="neighbours searched per row; where a row has more above 0.75, "
                        "all of them are found by exact search")
    p.add_argument("--out", help="write every row, with its cluster, to a .csv or .xlsx file")
    form = p.add_mutually_exclusive_group()
    form.add_argument("--only-clusters", dest="form", action="store_const",
                      const=ONLY_CLUSTERS, help="with --out: only rows in a cluster")
    form.add_argument("--deduplicated", dest="form", action="store_const", const=DEDUPLICATED,
                      help="with --out: one row per cluster (its canonical) and every row "
                           "in none")
    p.add_argument("--changes-since", type=positive, metavar="N",
                   help="only the rows whose cluster changed since import N (see duplens "
                        "imports), with a change column: joined / new / merged / split / "
                        "left / canonical (another row leads the cluster), the id each had "
                        "before and, for canonical, the row that led before")
    json_option(p, "the clusters ([{cluster_id, canonical_id, members: [{id, text, score}]}])")
    trust_option(p)
    p.set_defaults(run=cmd_duplicates, form=ALL)


def cmd_duplicates(args, cancel: CancelToken) -> int:

    with open_project(args.project, trust_models=args.trust_model_location) as project:
        empty = None if args.out else nothing_indexed(project, "no clusters")
        if empty:   # (an export still writes its file, with the rows there are)
            say(empty)
            if args.json:
                print("[]")
            return EXIT_OK
        since = args.changes_since
        if since is not None and since not in {b["batch"] for b in project.rows.imports()}:
            say(f"duplens: there is no import {since} in this project (see duplens imports "
                f"{args.project})")
            return EXIT_INPUT
        threshold = args.threshold
        if threshold is None:
            current = project.threshold.current()
            threshold = current.value
            say(f"{current.describe()}; --threshold to choose another")
        with stoppable_bar() as bar:
            clusters = project.clusters.cut(threshold, args.neighbours, progress=bar,
                                          cancel=cancel)
        for notice in project.notices:
            say(notice)
        if since is not None:
            return _changes(project, args, clusters, since, threshold)
        if not clusters:
            # Said in words (exit 0: finding none is an answer): an empty output alone
            # leaves the user wondering whether anything ran.
            shown = f"{threshold:.3f}".rstrip("0").rstrip(".")
            say(f"no clusters at {shown} in {project.store.name}; a lower --threshold "
                "finds looser ones")
        if args.out:
            n = project.exports.rows(args.out, clusters, threshold, form=args.form)
            say(f"{len(clusters)} clusters, {n} rows written to {args.out}")
    if args.json:
        print(json.dumps([c.as_json() for c in clusters], ensure_ascii=False, indent=1))
    elif not args.out:
        for c in clusters:
            print(f"cluster {c.cluster_id} ({len(c.members)} rows)")
            for m in c.members:
                print(f"  {m.score:.3f}  [{m.id}]  {one_line(m.text)}")
    return EXIT_OK


def _changes(project, args, clusters, since: int, threshold: float) -> int:
    """`--changes-since N`: the rows whose cluster changed, to the file, as JSON or listed."""
    changes = project.ids.changes_since(since)
    counts = Counter(c.change for c in changes.values())
    summary = ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items())) or "none"
    if args.out:
        n = project.exports.rows(args.out, clusters, threshold, changes=changes)
        say(f"{n} rows changed cluster since import {since} ({summary}); written to "
            f"{args.out}")
    else:
        say(f"{len(changes)} rows changed cluster since import {since} ({summary})")
    if args.json or not args.out:
        placed = {m.item_id: (c, m) for c in clusters for m in c.members}
        found = {r["item_id"]: r for r in project.rows.by_ids(list(changes))}
        lines = []
        for item_id, change in changes.items():
            cluster, _ = placed.get(item_id, (None, None))
            row = found.get(item_id, {})
            lines.append({"id": row.get("id"), "row": row.get("row"), "item_id": item_id,
                          "text": row.get("text"), "first_seen": row.get("source_id"),
                          "cluster_id": cluster.cluster_id if cluster else "",
                          "previous_cluster_id": change.previous, "change": change.change,
                          "canonical_id": cluster.canonical.id if cluster else "",
                          "previous_canonical_id": change.previous_canonical})
        if args.json:
            print(json.dumps(lines, ensure_ascii=False, indent=1))
        else:
            for line in lines:
                led = (f"  (led by [{line['previous_canonical_id']}] before, "
                       f"[{line['canonical_id']}] now)" if line["previous_canonical_id"]
                       else "")
                print(f"{line['change']:9} {line['previous_cluster_id'] or '-':>8} -> "
                      f"{line['cluster_id'] or '-':8} [{line['id']}]  "
                      f"{one_line(line['text'])}{led}")
    return EXIT_OK

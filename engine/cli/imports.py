"""`duplens imports`: a project's imports (batches), and undoing one with `--delete N`."""

from __future__ import annotations

import json
import sys

from engine.cli.common import (
    EXIT_INPUT,
    EXIT_OK,
    json_option,
    open_project,
    positive,
    project_argument,
    say,
)
from engine.progress import CancelToken


def register(sub) -> None:
    p = sub.add_parser("imports", help="list a project's imports (batches); --delete N takes "
                       "one back out")
    project_argument(p)
    p.add_argument("--delete", type=positive, metavar="N",
                   help="remove every row import N brought (asks first); clusters follow "
                        "the id rules at the next cut")
    p.add_argument("--yes", action="store_true", help="with --delete: do not ask")
    json_option(p, "the imports ([{batch, file_name, imported_at, imported_by, rows, live, "
                   "removed_at}])")
    p.set_defaults(run=cmd_imports)


def cmd_imports(args, _cancel: CancelToken) -> int:
    from engine.cli.info import describe_batch

    with open_project(args.project) as project:
        batches = project.rows.imports()
        if args.delete is None:
            if args.json:
                print(json.dumps(batches, ensure_ascii=False, indent=1))
            else:
                for b in batches:
                    print(f"import {b['batch']:<5} {_line(b, describe_batch)}")
            return EXIT_OK
        chosen = next((b for b in batches if b["batch"] == args.delete), None)
        if chosen is None:
            say(f"duplens: there is no import {args.delete} in this project "
                f"(see duplens imports {args.project})")
            return EXIT_INPUT
        if not args.yes and not _confirmed(chosen):
            say("nothing removed")
            return EXIT_INPUT if not sys.stdin.isatty() else EXIT_OK
        removed = project.rows.remove_import(args.delete)
    say(f"import {args.delete} ({chosen['file_name']}): {removed} rows removed")
    if args.json:
        print(json.dumps({"batch": args.delete, "rows_removed": removed}))
    return EXIT_OK


def _line(b: dict, describe) -> str:
    return describe({**b, "rows_imported": b["rows"]}) + (
        f", {b['live']} still in the project" if b["removed_at"] is None
        and b["live"] != b["rows"] else "")


def _confirmed(batch: dict) -> bool:
    """Ask on the terminal; with no terminal to ask on, refuse (say --yes)."""
    if not sys.stdin.isatty():
        say(f"duplens: removing import {batch['batch']} needs a yes: run again with --yes")
        return False
    print(f"Remove the {batch['live']} rows of import {batch['batch']} "
          f"({batch['file_name']})? [y/N] ", end="", file=sys.stderr, flush=True)
    return sys.stdin.readline().strip().lower() in ("y", "yes")

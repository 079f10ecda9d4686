"""`duplens copy SRC DST`: a project from a file to a server database, or back, exactly."""

from __future__ import annotations

from engine.cli.common import EXIT_OK, say, say_upgrade
from engine.progress import CancelToken


def register(sub) -> None:
    p = sub.add_parser("copy", help="copy a project between a .duplens file and a "
                                    "PostgreSQL database (either way)")
    p.add_argument("source", help="a .duplens file or a postgresql+psycopg:// URL")
    p.add_argument("destination", help="a new .duplens file, or the URL of an empty "
                                       "database")
    p.set_defaults(run=cmd_copy)


def cmd_copy(args, _cancel: CancelToken) -> int:
    from engine.copy_project import copy_project
    from engine.store.location import parse_location

    counts = copy_project(args.source, args.destination, on_upgrade=say_upgrade)
    say(f"copied {counts.get('items', 0)} rows, {counts.get('embeddings', 0)} embeddings, "
        f"{counts.get('pair_labels', 0)} verdicts and {counts.get('models', 0)} models to "
        f"{parse_location(args.destination).display}")
    return EXIT_OK

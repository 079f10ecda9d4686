"""`duplens info`: what a project holds, without loading a model or an index."""

from __future__ import annotations

import json

from engine.cli.common import EXIT_OK, json_option, open_project, project_argument
from engine.progress import CancelToken


def register(sub) -> None:
    p = sub.add_parser("info", help="what a project holds")
    project_argument(p)
    json_option(p, "the counts and state")
    p.set_defaults(run=cmd_info)


def cmd_info(args, _cancel: CancelToken) -> int:
    with open_project(args.project) as project:
        info = project.info()
    if args.json:
        print(json.dumps(info, ensure_ascii=False, indent=1))
    else:
        for key in ("project", "items", "texts", "encoded", "index_items", "model", "device",
                    "truncated"):
            print(f"{key:12} {info[key]}")
        for s in info["sources"]:
            print(f"source       {s['file_name']}: {s['rows_imported']} rows")
    return EXIT_OK

"""`duplens info`: what a project holds, without loading a model or an index; each import
(batch) with its number, file, rows, time and who made it."""

from __future__ import annotations

import json

from engine.cli.common import EXIT_OK, json_option, open_store, project_argument, say
from engine.progress import CancelToken


def describe_batch(s: dict) -> str:
    """One import as `info` and `imports` list it: file, rows, when, who, removed."""
    import time

    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(s["imported_at"]))
    who = f" by {s['imported_by']}" if s["imported_by"] else ""
    removed = ""
    if s.get("removed_at") is not None:
        removed = time.strftime(" (removed %Y-%m-%d %H:%M)", time.localtime(s["removed_at"]))
    return f"{s['file_name']}: {s['rows_imported']} rows, {when}{who}{removed}"


def register(sub) -> None:
    p = sub.add_parser("info", help="what a project holds")
    project_argument(p)
    json_option(p, "the counts and state")
    p.set_defaults(run=cmd_info)


def cmd_info(args, _cancel: CancelToken) -> int:
    from engine.services.summary import summarize_store

    store = open_store(args.project)
    try:
        info = summarize_store(store)
    finally:
        store.close()
    if args.json:
        print(json.dumps(info, ensure_ascii=False, indent=1))
    else:
        for key in ("project", "items", "texts", "encoded", "index_items", "model", "device",
                    "backend", "truncated"):
            print(f"{key:12} {info[key]}")
        print(f"{'new here':12} {info['new_project_backend']}")
        if info["truncated"]:
            say(f"{info['truncated']} long texts were read from their beginning only; "
                f"'duplens encode --reread {args.project}' reads them whole")
        for s in info["sources"]:
            print(f"import {s['batch']:<5} {describe_batch(s)}")
        for cid, into in info["merged_into"].items():
            print(f"retired      {cid} -> {into or '(its rows are gone)'}")
    return EXIT_OK

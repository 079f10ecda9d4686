"""`duplens models`: list a project's model versions; activate, copy out or delete one."""

from __future__ import annotations

import argparse
import json

from engine.cli.common import (
    EXIT_CANCELLED,
    EXIT_OK,
    device_option,
    json_option,
    one_line,
    open_project,
    project_argument,
    say,
    trust_option,
)
from engine.cli.stage_bars import StageBars
from engine.errors import InputError
from engine.progress import CancelToken
from engine.review.calibration import format_threshold


def register(sub) -> None:
    p = sub.add_parser("models", help="the project's model versions; activate, copy out or "
                       "delete one")
    project_argument(p)
    p.add_argument("--activate", type=int, metavar="VERSION",
                   help="serve search with this version (encodes what it has not yet)")
    p.add_argument("--copy-out", nargs=2, metavar=("VERSION", "FOLDER"),
                   help="copy a version (or a version's second opinion) out to a new folder "
                   "sentence-transformers loads")
    # The flag's earlier name, still accepted (not shown) so that existing scripts work.
    p.add_argument("--export", dest="copy_out", nargs=2, help=argparse.SUPPRESS)
    p.add_argument("--delete", type=int, metavar="VERSION", help="delete a fine-tuned version "
                   "that is not active and no other version was trained from (its second "
                   "opinion goes with it)")
    device_option(p)
    json_option(p, "the versions")
    trust_option(p)
    p.set_defaults(run=cmd_models)


def cmd_models(args, cancel: CancelToken) -> int:
    with open_project(args.project, trust_models=args.trust_model_location) as project:
        project.model.configure(device=args.device)
        if args.activate is not None:
            report = activate(project, args.activate, cancel)
            if report.cancelled:
                say(f"stopped: version {args.activate} is not active; {report.encoded} texts "
                    f"encoded and kept, {report.remaining} left; run the same command to "
                    f"finish")
                return EXIT_CANCELLED
            done = ("already active" if report.already_active else
                    f"active ({report.encoded} texts encoded, {report.seconds:.1f} s)")
            say(f"version {args.activate}: {done}")
        if args.copy_out is not None:
            version, folder = args.copy_out
            if not version.isdigit():
                raise InputError(f"--copy-out: VERSION must be a version number, not "
                                 f"{version!r}")
            out = project.versions.copy_out(int(version), folder)
            say(f"version {version} copied out to {out}")
        if args.delete is not None:
            say(f"deleted {project.versions.delete(args.delete)}")
        versions = project.versions.list()
    if args.json:
        print(json.dumps(versions, ensure_ascii=False, indent=1))
    else:
        _print_versions(versions)
    return EXIT_OK


def activate(project, version_id: int, cancel: CancelToken):
    """Activate a version with stage bars on the terminal; the activation report."""
    bar = StageBars()
    try:
        return project.versions.activate(version_id, progress=bar, cancel=cancel)
    finally:
        bar.close()


def _print_versions(versions: list[dict]) -> None:
    import datetime

    print(f"  {'id':>3}  {'name':28}  {'objective':11}  {'AP before->after':17}  "
          f"{'threshold':9}  {'encoded':>13}  {'runs as':13}  created")
    for v in versions:
        metrics = v["metrics"] or {}
        ap = ""
        if "before" in metrics and "after" in metrics:
            ap = (f"{metrics['before']['average_precision']:.1f} -> "
                  f"{metrics['after']['average_precision']:.1f}")
        created = datetime.datetime.fromtimestamp(v["created_at"]).strftime("%Y-%m-%d %H:%M")
        mark = "*" if v["active"] else " "
        missing = "" if v["available"] else "  (folder missing)"
        print(f"{mark} {v['id']:>3}  {one_line(v['name'], 28):28}  "
              f"{v['objective'] or '-':11}  {ap:17}  {_threshold(v['threshold']):9}  "
              f"{v['encoded']:>6}/{v['texts']:<6}  {v['backend']:13}  {created}{missing}")
        if v.get("second_opinion"):
            print(_second_opinion(v["id"], v["second_opinion"]))
    for v in versions:
        t = v["threshold"]
        print(f"  {v['id']:>3}: default threshold {format_threshold(t['value'])} "
              f"({t['chosen_on']})")


def _second_opinion(version_id: int, judge: dict) -> str:
    """The line under a version for the judge its run kept (`judge_versions.judge_entry`):
    its id, its held-out AP beside the version's, and whether it is offered."""
    offered = ("offered" if judge["offered"] else
               "not offered: the held-out pairs do not show it above the version's")
    missing = "" if judge["available"] else "  (folder missing)"
    return (f"  {judge['id']:>3}  second opinion of v{version_id}: held-out AP "
            f"{judge['average_precision']:.1f} beside the version's "
            f"{judge['version_average_precision']:.1f} ({offered}); cannot be activated"
            f"{missing}")


def _threshold(found: dict) -> str:
    """A version's default threshold for the table; "0.80?" where none is recorded."""
    return format_threshold(found["value"]) + ("" if found["recorded"] else "?")

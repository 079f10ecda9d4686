"""`duplens match`: check a new file against the project — each row's nearest existing
entries — without adding it, unless `--add`."""

from __future__ import annotations

import json
from pathlib import Path

from engine.cli.common import (
    EXIT_CANCELLED,
    EXIT_OK,
    one_line,
    open_project,
    positive,
    say,
    trust_option,
)
from engine.cli.importing import reader_kwargs, reader_options
from engine.errors import Cancelled, InputError
from engine.jobs import CancelToken


def register(sub) -> None:
    p = sub.add_parser("match", help="the nearest existing entries of every row of a new "
                       "file; the file is not added unless --add")
    p.add_argument("project")
    p.add_argument("file")
    reader_options(p)
    p.add_argument("-k", type=positive, default=3, help="matches per row (default 3)")
    p.add_argument("--threshold", type=float, help="a best score at or above it marks a "
                   "likely duplicate (default: the calibrated threshold once enough pairs "
                   "are labelled, else 0.8)")
    p.add_argument("--out", help="write the file's columns and its matches to .csv or .xlsx")
    p.add_argument("--json", action="store_true", help="print the matches as JSON")
    p.add_argument("--add", action="store_true", help="then import the file into the "
                   "project and encode its new rows, as 'duplens import' does")
    trust_option(p)
    p.set_defaults(run=cmd_match)


def cmd_match(args, cancel: CancelToken) -> int:
    from engine.io.export import export_table
    from engine.progress_bar import TqdmProgress

    if args.out and Path(args.out).suffix.lower() not in (".csv", ".xlsx"):
        # Said before the file is encoded, not after.
        raise InputError(f"{Path(args.out).name}: cannot export to this file type; use .csv "
                         "or .xlsx")
    with open_project(args.project, trust_models=args.trust_model_location) as project:
        bar = TqdmProgress()
        try:
            result = project.matching.check_file(
                args.file, args.columns, **reader_kwargs(args), k=args.k,
                threshold=args.threshold, progress=bar, cancel=cancel)
        except Cancelled:
            bar.close()
            say(f"{Path(args.file).name}: stopped; nothing was written")
            return EXIT_CANCELLED
        bar.close()
        for notice in project.notices:
            say(notice)
        in_file = sum(1 for r in result.rows if r.duplicate_in_file_of is not None)
        say(f"{result.file_name}: {len(result.rows)} rows checked, "
            f"{result.likely_duplicates()} likely duplicates of existing entries (score ≥ "
            f"{result.threshold:.3f}), {in_file} repeat an earlier row of the file")
        if args.out:
            export_table(result.frame(), args.out)
            say(f"wrote {args.out}")
        if args.json:
            print(json.dumps([r.as_json() for r in result.rows], ensure_ascii=False, indent=1))
        elif not args.out:
            for r in result.rows:
                best = r.matches[0] if r.matches else None
                shown = f"{best.score:.3f}  [{best.id}]  {one_line(best.text, 60)}" if best \
                    else "-"
                print(f"[{r.id}]  {one_line(r.text, 60)}  →  {shown}")
        if args.add:
            return _add(project, args, cancel)
    return EXIT_OK


def _add(project, args, cancel: CancelToken) -> int:
    """Import the file as `import` does and encode its new texts (encoded a second time:
    see `engine.services.matching`)."""
    from engine.progress_bar import TqdmProgress

    bar = TqdmProgress()
    try:
        report = project.rows.import_table(args.file, args.columns, **reader_kwargs(args),
                                           progress=bar, cancel=cancel)
    except Cancelled:
        bar.close()
        say(f"{Path(args.file).name}: import stopped; nothing from this file was added")
        return EXIT_CANCELLED
    bar.close()
    if report.already_imported:
        say(f"{report.file_name}: already imported with these columns; nothing added")
        return EXIT_OK
    bar = TqdmProgress()
    encoded = project.vectors.encode(progress=bar, cancel=cancel)
    bar.close()
    if encoded.cancelled:
        say(f"stopped: {encoded.encoded} texts encoded and kept, {encoded.remaining} left; "
            f"run 'duplens encode {args.project}' to finish")
        return EXIT_CANCELLED
    say(f"{report.file_name}: {report.rows_imported} rows added, {encoded.encoded} new texts "
        "encoded")
    return EXIT_OK

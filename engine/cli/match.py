"""`duplens match`: check a new file against the project — each row's nearest existing
rows — without adding it, unless `--add`."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from engine.cli.common import (
    EXIT_CANCELLED,
    EXIT_OK,
    one_line,
    open_project,
    positive,
    prefer_torch_free,
    prepare_torch_free,
    project_argument,
    say,
    trust_option,
)
from engine.cli.importing import import_choices, reader_kwargs, reader_options, say_placed
from engine.cli.stoppable import stoppable_bar
from engine.errors import InputError
from engine.progress import CancelToken
from engine.review.calibration import THRESHOLD_HELP, format_threshold

if TYPE_CHECKING:
    from engine.services.matching import FileRow


def register(sub) -> None:
    p = sub.add_parser("match", help="the nearest existing rows of every row of a new "
                       "file; the file is not added unless --add")
    project_argument(p)
    p.add_argument("file", help="the file to check (the same kinds as import reads)")
    reader_options(p)
    p.add_argument("-k", type=positive, default=3, help="matches per row (default 3)")
    p.add_argument("--threshold", type=float, help="a best score at or above it marks a "
                   f"likely duplicate (default: {THRESHOLD_HELP})")
    p.add_argument("--out", help="write the file's columns and its matches to .csv or .xlsx")
    p.add_argument("--json", action="store_true", help="print the matches as JSON")
    p.add_argument("--add", action="store_true", help="then import the file into the "
                   "project and encode its new rows, as 'duplens import' does")
    trust_option(p)
    p.set_defaults(run=cmd_match)


def cmd_match(args, cancel: CancelToken) -> int:
    from engine.services.matching import write_matches

    if args.out and Path(args.out).suffix.lower() not in (".csv", ".xlsx"):
        # Said before the file is encoded, not after.
        raise InputError(f"{Path(args.out).name}: cannot export to this file type; use .csv "
                         "or .xlsx")
    with open_project(args.project, trust_models=args.trust_model_location) as project:
        if not args.add:   # --add encodes the file again to store it: torch does that
            prefer_torch_free(project)
        json_out = _JsonList(sys.stdout) if args.json else None
        with stoppable_bar(f"{Path(args.file).name}: stopped; nothing was written"
                           + (" (the JSON printed so far is incomplete)" if json_out
                              else "")) as bar:
            stream = project.matching.stream(
                args.file, args.columns, **reader_kwargs(args), k=args.k,
                threshold=args.threshold, progress=bar, cancel=cancel)
            tally = _Tally(stream.threshold)
            # Each row is written (and printed) as its batch is matched, then let go: the
            # memory held does not grow with the file.
            stream.rows = _shown(tally.count(stream.rows), json_out, quiet=bool(args.out))
            if args.out:
                write_matches(stream, args.out)
            else:
                for _ in stream.rows:
                    pass
        if json_out is not None:
            json_out.close()
        for notice in project.notices:
            say(notice)
        why = f", {stream.threshold_reason}" if stream.threshold_reason else ""
        say(f"{stream.file_name}: {tally.rows} rows checked, {tally.likely} likely "
            f"duplicates of existing rows (score ≥ {format_threshold(stream.threshold)}"
            f"{why}), {tally.in_file} repeat an earlier row of the file")
        if args.out:
            say(f"wrote {args.out}")
        if args.add:
            return _add(project, args, cancel)
        prepare_torch_free(project)   # when torch had to serve: the next match will not
    return EXIT_OK


class _Tally:
    """The summary's counts, taken as the rows pass."""

    def __init__(self, threshold: float) -> None:
        self.threshold = threshold
        self.rows = self.likely = self.in_file = 0

    def count(self, rows: Iterator[FileRow]) -> Iterator[FileRow]:
        for r in rows:
            self.rows += 1
            self.likely += (r.best_score() or 0.0) >= self.threshold
            self.in_file += r.duplicate_in_file_of is not None
            yield r


class _JsonList:
    """A JSON list printed one entry at a time, as `json.dumps(entries, indent=1)` would."""

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._started = False

    def add(self, entry: dict) -> None:
        self._out.write(",\n" if self._started else "[\n")
        self._out.write(textwrap.indent(json.dumps(entry, ensure_ascii=False, indent=1), " "))
        self._started = True

    def close(self) -> None:
        self._out.write("\n]\n" if self._started else "[]\n")
        self._out.flush()


def _shown(rows: Iterator[FileRow], json_out: _JsonList | None, *, quiet: bool
           ) -> Iterator[FileRow]:
    """Print each row as it passes: a JSON entry with --json, else (unless the rows go to
    --out) the row and its best match on one line, and each further match of the k on a
    line of its own below it."""
    for r in rows:
        if json_out is not None:
            json_out.add(r.as_json())
        elif not quiet:
            shown = [f"{m.score:.3f}  [{m.id}]  {one_line(m.text, 60)}" for m in r.matches]
            print(f"[{r.id}]  {one_line(r.text, 60)}  →  {shown[0] if shown else '-'}")
            for more in shown[1:]:
                print(f"    →  {more}")
        yield r


def _add(project, args, cancel: CancelToken) -> int:
    """Add the file as `import` does (`engine.add_file`: its new texts encoded a second
    time, see `engine.services.matching`, and its rows placed in the recorded clusters)."""
    from engine.add_file import add_file

    with stoppable_bar(f"{Path(args.file).name}: import stopped; nothing from this file "
                       "was added") as bar:
        added = add_file(project, import_choices(args), progress=bar, cancel=cancel,
                         on_imported=lambda _report: bar.close(),
                         on_encoded=lambda _report: bar.close())
    report, encoded = added.imported, added.encoded
    if report.already_imported:
        say(f"{report.file_name}: already imported with these columns; nothing added")
        return EXIT_OK
    if added.cancelled:
        say(f"stopped: {encoded.encoded} texts encoded and kept, {encoded.remaining} left; "
            f"run 'duplens encode {args.project}' to finish")
        return EXIT_CANCELLED
    adopted = (f"; {report.verdicts_adopted} verdicts given while checking it stored on "
               "its rows" if report.verdicts_adopted else "")
    say(f"{report.file_name}: {report.rows_imported} rows added, {encoded.encoded} new texts "
        f"encoded{adopted}")
    say_placed(added)
    return EXIT_OK

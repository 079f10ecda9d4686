"""`duplens estimate`: how right the duplicates are, from a random sample of judged pairs:
the estimates, the next pairs to judge, or a report page.

The pairs to judge are printed with their texts whole (wrapped), never cut: a judge decides
on the words a cut would hide ("… in winter" against "… in summer"). `--out pairs.csv`
writes them as the file `duplens label --from` reads back: a_id, b_id and an empty verdict
column to fill in, then the similarity and both texts, which `--from` ignores.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import textwrap

from engine.cli.common import (
    EXIT_OK,
    json_option,
    open_project,
    positive,
    project_argument,
    say,
    trust_option,
)
from engine.cli.label import COLUMNS as VERDICT_COLUMNS
from engine.cli.stoppable import stoppable_bar
from engine.errors import InputError
from engine.estimation.floor_words import below_floor_words, recall_label
from engine.progress import CancelToken
from engine.review.calibration import THRESHOLD_HELP


def register(sub) -> None:
    p = sub.add_parser(
        "estimate", help="precision, recall, F1 and the number of duplicates in the whole "
        "project, with 95%% intervals, from pairs drawn at random and judged (--next N lists "
        "pairs to judge; give the verdicts with 'duplens label PROJECT --from verdicts.csv')")
    project_argument(p)
    p.add_argument("--threshold", type=float, help="estimate at this similarity threshold "
                   f"(default: {THRESHOLD_HELP})")
    p.add_argument("--next", type=positive, metavar="N", dest="next_pairs",
                   help="list the next N drawn pairs to judge instead (both ids and texts)")
    p.add_argument("--out", metavar="PAIRS.csv",
                   help="with --next: write the pairs to this CSV file instead of listing "
                        "them, with an empty verdict column to fill in (dup or not) and give "
                        "back with 'duplens label PROJECT --from PAIRS.csv'; the similarity "
                        "and both texts follow as columns --from ignores")
    p.add_argument("--report", metavar="FILE.html",
                   help="write a one-page report: the figures, the curve over thresholds "
                        "with its band, who judged the pairs, the model and how it was measured")
    json_option(p, "the estimates (or, with --next, the pairs to judge)")
    trust_option(p)
    p.set_defaults(run=cmd_estimate)


def cmd_estimate(args, cancel: CancelToken) -> int:
    if args.out and not args.next_pairs:
        raise InputError("--out writes the pairs of --next N; give --next too")
    if args.out and os.path.exists(args.out):
        # It may be last time's file with verdicts filled in: never written over.
        raise InputError(f"{args.out} already exists (it may hold verdicts not given back "
                         "yet); give another file name, or remove it first")
    with open_project(args.project, trust_models=args.trust_model_location) as project:
        with stoppable_bar() as bar:
            if args.next_pairs:
                pairs = project.measuring.next_pairs(args.next_pairs, threshold=args.threshold,
                                                     progress=bar, cancel=cancel)
                measurement = None
            else:
                measurement = project.measuring.measure(args.threshold,
                                                        curve=bool(args.report),
                                                        progress=bar, cancel=cancel)
        for notice in project.notices:
            say(notice)
        name = project.store.name
    if args.next_pairs:
        return _print_pairs(args, pairs)
    if args.report:
        from engine.quality_report import write_report

        write_report(args.report, measurement, name)
        say(f"report written to {args.report}")
    if args.json:
        print(json.dumps(measurement.as_json(), ensure_ascii=False, indent=1))
    elif not args.report or measurement.estimate is not None:
        _print_measurement(args, measurement)
    return EXIT_OK


def _print_pairs(args, pairs) -> int:
    if args.out:
        _write_pairs(args.out, pairs)
        say(f"{len(pairs)} pairs drawn at random written to {args.out}; fill its verdict "
            f"column (dup or not) and give it back with duplens label {args.project} --from "
            f"{args.out}")
    if args.json:
        print(json.dumps([p.as_json() for p in pairs], ensure_ascii=False, indent=1))
        return EXIT_OK
    if args.out:
        return EXIT_OK
    say(f"{len(pairs)} pairs drawn at random; judge each and give the verdicts back with "
        f"duplens label {args.project} --from verdicts.csv (columns a_id,b_id,verdict; "
        "verdict dup or not), or write them to such a file with --out")
    width = max(40, min(shutil.get_terminal_size((100, 24)).columns, 100))
    for number, p in enumerate(pairs, 1):
        print(f"{number}. similarity {p.similarity:.3f}")
        for row in (p.a, p.b):
            print(_wrapped(f"[{row.public_id}] ", row.text, width))
        print()
    return EXIT_OK


def _wrapped(label: str, text: str, width: int) -> str:
    """`text` whole, wrapped to `width` under `label`, its own line breaks kept (several
    text columns are joined one per line)."""
    indent = " " * (len(label) + 3)
    lines = []
    for number, line in enumerate(text.splitlines() or [""]):
        first = f"   {label}" if number == 0 else indent
        lines.append(textwrap.fill(line, width, initial_indent=first,
                                   subsequent_indent=indent, break_long_words=False,
                                   break_on_hyphens=False) or first.rstrip())
    return "\n".join(lines)


def _write_pairs(path: str, pairs) -> None:
    """The pairs as a CSV file `duplens label --from` reads (UTF-8 with a byte-order mark,
    so that Excel opens it as UTF-8): its columns first, the verdict empty, then what the
    judge reads. Written whole or not at all."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow([*VERDICT_COLUMNS, "similarity", "a_text", "b_text"])
    for p in pairs:
        writer.writerow([p.a.public_id, p.b.public_id, "", f"{p.similarity:.3f}", p.a.text,
                         p.b.text])
    try:
        with open(path, "x", encoding="utf-8-sig", newline="") as fh:
            fh.write(buffer.getvalue())
    except OSError as exc:
        raise InputError(f"{path}: cannot be written ({exc.strerror or exc})") from exc


def _print_measurement(args, m) -> None:
    e = m.estimate
    if m.changed and m.verdicts == 0:
        say("the project changed since the last sample (an import, a deletion or another "
            "model): a new sample was drawn, reusing every verdict given on a pair it drew")
    if e is None:
        say(f"no verdicts yet: run duplens estimate {args.project} --next 20, judge the "
            "pairs, and give the verdicts back with duplens label --from")
        return
    print(f"threshold {e.threshold:.3f}: {e.flagged:,} pairs of texts flagged as duplicates")
    for label, f, percent in _lines(e):
        print(f"{label:30} {_fmt(f, percent)}")
    if e.floored is not None and e.floored.rows is not None:
        print(f"{f'rows with a duplicate (>= {e.floored.floor:.2f})':30} "
              f"{_fmt(e.floored.rows, False)}")
        if e.rows is not None:
            print(f"{'rows with a duplicate (whole)':30} {_fmt(e.rows, False)}")
    elif e.rows is not None:
        print(f"{'rows with a duplicate':30} {_fmt(e.rows, False)}")
    if e.floored is not None:
        print(below_floor_words(e.floored))
    if m.scope is not None:
        print(m.scope.words())
    who = ", ".join(f"{n} {name}" for name, n in sorted(m.analysts.items()))
    print(f"from {m.verdicts} verdicts ({who}); {m.pending} drawn pairs wait for a verdict")
    if not e.ready:
        print("some strata have no verdict yet: the figures are provisional")
    if m.enough:
        print("every interval is within ±3 points: more verdicts would add little")
    elif m.widest is not None:
        print(m.halving_words())
        why = m.why_wide()
        if why:
            print(why)


def _lines(e) -> list[tuple[str, object, bool]]:
    """The figures in the order they are quoted: recall and the duplicate pairs down to the
    floor first where there is one, the whole file's beside them."""
    if e.floored is None:
        return [("precision", e.precision, True), ("recall", e.recall, True),
                ("F1", e.f1, True), ("duplicate pairs", e.duplicates, False)]
    at = f"{e.floored.floor:.2f}"
    return [("precision", e.precision, True),
            (recall_label(e.floored), e.floored.recall, True),
            (f"F1 (>= {at})", e.quoted("f1"), True),
            (f"duplicate pairs (>= {at})", e.floored.duplicates, False),
            ("recall (whole file)", e.recall, True), ("F1 (whole file)", e.f1, True),
            ("duplicate pairs (whole file)", e.duplicates, False)]


def _fmt(f, percent: bool) -> str:
    if percent:
        return f"{f.value:6.1%}  (95% interval {f.low:.1%} to {f.high:.1%})"
    return f"{f.value:9,.0f}  (95% interval {f.low:,.0f} to {f.high:,.0f})"

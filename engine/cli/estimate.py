"""`duplens estimate`: how right the duplicates are, from a random sample of judged pairs:
the estimates, the next pairs to judge, or a report page."""

from __future__ import annotations

import json

from engine.cli.common import (
    EXIT_OK,
    json_option,
    one_line,
    open_project,
    positive,
    project_argument,
    say,
    trust_option,
)
from engine.cli.stoppable import stoppable_bar
from engine.progress import CancelToken
from engine.review.calibration import DEFAULT_THRESHOLD, ENOUGH_OF_EACH


def register(sub) -> None:
    p = sub.add_parser(
        "estimate", help="precision, recall, F1 and the number of duplicates in the whole "
        "project, with 95%% intervals, from pairs drawn at random and judged (--next N lists "
        "pairs to judge; give the verdicts with 'duplens label PROJECT --from verdicts.csv')")
    project_argument(p)
    p.add_argument("--threshold", type=float, help="estimate at this similarity threshold "
                   "(default: the project threshold, as duplicates cuts at: calibrated on "
                   f"the verdicts once there are {ENOUGH_OF_EACH} of each kind, else "
                   f"{DEFAULT_THRESHOLD})")
    p.add_argument("--next", type=positive, metavar="N", dest="next_pairs",
                   help="list the next N drawn pairs to judge instead (both ids and texts)")
    p.add_argument("--report", metavar="FILE.html",
                   help="write a one-page report: the figures, the curve over thresholds "
                        "with its band, who judged the pairs, the model and how it was measured")
    json_option(p, "the estimates (or, with --next, the pairs to judge)")
    trust_option(p)
    p.set_defaults(run=cmd_estimate)


def cmd_estimate(args, cancel: CancelToken) -> int:

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
    if args.json:
        print(json.dumps([p.as_json() for p in pairs], ensure_ascii=False, indent=1))
        return EXIT_OK
    say(f"{len(pairs)} pairs drawn at random; judge each and give the verdicts back with "
        f"duplens label {args.project} --from verdicts.csv (columns a_id,b_id,verdict; "
        "verdict dup or not)")
    for p in pairs:
        print(f"{p.similarity:.3f}  [{p.a.public_id}] {one_line(p.a.text, 60)}  |  "
              f"[{p.b.public_id}] {one_line(p.b.text, 60)}")
    return EXIT_OK


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
    for label, f, percent in (("precision", e.precision, True), ("recall", e.recall, True),
                              ("F1", e.f1, True), ("duplicate pairs", e.duplicates, False)):
        print(f"{label:28} {_fmt(f, percent)}")
    if e.rows is not None:
        print(f"{'rows with a duplicate':28} {_fmt(e.rows, False)}")
    who = ", ".join(f"{n} {name}" for name, n in sorted(m.analysts.items()))
    print(f"from {m.verdicts} verdicts ({who}); {m.pending} drawn pairs wait for a verdict")
    if not e.ready:
        print("some strata have no verdict yet: the figures are provisional")
    if m.enough:
        print("every interval is within ±3 points: more verdicts would add little")
    elif m.widest is not None:
        more = (f"about {m.more_to_halve:,} more verdicts" if m.more_to_halve is not None
                else "more than a million more verdicts")
        print(f"the widest interval ({m.widest}) would take {more} to halve")
        why = m.why_wide()
        if why:
            print(why)


def _fmt(f, percent: bool) -> str:
    if percent:
        return f"{f.value:6.1%}  (95% interval {f.low:.1%} to {f.high:.1%})"
    return f"{f.value:9,.0f}  (95% interval {f.low:,.0f} to {f.high:,.0f})"

"""`duplens label`: store or clear the analyst's verdict on a pair of rows, or many pairs'
verdicts from a file (`--from verdicts.csv`: columns a_id, b_id, verdict). The command
keeps its name, `label`, and its flags: scripts call them.

A file's other columns are ignored, so the file `duplens estimate --next N --out` writes
(the similarity and both texts beside the ids) comes back as it is; a pair whose verdict is
still empty is one not judged yet, skipped and counted, so a judge may give back a file half
filled in and the rest later."""

from __future__ import annotations

from engine.cli.common import EXIT_OK, open_project, project_argument, say
from engine.errors import InputError
from engine.progress import CancelToken

VERDICTS = {"dup": 1, "not": 0, "clear": None}
COLUMNS = ("a_id", "b_id", "verdict")
_SHOWN_ERRORS = 10


def register(sub) -> None:
    p = sub.add_parser("label", help="store (dup, not) or forget (clear) the verdict on two "
                       "rows, named by their ids as the other commands print them; or many "
                       "verdicts at once with --from")
    project_argument(p)
    p.add_argument("id_a", nargs="?", help="the first row's id, as search, match, duplicates "
                   "or ask print it")
    p.add_argument("id_b", nargs="?", help="the second row's id")
    p.add_argument("verdict", nargs="?", choices=list(VERDICTS), help="dup: the same "
                   "question; not: different; clear: forget the verdict")
    p.add_argument("--from", dest="from_file", metavar="VERDICTS.csv",
                   help="read verdicts from a CSV file with the columns a_id,b_id,verdict "
                        "(verdict dup, not or clear), e.g. the pairs of 'duplens estimate "
                        "--next'; a file with any unknown id or verdict is refused whole")
    p.set_defaults(run=cmd_label)


def cmd_label(args, _cancel: CancelToken) -> int:
    if args.from_file:
        if args.id_a or args.id_b or args.verdict:
            raise InputError("give either two ids and a verdict, or --from FILE, not both")
        return _verdicts_file(args)
    if not (args.id_a and args.id_b and args.verdict):
        raise InputError("give two row ids and a verdict (dup, not or clear), or --from FILE")
    with open_project(args.project) as project:
        a = project.rows.by_public_id(args.id_a)
        b = project.rows.by_public_id(args.id_b)
        # Origin "asked" when `duplens ask` offered the pair, else a review verdict.
        project.asking.judge(a["item_id"], b["item_id"], VERDICTS[args.verdict])
        counts = project.verdicts.counts()
    done = "verdict cleared" if args.verdict == "clear" else f"verdict {args.verdict} stored"
    say(f"[{a['id']}] and [{b['id']}]: {done}; {counts['duplicate']} duplicate and "
        f"{counts['not_duplicate']} not-duplicate verdicts in the project")
    return EXIT_OK


def _verdicts_file(args) -> int:
    """Every line checked first; one bad line and nothing is stored (exit 2, naming the
    lines); else all verdicts in one transaction."""
    lines = _read(args.from_file)
    unjudged = sum(1 for *_ids, verdict in lines if not verdict)
    lines = [line for line in lines if line[3]]
    with open_project(args.project) as project:
        verdicts, errors, rows = [], [], {}
        for number, a_id, b_id, verdict in lines:
            problems = []
            if verdict not in VERDICTS:
                problems.append(f"verdict {verdict!r} is not dup, not or clear")
            for public in (a_id, b_id):
                if public not in rows:
                    try:
                        rows[public] = project.rows.by_public_id(public)["item_id"]
                    except InputError as exc:
                        rows[public] = exc
                if isinstance(rows[public], InputError):
                    problems.append(str(rows[public]))
            if not problems and rows[a_id] == rows[b_id]:
                problems.append("both ids name the same row")
            if problems:
                errors.append(f"line {number}: {'; '.join(problems)}")
            else:
                verdicts.append((rows[a_id], rows[b_id], VERDICTS[verdict]))
        if errors:
            more = len(errors) - _SHOWN_ERRORS
            shown = "; ".join(errors[:_SHOWN_ERRORS]) + (f"; and {more} more" if more > 0 else "")
            raise InputError(f"{args.from_file}: nothing stored, {len(errors)} bad "
                             f"line{'s' if len(errors) > 1 else ''}: {shown}")
        drawn = project.measuring.judge_many(verdicts)
        counts = project.verdicts.counts()
    skipped = f"; {unjudged} without a verdict skipped" if unjudged else ""
    say(f"{len(verdicts)} verdicts stored ({drawn} of them on drawn pairs{skipped}); "
        f"{counts['duplicate']} duplicate and {counts['not_duplicate']} not-duplicate "
        "verdicts in the project")
    return EXIT_OK


def _read(path: str) -> list[tuple[int, str, str, str]]:
    """(line number, a_id, b_id, verdict) of each record, the line where it starts (a text
    cell may hold line breaks); InputError for a file that cannot be read or lacks the
    columns."""
    import csv

    try:
        with open(path, encoding="utf-8-sig", newline="") as fh:
            reader = csv.DictReader(fh)
            missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
            if missing:
                raise InputError(f"{path}: line 1: the header needs the columns "
                                 f"{','.join(COLUMNS)} (missing {', '.join(missing)})")
            out = []
            start = reader.line_num + 1
            for record in reader:
                a_id, b_id, verdict = ((record.get(c) or "").strip() for c in COLUMNS)
                if a_id or b_id or verdict:
                    out.append((start, a_id, b_id, verdict.lower()))
                start = reader.line_num + 1
            return out
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror or exc})") from exc
    except (UnicodeDecodeError, csv.Error) as exc:
        raise InputError(f"{path}: not a UTF-8 CSV file ({exc})") from exc

"""`duplens import` and `duplens encode`: rows in, then every new text encoded and indexed."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from engine.cli.common import (
    EXIT_CANCELLED,
    EXIT_OK,
    PROJECT_HELP,
    model_options,
    open_project,
    prepare_torch_free,
    project_argument,
    say,
    trust_option,
    unescape,
)
from engine.cli.stoppable import Bars, stoppable_bar
from engine.encoding.backends import require_backend
from engine.encoding.windows import MAX_WINDOWS
from engine.progress import CancelToken

if TYPE_CHECKING:  # pragma: no cover
    from engine.add_file import FileAdded, ImportChoices, ModelChoice
    from engine.encoding.encode_job import EncodeReport
    from engine.encoding.encoder import Executor


def register(sub) -> None:
    p = sub.add_parser("import", help="import a spreadsheet into a project (created if new), "
                       "then encode and index the new rows")
    project_argument(p, PROJECT_HELP + " (created if it does not exist)")
    p.add_argument("file", help="the spreadsheet: .csv, .tsv, .txt, .xlsx, .xlsm, .parquet or "
                   ".jsonl")
    reader_options(p)
    p.add_argument("--no-encode", action="store_true", help="store the rows only")
    model_options(p)
    executor_option(p)
    trust_option(p)
    p.set_defaults(run=cmd_import)

    p = sub.add_parser("encode", help="encode and index what is not yet (resumes a stopped "
                       "import)")
    project_argument(p)
    model_options(p)
    executor_option(p)
    trust_option(p)
    p.add_argument("--reread", action="store_true",
                   help="read again, whole, the long texts an earlier version encoded from "
                   "their beginning only (`duplens info` counts them)")
    p.set_defaults(run=cmd_encode)


def reader_options(p) -> None:
    """Which columns of the file hold the text and how to read it: shared by `import` and
    `match`, so a file is read the same way by both."""
    p.add_argument("--column", action="append", required=True, dest="columns",
                   help="text column; repeat to join several")
    p.add_argument("--id-column", help="column whose values name the rows (the ids that "
                   "search, match, duplicates and label print and take; default: the row "
                   "number)")
    p.add_argument("--sheet", help="XLSX sheet (default: the first)")
    p.add_argument("--encoding", help="force a text encoding, e.g. cp1252")
    p.add_argument("--delimiter", help="force a delimiter, e.g. ';' or '\\t'")
    p.add_argument("--quoting", choices=("auto", "on", "off"), default="auto",
                   help="whether '\"' quotes fields in CSV/TSV (auto: detected)")


def reader_kwargs(args) -> dict:
    """The options of `reader_options` as keyword arguments of the readers (besides the
    file and its text columns)."""
    return {"id_column": args.id_column, "sheet": args.sheet, "encoding": args.encoding,
            "delimiter": unescape(args.delimiter),
            "quoting": {"auto": None, "on": True, "off": False}[args.quoting]}


def executor_option(p) -> None:
    p.add_argument("--executor", default="local", metavar="local|ray|ray=ADDRESS",
                   help="where texts are encoded: in this process (local, the default), on "
                   "a Ray started on this computer with all its cores (ray), or on the Ray "
                   "cluster at ADDRESS, e.g. ray=ray://host:10001 or ray=host:6379; Ray "
                   "needs pip install \"duplens[ray]\"")


def cmd_import(args, cancel: CancelToken) -> int:
    from engine.encoding.executors import executor_for
    from engine.encoding.model_spec import resolve_model

    if args.model is not None and not args.no_encode:
        resolve_model(args.model)  # a wrong model is reported before the project is touched
    if args.backend is not None and not args.no_encode:
        require_backend(args.backend)  # so is a backend whose packages are missing
    if args.no_encode:
        return _import(args, cancel, None)
    # A wrong cluster address too, and the rows are imported only once Ray is reachable.
    executor = executor_for(args.executor)
    try:
        return _import(args, cancel, executor)
    finally:
        executor.close()


def import_choices(args) -> ImportChoices:
    """The file and the `reader_options` of a command, as the engine takes them."""
    from engine.add_file import ImportChoices

    return ImportChoices(args.file, list(args.columns), **reader_kwargs(args))


def model_choice(args) -> ModelChoice:
    """The `model_options` of a command, as the engine takes them."""
    from engine.add_file import ModelChoice

    return ModelChoice(args.model, args.device, args.backend, args.batch_size)


def _import(args, cancel: CancelToken, executor: Executor | None) -> int:
    """Import the file, then encode it with `executor` (None: --no-encode) and place its
    new rows (`engine.add_file`).

    A project this command creates exists only once its rows are in: the file and its
    columns are checked before it is made, and if the import still fails or is stopped, the
    empty project is removed again, so a mistyped column leaves nothing behind. A project
    that existed is left as it was (the import is one transaction)."""
    from engine.add_file import add_file

    new = _new_project_file(args.project)
    if new is not None:
        _check_columns(args)
    imported = False
    try:
        with open_project(args.project, create=True,
                          trust_models=args.trust_model_location) as project:
            with stoppable_bar(f"{Path(args.file).name}: import stopped; nothing from this "
                               "file was added" + (f" and {new.name} was not created"
                                                   if new else "")) as bar:
                def on_imported(report) -> None:
                    nonlocal imported
                    imported = True
                    bar.close()
                    _report_import(report)

                added = add_file(project, import_choices(args),
                                 encode=executor is not None, model=model_choice(args),
                                 executor=executor, progress=bar, cancel=cancel,
                                 on_imported=on_imported,
                                 on_encoded=lambda r: _report_encoding(project, args, r,
                                                                       executor, bar))
            return _finish(project, added)
    finally:
        if new is not None and not imported:
            _remove_project_file(new)


def _new_project_file(location: str) -> Path | None:
    """The project file `import` is about to create, or None (it exists, or is a URL)."""
    from engine.store.location import looks_like_url

    if looks_like_url(location):
        return None
    path = Path(location)
    return None if path.exists() else path


def _check_columns(args) -> None:
    """The file can be read and has the columns asked for (the checks the import starts
    with, `engine.importer.import_table`), or the user's one-line error."""
    from engine.io import detect_format, read_columns, require_columns

    options = reader_kwargs(args)
    path = Path(args.file)
    fmt = detect_format(path, sheet=options["sheet"], encoding=options["encoding"],
                        delimiter=options["delimiter"], quoting=options["quoting"])
    wanted = list(dict.fromkeys([*args.columns, *([args.id_column] if args.id_column
                                                   else [])]))
    require_columns(path, read_columns(path, fmt), wanted)


def _remove_project_file(path: Path) -> None:
    """Remove the (closed, empty) project file this command created, with SQLite's own
    files beside it."""
    for leftover in (path, *(path.with_name(path.name + s) for s in ("-wal", "-shm",
                                                                      "-journal"))):
        leftover.unlink(missing_ok=True)


def _report_import(report) -> None:
    """The import's summary on stdout (what a script reads); its warnings on stderr."""
    if report.already_imported:
        print(f"{report.file_name}: already imported with these columns; nothing added")
        return
    fmt = report.format
    how = ", ".join(x for x in (fmt.kind, fmt.encoding, fmt.sheet and f"sheet "
                                f"{fmt.sheet!r}") if x)
    print(f"{report.file_name} ({how}): {report.rows_imported} rows imported, "
          f"{report.rows_empty} empty skipped, {report.exact_duplicates} exact "
          f"duplicates of earlier rows", flush=True)
    if report.bad_lines:
        shown = ", ".join(map(str, report.bad_lines[:10]))
        more = " …" if len(report.bad_lines) > 10 else ""
        say(f"{report.file_name}: skipped {len(report.bad_lines)} malformed lines "
            f"({shown}{more})")


def cmd_encode(args, cancel: CancelToken) -> int:
    from engine.add_file import finish_encoding
    from engine.encoding.executors import executor_for, parse_executor

    parse_executor(args.executor)  # a mistyped option is reported before anything starts
    if args.reread:
        return _reread(args, cancel)
    with open_project(args.project, trust_models=args.trust_model_location) as project:
        executor = executor_for(args.executor)
        try:
            with stoppable_bar() as bar:
                added = finish_encoding(
                    project, model=model_choice(args), executor=executor, progress=bar,
                    cancel=cancel, on_encoded=lambda r: _report_encoding(project, args, r,
                                                                         executor, bar))
        finally:
            executor.close()
        return _finish(project, added)


def _reread(args, cancel: CancelToken) -> int:
    """`duplens encode --reread`: the texts read from their start, read whole."""
    from engine.reread import count_read_from_start, reread_long_texts

    with open_project(args.project, trust_models=args.trust_model_location) as project:
        choice = model_choice(args)
        project.model.choose(choice.model, device=choice.device, backend=choice.backend,
                             batch_size=choice.batch_size)
        stale = count_read_from_start(project)
        say(f"{stale} texts were read from their beginning only; reading them whole")
        with stoppable_bar() as bar:
            report = reread_long_texts(project, progress=bar, cancel=cancel)
            _report_encoding(project, args, report, None, bar)
        if report.cancelled:
            return EXIT_CANCELLED
        prepare_torch_free(project)
        return EXIT_OK


def _report_encoding(project, args, report: EncodeReport, executor: Executor | None,
                     bar: Bars) -> None:
    """What the encoding did, said as soon as it ends (before any placing)."""
    bar.close()
    plan = getattr(executor, "last_plan", None)
    if plan is not None:
        say(f"encoded on {plan.describe()}")
    for notice in project.notices:
        say(notice)
    if report.windowed:
        say(f"{report.windowed} texts are longer than one window of the model "
            f"({project.model.encoder().max_seq_length} word pieces); each was read whole, "
            f"in {report.windows} windows in all")
    if report.truncated:
        say(f"{report.truncated} texts are longer than {MAX_WINDOWS} windows; they were read "
            f"up to there and are stored whole")
    if report.cancelled:
        say(f"stopped: {report.encoded} texts encoded and kept, {report.remaining} left; "
            f"run 'duplens encode {args.project}' to finish")
        return
    info = project.info()
    print(f"{info['items']} items, {info['encoded']} texts encoded with {info['model']} on "
          f"{info['device']}", flush=True)


def _finish(project, added: FileAdded) -> int:
    """The exit status of an import or encoding, once what it did to the clusters is said;
    then the torch-free form prepared, so that searches after this need no torch."""
    if added.cancelled:
        return EXIT_CANCELLED
    say_placed(added)
    if added.encoded is not None:
        prepare_torch_free(project)
    return EXIT_OK


def say_placed(added: FileAdded) -> None:
    """Once clusters were ever reviewed, an import's rows join them at once, at the
    threshold their ids were recorded at: say what that changed (nothing when no cut was
    ever recorded)."""
    if added.placing_stopped:
        say("clusters not updated (stopped); the next cut places the new rows")
        return
    if added.placed_at is None or added.imported is None:
        return
    from engine.add_file import CHANGES_SAID

    said = ", ".join(f"{added.changes[kind]} {what}" for kind, what in CHANGES_SAID.items()
                     if added.changes.get(kind)) or "no cluster changed"
    say(f"clusters at {added.placed_at:g} updated: {said} (duplens duplicates "
        f"--changes-since {added.imported.source_id} lists them)")

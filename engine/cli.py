"""The `duplens` command line: the same Project API the window uses, for scripts and servers.

Exit status: 0 done, 2 bad input or usage (one line on stderr), 1 a bug (details in the log
file named on stderr), 130 stopped by Ctrl-C after keeping what was done.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path

from engine import __version__
from engine.encoding.backends import BACKENDS, backend_for_row, require_backend
from engine.errors import Cancelled, DuplensError, InputError
from engine.jobs import CancelToken
from engine.logfile import setup_logging

EXIT_OK, EXIT_BUG, EXIT_INPUT, EXIT_CANCELLED = 0, 1, 2, 130
# engine.training.OBJECTIVES' names, spelled out: importing the training package for every
# command would slow `duplens info`; a test keeps the two lists the same.
OBJECTIVE_NAMES = ("softmax", "cosine", "triplet", "contrastive", "mnrl")
log = logging.getLogger("duplens")


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line naming the command, and exit status 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_INPUT, f"{self.prog}: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="duplens", description="Find duplicate questions and near-duplicate "
                     "documents with Sentence-BERT. With no command, opens the window.")
    parser.add_argument("--version", action="version", version=f"duplens {__version__}")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)

    def model_options(p: argparse.ArgumentParser) -> None:
        p.add_argument("--model", help="sentence-transformers folder or hub name "
                       "(default: the bundled all-MiniLM-L6-v2)")
        p.add_argument("--device", default="auto", help="auto (CUDA, then MPS, then CPU), "
                       "cpu, cuda or mps")
        p.add_argument("--batch-size", type=int, default=64)
        backend_option(p)

    def backend_option(p: argparse.ArgumentParser) -> None:
        p.add_argument("--backend", choices=list(BACKENDS), help="how the model runs: torch, "
                       "or on the CPU onnx / openvino (same embeddings, faster) or their int8 "
                       "forms (different embeddings: the project is encoded again); openvino "
                       "needs duplens[openvino] (default: what the project uses)")

    p = sub.add_parser("import", help="import a spreadsheet into a project (created if new), "
                       "then encode and index the new rows")
    p.add_argument("project")
    p.add_argument("file")
    p.add_argument("--column", action="append", required=True, dest="columns",
                   help="text column; repeat to join several")
    p.add_argument("--id-column")
    p.add_argument("--sheet", help="XLSX sheet (default: the first)")
    p.add_argument("--encoding", help="force a text encoding, e.g. cp1252")
    p.add_argument("--delimiter", help="force a delimiter, e.g. ';' or '\\t'")
    p.add_argument("--quoting", choices=("auto", "on", "off"), default="auto",
                   help="whether '\"' quotes fields in CSV/TSV (auto: detected)")
    p.add_argument("--no-encode", action="store_true", help="store the rows only")
    model_options(p)

    p = sub.add_parser("encode", help="encode and index what is not yet (resumes a stopped "
                       "import)")
    p.add_argument("project")
    model_options(p)

    p = sub.add_parser("search", help="the most similar existing entries to a text")
    p.add_argument("project")
    p.add_argument("text")
    p.add_argument("-k", type=int, default=10)
    p.add_argument("--json", action="store_true")
    p.add_argument("--device", default="auto")
    backend_option(p)

    p = sub.add_parser("duplicates", help="duplicate clusters at a similarity threshold")
    p.add_argument("project")
    p.add_argument("--threshold", type=float, default=0.85)
    p.add_argument("--neighbours", type=int, default=10,
                   help="neighbours searched per entry (the most a cluster can gather "
                        "around one centre)")
    p.add_argument("--out", help="write the clusters to a .csv or .xlsx file")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("info", help="what a project holds")
    p.add_argument("project")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("eval", help="measure a model on labelled data")
    ev = p.add_subparsers(dest="eval_kind", required=True, parser_class=_Parser)
    e = ev.add_parser("sts", help="Spearman x100 of cosine similarity vs gold scores "
                      "(columns: score, sentence1, sentence2)")
    e.add_argument("file")
    e.add_argument("--columns", nargs=3, metavar=("SCORE", "TEXT1", "TEXT2"))
    e.add_argument("--json", action="store_true")
    model_options(e)
    e = ev.add_parser("pairs", help="average precision and best F1 on duplicate labels "
                      "(columns: question1, question2, is_duplicate)")
    e.add_argument("file")
    e.add_argument("--columns", nargs=3, metavar=("TEXT1", "TEXT2", "LABEL"))
    e.add_argument("--json", action="store_true")
    model_options(e)

    p = sub.add_parser("finetune", help="train the project's active model on its labelled "
                       "pairs and save the result as a new model version (not activated)")
    p.add_argument("project")
    p.add_argument("--pairs", metavar="FILE", help="labelled pairs to add to those marked in "
                   "review (question1, question2, is_duplicate; sentence1, sentence2, score; "
                   "or anchor, positive, negative)")
    p.add_argument("--loss", choices=OBJECTIVE_NAMES, help="training objective (default: the "
                   "recommended one; the output names it)")
    p.add_argument("--epochs", type=_positive, default=1)
    p.add_argument("--batch-size", type=_positive, default=16)
    p.add_argument("--max-steps", type=_positive, help="stop after this many steps")
    p.add_argument("--held-out", type=_fraction, default=0.5, metavar="F",
                   help="share of the pairs measured before and after, never trained on "
                        "(default 0.5)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--activate", action="store_true", help="make the new version the active "
                   "model (re-encodes every text with it)")
    p.add_argument("--device", default="auto")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("models", help="the project's model versions; activate or export one")
    p.add_argument("project")
    p.add_argument("--activate", type=int, metavar="VERSION",
                   help="serve search with this version (encodes what it has not yet)")
    p.add_argument("--export", nargs=2, metavar=("VERSION", "FOLDER"),
                   help="copy a version to a new folder sentence-transformers loads")
    p.add_argument("--device", default="auto")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("gui", help="open the window")
    p.add_argument("project", nargs="?")

    p = sub.add_parser("selfcheck", help="check this installation: load the model, import, "
                       "search, export and open the window on a small sample")
    p.add_argument("--device", default="auto")
    p.add_argument("--no-window", action="store_true", help="skip the window check")
    return parser


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _fraction(text: str) -> float:
    value = float(text)
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, not {value:g}")
    return value


# -- commands ------------------------------------------------------------------------------
def _open(path: str, *, create: bool = False):
    from engine.project import Project

    p = Path(path)
    read_only = p.exists() and not create and not _writable(p)
    return Project.open(p, create=create, read_only=read_only)


def _writable(path: Path) -> bool:
    import os

    return os.access(path, os.W_OK) and os.access(path.parent.resolve(), os.W_OK)


class _StageBars:
    """tqdm bars for fine-tuning and activation, one stage after another.

    Unlike `TqdmProgress`, a stage's bar is closed when the next stage starts, so a run of
    five stages reads as five finished lines; training counts steps and shows the loss.
    """

    _UNITS = {"training": " steps", "loading model": " models", "saving": " models"}

    def __init__(self) -> None:
        self._stage: str | None = None
        self._bar = None

    def __call__(self, p) -> None:
        from tqdm import tqdm

        if p.stage != self._stage:
            self.close()
            self._stage = p.stage
            self._bar = tqdm(total=p.total or None, desc=p.stage,
                             unit=self._UNITS.get(p.stage, " texts"), file=sys.stderr,
                             dynamic_ncols=True, mininterval=0.25)
        if p.total and self._bar.total != p.total:
            self._bar.total = p.total
        if p.message:
            self._bar.set_postfix_str(p.message, refresh=False)
        self._bar.update(p.done - self._bar.n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
        self._bar, self._stage = None, None


def _say(message: str) -> None:
    print(message, file=sys.stderr)


def cmd_import(args, cancel: CancelToken) -> int:
    from engine.encoding.models import resolve_model
    from engine.progress_bar import TqdmProgress

    if args.model is not None and not args.no_encode:
        resolve_model(args.model)  # a wrong model is reported before the project is touched
    if args.backend is not None and not args.no_encode:
        require_backend(args.backend)  # so is a backend whose packages are missing
    with _open(args.project, create=True) as project:
        bar = TqdmProgress()
        try:
            report = project.import_table(
                args.file, args.columns, id_column=args.id_column, sheet=args.sheet,
                encoding=args.encoding, delimiter=_unescape(args.delimiter),
                quoting={"auto": None, "on": True, "off": False}[args.quoting], progress=bar,
                cancel=cancel)
        except Cancelled:
            bar.close()
            _say(f"{Path(args.file).name}: import stopped; nothing from this file was added")
            return EXIT_CANCELLED
        bar.close()
        if report.already_imported:
            _say(f"{report.file_name}: already imported with these columns; nothing added")
        else:
            fmt = report.format
            how = ", ".join(x for x in (fmt.kind, fmt.encoding, fmt.sheet and f"sheet "
                                        f"{fmt.sheet!r}") if x)
            _say(f"{report.file_name} ({how}): {report.rows_imported} rows imported, "
                 f"{report.rows_empty} empty skipped, {report.exact_duplicates} exact "
                 f"duplicates of earlier rows")
            if report.bad_lines:
                shown = ", ".join(map(str, report.bad_lines[:10]))
                more = " …" if len(report.bad_lines) > 10 else ""
                _say(f"{report.file_name}: skipped {len(report.bad_lines)} malformed lines "
                     f"({shown}{more})")
        if args.no_encode:
            return EXIT_OK
        return _encode(project, args, cancel)


def cmd_encode(args, cancel: CancelToken) -> int:
    with _open(args.project) as project:
        return _encode(project, args, cancel)


def _encode(project, args, cancel: CancelToken) -> int:
    from engine.progress_bar import TqdmProgress

    active = project.active_model()
    wanted_default = args.model is None and active is None
    backend = args.backend
    if backend is None and active is not None and args.model is None:
        backend = backend_for_row(active["fingerprint"], None).name  # the project's own
    if args.model is not None or wanted_default or args.device != "auto" or args.backend:
        model = args.model if args.model is not None else (
            project.model_source(active["location"]) if active else None)
        project.use_model(model, device=args.device, batch_size=args.batch_size,
                          backend=backend)
    project.batch_size = args.batch_size
    bar = TqdmProgress()
    report = project.encode(progress=bar, cancel=cancel)
    bar.close()
    for notice in project.notices:
        _say(notice)
    if report.truncated:
        _say(f"{report.truncated} texts are longer than the model reads; they were encoded from"
             f" their beginning and are stored whole")
    if report.cancelled:
        _say(f"stopped: {report.encoded} texts encoded and kept, {report.remaining} left; "
             f"run 'duplens encode {args.project}' to finish")
        return EXIT_CANCELLED
    info = project.info()
    _say(f"{info['items']} items, {info['encoded']} texts encoded with {info['model']} on "
         f"{info['device']}")
    return EXIT_OK


def cmd_search(args, _cancel: CancelToken) -> int:
    with _open(args.project) as project:
        project.device_preference = args.device
        active = project.active_model()
        if args.backend and active is not None:
            # The query must match the stored embeddings: an int8 backend cannot serve a
            # project encoded with torch (and the reverse); an exact one can.
            project.backend_preference = backend_for_row(active["fingerprint"],
                                                         args.backend).name
        hits = project.search(args.text, args.k)
        for notice in project.notices:
            _say(notice)
    if args.json:
        print(json.dumps([h.as_json() for h in hits], ensure_ascii=False, indent=1))
    else:
        for h in hits:
            copies = f" (+{h.copies - 1} identical)" if h.copies > 1 else ""
            print(f"{h.score:.3f}  [{h.id}]  {_one_line(h.text)}{copies}")
    return EXIT_OK


def cmd_duplicates(args, cancel: CancelToken) -> int:
    from engine.progress_bar import TqdmProgress

    with _open(args.project) as project:
        bar = TqdmProgress()
        try:
            clusters = project.duplicates(args.threshold, args.neighbours, progress=bar,
                                          cancel=cancel)
        except Cancelled:
            bar.close()
            _say("stopped")
            return EXIT_CANCELLED
        bar.close()
        for notice in project.notices:
            _say(notice)
        if args.out:
            n = project.export_clusters(args.out, clusters)
            _say(f"{len(clusters)} clusters, {n} rows written to {args.out}")
    if args.json:
        print(json.dumps([c.as_json() for c in clusters], ensure_ascii=False, indent=1))
    elif not args.out:
        for c in clusters:
            print(f"cluster {c.cluster_id} ({len(c.members)} rows)")
            for m in c.members:
                print(f"  {m.score:.3f}  [{m.id}]  {_one_line(m.text)}")
    return EXIT_OK


def cmd_info(args, _cancel: CancelToken) -> int:
    with _open(args.project) as project:
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


def cmd_eval(args, _cancel: CancelToken) -> int:
    from engine.encoding.loading import load_encoder
    from engine.evaluation import PAIR_COLUMNS, STS_COLUMNS, evaluate_pairs, evaluate_sts

    encoder = load_encoder(args.model, device=args.device, batch_size=args.batch_size,
                           backend=args.backend)
    spec = encoder.spec
    if args.eval_kind == "sts":
        result = evaluate_sts(encoder, args.file, tuple(args.columns or STS_COLUMNS))
        line = f"Spearman x100: {result['spearman']:.2f} ({result['pairs']} pairs, {spec.name})"
    else:
        result = evaluate_pairs(encoder, args.file, tuple(args.columns or PAIR_COLUMNS))
        line = (f"average precision: {result['average_precision']:.2f}  best F1: "
                f"{result['f1']:.2f} at cosine {result['threshold']:.4f} "
                f"({result['pairs']} pairs, {spec.name})")
    print(json.dumps(result) if args.json else line)
    return EXIT_OK


def cmd_finetune(args, cancel: CancelToken) -> int:
    from engine.training.finetune import TrainingOptions

    options = TrainingOptions(batch_size=args.batch_size, epochs=args.epochs,
                              max_steps=args.max_steps, seed=args.seed)
    with _open(args.project) as project:
        project.device_preference = args.device
        bar = _StageBars()
        try:
            report = project.finetune(args.loss, extra_file=args.pairs, options=options,
                                      held_out=args.held_out, seed=args.seed, progress=bar,
                                      cancel=cancel)
        except Cancelled:
            bar.close()
            _say("stopped: nothing was saved; the active model is unchanged")
            return EXIT_CANCELLED
        bar.close()
        for note in report.notes:
            _say(note)
        activation = _activate(project, report.version_id, cancel) if args.activate else None
    result = report.as_json()
    result["activation"] = activation.as_json() if activation else None
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=1))
    else:
        _print_finetune(args.project, report, activation)
    if activation is not None and activation.cancelled:
        _say(f"stopped: version {report.version_id} is saved but not active; what was encoded "
             f"is kept: run 'duplens models {args.project} --activate {report.version_id}' to "
             f"finish")
        return EXIT_CANCELLED
    return EXIT_OK


def _print_finetune(project_arg: str, report, activation) -> None:
    split = report.split
    parent = f"v{report.parent_id}" if report.parent_id is not None else "base"
    print(f"version {report.version_id} ({report.name}): {report.objective} on "
          f"{len(split.train)} pairs, measured on {len(split.held_out)} held-out pairs")
    print(f"{'':16}{'AP':>8}{'best F1':>10}{'threshold':>11}")
    for label, m in ((f"before ({parent})", report.before),
                     (f"after (v{report.version_id})", report.after)):
        print(f"{label:16}{m.average_precision:8.2f}{m.f1:10.2f}{m.threshold:11.4f}")
    print(f"held-out verdicts changed: {report.changes_fixed} now right, "
          f"{report.changes_broken} now wrong")
    if activation is not None and activation.activated:
        print(f"saved in {report.location} and active ({activation.encoded} texts encoded)")
    else:
        print(f"saved in {report.location}; not active: run 'duplens models {project_arg} "
              f"--activate {report.version_id}' to use it")


def cmd_models(args, cancel: CancelToken) -> int:
    with _open(args.project) as project:
        project.device_preference = args.device
        if args.activate is not None:
            report = _activate(project, args.activate, cancel)
            if report.cancelled:
                _say(f"stopped: version {args.activate} is not active; {report.encoded} texts "
                     f"encoded and kept, {report.remaining} left; run the same command to "
                     f"finish")
                return EXIT_CANCELLED
            done = ("already active" if report.already_active else
                    f"active ({report.encoded} texts encoded, {report.seconds:.1f} s)")
            _say(f"version {args.activate}: {done}")
        if args.export is not None:
            version, folder = args.export
            if not version.isdigit():
                raise InputError(f"--export: VERSION must be a version number, not {version!r}")
            out = project.export_model(int(version), folder)
            _say(f"version {version} exported to {out}")
        versions = project.model_versions()
    if args.json:
        print(json.dumps(versions, ensure_ascii=False, indent=1))
    else:
        _print_versions(versions)
    return EXIT_OK


def _activate(project, version_id: int, cancel: CancelToken):
    bar = _StageBars()
    try:
        return project.activate_model(version_id, progress=bar, cancel=cancel)
    finally:
        bar.close()


def _print_versions(versions: list[dict]) -> None:
    import datetime

    print(f"  {'id':>3}  {'name':28}  {'objective':11}  {'AP before->after':17}  "
          f"{'encoded':>13}  created")
    for v in versions:
        metrics = v["metrics"] or {}
        ap = ""
        if "before" in metrics and "after" in metrics:
            ap = (f"{metrics['before']['average_precision']:.1f} -> "
                  f"{metrics['after']['average_precision']:.1f}")
        created = datetime.datetime.fromtimestamp(v["created_at"]).strftime("%Y-%m-%d %H:%M")
        mark = "*" if v["active"] else " "
        missing = "" if v["available"] else "  (folder missing)"
        print(f"{mark} {v['id']:>3}  {_one_line(v['name'], 28):28}  "
              f"{v['objective'] or '-':11}  {ap:17}  {v['encoded']:>6}/{v['texts']:<6}  "
              f"{created}{missing}")


def cmd_selfcheck(args, _cancel: CancelToken) -> int:
    from engine.selfcheck import main as selfcheck

    return selfcheck(args.device, None if args.no_window else args.check_window, print)


COMMANDS = {"import": cmd_import, "encode": cmd_encode, "search": cmd_search,
            "duplicates": cmd_duplicates, "info": cmd_info, "eval": cmd_eval,
            "finetune": cmd_finetune, "models": cmd_models, "selfcheck": cmd_selfcheck}


# -- plumbing ------------------------------------------------------------------------------
def _unescape(delimiter: str | None) -> str | None:
    return {"\\t": "\t", "tab": "\t"}.get(delimiter, delimiter) if delimiter else None


def _one_line(text: str, width: int = 100) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _install_interrupt(cancel: CancelToken) -> None:
    """First Ctrl-C asks the job to stop cleanly; a second one stops at once."""

    def handler(_signum, _frame) -> None:
        if cancel.cancelled:
            raise KeyboardInterrupt
        cancel.cancel()
        _say("\nstopping after the current batch (Ctrl-C again to abort)…")

    signal.signal(signal.SIGINT, handler)


def main(argv: Sequence[str] | None = None,
         open_window: Callable[[str | None], int] | None = None,
         check_window: Callable[..., None] | None = None) -> int:
    """Run one command. The window (and the self-check's window step) are injected by the
    launcher (`desktop_app.launcher`), so the engine never imports the GUI and
    `python -m engine.cli` works without Qt."""
    args = build_parser().parse_args(argv)
    args.check_window = check_window
    if args.command in (None, "gui"):
        if open_window is None:
            _say("duplens: this command line has no window; run the 'duplens' launcher")
            return EXIT_INPUT
        return open_window(getattr(args, "project", None))
    log_path = setup_logging()
    cancel = CancelToken()
    _install_interrupt(cancel)
    try:
        return COMMANDS[args.command](args, cancel)
    except DuplensError as exc:
        log.info("input error: %s", exc)
        _say(f"duplens: {exc}")
        return EXIT_INPUT
    except KeyboardInterrupt:
        _say("duplens: aborted")
        return EXIT_CANCELLED
    except Exception:  # noqa: BLE001 - the last line of defence: log it, say where
        log.error("unexpected error in %s\n%s", args.command, traceback.format_exc())
        where = f"; details in {log_path}" if log_path else ""
        _say(f"duplens: unexpected error ({sys.exc_info()[1]!r}){where}")
        return EXIT_BUG


if __name__ == "__main__":
    sys.exit(main())

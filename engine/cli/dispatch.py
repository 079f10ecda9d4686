"""Parsing a `duplens` command line and running it with the promised exit status.

Exit status: 0 done, 2 bad input or usage (one line on stderr), 1 a bug (details in the log
file named on stderr), 130 stopped by Ctrl-C after keeping what was done, 141 the reader
of the output went away (a pipe into `head`). Each command
lives in a module of its own that adds its parser (`register`) and its `run` function.

Parsing imports the command modules, so they import only the standard library and light
engine modules at their top; what a command needs (pandas, the project, torch) is imported
inside its run function. `duplens --help` then answers without loading any of it, and
`duplens info` loads only the store (tests/engine/cli/test_cli_imports.py guards this).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import traceback
from collections.abc import Callable, Sequence

from engine.cli import (
    ask,
    copy,
    duplicates,
    estimate,
    evaluate,
    finetune,
    importing,
    imports,
    info,
    label,
    match,
    models,
    search,
    selfcheck,
    threshold,
)
from engine.cli.common import (
    EXIT_BROKEN_PIPE,
    EXIT_BUG,
    EXIT_CANCELLED,
    EXIT_INPUT,
    TRUST_FLAG,
    Parser,
    say,
)
from engine.cli.stoppable import Stopped
from engine.errors import DuplensError, UntrustedModelLocation, user_error
from engine.logfile import setup_logging
from engine.progress import CancelToken

log = logging.getLogger("duplens")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="duplens", description="Find duplicate questions and near-duplicate "
                    "documents with Sentence-BERT. With no command, opens the window.")
    parser.add_argument("--version", action=_Version, nargs=0,
                        help="show the version number and exit")
    sub = parser.add_subparsers(dest="command", parser_class=Parser)
    for command in (importing, search, match, duplicates, info, imports, evaluate, finetune,
                    models, ask, label, estimate, threshold, copy):
        command.register(sub)
    p = sub.add_parser("gui", help="open the window")
    p.add_argument("project", nargs="?", help="a project to open")
    selfcheck.register(sub)
    return parser


class _Version(argparse.Action):
    """--version, with the version looked up only when asked for (`engine.__version__`)."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        from engine import __version__

        print(f"duplens {__version__}")  # on stdout, as argparse's own version action
        parser.exit()


def _install_interrupt(cancel: CancelToken) -> None:
    """First Ctrl-C asks the job to stop cleanly; a second one stops at once."""

    def handler(_signum, _frame) -> None:
        if cancel.cancelled:
            raise KeyboardInterrupt
        cancel.cancel()
        say("\nstopping after the current batch (Ctrl-C again to abort)…")

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
            say("duplens: this command line has no window; run the 'duplens' launcher")
            return EXIT_INPUT
        return open_window(getattr(args, "project", None))
    log_path = setup_logging()
    cancel = CancelToken()
    _install_interrupt(cancel)
    try:
        return _run(args, cancel)
    except Stopped as stopped:
        say(str(stopped))
        return EXIT_CANCELLED
    except UntrustedModelLocation as exc:
        log.info("input error: %s", exc)
        say(f"duplens: {exc} (run again with {TRUST_FLAG} to load it)")
        return EXIT_INPUT
    except DuplensError as exc:
        log.info("input error: %s", exc)
        say(f"duplens: {exc}")
        return EXIT_INPUT
    except KeyboardInterrupt:
        say("duplens: aborted")
        return EXIT_CANCELLED
    except BrokenPipeError:
        # The reader went away (`duplens match --json | head`): nothing is wrong and nobody
        # is left to tell; end as a tool killed by SIGPIPE would, without Python's second
        # complaint when it flushes stdout at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except Exception as exc:  # noqa: BLE001 - the last line of defence: log it, say where
        mapped = user_error(exc, getattr(args, "project", None))
        if mapped is not None:  # a full disk or a busy project, reached below the store
            log.info("input error: %s\n%s", mapped, traceback.format_exc())
            say(f"duplens: {mapped}")
            return EXIT_INPUT
        log.error("unexpected error in %s\n%s", args.command, traceback.format_exc())
        where = f"; details in {log_path}" if log_path else ""
        say(f"duplens: unexpected error ({sys.exc_info()[1]!r}){where}")
        return EXIT_BUG


def _run(args: argparse.Namespace, cancel: CancelToken) -> int:
    """The command, with any progress bar it left open closed, so an error line that follows
    starts a line of its own."""
    try:
        return args.run(args, cancel)
    finally:
        if "tqdm" in sys.modules:  # no bar can be open where tqdm was never imported
            from engine.progress_bar import close_open_bars

            close_open_bars()

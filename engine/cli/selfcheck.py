"""`duplens selfcheck`: prove this installation works, end to end, on a small sample."""

from __future__ import annotations

from engine.cli.common import device_option
from engine.progress import CancelToken


def register(sub) -> None:
    p = sub.add_parser("selfcheck", help="check this installation: load the model, import, "
                       "search, export and open the window on a small sample")
    device_option(p)
    p.add_argument("--no-window", action="store_true", help="skip the window check")
    p.set_defaults(run=cmd_selfcheck)


def cmd_selfcheck(args, _cancel: CancelToken) -> int:
    from engine.install_check import main as selfcheck

    return selfcheck(args.device, None if args.no_window else args.check_window, print)

"""Keeping a bug in one slot from taking the window down.

PySide prints an exception raised in a slot and carries on, but the user sees nothing and
the log gets nothing. `guarded` slots catch, log with the traceback and hand the error to
the widget's `show_error(message, details)`, so it reaches a dialog instead.
"""

from __future__ import annotations

import functools
import inspect
import logging
import sys
import traceback
from collections.abc import Callable
from types import TracebackType
from typing import Any, TypeVar

from desktop_app.job_runner import UNEXPECTED

log = logging.getLogger("duplens.gui")

F = TypeVar("F", bound=Callable[..., Any])


def _positional_limit(fn: Callable[..., Any]) -> int | None:
    """How many positional arguments after `self` `fn` takes (None: any number)."""
    params = list(inspect.signature(fn).parameters.values())[1:]
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return None
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)


def guarded(method: F) -> F:
    """Decorate a slot method: exceptions are logged and shown, never raised into Qt.

    Extra signal arguments are dropped (e.g. `clicked(bool)` into a method taking none),
    as Qt does for C++ slots.
    """
    limit = _positional_limit(method)

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *(args if limit is None else args[:limit]), **kwargs)
        except Exception:  # noqa: BLE001 - the last line of defence for this slot
            details = traceback.format_exc()
            log.error("unexpected error in %s\n%s", method.__qualname__, details)
            try:
                self.show_error(UNEXPECTED, details)
            except Exception:  # noqa: BLE001 - reporting must not raise either
                log.exception("could not show the error")
            return None

    return wrapper  # type: ignore[return-value]


def install_excepthook(report: Callable[[str, str], None]) -> None:
    """Route exceptions no `guarded` slot caught (Qt calls sys.excepthook) to `report`."""

    def hook(kind: type[BaseException], value: BaseException,
             tb: TracebackType | None) -> None:
        details = "".join(traceback.format_exception(kind, value, tb))
        log.error("unhandled exception\n%s", details)
        if issubclass(kind, KeyboardInterrupt):
            sys.__excepthook__(kind, value, tb)
            return
        try:
            report(UNEXPECTED, details)
        except Exception:  # noqa: BLE001
            sys.__excepthook__(kind, value, tb)

    sys.excepthook = hook

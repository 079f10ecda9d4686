"""What a test needs that a machine may lack: the test skips, saying why, and fails instead
where `DUPLENS_REQUIRE_<WHAT>=1` says it must run (CI sets each, `.ci/run`):

    MOUNTS        root, to mount: the small disks of the full-disk tests, a private
                  /etc/resolv.conf for the privacy trace's DNS test
    UNPRIVILEGED  a user who is not root (read-only files and folders; CI runs these
                  tests, marked `unprivileged`, a second time as such a user)
    OPENVINO      the openvino extra (telemetry opt-out, its backend under strace)
    BENCH         the bench extra (matplotlib draws the benchmark report's plots)
    POSTGRES      a PostgreSQL server (tests/conftest.py `postgres_server`)
    STRACE        strace (tests/test_privacy.py)
    XVFB          Xvfb and Qt's X11 libraries (a dialog on a real X server, without a
                  window manager: tests/desktop_app/test_match_window.py)
"""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def required(what: str) -> bool:
    return os.environ.get(f"DUPLENS_REQUIRE_{what}") == "1"


def unavailable(what: str, why: str) -> NoReturn:
    """Skip for `why`, or fail when DUPLENS_REQUIRE_`what` is set: a missing package or
    tool must never count as a pass where the test is promised to run."""
    if required(what):
        pytest.fail(f"{why}; DUPLENS_REQUIRE_{what}=1 says this test must run here")
    # reported at the test's own line, as a skipif mark is, not at this helper's
    raise pytest.skip.Exception(why, _use_item_location=True)


def needs_unprivileged_user() -> None:
    """Call first in a test that root would pass for the wrong reason (root reads and writes
    read-only files)."""
    if os.name == "posix" and os.geteuid() == 0:
        unavailable("UNPRIVILEGED", "root can read and write any file")

"""Duplens engine: import, encode, index, search and cluster near-duplicate texts.

Qt-free on purpose: the desktop app, the CLI and tests all drive the same `Project` API.
"""

# First, before any dependency is imported: no telemetry, the Hub offline (engine.offline).
from engine import offline  # noqa: F401, I001 - must come first


def __getattr__(name: str) -> str:
    """`engine.__version__`, looked up on first use: importing importlib.metadata and
    scanning the installed packages costs tens of milliseconds that `duplens --help` and
    `duplens info` would otherwise pay on every call."""
    if name != "__version__":
        raise AttributeError(f"module 'engine' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("duplens")
    except PackageNotFoundError:  # running from a source tree that was not installed
        found = "0.0.0+source"
    globals()["__version__"] = found
    return found

"""Duplens engine: import, encode, index, search and cluster near-duplicate texts.

Qt-free on purpose: the desktop app, the CLI and tests all drive the same `Project` API.
"""

# First, before any dependency is imported: no telemetry, the Hub offline (engine.offline).
from engine import offline  # noqa: F401, I001 - must come first

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("duplens")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.0.0+source"

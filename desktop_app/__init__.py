"""The Duplens desktop window (PySide6).

Only `bridge.py` talks to the engine; everything else is widgets and Qt models fed by the
bridge's signals, so the engine stays Qt-free and the window never blocks on engine work.
"""

# Before PySide6 or anything else: no telemetry, the Hub offline (see engine.offline).
from engine import offline  # noqa: F401

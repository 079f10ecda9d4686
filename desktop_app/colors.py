"""The colours of the window's own messages, in one place (as Picard's `ui/colors.py`).

Each reads on both the light and the dark palette (checked in docs/screenshots' dark-theme
shots); widgets take them as style sheets, so a palette change needs no code.
"""

from __future__ import annotations

ERROR = "#b3261e"     # a message that something did not work
WARNING = "#9c5700"   # advice the user may want to act on
GOOD = "#2b8a3e"      # a job that finished as hoped

ERROR_STYLE = f"color: {ERROR};"
WARNING_STYLE = f"color: {WARNING};"
GOOD_STYLE = f"color: {GOOD};"
NOTE_STYLE = "color: palette(placeholder-text);"   # secondary text, from the palette

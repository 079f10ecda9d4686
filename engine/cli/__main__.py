"""`python -m engine.cli`: the command line without the window (no Qt is imported)."""

import sys

from engine.cli.dispatch import main

if __name__ == "__main__":
    sys.exit(main())

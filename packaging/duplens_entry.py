"""PyInstaller's entry point for the frozen Duplens: the `duplens` console script's `main`.

A file of its own because PyInstaller freezes a script, not an entry point. freeze_support()
lets a frozen child process (multiprocessing's spawn, used by data loading on Windows and
macOS) run its task instead of starting a second Duplens.
"""

import multiprocessing
import sys

if __name__ == "__main__":
    multiprocessing.freeze_support()
    from desktop_app.launcher import main

    sys.exit(main())

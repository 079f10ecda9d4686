"""The `duplens` command line: the same Project API the window uses, for scripts and servers.

`main` parses and dispatches (`engine.cli.dispatch`); each command is a module here that adds
its own parser and run function, so a new command is a new module.
"""

from engine.cli.common import EXIT_BUG, EXIT_CANCELLED, EXIT_INPUT, EXIT_OK
from engine.cli.dispatch import build_parser, main
from engine.cli.finetune import OBJECTIVE_NAMES

__all__ = ["EXIT_BUG", "EXIT_CANCELLED", "EXIT_INPUT", "EXIT_OK", "OBJECTIVE_NAMES",
           "build_parser", "main"]

"""The command's exit codes (``EXIT_*``) and ``CliError``, the exception that ends a command
with one line on stderr and one of those codes (``main`` in ``__init__.py`` prints it)."""

from __future__ import annotations

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_BUG",
    "EXIT_CALL_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_TOOL_ERROR",
    "EXIT_UNAVAILABLE",
    "CliError",
]

EXIT_OK = 0
EXIT_TOOL_ERROR = 1
EXIT_BAD_INPUT = 2  # also click's code for usage errors
EXIT_UNAVAILABLE = 3  # also a server that needs a login
EXIT_CALL_FAILED = 4  # also a login that failed
EXIT_BUG = 70  # BSD's EX_SOFTWARE: a traceback on stderr; never confused with a tool error
EXIT_INTERRUPTED = 130


class CliError(Exception):
    """Ends the command: ``message`` goes to stderr, ``exit_code`` is the process's."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code

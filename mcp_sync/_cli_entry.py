"""The ``mcp-client`` console script: the command itself (``_cli/``) needs the ``cli`` extra
(click for options and usage errors, rich for tables and progress). A plain ``pip install``
leaves them out, so this checks for them first and, when they cannot be imported, says which
extra to install (one line on stderr, exit code 2) instead of a traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

__all__ = ["EXTRA_MISSING", "main"]

EXTRA_MISSING = "mcp-client needs its optional dependencies: pip install 'mcp-sansio-client[cli]'"

# The command's "bad input" code (EXIT_BAD_INPUT in _cli/errors.py), not imported from there:
# that package is what cannot be imported here.
_EXIT_BAD_INPUT = 2


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``mcp-client`` with ``argv`` (default ``sys.argv[1:]``) and return its exit code."""
    try:
        import click  # noqa: F401
        import rich  # noqa: F401
    except ImportError:  # missing, or installed without its own dependencies: either way
        print(EXTRA_MISSING, file=sys.stderr)
        return _EXIT_BAD_INPUT
    from ._cli import main as run

    return run(argv)


if __name__ == "__main__":
    sys.exit(main())

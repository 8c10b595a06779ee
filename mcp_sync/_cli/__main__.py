"""``python -m mcp_sync._cli``: the command, as the ``mcp-client`` script runs it."""

import sys

from . import main

sys.exit(main())

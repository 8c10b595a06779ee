"""Reading ``.mcp.json`` files: the servers they name as ``Spec`` objects, and why any entry was
skipped.

``load_config(path_or_text)`` returns a ``LoadedConfig`` (``servers``, ``skipped``, ``source``)
that ``ClientGroup`` accepts as it is; a file that cannot be read, or is not JSON with a server
table, raises ``InvalidConfig``. ``load_config``, ``LoadedConfig`` and ``InvalidConfig`` are also
re-exported by ``mcp_core`` itself.
"""

from ._config.files import InvalidConfig, LoadedConfig, load_config

__all__ = ["InvalidConfig", "LoadedConfig", "load_config"]

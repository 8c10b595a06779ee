"""What a ``ClientGroup`` decides without I/O, for drivers that build one.

``plan_group`` reads a group's specs (a mapping of names to specs, or a loaded config) into the
clients to build and the servers refused with their reasons (a ``GroupPlan``); ``down_error``
turns a refused server's status into the error a call to it raises. ``ToolTable`` keeps the
group's namespaced tool names (``mcp__<server>__<tool>``) and routes a name back to its server;
``PromptTable`` does the same for prompts (``mcp__<server>__<prompt>``, the same rules; a
name no server lists is ``mcp_core.UnknownPrompt``, ``UnknownTool``'s twin); ``server_parts``
is the server part of those names for a set of servers; both are a ``NameTable`` of
``Named`` items (a ``Tool`` or a ``Prompt``). ``GroupSpecFields`` types the spec fields a group
takes as keywords, for the drivers' ``ClientOptions``.
"""

from ._config.spec import GroupSpecFields
from ._group.names import Named, NameTable, PromptTable, ToolTable, server_parts
from ._group.plan import GroupPlan, GroupSpecs, LoadedConfigLike, down_error, plan_group

__all__ = [
    "GroupPlan",
    "GroupSpecFields",
    "GroupSpecs",
    "LoadedConfigLike",
    "NameTable",
    "Named",
    "PromptTable",
    "ToolTable",
    "down_error",
    "plan_group",
    "server_parts",
]

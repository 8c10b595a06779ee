"""Checking a tool's ``structuredContent`` against its ``outputSchema``.

2025-06-18 server/tools §Output Schema: "Clients SHOULD validate structured results against
this schema." 2025-11-25 basic/index §JSON Schema Usage: schemas without ``$schema`` are JSON
Schema 2020-12, and clients "MUST handle unsupported dialects gracefully". 2026-07-28 (SEP-2106):
implementations "MUST NOT automatically dereference" a network ``$ref``.

The checker is the ``jsonschema`` package, imported the first time a tool with an output
schema answers (``import mcp_core`` never loads it). Each schema is compiled once per tool
list. What cannot be checked is let through with a warning, never turned into a failure: a
dialect the checker does not know, a schema that is itself invalid, a ``$ref`` it cannot
resolve without the network (the registry it gets has no retrieval at all; jsonschema's
default would fetch remote references).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._vocabulary.errors import OutputValidationError
from .._vocabulary.models import Tool

__all__ = ["OutputSchemas"]

# A compiled schema: checks a value, returns (path, problem) or None. None: not checkable.
_Check = Callable[[object], "tuple[str, str] | None"]


class OutputSchemas:
    """The compiled output schemas of one tool list."""

    __slots__ = ("_compiled", "_log")

    def __init__(self, log: Callable[[str, str], None]) -> None:
        self._log = log
        self._compiled: dict[str, _Check | None] = {}

    def reset(self) -> None:
        """The tool list changed: compile again when next needed."""
        self._compiled.clear()

    def check(self, tool: Tool, value: object) -> OutputValidationError | None:
        """Why ``value`` (a result's structured content) does not match ``tool``'s output
        schema, or None (it matches, the tool has none, or it cannot be checked)."""
        if tool.output_schema is None:
            return None
        if tool.name not in self._compiled:
            self._compiled[tool.name] = self._compile(tool)
        check = self._compiled[tool.name]
        if check is None:
            return None
        try:
            found = check(value)
        except Exception as exc:  # an unresolvable $ref, a checker limit: not the server's fault
            self._log("WARNING", f"could not check the output of tool {tool.name!r}: {exc!r:.200}")
            return None
        return None if found is None else OutputValidationError(tool.name, *found)

    def _compile(self, tool: Tool) -> _Check | None:
        import jsonschema
        import referencing
        import referencing.jsonschema

        schema: Any = tool.output_schema
        dialect = schema.get("$schema")
        known = dialect is None
        if isinstance(dialect, str):
            try:
                referencing.jsonschema.specification_with(dialect)
                known = True
            except referencing.jsonschema.UnknownDialect:  # not CannotDetermineSpecification
                pass
        if not known:
            self._log(
                "WARNING",
                f"tool {tool.name!r}: output schema dialect {str(dialect)[:80]!r} is not "
                "supported; its results are not checked",
            )
            return None
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        try:
            cls.check_schema(schema)
        except jsonschema.SchemaError as exc:
            self._log(
                "WARNING",
                f"tool {tool.name!r} has an invalid output schema ({exc.message[:120]}); "
                "its results are not checked",
            )
            return None
        except RecursionError:  # the checker recurses per level: a schema nested too deep
            self._log(
                "WARNING",
                f"tool {tool.name!r} has an output schema nested too deep to check; "
                "its results are not checked",
            )
            return None
        validator = cls(schema, registry=referencing.Registry())  # never fetches anything

        def check(value: object) -> tuple[str, str] | None:
            error = jsonschema.exceptions.best_match(validator.iter_errors(value))  # type: ignore[arg-type]
            return None if error is None else (error.json_path, error.message)

        return check

"""``Icon``: an image a server offers for itself, a tool, a resource, a resource template or a
prompt (MCP 2025-11-25 basic/index §Icons; 2026-07-28 puts the server's own in
``_meta["io.modelcontextprotocol/serverInfo"]``, which ``Status.server_info`` holds too).

Icons are data: this client never fetches or shows one. A host that renders them must follow
the specification's rules for doing so (2025-11-25 basic/index §Icons, security
considerations): take only ``https:`` and ``data:`` URIs and refuse any other scheme (no
``http:``, ``file:``, ``javascript:``), refuse redirects to another origin, send no
credentials or cookies with the fetch, prefer icons from the server's own origin, support
PNG and JPEG (SHOULD SVG and WebP), check the bytes against the ``mime_type`` claimed rather
than trust it, cap their size and frame count, and treat SVG as active content (scripts,
external references) that must be rendered sandboxed or not at all.

Parsing is tolerant: a list of icons never fails the tool, resource or prompt that carries it.
An entry that is not an object, has no ``src`` string, or has a known field of the wrong type
is dropped; a value of ``icons`` that is not a list gives no icons.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Icon", "icons_field", "icons_from_wire", "icons_to_wire"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Icon:
    """One icon, as the server described it: ``src`` (an ``https:`` or ``data:`` URI, as the
    server claims: check it before fetching), ``mime_type`` (``image/png``, ...), ``sizes``
    (``"48x48"``, ``"any"``, ...; None when not given) and ``theme`` (``"light"`` or
    ``"dark"``: the background it is made for; None when not given). See the module
    docstring for what a host that renders it must do."""

    src: str
    mime_type: str | None = None
    sizes: tuple[str, ...] | None = None
    theme: str | None = None

    @classmethod
    def from_wire(cls, wire: object) -> Icon | None:
        """One entry of an ``icons`` array, or None for one this client cannot read."""
        if not isinstance(wire, Mapping):
            return None
        src, mime_type, sizes, theme = (
            wire.get(key) for key in ("src", "mimeType", "sizes", "theme")
        )
        if (
            not isinstance(src, str)
            or not isinstance(mime_type, str | None)
            or not isinstance(theme, str | None)
            or not (
                sizes is None
                or (isinstance(sizes, list) and all(isinstance(size, str) for size in sizes))
            )
        ):
            return None
        return cls(
            src=src,
            mime_type=mime_type,
            sizes=None if sizes is None else tuple(sizes),
            theme=theme,
        )

    def to_wire(self) -> dict[str, Any]:
        """The icon as MCP JSON (2025-11-25 schema, ``Icon``): fields that are None left out."""
        wire: dict[str, Any] = {"src": self.src}
        if self.mime_type is not None:
            wire["mimeType"] = self.mime_type
        if self.sizes is not None:
            wire["sizes"] = list(self.sizes)
        if self.theme is not None:
            wire["theme"] = self.theme
        return wire


def icons_field() -> Any:
    """The ``icons`` field of a model: empty by default, and then left out of the actions a
    recording keeps (``mcp_core.replay``), so that recordings made before it stay the same."""
    return field(default=(), metadata={"added": True})


def icons_from_wire(wire: object) -> tuple[Icon, ...]:
    """The icons of an ``icons`` array this client can read (see the module docstring)."""
    if not isinstance(wire, list):
        return ()
    return tuple(icon for entry in wire if (icon := Icon.from_wire(entry)) is not None)


def icons_to_wire(icons: tuple[Icon, ...]) -> list[dict[str, Any]] | None:
    """``icons`` as an ``icons`` array, or None when there are none (the field is left out)."""
    return [icon.to_wire() for icon in icons] if icons else None

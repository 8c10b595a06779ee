"""The two drivers are twins: neither imports the other, and ``Client`` and
``ClientGroup`` offer the same public API in both, awaited in one and blocking in the other.

Imports are checked in a fresh interpreter each: what a module loads depends on what the test
process already imported."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from typing import Any

import pytest

import mcp_asyncio
import mcp_sync
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.timeout(60)


def _loaded_by(module: str) -> list[str]:
    """Every module a fresh interpreter has loaded after ``import <module>``."""
    code = f"import json, sys; import {module}; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    )
    return list(json.loads(out.stdout))


def _of(modules: list[str], *packages: str) -> list[str]:
    return [m for m in modules if m.split(".")[0] in packages]


def test_importing_the_anyio_driver_loads_nothing_of_the_blocking_one() -> None:
    loaded = _loaded_by("mcp_asyncio")
    assert "mcp_asyncio._client" in loaded  # the check sees what it should
    assert _of(loaded, "mcp_sync") == []


def test_importing_the_blocking_driver_loads_nothing_of_the_anyio_one() -> None:
    loaded = _loaded_by("mcp_sync")
    assert "mcp_sync._client" in loaded
    assert _of(loaded, "mcp_asyncio", "anyio", "sniffio", "trio") == []


def test_the_core_and_the_shared_io_load_no_driver() -> None:
    for module in ("mcp_core", "_mcp_io.http", "_mcp_io.otel", "_mcp_io.client", "_mcp_io.oauth"):
        assert _of(_loaded_by(module), "mcp_asyncio", "mcp_sync", "anyio") == [], module


# --- the same API ----------------------------------------------------------------------------

# The only names allowed to differ: the async and the blocking spelling of a context manager
# (compared under the blocking spelling).
SPELLINGS = {
    "__aenter__": "__enter__",
    "__aexit__": "__exit__",
    "__enter__": "__enter__",
    "__exit__": "__exit__",
}
# Public methods of object that every class has, and the constructor compared on its own.
INHERITED = {name for name in dir(object) if name != "__init__"}


def _api(cls: type) -> dict[str, Any]:
    """The public surface of ``cls``: name -> what it is (a property, or a method's
    parameters as names, kinds and defaults). Annotations are left out: a handler type names
    its own driver's types. Whether a method is a coroutine function is left out too: that is
    the difference between the twins."""
    surface: dict[str, Any] = {}
    for name, member in inspect.getmembers(cls):
        if name in INHERITED or (name.startswith("_") and name not in (*SPELLINGS, "__init__")):
            continue
        if isinstance(inspect.getattr_static(cls, name), property):
            what: Any = "property"
        elif callable(member):
            parameters = inspect.signature(member).parameters.values()
            what = [(p.name, p.kind.name, p.default) for p in parameters]
        else:
            what = repr(member)
        surface[SPELLINGS.get(name, name)] = what
    return surface


@pytest.mark.parametrize("name", ["Client", "ClientGroup"])
def test_both_drivers_offer_the_same_api(name: str) -> None:
    anyio_side, blocking_side = getattr(mcp_asyncio, name), getattr(mcp_sync, name)
    assert _api(anyio_side) == _api(blocking_side)
    # And the difference that is meant: awaited on one side, blocking on the other.
    awaited = {
        SPELLINGS.get(method, method)
        for method, _ in inspect.getmembers(anyio_side, inspect.iscoroutinefunction)
        if not method.startswith("_") or method in SPELLINGS
    }
    assert awaited  # start, stop, __aenter__, ... are awaited
    for method in awaited:
        assert not inspect.iscoroutinefunction(getattr(blocking_side, method)), method


def test_the_drivers_export_the_same_names() -> None:
    assert sorted(mcp_asyncio.__all__) == sorted(mcp_sync.__all__)

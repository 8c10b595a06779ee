"""The two drivers are twins: neither imports the other, and ``Client`` and
``ClientGroup`` offer the same public API in both, awaited in one and blocking in the other.
Those two are written once: mcp_sync's are generated from mcp_asyncio's by
scripts/unasync.py, and every other module of either driver is either that or says at its top
why it is written twice.

Imports are checked in a fresh interpreter each: what a module loads depends on what the test
process already imported."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import mcp_asyncio
import mcp_sync
from scripts import unasync
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


# --- written once ----------------------------------------------------------------------------


def test_the_blocking_shells_are_generated_from_the_anyio_ones() -> None:
    # A hand edit of mcp_sync/_client.py or _group.py, or an edit of their mcp_asyncio source
    # without running the script, fails here.
    done = subprocess.run(
        [sys.executable, "scripts/unasync.py", "--check"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout == done.stderr == ""


def test_the_generator_refuses_a_source_its_rules_no_longer_fit() -> None:
    source = (Path(REPO_ROOT) / "mcp_asyncio" / "_client.py").read_text(encoding="utf-8")
    assert "blocking" in unasync.unasync("_client.py", source)
    # A driver-specific passage edited in the source without its entry in PHRASES.
    reworded = source.replace("and so is one still\n", "and so is one\n")
    with pytest.raises(unasync.Drift, match="no longer holds the passage"):
        unasync.unasync("_client.py", reworded)
    # An anyio word that no rule turns into the blocking driver's.
    leftover = source.replace("Ask the server whether", "Ask the server (shielded) whether")
    with pytest.raises(unasync.Drift, match="'shielded' is left in the blocking twin"):
        unasync.unasync("_client.py", leftover)
    with pytest.raises(unasync.Drift, match="its first line must be"):
        unasync.unasync("_client.py", source.split("\n", 1)[1])


def _first_line(path: Path) -> str:
    return path.read_text(encoding="utf-8").split("\n", 1)[0]


@pytest.mark.parametrize("package", ["mcp_asyncio", "mcp_sync"])
def test_every_module_of_a_driver_is_written_once_or_says_why_it_is_written_twice(
    package: str,
) -> None:
    twin = {"mcp_asyncio": "mcp_sync", "mcp_sync": "mcp_asyncio"}[package]
    folder = Path(REPO_ROOT) / package
    kinds: dict[str, str] = {}
    for path in sorted(folder.glob("_*.py")):
        if path.name in ("__init__.py", "_cli_entry.py"):
            continue  # the package's exports; the mcp-client command's entry point
        first = _first_line(path)
        if first == unasync.SOURCE_HEADER.format(name=path.name):
            kinds[path.name] = "source"
        elif first.startswith(f"# Generated from mcp_asyncio/{path.name} by scripts/unasync.py"):
            kinds[path.name] = "generated"
        elif first.startswith(f"# Written twice, by hand ({twin}/{path.name} is its twin)"):
            assert (Path(REPO_ROOT) / twin / path.name).exists(), path.name
            kinds[path.name] = "twice"
        else:
            kinds[path.name] = f"unexplained: {first}"
    written_once = "source" if package == "mcp_asyncio" else "generated"
    assert kinds == {
        "_client.py": written_once,
        "_group.py": written_once,
        "_session.py": "twice",
        "_fanout.py": "twice",
        "_process.py": "twice",
        "_http.py": "twice",
    }

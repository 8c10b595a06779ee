"""A pytest plugin to test an application of MCP servers without the servers: the first run
records each session, later runs replay it (docs/testing.md).

Opt in from a ``conftest.py`` (``pytest_plugins = ["mcp_pytest"]``) or the command line
(``pytest -p mcp_pytest``); installing the package enables nothing. The ``mcp_recordings``
fixture then builds clients and groups that record or replay:

    def test_total(mcp_recordings):
        with mcp_recordings.client(name="everything", command="npx", args=[...]) as client:
            assert my_app.total(client, [1, 2, 3]) == 6

- A client whose recording exists replays it (``Client(replay=...)``): no server is started,
  and a request the recording does not hold fails with a JSON-RPC error that says so.
- A client with no recording yet runs against the real server and records the session
  (``Client(record=...)``). The recording is kept only if the test passes: a failed test
  leaves none, so the next run records again.
- ``--mcp-record`` records every session again (the servers must be there); ``--mcp-replay``
  replays only, so that a missing recording fails the test instead of starting a server (for
  CI). Neither: record what is missing, replay the rest.

Recordings are kept per test, one file per server name:
``<the test file's directory>/recordings/<test file>/<test name>/<server>.jsonl``, or under the
``mcp_recordings`` ini option (a directory relative to the rootdir). Commit them with the
tests. A recording holds what the server answered (tool results included) and no secret from
the spec (docs/replay.md).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

import pytest

import mcp_asyncio
import mcp_sync
from _mcp_io.client import recording_file
from mcp_core import Spec

__all__ = ["Recordings", "mcp_recordings"]

Mode = Literal["auto", "record", "replay"]
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mcp", "MCP sessions: record and replay (mcp_pytest)")
    group.addoption(
        "--mcp-record",
        action="store_true",
        help="record every MCP session again against the real servers, replacing recordings",
    )
    group.addoption(
        "--mcp-replay",
        action="store_true",
        help="replay only: a session with no recording fails instead of starting its server",
    )
    parser.addini(
        "mcp_recordings",
        "where the recordings are kept (relative to the rootdir); default: next to each test "
        "file, in recordings/<test file>/<test name>/",
        default="",
    )


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--mcp-record") and config.getoption("--mcp-replay"):
        raise pytest.UsageError("--mcp-record and --mcp-replay together: choose one")


class Recordings:
    """Clients and groups of one test that record or replay; see the module docstring.

    ``directory`` holds this test's recordings, one ``<server>.jsonl`` per server name.
    ``mode`` is ``'record'``, ``'replay'`` or ``'auto'`` (replay what is recorded, record
    the rest)."""

    def __init__(self, directory: Path, mode: Mode) -> None:
        self.directory = directory
        self.mode = mode
        # Recordings being written, and where each goes if the test passes.
        self._writing: list[tuple[Path, Path]] = []

    def path(self, name: str) -> Path:
        """The recording of the server ``name``."""
        return Path(recording_file(self.directory, name))  # as a group names it

    def replaying(self, name: str) -> bool:
        """Whether the server ``name`` is answered from its recording. In ``'replay'`` mode a
        missing recording fails the test here (``pytest.fail``), naming the file."""
        path = self.path(name)
        if self.mode == "replay" and not path.exists():
            pytest.fail(
                f"no recording of MCP server {name!r} at {path}: run the test once without "
                f"--mcp-replay, with the server there, to record it",
                pytrace=False,
            )
        return self.mode != "record" and path.exists()

    def _options(
        self, spec: Spec | Mapping[str, Any] | None, fields: Mapping[str, Any]
    ) -> dict[str, Any]:
        given = spec.name if isinstance(spec, Spec) else (spec or {}).get("name")
        name = fields.get("name", given)
        if not isinstance(name, str) or not name:
            raise TypeError("a recorded client needs a name= (it names its recording file)")
        path = self.path(name)
        if self.replaying(name):
            return {"replay": path}
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(path.name + ".partial")
        self._writing.append((partial, path))
        return {"record": partial}

    def _group_options(self, specs: Any) -> dict[str, Any]:
        servers = getattr(specs, "servers", specs)
        names = [str(name) for name in servers] if isinstance(servers, Mapping) else []
        if names and all(self.replaying(name) for name in names):
            return {"replay": self.directory}
        partial = self.directory / ".partial"  # a group records into a directory
        for name in names:
            self._writing.append((partial / self.path(name).name, self.path(name)))
        return {"record": partial}

    def group(self, specs: Any, /, **options: Any) -> mcp_sync.ClientGroup:
        """An ``mcp_sync.ClientGroup(specs, **options)`` that replays this test's recording of
        every server (one file each), or runs them and records each; it replays only when
        every server of ``specs`` has a recording."""
        return mcp_sync.ClientGroup(specs, **self._group_options(specs), **options)

    def async_group(self, specs: Any, /, **options: Any) -> mcp_asyncio.ClientGroup:
        """The same as ``group``, an ``mcp_asyncio.ClientGroup``."""
        return mcp_asyncio.ClientGroup(specs, **self._group_options(specs), **options)

    def finish(self, passed: bool) -> None:
        """The test is over: keep what it recorded if it ``passed``, else drop it."""
        for partial, path in self._writing:
            if passed and partial.exists():
                partial.replace(path)
            else:
                partial.unlink(missing_ok=True)
        self._writing.clear()
        with contextlib.suppress(OSError):
            (self.directory / ".partial").rmdir()

    def client(
        self, spec: Spec | Mapping[str, Any] | None = None, /, **options: Any
    ) -> mcp_sync.Client:
        """An ``mcp_sync.Client(spec, **options)`` that replays this test's recording of the
        server, or runs the server and records it."""
        return mcp_sync.Client(spec, **self._options(spec, options), **options)

    def async_client(
        self, spec: Spec | Mapping[str, Any] | None = None, /, **options: Any
    ) -> mcp_asyncio.Client:
        """The same as ``client``, an ``mcp_asyncio.Client``."""
        return mcp_asyncio.Client(spec, **self._options(spec, options), **options)


_OUTCOME = pytest.StashKey[bool]()  # the test's own call passed


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.when == "call":
        item.stash[_OUTCOME] = report.passed
    return report


def _directory(request: pytest.FixtureRequest) -> Path:
    node = request.node
    test_file = Path(str(node.path))
    configured = request.config.getini("mcp_recordings")
    base = (
        Path(str(request.config.rootpath)) / configured / test_file.stem
        if configured
        else test_file.parent / "recordings" / test_file.stem
    )
    return base / _UNSAFE.sub("_", node.name)


@pytest.fixture
def mcp_recordings(request: pytest.FixtureRequest) -> Iterator[Recordings]:
    """Clients and groups that record on the first run and replay after (``Recordings``)."""
    record = bool(request.config.getoption("--mcp-record"))
    replay = bool(request.config.getoption("--mcp-replay"))
    mode: Mode = "record" if record else "replay" if replay else "auto"
    recordings = Recordings(_directory(request), mode)
    yield recordings
    recordings.finish(request.node.stash.get(_OUTCOME, False))

"""Record real sessions for the replay tests: `python -m tests.recordings.make_recordings`.

Each recording is `NAME.jsonl` (the events fed to the machine, as the driver recorded them)
and `NAME.actions.jsonl` (the actions the machine produced when replaying them at recording
time). `tests/core/test_recordings.py` replays every recording without any server and checks
that the actions are still exactly these. Re-run this script only when a change of behaviour
is intended, and read the diff of the `.actions.jsonl` files: it is the change.
Only tools whose output holds no secret are called (never server-everything's get-env).
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import mcp_core as core
import mcp_sync
from mcp_core.replay import encode_action, replay
from tests.conftest import everything_argv, fault_server_argv, py_server_argv

HERE = Path(__file__).resolve().parent


def _record(name: str, argv: list[str], script: object, **fields: object) -> None:
    events = HERE / f"{name}.jsonl"
    with mcp_sync.Client(
        name=name, command=argv[0], args=argv[1:], record=str(events), **fields
    ) as client:
        script(client)  # type: ignore[operator]
    actions = [encode_action(a) for a in replay(str(events))]
    (HERE / f"{name}.actions.jsonl").write_text(
        "".join(json.dumps(a, sort_keys=True) + "\n" for a in actions)
    )
    print(f"{events.name}: {len(events.read_text().splitlines())} events, {len(actions)} actions")


def everything(client: mcp_sync.Client) -> None:
    client.list_tools()
    client.call_tool("echo", {"message": "recorded"})
    client.call_tool("get-sum", {"a": 1, "b": 2})
    client.call_tool(
        "trigger-long-running-operation", {"duration": 0.2, "steps": 2}, progress=lambda *a: None
    )


def modern(client: mcp_sync.Client) -> None:
    client.list_tools()
    client.call_tool("add", {"a": 2, "b": 3})
    client.call_tool("fail")


def faults(client: mcp_sync.Client) -> None:
    client.list_tools()
    with contextlib.suppress(core.RequestTimeout):
        client.call_tool("hang", timeout=0.2)
    client.call_tool("ping_client")
    with contextlib.suppress(core.ServerExited):
        client.call_tool("exit", {"code": 3, "stderr": "dying now\n"})
    client.await_ready(10)
    client.call_tool("echo", {"text": "after restart"})


if __name__ == "__main__":
    _record("everything_stdio", everything_argv(), everything)
    _record("py_sdk_modern_stdio", py_server_argv(), modern)
    _record("fault_server_stdio", fault_server_argv("--banner"), faults, reconnect=0.05)

"""A stdio MCP server we control, for fault injection. Standard library only. Legacy-era
(`initialize`, 2025-11-25) unless --modern.

Run: python tests/servers/fault_server.py [flags]   (newline-delimited JSON-RPC on stdin/stdout)

Flags:
  --banner               print the non-JSON line "starting fault server v1" to stdout first
  --exit-on-start CODE   write "fatal: config missing" to stderr and exit with CODE at once
  --exit-varies          with --exit-on-start: the line names the process id, so no two
                         starts fail the same way (the client then waits through retries)
  --init-error           answer `initialize` with JSON-RPC error -32603 "boom" (with --modern,
                         `server/discover` too)
  --version V            answer `initialize` with protocolVersion V (default: the client's own)
  --no-discover-answer   never answer `server/discover` (default: -32601, like a legacy server)
  --repeat-cursor        `tools/list` returns nextCursor "p2" forever
  --ignore-stdin-eof     keep running after stdin closes (to test shutdown escalation)
  --ignore-sigterm       ignore SIGTERM (so only SIGKILL ends it)
  --tasks                run the task tools below as tasks (2025-11-25 basic/utilities/tasks:
                         `initialize` declares tasks {list, cancel, requests.tools.call}, and
                         tools/list ends with them, `execution.taskSupport: "required"`)
  --modern               speak 2026-07-28 too: `server/discover` gets a DiscoverResult
                         (supportedVersions ["2026-07-28"]; with --tasks, capabilities.extensions
                         declares "io.modelcontextprotocol/tasks"), results carry resultType
                         "complete", and the task tools follow the Tasks extension (SEP-2663);
                         `initialize` still works

Methods: `initialize`, `ping` ({}), `tools/list` (two tools a page, cursors "p2", "p3", ...),
`tools/call`; notifications are ignored except `notifications/cancelled`, whose requestId is
recorded. Any other request gets -32601. Tools (arguments in braces):
  echo {text}              -> text
  hang                     -> never answered (the server keeps serving other requests)
  cancelled_ids            -> JSON list of the request ids named by notifications/cancelled
  exit {code, stderr}      -> writes `stderr` to stderr and exits with `code` mid-call
  huge {mib}               -> one response line of about `mib` MiB, "id" before the payload
  slow_progress {steps, delay}
                           -> with _meta.progressToken: `steps` notifications/progress, `delay`
                              seconds apart, then "done" (without a token: the same wait)
  list_changed             -> sends notifications/tools/list_changed, then answers "ok"
  ping_client              -> sends request ping (id "srv-1") to the client and answers with
                              the client's response JSON once it arrives
  unknown_server_request   -> sends sampling/createMessage (id "srv-2") and answers with the
                              client's response JSON (a client without a handler: -32601)
  stderr_spam {kib}        -> writes `kib` KiB to stderr, then answers "ok"

Unlisted tools (callable, not in tools/list, so the pages above stay as they are), for the
fault matrix (tests/drivers/test_fault_matrix.py):
  garbage {lines}          -> writes `lines` (default 3) lines that are not JSON to stdout (one of
                              them not even UTF-8), then answers "ok"
  deep_nesting {depth}     -> answers with a result nested `depth` (default 100000) arrays deep:
                              no JSON parser with a recursion limit reads it
  invalid_utf8             -> answers with a text whose bytes are not UTF-8 (b"caf\xff\xfe")
  exit_later {delay, code, stderr}
                           -> like `exit`, `delay` seconds (default 0.2) after the call arrived
  close_stdout {delay}     -> `delay` seconds (default 0.1) after the call arrived, points fd 1
                              at /dev/null (the client reads the end of stdout) and lives on,
                              serving stdin; never answered
  close_stdin {delay}      -> on the thread that reads stdin: `delay` seconds (default 0.1)
                              later, closes fd 0 (what the client sent meanwhile is lost) and
                              lives on, then sends request ping (id "srv-3") to the client,
                              whose answer is the write that fails; never answered

Each tools/call runs on its own thread, so `hang` or `slow_progress` never blocks `echo`
(`close_stdin` excepted: it runs on the thread that reads stdin).

Task tools (with --tasks; listed last, with `execution.taskSupport: "required"` but in
2026-07-28, which has no such field):
  task_forever {pollMs}    -> a task that stays `working` (statusMessage "at work") until
                              tasks/cancel; pollInterval `pollMs` (default 100)
  task_exit {pollMs, code, stderr}
                           -> a task that stays `working`; the process writes `stderr` to stderr
                              and exits with `code` (default 3) when the first tasks/get of it
                              arrives (that poll is never answered)
  tasks_seen               -> (unlisted, a plain call) JSON {"created": [task ids],
                              "created_by": [the id of the tools/call that created each],
                              "cancelled": [task ids named by tasks/cancel],
                              "notified": [request ids named by notifications/cancelled]}
A task tool called without asking for a task is refused: 2025-11-25 with -32601 (the server
"MUST", basic/utilities/tasks §Tool-Level Negotiation), 2026-07-28 (no extension declared in
the request's _meta clientCapabilities) with -32021, data.requiredCapabilities.extensions
naming it.
Task requests: tasks/get {taskId} (the task, flat; 2026-07-28 with resultType "complete"),
tasks/cancel {taskId} (a working task becomes `cancelled`; the answer: the task, or 2026-07-28
{"resultType": "complete"}; 2025-11-25: -32602 for a task already ended), tasks/result {taskId}
(2025-11-25; never answered while the task works, else -32602: no task here ever completes),
tasks/list (2025-11-25). An unknown taskId gets -32602.

On stdin EOF the server exits with status 0 (unless --ignore-stdin-eof, or `close_stdin`
closed it: then it runs until a signal ends it).
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import sys
import threading
import time
from typing import Any

TOOL_NAMES = [
    "echo",
    "hang",
    "cancelled_ids",
    "exit",
    "huge",
    "slow_progress",
    "list_changed",
    "ping_client",
    "unknown_server_request",
    "stderr_spam",
]
PAGE_SIZE = 2
TASK_TOOL_NAMES = ["task_forever", "task_exit"]
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
META = "io.modelcontextprotocol/"
MODERN_VERSION = "2026-07-28"
TASK_TTL_MS = 60_000


class Options:
    def __init__(self, argv: list[str]) -> None:
        self.banner = "--banner" in argv
        self.init_error = "--init-error" in argv
        self.no_discover_answer = "--no-discover-answer" in argv
        self.repeat_cursor = "--repeat-cursor" in argv
        self.ignore_stdin_eof = "--ignore-stdin-eof" in argv
        self.ignore_sigterm = "--ignore-sigterm" in argv
        self.version: str | None = _value_after(argv, "--version")
        exit_code = _value_after(argv, "--exit-on-start")
        self.exit_on_start = int(exit_code) if exit_code is not None else None
        self.exit_varies = "--exit-varies" in argv
        self.tasks = "--tasks" in argv
        self.modern = "--modern" in argv


def _value_after(argv: list[str], flag: str) -> str | None:
    if flag not in argv:
        return None
    index = argv.index(flag)
    if index + 1 >= len(argv):
        sys.exit(f"fault_server: {flag} needs a value")
    return argv[index + 1]


class FaultServer:
    def __init__(self, options: Options) -> None:
        self.options = options
        self.write_lock = threading.Lock()
        self.state_lock = threading.Lock()
        self.cancelled_ids: list[Any] = []
        # Requests this server sent to the client: id -> (event set on answer, answer slot).
        self.waiting: dict[str, tuple[threading.Event, list[Any]]] = {}
        self.stdin_closed = False  # by the tool close_stdin: stop reading, live on
        # --tasks: every task created, by id (its wire fields, and the tool's own settings).
        self.tasks: dict[str, dict[str, Any]] = {}
        self.task_ids = itertools.count(1)
        self.cancelled_tasks: list[Any] = []  # the taskId of every tasks/cancel, in order

    # --- output ---

    def write_raw(self, line: bytes) -> None:
        with self.write_lock:
            try:
                sys.stdout.buffer.write(line)
                sys.stdout.buffer.flush()
            except (BrokenPipeError, ValueError):
                # The client closed our stdout: nobody is left to talk to.
                os._exit(0)

    def send(self, message: dict[str, Any]) -> None:
        self.write_raw(json.dumps(message, separators=(",", ":")).encode() + b"\n")

    def result(self, request_id: Any, result: dict[str, Any]) -> None:
        if self.options.modern and "resultType" not in result:
            result = {**result, "resultType": "complete"}
        self.send({"jsonrpc": "2.0", "id": request_id, "result": result})

    def error(self, request_id: Any, code: int, message: str, data: Any = None) -> None:
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        self.send({"jsonrpc": "2.0", "id": request_id, "error": error})

    def text_result(self, request_id: Any, text: str) -> None:
        self.result(request_id, {"content": [{"type": "text", "text": text}]})

    def ask_client(self, request_id: str, method: str, params: dict[str, Any]) -> Any:
        """Send a request to the client and block this thread until its answer arrives."""
        event = threading.Event()
        slot: list[Any] = []
        with self.state_lock:
            self.waiting[request_id] = (event, slot)
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        event.wait()
        return slot[0]

    # --- input ---

    def serve(self) -> None:
        for line in sys.stdin.buffer:
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError:
                sys.stderr.write(f"fault_server: not JSON: {line[:80]!r}\n")
                continue
            if isinstance(message, dict):
                self.dispatch(message)
            if self.stdin_closed:
                return

    def dispatch(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        request_id = message.get("id")
        if method is None:
            self.on_client_answer(message)
        elif request_id is None:
            self.on_notification(method, message.get("params") or {})
        elif method == "tools/call" and (message.get("params") or {}).get("name") == "close_stdin":
            self.close_stdin(message["params"].get("arguments") or {})
        elif method == "tools/call":
            threading.Thread(target=self.call_tool, args=(message,), daemon=True).start()
        else:
            self.on_request(request_id, method, message.get("params") or {})

    def on_client_answer(self, message: dict[str, Any]) -> None:
        with self.state_lock:
            waiter = self.waiting.pop(str(message.get("id")), None)
        if waiter is not None:
            event, slot = waiter
            slot.append(message)
            event.set()

    def on_notification(self, method: str, params: dict[str, Any]) -> None:
        if method == "notifications/cancelled":
            with self.state_lock:
                self.cancelled_ids.append(params.get("requestId"))

    def on_request(self, request_id: Any, method: str, params: dict[str, Any]) -> None:
        if method == "initialize":
            if self.options.init_error:
                self.error(request_id, -32603, "boom")
                return
            version = self.options.version or params.get("protocolVersion", "2025-11-25")
            capabilities: dict[str, Any] = {"tools": {"listChanged": True}}
            if self.options.tasks:
                tool_calls: dict[str, Any] = {"tools": {"call": {}}}
                capabilities["tasks"] = {"list": {}, "cancel": {}, "requests": tool_calls}
            self.result(
                request_id,
                {
                    "protocolVersion": version,
                    "capabilities": capabilities,
                    "serverInfo": {"name": "fault", "version": "1"},
                },
            )
        elif method == "ping":
            self.result(request_id, {})
        elif method == "tools/list":
            self.list_tools(request_id, params.get("cursor"))
        elif method == "server/discover" and self.options.no_discover_answer:
            return  # like a legacy server that drops unknown requests before initialize
        elif method == "server/discover" and self.options.modern and self.options.init_error:
            self.error(request_id, -32603, "boom")
        elif method == "server/discover" and self.options.modern:
            declared: dict[str, Any] = {"tools": {"listChanged": True}}
            if self.options.tasks:
                declared["extensions"] = {TASKS_EXTENSION: {}}
            self.result(
                request_id,
                {
                    "supportedVersions": [MODERN_VERSION],
                    "capabilities": declared,
                    "_meta": {META + "serverInfo": {"name": "fault", "version": "1"}},
                },
            )
        elif isinstance(method, str) and method.startswith("tasks/") and self.options.tasks:
            self.task_request(request_id, method, params)
        else:
            self.error(request_id, -32601, f"Method not found: {method}")

    def list_tools(self, request_id: Any, cursor: Any) -> None:
        if cursor is None:
            page = 1
        elif isinstance(cursor, str) and cursor.startswith("p") and cursor[1:].isdigit():
            page = int(cursor[1:])
        else:
            self.error(request_id, -32602, f"Invalid cursor: {cursor!r}")
            return
        all_names = TOOL_NAMES + (TASK_TOOL_NAMES if self.options.tasks else [])
        names = all_names[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]
        tools: list[dict[str, Any]] = []
        for name in names:
            tool: dict[str, Any] = {
                "name": name,
                "description": f"fault tool {name}",
                "inputSchema": {"type": "object"},
            }
            if name in TASK_TOOL_NAMES and not self.options.modern:
                tool["execution"] = {"taskSupport": "required"}  # 2026-07-28 has no such field
            tools.append(tool)
        result: dict[str, Any] = {"tools": tools}
        if self.options.repeat_cursor:
            result["nextCursor"] = "p2"
        elif page * PAGE_SIZE < len(all_names):
            result["nextCursor"] = f"p{page + 1}"
        self.result(request_id, result)

    # --- tools (each on its own thread) ---

    def call_tool(self, message: dict[str, Any]) -> None:
        request_id = message["id"]
        params = message.get("params") or {}
        name = params.get("name")
        args = params.get("arguments") or {}
        meta = params.get("_meta") or {}
        if name == "echo":
            self.text_result(request_id, str(args.get("text", "")))
        elif name == "hang":
            return
        elif name == "cancelled_ids":
            with self.state_lock:
                ids = list(self.cancelled_ids)
            self.text_result(request_id, json.dumps(ids))
        elif name == "exit":
            sys.stderr.write(str(args.get("stderr", "")))
            sys.stderr.flush()
            os._exit(int(args.get("code", 1)))
        elif name == "huge":
            self.huge(request_id, float(args.get("mib", 1)))
        elif name == "slow_progress":
            self.slow_progress(
                request_id,
                int(args.get("steps", 3)),
                float(args.get("delay", 0.1)),
                meta.get("progressToken"),
            )
        elif name == "list_changed":
            self.send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            self.text_result(request_id, "ok")
        elif name == "ping_client":
            answer = self.ask_client("srv-1", "ping", {})
            self.text_result(request_id, json.dumps(answer, separators=(",", ":")))
        elif name == "unknown_server_request":
            answer = self.ask_client(
                "srv-2",
                "sampling/createMessage",
                {
                    "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
                    "maxTokens": 10,
                },
            )
            self.text_result(request_id, json.dumps(answer, separators=(",", ":")))
        elif name == "stderr_spam":
            chunk = "e" * 1023 + "\n"
            for _ in range(int(args.get("kib", 64))):
                sys.stderr.write(chunk)
            sys.stderr.flush()
            self.text_result(request_id, "ok")
        elif name in MATRIX_TOOLS:
            MATRIX_TOOLS[name](self, request_id, args)
        elif name in TASK_TOOL_NAMES and self.options.tasks:
            self.start_task(request_id, str(name), params)
        elif name == "tasks_seen" and self.options.tasks:
            with self.state_lock:
                seen = {
                    "created": list(self.tasks),
                    "created_by": [task["request_id"] for task in self.tasks.values()],
                    "cancelled": list(self.cancelled_tasks),
                    "notified": list(self.cancelled_ids),
                }
            self.text_result(request_id, json.dumps(seen))
        else:
            self.error(request_id, -32602, f"Unknown tool: {name}")

    # --- tasks (--tasks; see the module docstring) ---

    def start_task(self, request_id: Any, name: str, params: dict[str, Any]) -> None:
        """A task tool's call: a new `working` task, or the refusal of a call that asked for
        none."""
        args = params.get("arguments") or {}
        if self.options.modern:
            capabilities = (params.get("_meta") or {}).get(META + "clientCapabilities") or {}
            if TASKS_EXTENSION not in (capabilities.get("extensions") or {}):
                required: dict[str, Any] = {
                    "requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}
                }
                text = f"Tool {name!r} requires the tasks extension ({TASKS_EXTENSION})"
                self.error(request_id, -32021, text, required)
                return
        elif not isinstance(params.get("task"), dict):
            self.error(request_id, -32601, f"Tool {name!r} requires a task")
            return
        now = _iso_now()
        with self.state_lock:
            task_id = f"task-{next(self.task_ids)}"
            poll = int(args.get("pollMs", 100))
            wire: dict[str, Any] = {
                "taskId": task_id,
                "status": "working",
                "statusMessage": "at work",
            }
            wire |= {"createdAt": now, "lastUpdatedAt": now}
            if self.options.modern:
                wire |= {"ttlMs": TASK_TTL_MS, "pollIntervalMs": poll}
            else:
                wire |= {"ttl": TASK_TTL_MS, "pollInterval": poll}
            self.tasks[task_id] = {"wire": wire, "tool": name, "args": args}
            self.tasks[task_id]["request_id"] = request_id
        if self.options.modern:
            self.result(request_id, {"resultType": "task", **wire})
        else:
            self.result(request_id, {"task": wire})

    def task_request(self, request_id: Any, method: str, params: dict[str, Any]) -> None:
        """tasks/get, tasks/cancel, tasks/result and tasks/list, on the thread that reads
        stdin (so they are handled in the order they were sent)."""
        if method == "tasks/list" and not self.options.modern:
            with self.state_lock:
                tasks = [dict(task["wire"]) for task in self.tasks.values()]
            self.result(request_id, {"tasks": tasks})
            return
        task_id = params.get("taskId")
        with self.state_lock:
            if method == "tasks/cancel":
                self.cancelled_tasks.append(task_id)
            task = self.tasks.get(task_id) if isinstance(task_id, str) else None
        known = method in ("tasks/get", "tasks/cancel")
        if not known and not (method == "tasks/result" and not self.options.modern):
            self.error(request_id, -32601, f"Method not found: {method}")
        elif task is None:
            self.error(request_id, -32602, f"Task {task_id!r} not found")
        elif method == "tasks/get":
            if task["tool"] == "task_exit":
                args = task["args"]
                sys.stderr.write(str(args.get("stderr", "")))
                sys.stderr.flush()
                os._exit(int(args.get("code", 3)))
            self.result(request_id, dict(task["wire"]))
        elif method == "tasks/cancel":
            self.cancel_task(request_id, task)
        elif task["wire"]["status"] != "working":  # tasks/result of a task that ended
            self.error(request_id, -32602, f"Task {task_id!r} has no result")
        # tasks/result of a working task: held until it ends, which is never

    def cancel_task(self, request_id: Any, task: dict[str, Any]) -> None:
        wire = task["wire"]
        if wire["status"] != "working" and not self.options.modern:
            self.error(request_id, -32602, f"Task {wire['taskId']!r} has already ended")
            return
        with self.state_lock:
            if wire["status"] == "working":
                wire["status"], wire["lastUpdatedAt"] = "cancelled", _iso_now()
        self.result(request_id, {} if self.options.modern else dict(wire))

    def close_stdin(self, args: dict[str, Any]) -> None:
        """On the thread that reads stdin (no read of fd 0 is under way, so closing it really
        closes the pipe): close it, and ask the client something to make it write."""
        time.sleep(float(args.get("delay", 0.1)))
        os.close(0)
        self.stdin_closed = True
        self.send({"jsonrpc": "2.0", "id": "srv-3", "method": "ping"})

    def huge(self, request_id: Any, mib: float) -> None:
        head = b'{"jsonrpc":"2.0","id":' + json.dumps(request_id).encode()
        head += b',"result":{"content":[{"type":"text","text":"'
        self.write_raw(head + b"x" * int(mib * 1024 * 1024) + b'"}]}}\n')

    def slow_progress(self, request_id: Any, steps: int, delay: float, token: Any) -> None:
        for step in range(1, steps + 1):
            time.sleep(delay)
            if token is not None:
                self.send(
                    {
                        "jsonrpc": "2.0",
                        "method": "notifications/progress",
                        "params": {
                            "progressToken": token,
                            "progress": step,
                            "total": steps,
                            "message": f"step {step}/{steps}",
                        },
                    }
                )
        self.text_result(request_id, "done")


def _iso_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


# --- unlisted tools for the fault matrix (see the module docstring) ---


def _response_line(request_id: Any, result: bytes) -> bytes:
    """One response line whose result is the raw bytes ``result`` (not checked: a fault)."""
    head = b'{"jsonrpc":"2.0","id":' + json.dumps(request_id).encode() + b',"result":'
    return head + result + b"}\n"


def _garbage(server: FaultServer, request_id: Any, args: dict[str, Any]) -> None:
    samples = [b"%%% this is not JSON {{{", b"\x00\x01\xff\xfe binary", b'{"jsonrpc": "2.0", "id"']
    for number in range(int(args.get("lines", 3))):
        server.write_raw(samples[number % len(samples)] + b"\n")
    server.text_result(request_id, "ok")


def _deep_nesting(server: FaultServer, request_id: Any, args: dict[str, Any]) -> None:
    depth = int(args.get("depth", 100_000))
    nested = b"[" * depth + b"]" * depth
    result = b'{"content":[{"type":"text","text":"deep"}],"nested":' + nested + b"}"
    server.write_raw(_response_line(request_id, result))


def _invalid_utf8(server: FaultServer, request_id: Any, args: dict[str, Any]) -> None:
    result = b'{"content":[{"type":"text","text":"caf\xff\xfe"}]}'
    server.write_raw(_response_line(request_id, result))


def _exit_later(server: FaultServer, request_id: Any, args: dict[str, Any]) -> None:
    time.sleep(float(args.get("delay", 0.2)))
    sys.stderr.write(str(args.get("stderr", "")))
    sys.stderr.flush()
    os._exit(int(args.get("code", 1)))


def _close_stdout(server: FaultServer, request_id: Any, args: dict[str, Any]) -> None:
    time.sleep(float(args.get("delay", 0.1)))
    with server.write_lock:  # not in the middle of a line
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)  # the pipe's only write end: the client reads its end
        os.close(devnull)


MATRIX_TOOLS = {
    "garbage": _garbage,
    "deep_nesting": _deep_nesting,
    "invalid_utf8": _invalid_utf8,
    "exit_later": _exit_later,
    "close_stdout": _close_stdout,
}


def main() -> None:
    options = Options(sys.argv[1:])
    if options.exit_on_start is not None:
        varies = f" (pid {os.getpid()})" if options.exit_varies else ""
        sys.stderr.write(f"fatal: config missing{varies}\n")
        sys.stderr.flush()
        os._exit(options.exit_on_start)
    if options.ignore_sigterm:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    server = FaultServer(options)
    if options.banner:
        server.write_raw(b"starting fault server v1\n")
    server.serve()
    if options.ignore_stdin_eof or server.stdin_closed:
        threading.Event().wait()  # until a signal ends the process
    # Threads may still hold a hung call; they are daemons, but exit at once all the same.
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()

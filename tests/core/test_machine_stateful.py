"""SessionMachine under arbitrary interleavings of caller, server, process and timer events.

A Hypothesis rule-based state machine plays a fake driver: it feeds the machine events only
when a real driver could (``ProcessSpawned`` only after a ``Spawn``, stdout only from a live
process, answers only to request ids the machine wrote to that very process) and checks every
action the machine returns, plus the machine's public state after every step. The fake clock
moves only forward.

What is checked (the module docstring of ``_machine.py`` promises all of it):

* each ticket is answered at most once, never after its ``CancelCall``, never if not issued,
  and with a value of the right type (Status / list[Tool] / CallToolResult / None);
* ``in_flight + queued <= in_flight_cap * slots + queue_limit``, and nothing is in flight or
  queued unless the session is ready; a sent call is always on a live process;
* nothing is written to a process that has exited (or whose stdin was closed), nor to a slot
  before its ``ProcessSpawned``; ``Spawn`` only for a slot with no process; signals and
  ``CloseStdin`` only for a live process;
* request ids are never reused; ``notifications/cancelled`` names a caller request that was
  written to this process, not answered by the server and not cancelled before;
* ``next_deadline()`` is ``None`` or a finite float, and after ``TimerFired(now)`` it is later
  than ``now`` (else a driver re-arming its timer would spin);
* teardown: ``Close``, every process exits, timers run for ``3 * shutdown_grace + 1`` s; then
  every ticket not cancelled was answered exactly once, the close ticket too, and nothing is
  scheduled any more.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

import mcp_core as core

DISCOVER, INITIALIZE = "server/discover", "initialize"
CALLER_METHODS = ("tools/call", "tools/list")
TEXT_RESULT = {"content": [{"type": "text", "text": "hi"}]}
MAX_MESSAGE_BYTES = 4096  # small, so an oversized answer is cheap to send
GIVE_UP = re.compile(r"slot (\d+): process not reported gone after SIGKILL")

times = st.floats(min_value=0.05, max_value=20.0, allow_nan=False, allow_infinity=False)
steps = st.one_of(
    st.sampled_from([0.0, 0.01, 0.5, 1.0, 2.0, 5.0, 30.0, 120.0]),
    st.floats(min_value=0.0, max_value=60.0, allow_nan=False, allow_infinity=False),
)


picks = st.integers(0, 63)
NOISE: list[bytes | str] = [
    b"starting server v1\n",
    b"\n",
    b"[1, 2]\n",
    b"[]\n",
    b'{"jsonrpc":"2.0"}\n',
    b"\xff\xfe\n",
    b'{"jsonrpc":"2.0","id":null,"error":{"code":1}}\n',
    b'{"id": true, "method": "m"}\n',
    b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}\n',
    b'{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n',
    b'{"jsonrpc":"2.0","id":"srv-1","method":"ping"}\n',
    b'{"jsonrpc":"2.0","id":7,"method":"sampling/createMessage","params":{}}\n',
    "again",  # an answer to an id already answered (or never sent)
]


def _choose(items: list[Any], pick: int) -> Any:
    return items[pick % len(items)]


@dataclass
class Proc:
    """What the fake driver knows about one slot's current process."""

    pending_spawn: bool = False  # Spawn seen, neither ProcessSpawned nor SpawnFailed yet
    live: bool = False  # spawned and not exited
    stdin_closed: bool = False
    outstanding: dict[int, str] = field(default_factory=dict)  # id -> method, not answered
    answered: list[int] = field(default_factory=list)  # ids we answered (for duplicates)
    cancelled: set[int] = field(default_factory=set)  # ids named by notifications/cancelled


def _response(request_id: int, method: str, variant: int) -> dict[str, Any]:
    """A server's answer to ``method``; ``variant`` picks good, odd or failing ones."""
    head: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
    if method == DISCOVER:
        answers: list[dict[str, Any]] = [
            {"result": {"resultType": "complete", "supportedVersions": [core.MODERN_VERSION]}},
            {"error": {"code": -32601, "message": "Method not found"}},
            {
                "error": {
                    "code": -32022,
                    "message": "unsupported",
                    "data": {"supported": [core.MODERN_VERSION]},
                }
            },
            {"result": {"supportedVersions": ["2099-01-01"]}},
        ]
    elif method == INITIALIZE:
        version = core.LEGACY_VERSIONS[request_id % len(core.LEGACY_VERSIONS)]
        answers = [
            {"result": {"protocolVersion": version, "capabilities": {"tools": {}}}},
            {"error": {"code": -32603, "message": "boom"}},
            {"result": {"protocolVersion": "1999-01-01", "capabilities": {}}},
            {"result": {"capabilities": {}}},
        ]
    elif method == "tools/call":
        answers = [
            {"result": TEXT_RESULT},
            {"result": {**TEXT_RESULT, "isError": True}},
            {"error": {"code": -32602, "message": "Unknown tool"}},
            {"result": {"content": "nope"}},
            {"result": {"resultType": "input_required", "inputRequests": {}}},
        ]
    elif method == "tools/list":
        tool = {"name": f"t{request_id}", "inputSchema": {"type": "object"}}
        answers = [
            {"result": {"tools": [tool]}},
            {"result": {"tools": [tool], "nextCursor": f"c{request_id}"}},
            {"result": {"tools": [tool], "nextCursor": "same"}},
            {"result": {"tools": "x"}},
            {"error": {"code": -32603, "message": "boom"}},
        ]
    else:
        answers = [{"result": {}}]
    return {**head, **answers[variant % len(answers)]}


def _line(message: object) -> bytes:
    return json.dumps(message).encode() + b"\n"


class SessionMachineStateful(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.machine: core.SessionMachine | None = None
        self.now = 0.0
        self.procs: list[Proc] = []
        self.next_ticket = 0
        self.kinds: dict[int, str] = {}  # ticket -> call | progress-call | list | await | close
        self.replies: dict[int, int] = {}
        self.cancelled: set[int] = set()
        self.request_ids: set[int] = set()
        self.call_request: dict[int, tuple[int, int]] = {}  # call ticket -> (slot, request id)
        self.call_owner: dict[int, int] = {}  # tools/call request id -> ticket
        # False while a step runs; the invariant sets it again. Teardown skips its checks when
        # a step failed, so the step's own error is the one Hypothesis reports and shrinks.
        self.clean = True
        self.running = False  # between a Connect that spawned and the answer to a Close
        self.piloting = False
        self.autopilot, self.modern = "off", False

    # --- the fake driver -------------------------------------------------------------------

    @initialize(
        concurrency=st.sampled_from([None, "serialized", "stateless", "pooled"]),
        pool_size=st.integers(1, 3),
        queue_limit=st.integers(0, 3),
        era=st.sampled_from(["auto", "legacy", "modern"]),
        fail_fast=st.booleans(),
        cached=st.sampled_from([None, "legacy", "modern"]),
        timing=st.fixed_dictionaries(
            {
                "call_timeout": times,
                "init_timeout": times,
                "reconnect": st.floats(0.05, 3.0),
                "probe_timeout": st.floats(0.05, 3.0),
                "shutdown_grace": st.floats(0.05, 3.0),
            }
        ),
        extra=st.fixed_dictionaries(
            {"max_call_timeout": st.floats(0.0, 30.0), "max_backoff": st.floats(0.0, 10.0)}
        ),
        jitter_seed=st.integers(0, 2**16),
        start=st.sampled_from(["ready", "connect", "none"]),
        modern=st.booleans(),
        autopilot=st.sampled_from(["server", "spawn", "off"]),
    )
    def setup(
        self,
        concurrency: str | None,
        pool_size: int,
        queue_limit: int,
        era: str,
        fail_fast: bool,
        cached: str | None,
        timing: dict[str, float],
        extra: dict[str, float],
        jitter_seed: int,
        start: str,
        modern: bool,
        autopilot: str,
    ) -> None:
        fields: dict[str, Any] = {
            "name": "s",
            "command": "server",
            "pool_size": pool_size,
            "queue_limit": queue_limit,
            "era": era,
            "fail_fast": fail_fast,
            "jitter_seed": jitter_seed,
            "max_message_bytes": MAX_MESSAGE_BYTES,
            **timing,
            "max_call_timeout": timing["call_timeout"] + extra["max_call_timeout"],
            "max_backoff": timing["reconnect"] + extra["max_backoff"],
        }
        if concurrency is not None:
            fields["concurrency"] = concurrency
        spec = core.Spec.from_mapping(fields)
        cache = {json.dumps(["server"]): cached} if cached else {}
        self.spec = spec
        self.machine = core.SessionMachine(spec, era_cache=cache)
        slots = pool_size if self.machine.concurrency == "pooled" else 1
        self.procs = [Proc() for _ in range(slots)]
        self.autopilot, self.modern = autopilot, modern
        # Most interleavings worth testing need a ready session: start from one mostly.
        if start != "none":
            self.feed(core.Connect(now=self.now))
        if start == "ready":
            for slot in self.pending_slots():
                self.spawned(slot)
                self.handshake(slot, modern)

    @property
    def m(self) -> core.SessionMachine:
        assert self.machine is not None
        return self.machine

    def feed(self, event: core.Event) -> list[core.Action]:
        self.clean = False
        out = self.m.handle(event)
        for action in out:
            self.check_action(action)
        if isinstance(event, core.Connect) and any(isinstance(a, core.Spawn) for a in out):
            self.running = True
        if not self.piloting:
            self.piloting = True
            try:
                self.pilot()
            finally:
                self.piloting = False
        return out

    def pilot(self) -> None:
        """What a busy driver and a healthy server do at once, when the run asks for it:
        with "spawn" every Spawn succeeds at once; with "server" the server also completes
        each handshake and exits as soon as its stdin is closed.

        Swarm testing (Hypothesis turns rules off per run) and plain chance often leave a
        session starting forever; with the autopilot a run spends its steps on a live session
        instead. Runs with the autopilot off leave every move to the rules.
        """
        for _ in range(10):
            pending = self.pending_slots()
            closed = [s for s in self.live_slots() if self.procs[s].stdin_closed]
            if self.autopilot != "off" and pending:
                self.spawned(pending[0])
            elif self.autopilot == "server" and self.handshaking():
                self.handshake(self.handshaking()[0], self.modern)
            elif self.autopilot == "server" and closed:
                self.procs[closed[0]] = Proc()  # a healthy server exits when stdin closes
                self.feed(core.ProcessExited(now=self.now, slot=closed[0], returncode=0))
            else:
                return

    def handshaking(self) -> list[int]:
        """Live slots with an unanswered server/discover or initialize."""
        return [
            slot
            for slot in self.live_slots()
            if {DISCOVER, INITIALIZE} & set(self.procs[slot].outstanding.values())
        ]

    def issue(self, kind: str) -> int:
        self.next_ticket += 1
        self.kinds[self.next_ticket] = kind
        return self.next_ticket

    def open_tickets(self) -> list[int]:
        return [t for t in self.kinds if t not in self.replies and t not in self.cancelled]

    def live_slots(self) -> list[int]:
        return [i for i, p in enumerate(self.procs) if p.live]

    def pending_slots(self) -> list[int]:
        return [i for i, p in enumerate(self.procs) if p.pending_spawn]

    def answerable(self) -> list[tuple[int, int]]:
        return [
            (slot, rid)
            for slot in self.live_slots()
            for rid in sorted(self.procs[slot].outstanding)
        ]

    def stdout(self, slot: int, data: bytes, split: int | None = None) -> None:
        """Feed ``data`` from ``slot``'s stdout, in two reads when ``split`` is given."""
        cut = len(data) if split is None else min(split, len(data))
        for chunk in (data[:cut], data[cut:]):
            if chunk:
                self.feed(core.StdoutReceived(now=self.now, slot=slot, data=chunk))

    def answer(self, slot: int, message: dict[str, Any], split: int | None = None) -> None:
        proc = self.procs[slot]
        rid = message["id"]
        # The server has answered: from now on cancelling this id would be a bug.
        if proc.outstanding.pop(rid, None) is not None:
            proc.answered.append(rid)
        self.stdout(slot, _line(message), split)

    def fire(self) -> None:
        self.feed(core.TimerFired(now=self.now))
        deadline = self.m.next_deadline()
        assert deadline is None or deadline > self.now, (
            f"after TimerFired at {self.now} next_deadline() is {deadline}: a driver would spin"
        )

    # --- checks on every action ------------------------------------------------------------

    def check_action(self, action: core.Action) -> None:
        if isinstance(action, core.Reply):
            self.check_reply(action)
        elif isinstance(action, core.ProgressUpdate):
            assert self.kinds.get(action.ticket) == "progress-call", action
            assert action.ticket in self.open_tickets(), f"progress for a finished call {action}"
        elif isinstance(action, core.Spawn):
            proc = self.procs[action.slot]
            assert not proc.live and not proc.pending_spawn, f"{action} while {proc}"
            proc.pending_spawn = True
        elif isinstance(action, core.WriteStdin):
            self.check_write(action)
        elif isinstance(action, core.CloseStdin | core.SignalProcess):
            proc = self.procs[action.slot]
            assert proc.live, f"{action} for a process that is not running: {proc}"
            if isinstance(action, core.CloseStdin):
                proc.stdin_closed = True
        elif isinstance(action, core.Log):
            gave_up = GIVE_UP.search(action.message)
            if gave_up:
                # The machine treats the process as gone; a driver no longer reports it.
                self.procs[int(gave_up.group(1))] = Proc()

    def check_reply(self, reply: core.Reply) -> None:
        ticket = reply.ticket
        assert ticket in self.kinds, f"reply for a ticket never issued: {reply}"
        assert ticket not in self.cancelled, f"reply after CancelCall: {reply}"
        assert ticket not in self.replies, f"second reply: {reply}"
        self.replies[ticket] = 1
        kind = self.kinds[ticket]
        if kind == "close":
            self.running = False
        if reply.error is not None:
            assert isinstance(reply.error, core.McpError)
            assert kind != "close", f"Close answered with an error: {reply}"
            return
        expected: type | tuple[type, ...] = {
            "call": core.CallToolResult,
            "progress-call": core.CallToolResult,
            "list": list,
            "await": core.Status,
            "close": type(None),
        }[kind]
        assert isinstance(reply.value, expected), f"{kind} answered with {reply.value!r}"
        if kind == "await":
            assert reply.value.state == "ready"  # type: ignore[attr-defined]

    def check_write(self, action: core.WriteStdin) -> None:
        proc = self.procs[action.slot]
        assert proc.live, f"write to a slot with no running process: {action} ({proc})"
        assert action.data.endswith(b"\n") and action.data.count(b"\n") == 1, action
        message = json.loads(action.data)
        assert isinstance(message, dict)
        method = message.get("method")
        if "id" in message and method is not None:
            rid = message["id"]
            assert isinstance(rid, int) and rid not in self.request_ids, f"id reused: {message}"
            # Drivers drop writes after CloseStdin, so a late answer to a server's ping is
            # harmless; a request, though, would start work on a process being stopped.
            assert not proc.stdin_closed, f"request written after CloseStdin: {action}"
            assert method in (DISCOVER, INITIALIZE, *CALLER_METHODS), message
            self.request_ids.add(rid)
            proc.outstanding[rid] = method
            if method == "tools/call":
                ticket = message["params"]["arguments"]["t"]
                assert ticket in self.open_tickets(), f"sent a finished call: {message}"
                assert ticket not in self.call_request, f"call sent twice: {message}"
                self.call_request[ticket] = (action.slot, rid)
                self.call_owner[rid] = ticket
                token = message["params"].get("_meta", {}).get("progressToken")
                assert (token == rid) == (self.kinds[ticket] == "progress-call"), message
        elif method == "notifications/cancelled":
            rid = message["params"]["requestId"]
            assert proc.outstanding.get(rid) in CALLER_METHODS, (
                f"cancelled {rid}, which this process has no unanswered caller request for: "
                f"{proc.outstanding}"
            )
            assert rid not in proc.cancelled, f"cancelled {rid} twice"
            proc.cancelled.add(rid)

    # --- checks after every step -----------------------------------------------------------

    @invariant()
    def machine_invariants(self) -> None:
        if self.machine is None:
            return
        m = self.m
        slots = len(self.procs)
        assert m.in_flight + m.queued <= m.in_flight_cap * slots + self.spec.queue_limit, m
        if m.state != "ready":
            assert m.in_flight == 0 and m.queued == 0, m
        deadline = m.next_deadline()
        assert deadline is None or (isinstance(deadline, float) and math.isfinite(deadline))
        status = m.status(self.now)
        assert (status.in_flight, status.queued, status.state) == (m.in_flight, m.queued, m.state)
        open_now = set(self.open_tickets())
        active: dict[int, int] = {}
        for ticket, (slot, rid) in self.call_request.items():
            if ticket not in open_now:
                continue
            proc = self.procs[slot]
            # A call still waiting for its answer is on a live process that can answer it.
            assert proc.live and rid in proc.outstanding and rid not in proc.cancelled, (
                f"call {ticket} (id {rid}) is unanswered but its process cannot answer: {proc}"
            )
            active[slot] = active.get(slot, 0) + 1
        for slot, count in active.items():
            assert count <= m.in_flight_cap, f"slot {slot} has {count} calls in flight"
        self.clean = True

    # --- caller events ---------------------------------------------------------------------
    # A ``pick`` chooses among what exists now (modulo its length), so printed steps stay
    # readable and shrink towards the first candidate.
    #
    # Hypothesis has no rule weights, but it orders rules by their number of arguments and
    # favours the first ones: the steps that keep a session busy (timers, answers, calls, the
    # handshake) take one argument or none, and the ones that end it (Close, exits) take three.

    # Connect is a no-op while a session runs or stops (Close's then_connect tests that):
    # only a stopped client is worth connecting.
    @precondition(
        lambda self: (
            self.machine is not None
            and not self.running
            and not self.live_slots()
            and not self.pending_slots()
        )
    )
    @rule()
    def connect(self) -> None:
        self.feed(core.Connect(now=self.now))

    @rule(how=st.tuples(st.none() | times, st.booleans()))
    def call_tool(self, how: tuple[float | None, bool]) -> None:
        """CallTool with ``how = (timeout, progress)``."""
        timeout, progress = how
        ticket = self.issue("progress-call" if progress else "call")
        self.feed(
            core.CallTool(
                now=self.now,
                ticket=ticket,
                name="echo",
                arguments={"t": ticket},
                timeout=timeout,
                progress=progress,
            )
        )

    @rule(refresh=st.booleans(), timeout=st.none() | times)
    def list_tools(self, refresh: bool, timeout: float | None) -> None:
        ticket = self.issue("list")
        self.feed(core.ListTools(now=self.now, ticket=ticket, refresh=refresh, timeout=timeout))

    @rule(timeout=st.just(0.0) | times, then_cancel=st.booleans())
    def await_ready(self, timeout: float, then_cancel: bool) -> None:
        ticket = self.issue("await")
        self.feed(core.AwaitReady(now=self.now, ticket=ticket, timeout=timeout))
        if then_cancel:
            self.cancelled.add(ticket)
            self.feed(core.CancelCall(now=self.now, ticket=ticket))

    @rule(pick=picks)
    def cancel(self, pick: int) -> None:
        # A driver cancels callers (calls, lists, waits), not a Close; 10**9 was never issued.
        known = [t for t, kind in self.kinds.items() if kind != "close"]
        ticket = [*reversed(known), 10**9][pick % (len(known) + 1)]  # newest first
        if ticket in self.kinds:
            self.cancelled.add(ticket)
        self.feed(core.CancelCall(now=self.now, ticket=ticket))

    # Hypothesis picks Close far more often than a uniform choice would, and every Close
    # idles the session for several steps: two per run (plus the teardown's) are plenty.
    @precondition(lambda self: list(self.kinds.values()).count("close") < 2)
    @rule(
        then_connect=st.booleans(),
        seconds=st.sampled_from([0.0, 1.0]),
        twice=st.booleans(),
    )
    def close(self, then_connect: bool, seconds: float, twice: bool) -> None:
        """Close (maybe twice); then, ``seconds`` later, maybe Connect again (ignored while
        the processes are still being stopped)."""
        for _ in range(2 if twice else 1):
            self.feed(core.Close(now=self.now, ticket=self.issue("close")))
        if then_connect:
            self.now += seconds
            self.feed(core.Connect(now=self.now))

    # --- process events --------------------------------------------------------------------

    def spawned(self, slot: int) -> None:
        self.procs[slot] = Proc(live=True)
        self.feed(core.ProcessSpawned(now=self.now, slot=slot, pid=1000 + slot))

    def handshake(self, slot: int, modern: bool) -> None:
        """Answer the handshake on ``slot`` as a healthy (modern or legacy) server would."""
        for _ in range(3):
            proc = self.procs[slot]
            waiting = [r for r, m in proc.outstanding.items() if m in (DISCOVER, INITIALIZE)]
            if not proc.live or not waiting:
                return
            rid = max(waiting)  # a probe that timed out was followed by initialize
            method = proc.outstanding[rid]
            self.answer(slot, _response(rid, method, 0 if modern or method == INITIALIZE else 1))

    @precondition(lambda self: self.pending_slots())
    @rule(modern=st.booleans())
    def spawn_and_handshake(self, modern: bool) -> None:
        """ProcessSpawned for the first pending slot, then a healthy server's handshake."""
        slot = self.pending_slots()[0]
        self.spawned(slot)
        self.handshake(slot, modern)

    @precondition(lambda self: self.pending_slots())
    @rule(pick=picks, outcome=st.sampled_from(["spawned", "failed", "missing"]), at=steps)
    def spawn_outcome(self, pick: int, outcome: str, at: float) -> None:
        """The driver answers a Spawn ``at`` seconds later: running (the handshake is left to
        the other rules) or failed."""
        slot = _choose(self.pending_slots(), pick)
        self.now += at
        if outcome == "spawned":
            self.spawned(slot)
            return
        self.procs[slot] = Proc()
        missing = outcome == "missing"
        self.feed(core.SpawnFailed(now=self.now, slot=slot, reason="no luck", missing=missing))

    @precondition(lambda self: self.live_slots())
    @rule(
        pick=picks,
        trouble=st.sampled_from(["exit", "write_failed", "stderr", "stdout_closed"]),
        code=st.none() | st.integers(-15, 3),
    )
    def process_trouble(self, pick: int, trouble: str, code: int | None) -> None:
        slot = _choose(self.live_slots(), pick)
        if trouble == "exit":
            self.procs[slot] = Proc()  # the process is gone: it answers nothing any more
            self.feed(core.ProcessExited(now=self.now, slot=slot, returncode=code))
        elif trouble == "write_failed":
            self.feed(core.WriteFailed(now=self.now, slot=slot, reason="broken pipe"))
        elif trouble == "stderr":
            self.feed(core.StderrReceived(now=self.now, slot=slot, data=b"Traceback\n\xff"))
        else:
            self.feed(core.StdoutClosed(now=self.now, slot=slot))

    # --- what the server writes ------------------------------------------------------------

    @precondition(lambda self: self.answerable())
    @rule(how=st.tuples(picks, st.integers(0, 5), st.none() | st.integers(0, 200)))
    def server_answers(self, how: tuple[int, int, int | None]) -> None:
        """``how = (pick, variant, split)``: an answer to a request (good, odd or failing;
        variant 5 is over max_message_bytes), in two reads when ``split`` is set."""
        pick, variant, split = how
        slot, rid = _choose(self.answerable(), pick)
        if variant == 5:
            padding = "x" * (MAX_MESSAGE_BYTES + 10)
            self.answer(slot, {"jsonrpc": "2.0", "id": rid, "result": {"pad": padding}}, split)
        else:
            method = self.procs[slot].outstanding[rid]
            self.answer(slot, _response(rid, method, variant), split)

    @precondition(lambda self: self.answerable())
    @rule(pick=picks, more=st.lists(picks, min_size=1, max_size=4))
    def server_answers_batch(self, pick: int, more: list[int]) -> None:
        """A JSON array answering several requests of one process at once."""
        slot = _choose(sorted({s for s, _ in self.answerable()}), pick)
        variant = pick // 4
        proc = self.procs[slot]
        ids = sorted({_choose(sorted(proc.outstanding), p) for p in more})
        batch = []
        for n, rid in enumerate(ids):
            batch.append(_response(rid, proc.outstanding.pop(rid), variant + n))
            proc.answered.append(rid)
        self.stdout(slot, _line(batch))

    @precondition(lambda self: self.live_slots())
    @rule(pick=picks, noise=st.sampled_from(NOISE), variant=st.integers(0, 4))
    def server_noise(self, pick: int, noise: bytes | str, variant: int) -> None:
        """Garbage lines, server requests, list_changed, and answers to ids already answered
        or never sent: none of them may answer a caller."""
        slot = _choose(self.live_slots(), pick)
        if noise == "again":
            done = self.procs[slot].answered
            rid = done[variant % len(done)] if done else 10**6
            self.stdout(slot, _line(_response(rid, "tools/call", variant)))
        else:
            assert isinstance(noise, bytes)
            self.stdout(slot, noise)

    @precondition(lambda self: self.live_slots())
    @rule(pick=picks, progress=st.integers(0, 100) | st.just("x"))
    def server_progress(self, pick: int, progress: int | str) -> None:
        """Progress for a sent call (or an unknown token), with a total when ``pick`` is odd."""
        slot = _choose(self.live_slots(), pick)
        total = 100 if pick % 2 else None
        calls = sorted(r for r, m in self.procs[slot].outstanding.items() if m == "tools/call")
        token = _choose(calls, pick // 3) if calls else 10**6
        params: dict[str, Any] = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        self.stdout(
            slot, _line({"jsonrpc": "2.0", "method": "notifications/progress", "params": params})
        )

    # --- time --------------------------------------------------------------------------------

    @precondition(lambda self: self.machine is not None and self.m.next_deadline() is not None)
    @rule()
    def fire_at_next_deadline(self) -> None:
        deadline = self.m.next_deadline()
        assert deadline is not None
        self.now = max(self.now, deadline)
        self.fire()

    @rule(seconds=steps, fire=st.booleans())
    def time_passes(self, seconds: float, fire: bool) -> None:
        """The clock moves; the timer fires now, or not yet (the next event is then late)."""
        self.now += seconds
        if fire:
            self.fire()

    # --- the end -------------------------------------------------------------------------------

    def teardown(self) -> None:
        if self.machine is None or not self.clean:
            return
        close = self.issue("close")
        self.feed(core.Close(now=self.now, ticket=close))
        for slot in self.pending_slots():
            self.spawned(slot)  # a Close while spawning stops the process once it runs
        for slot in self.live_slots():
            self.procs[slot] = Proc()
            self.feed(core.ProcessExited(now=self.now, slot=slot, returncode=0))
        limit = self.now + 3 * self.spec.shutdown_grace + 1
        for _ in range(100):
            deadline = self.m.next_deadline()
            if deadline is None or deadline > limit:
                break
            self.now = max(self.now, deadline)
            self.fire()
        assert self.replies.get(close) == 1, "the Close ticket was not answered"
        unanswered = [t for t in self.kinds if t not in self.cancelled and t not in self.replies]
        assert not unanswered, f"tickets never answered: {[(t, self.kinds[t]) for t in unanswered]}"
        assert self.m.state == "closed" and self.m.in_flight == self.m.queued == 0
        assert self.m.next_deadline() is None, "a closed machine still has a timer armed"


SessionMachineStateful.TestCase.settings = settings(
    max_examples=200, stateful_step_count=40, deadline=None
)
TestSessionMachineStateful = SessionMachineStateful.TestCase

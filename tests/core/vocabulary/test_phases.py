"""The transition tables: the drawing in docs/states.md, and the typed error for any event a
table does not allow (a driver feeding what the machine never asked for)."""

from __future__ import annotations

import ast
import itertools
import typing
from pathlib import Path

import pytest

import mcp_core as core
from mcp_core.states import (
    AUTH_TABLE,
    CONNECTION_TABLE,
    SESSION_TABLE,
    AuthPhase,
    AuthStep,
    Phase,
    SessionPhase,
    SessionStep,
    Step,
    render_tables,
    session_state,
)
from tests.core.harness import Harness

DOC = Path(__file__).resolve().parents[3] / "docs" / "states.md"


def test_docs_states_md_is_drawn_from_the_tables() -> None:
    # Run `python scripts/draw_states.py` after changing a table.
    assert DOC.read_text() == render_tables()


def test_every_phase_and_step_appears_in_the_tables() -> None:
    assert {phase for phase, _ in SESSION_TABLE} == set(SessionPhase)
    assert {step for _, step in SESSION_TABLE} == {core.Connect, core.Close, *SessionStep}
    assert {phase for phase, _ in AUTH_TABLE} == set(AuthPhase)
    assert {step for _, step in AUTH_TABLE} == set(AuthStep)
    assert {phase for phase, _ in CONNECTION_TABLE} == set(Phase)
    steps = {step for _, step in CONNECTION_TABLE}
    assert set(Step) - steps == {Step.SHUT_DOWN}  # the stop table's own step


def test_status_state_names_exactly_what_the_phases_can_give() -> None:
    # core.SessionState (the type of Status.state) against session_state over every phase the
    # tables reach, with one connection or several in any mix: a state added to the rules but
    # not to the Literal, or left in the Literal when no phase gives it any more, fails here.
    sessions = {phase for phase, _ in SESSION_TABLE} | set(SESSION_TABLE.values())
    connections = sorted(
        {phase for phase, _ in CONNECTION_TABLE} | set(CONNECTION_TABLE.values()),
        key=lambda phase: phase.name,
    )
    mixes = [
        mix
        for size in range(1, len(connections) + 1)
        for mix in itertools.combinations(connections, size)
    ]
    given = {session_state(session, mix) for session in sessions for mix in mixes}
    assert given == set(typing.get_args(core.SessionState))
    # A session never started is new, one stopped is closed, whatever their connections; a
    # running one with none past IDLE or STOPPING (it failed, perhaps with a retry armed) is
    # closed too.
    assert session_state(SessionPhase.NEW, [Phase.READY]) == "new"
    assert session_state(SessionPhase.CLOSED, [Phase.READY]) == "closed"
    assert session_state(SessionPhase.RUNNING, [Phase.IDLE, Phase.STOPPING]) == "closed"
    assert session_state(SessionPhase.RUNNING, [Phase.SPAWNING, Phase.READY]) == "ready"


def test_process_and_http_events_before_connect_are_refused() -> None:
    machine = core.SessionMachine(core.Spec(name="t", command="srv"))
    for event in (
        core.ProcessSpawned(now=0.0, slot=0, generation=1, pid=1),
        core.HttpBodyReceived(now=0.0, stream=1, data=b"x"),
    ):
        with pytest.raises(core.UnexpectedEvent) as caught:
            machine.handle(event)
        assert caught.value.phase == "NEW" and caught.value.event == type(event).__name__
    assert machine.phase is SessionPhase.NEW
    assert machine.phases == (Phase.IDLE,)


@pytest.mark.parametrize(
    ("spec", "event"),
    [
        (core.Spec(name="t", command="srv"), core.HttpBodyReceived(now=0.0, stream=1, data=b"x")),
        (
            core.Spec(name="t", url="http://127.0.0.1:1/mcp"),
            core.ProcessSpawned(now=0.0, slot=0, generation=1, pid=1),
        ),
        (
            core.Spec(name="t", url="http://127.0.0.1:1/mcp"),
            core.StdoutReceived(now=0.0, slot=0, generation=1, data=b"{}\n"),
        ),
    ],
)
def test_an_event_of_the_other_transport_is_refused(spec: core.Spec, event: core.Event) -> None:
    # Each transport takes only its own events (Transport.events): an HTTP event fed to a
    # stdio session, or a process event to an HTTP one, is a driver bug, refused by name.
    machine = core.SessionMachine(spec)
    machine.handle(core.Connect(now=0.0))
    phases = machine.phases
    with pytest.raises(core.UnexpectedEvent) as caught:
        machine.handle(event)
    assert (caught.value.phase, caught.value.event) == ("RUNNING", type(event).__name__)
    assert machine.phases == phases and machine.phase is SessionPhase.RUNNING


def test_something_that_is_no_event_is_refused() -> None:
    machine = core.SessionMachine(core.Spec(name="t", command="srv"))
    with pytest.raises(core.UnexpectedEvent, match="str is not allowed in phase NEW"):
        machine.handle("Connect")  # type: ignore[arg-type]


def test_a_second_process_spawned_is_a_driver_bug_and_changes_nothing() -> None:
    h = Harness(era="legacy")
    h.connect_legacy()
    assert h.machine.phases == (Phase.READY,)
    with pytest.raises(core.UnexpectedEvent) as caught:
        h.spawned()
    assert (caught.value.phase, caught.value.event) == ("READY", "ProcessSpawned")
    assert "slot 0" in str(caught.value)
    assert h.machine.phases == (Phase.READY,) and h.machine.state == "ready"


def test_a_generation_never_spawned_is_a_driver_bug() -> None:
    h = Harness(era="legacy")
    h.feed(core.Connect(now=0.0))
    with pytest.raises(core.UnexpectedEvent, match="generation 7 was never spawned"):
        h.feed(core.ProcessSpawned(now=0.0, slot=0, generation=7, pid=1))
    assert h.machine.phases == (Phase.SPAWNING,)
    h.spawned()  # the real one still counts
    assert h.last_request("initialize")


def test_close_is_answered_by_its_deadline_even_if_a_spawn_never_reports() -> None:
    h = Harness(era="legacy", shutdown_grace=1.0)
    h.feed(core.Connect(now=0.0))  # Spawn: the driver never answers it
    stop = h.close()
    assert stop not in h.replies and h.machine.phase is SessionPhase.CLOSING
    assert h.machine.next_deadline() == 3 * 1.0 + 5.0
    h.fire_due()
    assert h.replies[stop].error is None
    assert any(isinstance(a, core.Log) and a.level == "ERROR" for a in h.actions)
    assert h.machine.next_deadline() is None
    h.spawned()  # it ran after all: it is stopped at once
    assert h.of(core.CloseStdin)
    h.exited(0)
    assert h.machine.phase is SessionPhase.CLOSED and h.machine.phases == (Phase.IDLE,)


# The attributes that hold a phase: the session's, a connection's, the authorization layer's
# (``phase``, ``_phase``) and a stopping process's stage (``stop``).
_PHASE_ATTRIBUTES = {"phase", "_phase", "stop"}
_TABLE_STEPS = {"session_step", "connection_step", "stop_step", "auth_step"}
CORE = Path(core.__file__).resolve().parent


def _assignments(node: ast.AST) -> list[tuple[ast.expr, ast.expr | None]]:
    """(target, value) pairs of an assignment, tuples paired element by element."""
    if isinstance(node, ast.Assign):
        pairs: list[tuple[ast.expr, ast.expr | None]] = []
        for target in node.targets:
            if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                pairs += zip(target.elts, node.value.elts, strict=True)
            elif isinstance(target, ast.Tuple):
                pairs += [(element, None) for element in target.elts]
            else:
                pairs.append((target, node.value))
        return pairs
    if isinstance(node, ast.AnnAssign | ast.AugAssign):
        return [(node.target, node.value)]
    return []


def _phase_changes_outside_the_tables(source: str, name: str) -> list[str]:
    found = []
    for function in ast.walk(ast.parse(source)):
        if not isinstance(function, ast.FunctionDef) or function.name == "__init__":
            continue  # a phase's first value is set where its holder is made
        for node in ast.walk(function):
            for target, value in _assignments(node):
                if not (isinstance(target, ast.Attribute) and target.attr in _PHASE_ATTRIBUTES):
                    continue
                stepped = (
                    isinstance(value, ast.Call)
                    and isinstance(value.func, ast.Name)
                    and value.func.id in _TABLE_STEPS
                )
                if not stepped:
                    found.append(f"{name}:{node.lineno} {ast.unparse(node)}")
    return found


def test_every_phase_change_is_a_table_step() -> None:
    # A phase assigned anywhere but from session_step/connection_step/stop_step/auth_step would
    # be a move the tables (and docs/states.md) do not show.
    found = []
    for path in sorted(CORE.rglob("*.py")):
        found += _phase_changes_outside_the_tables(path.read_text(), str(path.relative_to(CORE)))
    assert found == []


def test_the_check_sees_a_phase_set_directly() -> None:
    source = """
class Machine:
    def __init__(self):
        self._phase = SessionPhase.NEW
    def close(self):
        was, self._phase = self._phase, SessionPhase.CLOSING
    def stopped(self, pipe):
        pipe.stop = stop_step(pipe.stop, TimerFired)
        pipe.stop = StopStage.NONE
"""
    assert _phase_changes_outside_the_tables(source, "m.py") == [
        "m.py:6 was, self._phase = (self._phase, SessionPhase.CLOSING)",
        "m.py:9 pipe.stop = StopStage.NONE",
    ]

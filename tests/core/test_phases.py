"""The transition tables: the drawing in docs/states.md, and the typed error for any event a
table does not allow (a driver feeding what the machine never asked for)."""

from __future__ import annotations

from pathlib import Path

import pytest

import mcp_core as core
from mcp_core.states import (
    CONNECTION_TABLE,
    SESSION_TABLE,
    Phase,
    SessionPhase,
    Step,
    render_tables,
)
from tests.core.harness import Harness

DOC = Path(__file__).resolve().parents[2] / "docs" / "states.md"


def test_docs_states_md_is_drawn_from_the_tables() -> None:
    # Run `python scripts/draw_states.py` after changing a table.
    assert DOC.read_text() == render_tables()


def test_every_phase_and_step_appears_in_the_tables() -> None:
    assert {phase for phase, _ in SESSION_TABLE} == set(SessionPhase)
    assert {phase for phase, _ in CONNECTION_TABLE} == set(Phase)
    steps = {step for _, step in CONNECTION_TABLE}
    assert set(Step) - steps == {Step.SHUT_DOWN}  # the stop table's own step


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

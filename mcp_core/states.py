"""The machine's transition tables, for reading and drawing: the phases a session, a
connection and a stopping process go through, what moves them, and what ``Status.state``
says of them (``session_state``; ``docs/states.md`` is ``render_tables()``).
``SessionMachine.phase`` and ``.phases`` say where a machine is."""

from ._vocabulary.phases import (
    AUTH_TABLE,
    CONNECTION_TABLE,
    SESSION_TABLE,
    STATE_RULES,
    STOP_TABLE,
    AuthPhase,
    AuthStep,
    Phase,
    SessionPhase,
    SessionStep,
    Step,
    StopStage,
    render_tables,
    session_state,
)

__all__ = [
    "AUTH_TABLE",
    "CONNECTION_TABLE",
    "SESSION_TABLE",
    "STATE_RULES",
    "STOP_TABLE",
    "AuthPhase",
    "AuthStep",
    "Phase",
    "SessionPhase",
    "SessionStep",
    "Step",
    "StopStage",
    "render_tables",
    "session_state",
]

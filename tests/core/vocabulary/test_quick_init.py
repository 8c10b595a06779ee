"""``_vocabulary/quick_init.py``: every event and action is built by the quicker ``__init__``,
which behaves as the dataclass's own: signature, defaults, ``__post_init__``, frozen, equality."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import pytest

import mcp_core as core
from mcp_core._vocabulary import actions, events
from mcp_core._vocabulary.quick_init import quicken


def classes() -> list[type]:
    return [
        value
        for module in (events, actions)
        for value in vars(module).values()
        if isinstance(value, type)
        and dataclasses.is_dataclass(value)
        and value.__module__ == module.__name__
    ]


def expected_signature(cls: type) -> list[tuple[str, object]]:
    """What the dataclass's own ``__init__`` takes: each field by keyword, with its default."""
    return [
        (f.name, inspect.Parameter.empty if f.default is dataclasses.MISSING else f.default)
        for f in dataclasses.fields(cls)
    ]


@pytest.mark.parametrize("cls", classes(), ids=lambda c: c.__name__)
def test_each_event_and_action_takes_what_its_fields_say(cls: type) -> None:
    init = cls.__dict__["__init__"]
    signature = inspect.signature(cls)
    params = list(signature.parameters.values())
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params)
    if any(f.default_factory is not dataclasses.MISSING for f in dataclasses.fields(cls)):
        # Kept as dataclasses made it: a fresh default from the factory for each object.
        made = [cls(**{p.name: 0 for p in params if p.default is p.empty}) for _ in (1, 2)]
        factory = [
            f.name for f in dataclasses.fields(cls) if f.default_factory is not dataclasses.MISSING
        ]
        assert factory and all(getattr(made[0], n) is not getattr(made[1], n) for n in factory)
        return
    assert init.__qualname__ == f"{cls.__qualname__}.__init__"
    assert [(p.name, p.default) for p in params] == expected_signature(cls)
    assert init.__code__.co_varnames[0] == "self" and init.__module__ == cls.__module__


def test_the_objects_are_the_dataclasses_own() -> None:
    call = core.CallTool(now=1.0, ticket=2, name="echo", arguments={"a": 1})
    assert (call.timeout, call.progress, call.task, call.detach) == (None, False, None, False)
    assert call == dataclasses.replace(call) and hash(core.Reply(ticket=1)) == hash(
        core.Reply(ticket=1)
    )
    assert dataclasses.replace(call, ticket=3).ticket == 3
    with pytest.raises(dataclasses.FrozenInstanceError):
        call.ticket = 4  # type: ignore[misc]
    with pytest.raises(ValueError, match="timeout must be > 0"):  # __post_init__ still runs
        core.CallTool(now=1.0, ticket=2, name="echo", timeout=0)
    with pytest.raises(TypeError):
        core.CallTool(1.0, 2, "echo")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        core.Reply()  # type: ignore[call-arg]
    assert repr(core.WriteStdin(slot=0, data=b"x")) == "WriteStdin(slot=0, data=b'x')"


def test_a_class_it_cannot_build_keeps_its_generated_init() -> None:
    @dataclasses.dataclass(frozen=True, slots=True)
    class Positional:
        a: int

    @dataclasses.dataclass(frozen=True)
    class Unslotted:
        a: int

    @dataclasses.dataclass(slots=True, kw_only=True)
    class Mutable:
        a: int

    kept = {cls: cls.__dict__["__init__"] for cls in (Positional, Unslotted, Mutable)}
    namespace: dict[str, Any] = {"Positional": Positional, "Unslotted": Unslotted}
    quicken({**namespace, "Mutable": Mutable, "other": 1}, __name__)
    assert all(cls.__dict__["__init__"] is init for cls, init in kept.items())
    assert Positional(1).a == 1

"""What each driver package exports: the two client classes and the callback, handler and option
types a user annotates with, the same names in both."""

from __future__ import annotations

import dataclasses
import importlib
import inspect

import pytest

from mcp_core import Spec

EXPORTS = [
    "AssertionCallback",
    "AuthorizeCallback",
    "Client",
    "ClientGroup",
    "ClientOptions",
    "CompletionCallback",
    "DeviceCode",
    "DeviceCodeCallback",
    "FileTokenStore",
    "Handler",
    "ListChangedCallback",
    "ProgressCallback",
    "Task",
    "TokenStoreError",
    "UpdateCallback",
]


@pytest.mark.parametrize("package", ["mcp_asyncio", "mcp_sync"])
def test_driver_exports(package: str) -> None:
    module = importlib.import_module(package)
    assert sorted(module.__all__) == EXPORTS
    for name in EXPORTS:
        assert getattr(module, name) is not None, f"{package}.{name}"


@pytest.mark.parametrize("package", ["mcp_asyncio", "mcp_sync"])
def test_client_options_types_exactly_what_a_group_accepts(package: str) -> None:
    # ClientGroup(**client_options) is typed by ClientOptions: an option the group accepts and
    # the type leaves out would be refused by mypy, one the group refuses would pass mypy.
    module = importlib.import_module(package)
    client = inspect.signature(module.Client).parameters
    group = inspect.signature(module.ClientGroup).parameters
    names = {*client, *group, *(field.name for field in dataclasses.fields(Spec))}
    accepted = set()
    for name in names:
        try:
            module.ClientGroup({}, **{name: None})  # no server: nothing is validated or started
        except TypeError:
            continue
        accepted.add(name)
    options = module.ClientOptions
    own = {"wait", "fail_fast", "record", "replay"}  # the group's keywords, not the clients'
    assert own <= accepted
    assert set(options.__annotations__) == accepted - own
    assert options.__required_keys__ == frozenset()
    # The Client keywords among them have Client's own types (the spec fields' are
    # mcp_core.group.GroupSpecFields', checked against Spec in tests/core).
    for name, annotation in options.__annotations__.items():
        if name in client:
            assert annotation.__forward_arg__ == client[name].annotation, name

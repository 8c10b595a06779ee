"""What each driver package exports: the two client classes and the callback and handler types a
user annotates with, the same names in both."""

from __future__ import annotations

import importlib

import pytest

EXPORTS = [
    "AuthorizeCallback",
    "Client",
    "ClientGroup",
    "CompletionCallback",
    "FileTokenStore",
    "Handler",
    "ProgressCallback",
    "TokenStoreError",
    "UpdateCallback",
]


@pytest.mark.parametrize("package", ["mcp_asyncio", "mcp_sync"])
def test_driver_exports(package: str) -> None:
    module = importlib.import_module(package)
    assert sorted(module.__all__) == EXPORTS
    for name in EXPORTS:
        assert getattr(module, name) is not None, f"{package}.{name}"

"""``_mcp_io.dpop.can_sign``: found, never imported, since every client asks when it is built."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from _mcp_io import dpop


def test_a_client_built_does_not_import_the_signing_libraries() -> None:
    code = (
        "import sys, mcp_asyncio\n"
        "from _mcp_io.dpop import can_sign\n"
        "mcp_asyncio.Client(name='s', command='true')\n"
        "mcp_asyncio.Client(name='h', url='http://127.0.0.1:9/mcp')\n"
        "assert can_sign()\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('jwt', 'cryptography')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = eval(out.stdout)  # a printed list of module names
    assert "jwt" not in loaded and not [m for m in loaded if m.endswith(".ec")]


@pytest.mark.parametrize("missing", ["jwt", dpop._EC])
def test_without_either_library_nothing_signs(
    monkeypatch: pytest.MonkeyPatch, missing: str
) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str) -> object:
        if name == missing and name == "jwt":
            return None
        if name == missing:
            raise ModuleNotFoundError(name)  # a parent package that is not installed
        return real(name)

    dpop.can_sign.cache_clear()
    with monkeypatch.context() as patched:
        patched.setattr(importlib.util, "find_spec", find_spec)
        assert dpop.can_sign() is False
    dpop.can_sign.cache_clear()
    assert dpop.can_sign() is True

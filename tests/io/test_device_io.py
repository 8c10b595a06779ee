"""_mcp_io/device.py without a server: the instructions a device login shows, the repr that
hides the user code, and what the blocking driver makes of its callback's outcome."""

from __future__ import annotations

import io

import mcp_core as core
from _mcp_io.device import DeviceCode, instructions, show_device_code, show_on_stderr

ACTION = core.ShowDeviceCode(
    user_code="WDJB-MJHT",
    verification_uri="https://auth.example.com/device",
    verification_uri_complete="https://auth.example.com/device?user_code=WDJB-MJHT",
    expires_in=90.0,
)


def code(**changes: object) -> DeviceCode:
    fields: dict[str, object] = {
        "server": "notes",
        "user_code": ACTION.user_code,
        "verification_uri": ACTION.verification_uri,
        "verification_uri_complete": ACTION.verification_uri_complete,
        "expires_in": 900.0,
        **changes,
    }
    return DeviceCode(**fields)  # type: ignore[arg-type]


def test_the_instructions_name_the_uri_the_code_and_the_time_left() -> None:
    assert instructions(code()) == (
        "To log in to server 'notes', visit https://auth.example.com/device\n"
        "and enter the code WDJB-MJHT (within 15 minutes).\n"
        "Or open https://auth.example.com/device?user_code=WDJB-MJHT"
    )
    short = instructions(code(verification_uri_complete=None, expires_in=90.0))
    assert short.endswith("(within 90 seconds).") and "Or open" not in short


def test_stderr_gets_them_and_no_repr_shows_the_user_code() -> None:
    out = io.StringIO()
    show_on_stderr(code(), out)
    assert out.getvalue() == instructions(code()) + "\n"
    assert "WDJB-MJHT" not in repr(code()) + repr(ACTION)
    assert "https://auth.example.com/device" in repr(code())


def test_the_blocking_driver_reads_its_callback() -> None:
    got: list[DeviceCode] = []
    assert show_device_code(ACTION, got.append, "notes", lambda: 1.0) is None
    assert got == [code(expires_in=90.0)]

    async def never_awaited(shown: DeviceCode) -> None:
        got.append(shown)

    assert show_device_code(ACTION, never_awaited, "notes", lambda: 1.0) is None
    assert len(got) == 1  # an async callback given to the blocking driver: closed, not run

    def broken(shown: DeviceCode) -> None:
        raise ValueError(shown.user_code)

    failed = show_device_code(ACTION, broken, "notes", lambda: 2.0)
    assert failed == core.AuthorizationAbandoned(
        now=2.0, reason="the on_device_code callback raised ValueError"
    )

"""JSON-RPC 2.0 message shapes: building what we send, sorting what we receive.

Request ids are integers from the machine's counter. MCP 2024-11-05..2025-11-25 (basic/index):
an id "MUST NOT have been used before by the requestor in the same session"; 2026-07-28 only
asks that it differs from every other in-flight id. A counter that never goes back (not even
across reconnects) satisfies both.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "METHOD_NOT_FOUND",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "Incoming",
    "InvalidMessage",
    "Notification",
    "Request",
    "Response",
    "classify",
    "error_response",
    "notification",
    "request",
    "result_response",
]

METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
UNSUPPORTED_PROTOCOL_VERSION = -32022  # 2026-07-28 basic/index §Error Codes

RequestId = int | str


def request(request_id: int, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def notification(method: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message


def result_response(request_id: RequestId, result: Mapping[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def error_response(request_id: RequestId, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


@dataclass(slots=True)
class Response:
    """An answer to one of our requests: exactly one of ``result``/``error`` is set.

    Not frozen, unlike its siblings: one is built per answer, and a frozen dataclass's
    ``__init__`` costs three times as much. Nothing changes it after ``classify``."""

    id: RequestId
    result: Mapping[str, Any] | None
    error: Mapping[str, Any] | None


@dataclass(frozen=True, slots=True)
class Request:
    """A request the server sends us (legacy era only; the 2026-07-28 server never does)."""

    id: RequestId
    method: str
    params: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Notification:
    method: str
    params: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class InvalidMessage:
    """Valid JSON that is not a JSON-RPC message we can act on; ``reason`` is safe to log."""

    reason: str


Incoming = Response | Request | Notification | InvalidMessage


def _is_id(value: object) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool)) or isinstance(value, str)


def classify(message: object) -> Incoming:
    """Sort one decoded JSON value (never a batch: the caller unpacks arrays)."""
    if not isinstance(message, dict):
        return InvalidMessage(f"a {type(message).__name__} where a JSON-RPC object was expected")
    method = message.get("method")
    if isinstance(method, str):
        params = message.get("params")
        if not isinstance(params, dict):
            params = {}
        if "id" in message:
            if not _is_id(message["id"]):
                return InvalidMessage(f"request {method[:64]!r} with an invalid id")
            return Request(message["id"], method, params)
        return Notification(method, params)
    if "id" not in message or not (_is_id(message["id"]) or message["id"] is None):
        return InvalidMessage("a message with neither a method nor a usable id")
    result, error = message.get("result"), message.get("error")
    if isinstance(error, dict):
        if message["id"] is None:
            # 2025-11-25: an error whose request id could not be read; nothing to correlate.
            # Only a string message is shown: str() of an array nested deep enough raises
            # RecursionError (tests/core/wire/test_fuzz_jsonrpc.py).
            text = error.get("message")
            shown = text[:200] if isinstance(text, str) else "(no message)"
            return InvalidMessage(f"an error for no request: {shown}")
        return Response(message["id"], None, error)
    if isinstance(result, dict) and message["id"] is not None:
        return Response(message["id"], result, None)
    return InvalidMessage("a response with neither an object result nor an error")

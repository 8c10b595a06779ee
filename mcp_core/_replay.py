"""Record a session's events as JSON lines and replay them through the machine.

Format (version 2), one JSON object per line, every line ending in ``\\n``:

    {"format": "mcp-replay", "version": 2, "spec": {...}}         the header: the spec, redacted
    {"event": "Connect", "now": 0.0}                              then one line per event fed
    {"event": "StdoutReceived", "now": 0.2, "slot": 0, "generation": 1, "data": "{...}\\n"}

Version 2 added ``generation`` to process events and ``Spawn``; version 1 is refused.

- The header's spec is ``Spec.redacted()``: header values, env values, every arg, URL userinfo,
  query and fragment are ``[redacted]``, yet ``Spec.from_mapping`` accepts it again (args keep
  their count, URLs still parse). Every field is written, defaults included, so a recording
  does not change meaning when a default changes.
- Fields are written in declaration order with their declared names. A ``bytes`` value is a
  JSON string when it is valid UTF-8 (stdio traffic stays readable and diffable) and
  ``{"b64": "<base64>"}`` otherwise; decoding uses the field's declared type to turn either
  back into bytes. Tuples become arrays and come back as tuples where the type says so.
- Lines are ASCII (``ensure_ascii``), so any file or stream can hold them.

A ``Cassette`` is what a replaying client is answered from: every request of a recording that
got an answer, with the answer and the progress it reported, read from the server's bytes as
the replayed machine framed them (see ``Cassette``).

Replaying feeds the same events, with the same ``now``, to a fresh ``SessionMachine`` built from
the header's spec; the machine is deterministic, so it produces the same actions, except that
values taken from the spec are the redacted ones. ``encode_action`` redacts those same values
(``argv`` after the program, ``env`` and ``headers`` values, URLs), so encoded live actions and
encoded replayed actions compare equal.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any, Protocol, TypedDict

from ._config.spec import Spec
from ._transport.http_parts import content_type, parse_json_body
from ._vocabulary import events as _events
from ._vocabulary.actions import CREDENTIAL_HEADERS, Action, StartHttp, WriteStdin
from ._vocabulary.errors import McpError
from ._vocabulary.events import AuthorizationRedirected, Event
from ._vocabulary.urls import REDACTED, redact_url
from ._wire import jsonrpc as rpc
from ._wire.framing import LineDecoder, Message
from ._wire.sse import SseDecoder, SseEvent

__all__ = [
    "FORMAT",
    "VERSION",
    "Cassette",
    "Recorder",
    "decode_event",
    "encode_action",
    "encode_event",
    "read_recording",
    "replay",
    "replay_lines",
]

FORMAT = "mcp-replay"
VERSION = 2


class _Machine(Protocol):
    def handle(self, event: Event) -> list[Action]: ...


# --- values <-> JSON ----------------------------------------------------------------------------


def _encode_bytes(data: bytes) -> object:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return {"b64": base64.b64encode(data).decode("ascii")}


def _to_json(value: object) -> object:
    """A JSON-ready copy of ``value``; dataclasses become ``{"class": Name, fields...}``
    (the fields their equality compares)."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return _encode_bytes(bytes(value))
    if isinstance(value, McpError):
        # str(): a JsonRpcError's message is the server's words; the sentence keeps its code.
        return {"error": type(value).__name__, "message": str(value)}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out: dict[str, object] = {"class": type(value).__name__}
        for f in dataclasses.fields(value):
            field_value = getattr(value, f.name)
            # Not ``raw`` (the wire object again, which the value already says), nor a field
            # added later while it is at its default: recordings made before it stay the same.
            if f.compare and not (f.metadata.get("added") and field_value == f.default):
                out[f.name] = _to_json(field_value)
        return out
    if isinstance(value, Mapping):
        return {str(k): _to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_to_json(v) for v in value]
    raise TypeError(f"cannot record a value of type {type(value).__name__}")


def _from_json(hint: Any, value: object) -> object:
    """Undo ``_to_json`` for a field declared as ``hint``: a ``bytes`` field comes back as
    bytes; every other field type of today's events is plain JSON already.

    An event with a field of another shape (``bytes | None``, a tuple of bytes) needs a
    branch here; the round-trip test over every event class fails until it has one.
    """
    if hint is bytes:
        return _decode_bytes(value)
    if hint == tuple[tuple[str, str], ...] and isinstance(value, list):
        return tuple(tuple(pair) for pair in value)  # HTTP header pairs
    if hint == tuple[int, ...] and isinstance(value, list):
        return tuple(value)  # CancelCall.others
    return value


def _decode_bytes(value: object) -> bytes:
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, Mapping) and set(value) == {"b64"} and isinstance(value["b64"], str):
        try:
            return base64.b64decode(value["b64"], validate=True)
        except binascii.Error:
            pass
    raise ValueError('a bytes field must be a string or {"b64": <base64>}')


@cache
def _event_classes() -> dict[str, tuple[type[Event], dict[str, Any]]]:
    """Every event class of ``_vocabulary/events`` by name, with its resolved field types. Found by
    looking, so event classes added later are recorded and replayed without a change here."""
    found = {}
    for name in dir(_events):
        obj = getattr(_events, name)
        if isinstance(obj, type) and issubclass(obj, Event) and obj is not Event:
            found[name] = (obj, typing.get_type_hints(obj))
    return found


# --- events ------------------------------------------------------------------------------------


def encode_event(event: Event, *, secret: bool = False) -> dict[str, object]:
    """``{"event": ClassName, "now": ..., <fields>...}`` for one event.

    Credentials never reach a recording: secret header values, the random bytes of the
    authorization step (kept as zeros of the same length), the values of an authorization
    response's parameters and signed assertions are replaced; with ``secret`` (an answer of
    the authorization server: ``SessionMachine.is_secret``) so is a body chunk. A replay of a
    session that authorized therefore stops matching at the authorization response."""
    out: dict[str, object] = {"event": type(event).__name__}
    for f in dataclasses.fields(event):
        value = getattr(event, f.name)
        if f.name == "headers":
            value = _redact_header_pairs(value)
        elif f.name == "entropy":
            value = bytes(len(value))
        elif f.name == "params" and isinstance(event, AuthorizationRedirected):
            value = dict.fromkeys(value, REDACTED)
        elif f.name == "assertion" or (f.name == "data" and secret):
            value = REDACTED
        out[f.name] = _to_json(value)
    return out


def _redact_header_pairs(pairs: tuple[tuple[str, str], ...]) -> list[list[str]]:
    return [
        [name, REDACTED if name.lower() in CREDENTIAL_HEADERS else value] for name, value in pairs
    ]


def decode_event(data: Mapping[str, object]) -> Event:
    """The event ``encode_event`` wrote. ``ValueError`` for an unknown event name, a missing
    or unknown field, or a value the event refuses."""
    name = data.get("event")
    known = _event_classes().get(name) if isinstance(name, str) else None
    if known is None:
        raise ValueError(f"unknown event {name!r} in the recording")
    cls, hints = known
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        if key == "event":
            continue
        if key not in hints:
            raise ValueError(f"event {name} has no field {key!r}")
        kwargs[key] = _from_json(hints[key], value)
    try:
        return cls(**kwargs)
    except TypeError as exc:  # a missing field
        raise ValueError(f"event {name} cannot be built: {exc}") from None


# --- actions -----------------------------------------------------------------------------------


def _redact_field(name: str, value: object, secret: bool = False) -> object:
    # Values an action copies out of the spec (no secret reaches a replay file).
    if name == "argv" and isinstance(value, (list, tuple)) and value:
        return [_to_json(value[0]), *([REDACTED] * (len(value) - 1))]
    if name in ("env", "headers") and isinstance(value, Mapping):
        return {str(k): REDACTED for k in value}
    if name == "headers" and isinstance(value, tuple):  # a request's: credentials by name
        return _redact_header_pairs(value)
    if name in ("url", "verification_uri_complete") and isinstance(value, str):
        return redact_url(value)
    if name in ("authorization", "state", "user_code") or (name == "body" and secret):
        return REDACTED
    return _to_json(value)


def encode_action(action: Action) -> dict[str, object]:
    """``{"action": ClassName, <fields>...}`` for one action, JSON-ready.

    Errors become ``{"error": ClassName, "message": ...}``; dataclass values (``Status``,
    ``Tool``, ``CallToolResult``, content blocks) become ``{"class": ClassName, <fields>}``;
    bytes are encoded as for events. Secrets copied from the spec are redacted (see above), and
    so are a ``SaveAuthorization``'s record and a ``secret`` request's body.
    """
    out: dict[str, object] = {"action": type(action).__name__}
    secret = getattr(action, "secret", False) is True
    for f in dataclasses.fields(action):
        value = getattr(action, f.name)
        if f.name == "dpop":  # written only when there is one: older recordings stay the same
            if value is not None:
                out["dpop"] = {"htm": value.htm, "htu": redact_url(value.htu), "nonce": value.nonce}
            continue
        out[f.name] = _redact_field(f.name, value, secret)
    return out


# --- recording and replaying -------------------------------------------------------------------


def _line(obj: Mapping[str, object]) -> str:
    return json.dumps(obj, separators=(",", ":")) + "\n"


class Recorder:
    """Writes a recording through ``write`` (one call per line, each ending in ``\\n``).

    The header is written at construction; ``record`` writes one event. The recorder holds
    no file: the driver owns the I/O and decides where the lines go.
    """

    def __init__(
        self,
        spec: Spec,
        write: Callable[[str], object],
        *,
        handlers: Iterable[str] = (),
        elicitation_modes: Iterable[str] = ("form",),
        sampling_tools: bool = False,
        known_era: str | None = None,
        list_changed: bool = False,
        accept_tasks: bool = False,
    ) -> None:
        """``handlers``, ``elicitation_modes``, ``sampling_tools``, ``known_era`` (the
        machine's attribute: the era verdict of an earlier probe it started from),
        ``list_changed`` and ``accept_tasks``: what the machine was built with (they change
        what it declares, answers, sends and asks the driver to do, so a replay must build the
        same machine)."""
        self._write = write
        header: dict[str, object] = {"format": FORMAT, "version": VERSION, "spec": spec.redacted()}
        if handlers:
            header["handlers"] = sorted(handlers)
        modes = sorted(set(elicitation_modes))
        if modes != ["form"]:  # the default is not written: older recordings stay the same
            header["elicitation_modes"] = modes
        if sampling_tools:  # written only when declared: older recordings stay the same
            header["sampling_tools"] = True
        if accept_tasks:  # likewise
            header["accept_tasks"] = True
        if known_era is not None:  # not written when unknown: older recordings stay the same
            header["known_era"] = known_era
        if list_changed:  # written only when asked for: older recordings stay the same
            header["list_changed"] = True
        write(_line(header))

    def record(self, event: Event, *, secret: bool = False) -> None:
        """Write ``event`` as one line (``secret``: see ``encode_event``)."""
        self._write(_line(encode_event(event, secret=secret)))


def read_recording(lines: Iterable[str]) -> tuple[Spec, list[Event]]:
    """The spec and events of a recording. Blank lines are skipped.

    Raises ``ValueError`` (naming the line) for an empty input, a header of another format or
    version, or a line that is not a valid event; ``InvalidSpec`` if the header's spec is
    refused.
    """
    spec, _keywords, events = _read(lines)
    return spec, events


class _Built(TypedDict):
    """The keywords a recorded machine was built with, from the header (``Recorder``)."""

    handlers: tuple[str, ...]
    elicitation_modes: tuple[str, ...]
    sampling_tools: bool
    known_era: str | None
    list_changed: bool
    accept_tasks: bool


def _read(lines: Iterable[str]) -> tuple[Spec, _Built, list[Event]]:
    spec: Spec | None = None
    built = _Built(
        handlers=(),
        elicitation_modes=("form",),
        sampling_tools=False,
        known_era=None,
        list_changed=False,
        accept_tasks=False,
    )
    events: list[Event] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except ValueError:
            raise ValueError(f"recording line {number} is not JSON") from None
        if not isinstance(data, dict):
            raise ValueError(f"recording line {number} is not a JSON object")
        if spec is None:
            spec = _read_header(data)
            built = _built(data)
            continue
        try:
            events.append(decode_event(data))
        except ValueError as exc:
            raise ValueError(f"recording line {number}: {exc}") from None
    if spec is None:
        raise ValueError("the recording is empty: no header line")
    return spec, built, events


def _built(data: dict[str, Any]) -> _Built:
    listed = data.get("handlers", [])
    if not isinstance(listed, list) or not all(isinstance(h, str) for h in listed):
        raise ValueError('the recording header\'s "handlers" must be a list of names')
    modes = data.get("elicitation_modes", ["form"])
    if not isinstance(modes, list) or not all(isinstance(m, str) for m in modes):
        raise ValueError('the recording header\'s "elicitation_modes" must be a list of names')
    known_era = data.get("known_era")
    if known_era not in (None, "legacy", "modern", "sse"):
        raise ValueError('the recording header\'s "known_era" must be "legacy", "modern" or "sse"')
    return _Built(
        handlers=tuple(listed),
        elicitation_modes=tuple(modes),
        sampling_tools=_flag(data, "sampling_tools"),
        known_era=known_era,
        list_changed=_flag(data, "list_changed"),
        accept_tasks=_flag(data, "accept_tasks"),
    )


def _flag(data: dict[str, Any], name: str) -> bool:
    value = data.get(name, False)
    if not isinstance(value, bool):
        raise ValueError(f'the recording header\'s "{name}" must be true or false')
    return value


def _read_header(data: Mapping[str, object]) -> Spec:
    if data.get("format") != FORMAT:
        raise ValueError(
            f'not an {FORMAT} recording (the first line must have "format": "{FORMAT}")'
        )
    if data.get("version") != VERSION:
        raise ValueError(
            f"{FORMAT} version {data.get('version')!r} is not supported (this client reads "
            f"version {VERSION}); record the session again with this client"
        )
    spec = data.get("spec")
    if not isinstance(spec, Mapping):
        raise ValueError('the recording header has no "spec" object')
    return Spec.from_mapping(spec)


def replay_lines(
    lines: Iterable[str], *, machine: Callable[[Spec], _Machine] | None = None
) -> list[Action]:
    """Feed a recording's events to a fresh machine and return every action, in order.

    ``machine`` builds the machine from the header's spec (default: ``SessionMachine``).
    Raises as ``read_recording`` does.
    """
    spec, built, events = _read(lines)
    if machine is None:
        from ._session.machine import SessionMachine  # lazily: the machine imports this package

        session: _Machine = SessionMachine(spec, **built)
    else:
        session = machine(spec)
    actions: list[Action] = []
    for event in events:
        actions.extend(session.handle(event))
    return actions


def replay(path: str) -> list[Action]:
    """``replay_lines`` over the file at ``path`` (UTF-8). The only I/O in ``mcp_core``."""
    with open(path, encoding="utf-8") as recording:
        return replay_lines(recording)


# --- answering from a recording ------------------------------------------------------------------

# Requests a replaying client sends whatever the recorded one did: answered by method alone.
_BY_METHOD = frozenset({"initialize", "server/discover"})
# Requests answered with an empty result when the recording holds none (its client never
# needed them): the replaying client's own upkeep.
_EMPTY_OK = frozenset({"ping", "logging/setLevel", "notifications/initialized"})


@dataclass(frozen=True, slots=True)
class _Take:
    """One answered request of a recording: its answer (``result`` or ``error``) and the
    progress notifications the server sent for it, in order."""

    response: Mapping[str, Any]
    progress: tuple[Mapping[str, Any], ...]


def _key(method: str, params: object) -> str:
    """What identifies a request among the recorded ones: its method and its params without
    ``_meta`` (progress tokens, trace context and the 2026-07-28 protocol fields differ from
    one run to the next), as canonical JSON."""
    if method in _BY_METHOD or not isinstance(params, Mapping):
        return method
    rest = {k: v for k, v in params.items() if k != "_meta"}
    return method + " " + json.dumps(rest, sort_keys=True, separators=(",", ":"), default=str)


class Cassette:
    """The answers of a recorded session, by request: ``answer(request)`` gives the messages
    that answer a request of a replaying client, as the recorded server answered the same
    request (same method, same params apart from ``_meta``).

    Built from a recording by ``from_lines``: its events are replayed through a fresh machine
    to get what the client sent (the requests, by id), and the server's bytes in the events
    (stdout lines, HTTP bodies as JSON or SSE) give what it answered. Repeated requests are
    answered in recorded order, and the last answer again once they run out. What it leaves
    out: requests that were never answered, the server's own requests (sampling,
    elicitation, roots) and its other notifications (log messages, list changes). A session
    that ran an OAuth login is read up to the login (its credentials are not recorded).
    """

    def __init__(self, spec: Spec, takes: Mapping[str, list[_Take]]) -> None:
        self.spec = spec  # the recorded session's spec (redacted)
        self._takes = {key: list(found) for key, found in takes.items()}
        self._methods = {key.split(" ", 1)[0] for key in takes}
        self._used: dict[str, int] = {}

    @classmethod
    def from_lines(cls, lines: Iterable[str]) -> Cassette:
        """Read a recording (raises as ``read_recording`` does)."""
        spec, built, events = _read(lines)
        from ._session.machine import SessionMachine  # lazily: the machine imports this package

        machine = SessionMachine(spec, **built)
        wire = _Wire(spec.max_message_bytes)
        for event in events:
            try:
                actions = machine.handle(event)
            except McpError:  # a recording the machine cannot follow further (a login)
                break
            wire.received(event)
            for action in actions:
                wire.sent(action)
        return cls(spec, wire.takes())

    def answer(self, message: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The messages that answer ``message`` from the client: the recorded progress (when
        the request asks for progress, with its token), then the response with its id. A
        request the recording does not hold gets a JSON-RPC error that says so; a
        notification or a response of the client gets nothing."""
        method, request_id = message.get("method"), message.get("id")
        if not isinstance(method, str) or request_id is None:
            return []
        params = message.get("params")
        key = _key(method, params)
        found = self._takes.get(key)
        if not found:
            if method in _EMPTY_OK:
                return [rpc.result_response(request_id, {})]
            return [rpc.error_response(request_id, *self._missing(method, params))]
        index = self._used.get(key, 0)
        self._used[key] = index + 1
        take = found[min(index, len(found) - 1)]
        meta = params.get("_meta") if isinstance(params, Mapping) else None
        token = meta.get("progressToken") if isinstance(meta, Mapping) else None
        out: list[dict[str, Any]] = []
        if token is not None:
            for note in take.progress:
                out.append(
                    rpc.notification("notifications/progress", {**note, "progressToken": token})
                )
        out.append({"jsonrpc": "2.0", "id": request_id, **take.response})
        return out

    def _missing(self, method: str, params: object) -> tuple[int, str]:
        if method not in self._methods:
            return rpc.METHOD_NOT_FOUND, f"the recording holds no {method} request"
        shown = _key(method, params).partition(" ")[2]
        return rpc.INVALID_PARAMS, (
            f"the recording holds no {method} with these params: {shown[:200]}; record the "
            f"session again to add it"
        )


class _Wire:
    """The JSON-RPC messages of a replayed recording: the client's requests by id (from the
    actions), and the server's answers and progress (from the events)."""

    def __init__(self, max_message_bytes: int) -> None:
        self._limit = max_message_bytes  # a message beyond it was discarded live too
        self._requests: dict[object, tuple[str, object]] = {}  # id -> method, params
        self._tokens: dict[object, object] = {}  # progress token -> request id
        self._answers: dict[object, Mapping[str, Any]] = {}  # request id -> result or error
        self._progress: dict[object, list[Mapping[str, Any]]] = {}
        self._stdout: dict[tuple[int, int], LineDecoder] = {}  # (slot, generation) -> lines
        self._streams: dict[int, SseDecoder | bytearray] = {}  # HTTP stream -> body so far

    def sent(self, action: Action) -> None:
        if isinstance(action, WriteStdin):
            for line in action.data.splitlines():
                self._outgoing(line)
        elif isinstance(action, StartHttp) and action.body is not None:
            self._outgoing(action.body)

    def _outgoing(self, data: bytes) -> None:
        message = _json(data)
        method = message.get("method") if message is not None else None
        if message is None or not isinstance(method, str) or "id" not in message:
            return
        params = message.get("params")
        self._requests[message["id"]] = (method, params)
        meta = params.get("_meta") if isinstance(params, Mapping) else None
        if isinstance(meta, Mapping) and "progressToken" in meta:
            self._tokens[meta["progressToken"]] = message["id"]

    def received(self, event: Event) -> None:
        if isinstance(event, _events.StdoutReceived):
            key = (event.slot, event.generation)
            lines = self._stdout.get(key)
            if lines is None:
                lines = self._stdout[key] = LineDecoder(self._limit)
            for line in lines.feed(event.data):
                if isinstance(line, Message) and isinstance(line.payload, dict):
                    self._incoming(line.payload)
        elif isinstance(event, _events.HttpResponseStarted):
            sse = content_type(event.headers) == "text/event-stream"
            self._streams[event.stream] = SseDecoder(self._limit) if sse else bytearray()
        elif isinstance(event, _events.HttpBodyReceived) and event.stream in self._streams:
            body = self._streams[event.stream]
            if isinstance(body, SseDecoder):
                for frame in body.feed(event.data):
                    if isinstance(frame, SseEvent):
                        self._incoming(_json(frame.data.encode()))
            else:
                body += event.data
        elif isinstance(event, _events.HttpResponseEnded) and event.stream in self._streams:
            ended = self._streams.pop(event.stream)
            if isinstance(ended, bytearray):
                self._incoming(_json(bytes(ended)))

    def _incoming(self, message: Mapping[str, Any] | None) -> None:
        if message is None:
            return
        if message.get("method") == "notifications/progress":
            params = message.get("params")
            if isinstance(params, Mapping):
                owner = self._tokens.get(params.get("progressToken"))
                note = {k: v for k, v in params.items() if k != "progressToken"}
                self._progress.setdefault(owner, []).append(note)
            return
        request_id = message.get("id")
        if "method" in message or request_id not in self._requests:
            return  # a server request, another notification, or an answer to nothing sent
        answer = {k: message[k] for k in ("result", "error") if k in message}
        if len(answer) == 1:
            self._answers[request_id] = answer

    def takes(self) -> dict[str, list[_Take]]:
        """The answered requests, by ``_key``, in the order they were sent."""
        found: dict[str, list[_Take]] = {}
        for request_id, (method, params) in self._requests.items():
            answer = self._answers.get(request_id)
            if answer is not None:
                progress = tuple(self._progress.get(request_id, ()))
                found.setdefault(_key(method, params), []).append(_Take(answer, progress))
        return found


def _json(data: bytes) -> dict[str, Any] | None:
    """``data`` as a JSON object, or None (not JSON, or not an object)."""
    value = parse_json_body(data)
    return value if isinstance(value, dict) else None

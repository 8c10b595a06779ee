"""The public surface, pinned: ``mcp_core.__all__`` is the protocol, and each public submodule
holds one other concern. A name added, moved or dropped is a change to the API a user imports,
so it must show up here as a deliberate edit."""

from __future__ import annotations

import importlib
import types

import pytest

import mcp_core

MACHINE = [
    "AUTH_MAX_BYTES",
    "AUTH_REQUEST_TIMEOUT",
    "HANDLED_REQUESTS",
    "OAuthSettings",
    "SessionMachine",
]
EVENTS = [
    "AssertionSigned",
    "AuthorizationAbandoned",
    "AuthorizationPrepared",
    "AuthorizationRedirected",
    "AwaitReady",
    "CallTool",
    "CancelCall",
    "Close",
    "Connect",
    "Event",
    "FollowTask",
    "HttpBodyReceived",
    "HttpFailed",
    "HttpResponseEnded",
    "HttpResponseStarted",
    "ListItems",
    "ListTools",
    "LOG_LEVELS",
    "ProcessExited",
    "ProcessSpawned",
    "Request",
    "RootsChanged",
    "ServerRequestAnswered",
    "SpawnFailed",
    "StderrReceived",
    "StdoutClosed",
    "StdoutReceived",
    "Subscribe",
    "TimerFired",
    "Unsubscribe",
    "WriteFailed",
]
ACTIONS = [
    "AbortHttp",
    "Action",
    "Authorize",
    "PrepareAuthorization",
    "SaveAuthorization",
    "SignAssertion",
    "ObtainAssertion",
    "CloseStdin",
    "DpopProof",
    "ElicitationComplete",
    "HandleServerRequest",
    "ListChanged",
    "Log",
    "ProgressUpdate",
    "ResourceUpdated",
    "Reply",
    "SettleReservation",
    "ShowDeviceCode",
    "SignalProcess",
    "Spawn",
    "StartHttp",
    "WriteStdin",
]
MODELS = [
    "AudioContent",
    "CallToolResult",
    "Completion",
    "GetPromptResult",
    "Icon",
    "Prompt",
    "PromptArgument",
    "PromptMessage",
    "ReadResourceResult",
    "Resource",
    "ResourceContents",
    "ResourceTemplate",
    "PromptRef",
    "ResourceRef",
    "EmbeddedResource",
    "ImageContent",
    "ResourceLink",
    "Status",
    "TaskCancelled",
    "TaskStatus",
    "TextContent",
    "Tool",
    "UnknownContent",
    # sampling/createMessage, typed (2025-11-25 sampling with tools)
    "CreateMessageRequest",
    "SamplingMessage",
    "ToolResultContent",
    "ToolUseContent",
    # the values of Status.state, .transport and .era
    "SessionEra",
    "SessionState",
    "TransportName",
]
ERRORS = [
    "AuthorizationFailed",
    "AuthorizationRequired",
    "AuthorizationUnavailable",
    "Busy",
    "ConnectFailed",
    "HttpError",
    "InitializationFailed",
    "InvalidResponse",
    "InvalidSpec",
    "JsonRpcError",
    "McpError",
    "MessageTooLarge",
    "MissingClientCapability",
    "NoHttpClient",
    "NotReady",
    "RequestTimeout",
    "ServerExited",
    "ServerUnreachable",
    "SessionRejected",
    "UnexpectedEvent",
    "UnknownPrompt",
    "UnknownTool",
    "UnmeteredCall",
    "UnsupportedVersion",
    "UrlElicitationRequired",
    "NotSupported",
    "OutputValidationError",
    "InvalidArguments",
    "ListTooLong",
    "UsedAfterFork",
    "WrongEventLoop",
]
NAMES = ["normalise_server", "parse_tool_name", "tool_name"]
VERSIONS = ["LATEST_LEGACY", "LEGACY_VERSIONS", "MODERN_VERSION"]
SPEND = ["BudgetExhausted", "InMemorySpendGate", "Reservation", "SpendGate"]
TOKENS = ["InMemoryTokenStore", "StoredAuthorization", "TokenStore"]
# Also in mcp_core.config; at the top level because the spec names ``mcp_core.load_config``.
CONFIG = ["InvalidConfig", "LoadedConfig", "load_config"]

SURFACE = [
    *MACHINE,
    *EVENTS,
    *ACTIONS,
    "Spec",
    "SpecFields",
    *MODELS,
    *ERRORS,
    *NAMES,
    *VERSIONS,
    *SPEND,
]
SURFACE += TOKENS
SURFACE += CONFIG

SUBMODULES = {
    "mcp_core.config": ["InvalidConfig", "LoadedConfig", "load_config"],
    "mcp_core.replay": [
        "Cassette",
        "Recorder",
        "decode_event",
        "encode_action",
        "encode_event",
        "read_recording",
        "replay",
        "replay_lines",
    ],
    "mcp_core.group": [
        "GroupPlan",
        "GroupSpecFields",
        "GroupSpecs",
        "LoadedConfigLike",
        "NameTable",
        "Named",
        "PromptTable",
        "ToolTable",
        "down_error",
        "plan_group",
        "server_parts",
    ],
    "mcp_core.driver": [
        "ENTROPY_BYTES",
        "INHERITED_ENV",
        "CompletionRef",
        "client_assertion_claims",
        "completion_params",
        "inherit_environment",
        "lists_tools_first",
        "proxy_url_problem",
        "redact_url",
        "reservation_facts",
        "token_store_key",
    ],
    "mcp_core.skills": [
        "DIRECTORY_MIME_TYPE",
        "MAX_SKILL_BYTES",
        "MAX_SKILL_RESOURCES",
        "SKILLS_EXTENSION",
        "DirectoryListing",
        "Skill",
        "SkillResource",
        "SkillVerificationError",
        "SkillsListing",
        "SkillsPage",
        "parse_frontmatter",
        "read_skill_contents",
        "skill_from_get",
        "skill_from_wire",
        "skills_page",
        "verify_skill_file",
    ],
    "mcp_core.providers": [
        "ToolDeclarations",
        "anthropic_tool_result",
        "anthropic_tools",
        "gemini_tool_result",
        "gemini_tools",
        "openai_response_tool_result",
        "openai_response_tools",
        "openai_tool_images",
        "openai_tool_result",
        "openai_tools",
    ],
    "mcp_core.states": [
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
    ],
}


def test_the_top_level_is_the_protocol_surface() -> None:
    assert sorted(mcp_core.__all__) == sorted(SURFACE)
    assert len(set(mcp_core.__all__)) == len(mcp_core.__all__)
    for name in mcp_core.__all__:
        assert getattr(mcp_core, name) is not None, name


def test_star_import_gives_exactly_the_surface() -> None:
    namespace: dict[str, object] = {}
    exec("from mcp_core import *", namespace)
    assert sorted(k for k in namespace if k != "__builtins__") == sorted(SURFACE)


@pytest.mark.parametrize(("module_name", "names"), SUBMODULES.items())
def test_each_submodule_exports_its_names(module_name: str, names: list[str]) -> None:
    module = importlib.import_module(module_name)
    assert module.__doc__, f"{module_name} says what it is for"
    assert sorted(module.__all__) == sorted(names)
    for name in names:
        assert getattr(module, name) is not None, f"{module_name}.{name}"


def test_moved_names_are_not_top_level_and_submodules_are_not_shadowed() -> None:
    moved = {name for names in SUBMODULES.values() for name in names} - set(CONFIG)
    assert not moved & set(mcp_core.__all__)
    for module_name in SUBMODULES:
        short = module_name.rpartition(".")[2]
        assert short not in mcp_core.__all__
        importlib.import_module(module_name)
        assert isinstance(getattr(mcp_core, short), types.ModuleType), short


def test_config_names_are_the_same_objects_in_both_places() -> None:
    config = importlib.import_module("mcp_core.config")
    for name in CONFIG:
        assert getattr(mcp_core, name) is getattr(config, name)

"""The core's shape, which import-linter's contracts (pyproject.toml, `make lint`) rely on: every
private part of the core is in the drivers' forbidden list and in exactly one layer, and no
file of the core is longer than a reader can hold (800 lines)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import mcp_core

CORE = Path(mcp_core.__file__).resolve().parent
CONTRACTS = {
    contract["id"]: contract
    for contract in tomllib.loads((CORE.parent / "pyproject.toml").read_text())["tool"][
        "importlinter"
    ]["contracts"]
}
MAX_LINES = 800


def _children() -> set[str]:
    """The core's modules and packages one level down, by name."""
    names = {path.stem for path in CORE.glob("*.py") if path.stem != "__init__"}
    names |= {path.parent.name for path in CORE.glob("*/__init__.py")}
    return names


def test_every_private_part_of_the_core_is_forbidden_to_the_drivers() -> None:
    modules = CONTRACTS["public-core"]["forbidden_modules"]
    forbidden = {name.removeprefix("mcp_core.") for name in modules}
    assert forbidden == {name for name in _children() if name.startswith("_")}


def test_every_part_of_the_core_is_in_one_layer() -> None:
    layers = CONTRACTS["core-layers"]["layers"]
    named = [
        name.strip() for layer in layers for name in layer.replace("|", ":").split(":")
    ]
    assert sorted(named) == sorted(_children())


def test_no_file_of_the_core_is_over_800_lines() -> None:
    long = {
        str(path.relative_to(CORE)): lines
        for path in CORE.rglob("*.py")
        if (lines := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert long == {}

"""`mcp-client skills`, run as a user runs it (tests/cli/test_cli.py's way: a subprocess, real
servers, exit codes), against the TypeScript SDK's skills server (tests/servers/skills_server.mjs,
npm @modelcontextprotocol/server, SEP-2640): as it is, listing "dynamic" resources, changing a
file on the wire after its own check, serving two skills of one name (one with a binary file);
and the SDK's py_server, which does not declare the extension.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
from pathlib import Path

import pytest

from tests.cli.test_cli import read_table, run
from tests.conftest import REPO_ROOT, SERVERS_DIR, py_server_argv

pytestmark = pytest.mark.timeout(60)

SKILLS = SERVERS_DIR / "skills"
SKILL_MD = "skill://pdf-processing/SKILL.md"
FORMS = "skill://pdf-processing/references/FORMS.md"
SKILL_TEXT = (SKILLS / "pdf-processing" / "SKILL.md").read_bytes()
FORMS_TEXT = (SKILLS / "pdf-processing" / "references" / "FORMS.md").read_bytes()
BLOB = b"\x00\x01binary\xff"  # not UTF-8: served as a blob
TEAM_B = "skill://team-b/pdf-processing/SKILL.md"
LIST_COLUMNS = ["name", "uri", "files", "description"]
FILE_COLUMNS = ["uri", "size", "digest"]


def digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def peer(skills: Path = SKILLS, **env: str) -> dict[str, object]:
    if not (REPO_ROOT / "node_modules" / "@modelcontextprotocol" / "server").is_dir():
        pytest.skip("npm @modelcontextprotocol/server is not installed: run `make node_modules`")
    node = shutil.which("node")
    assert node is not None
    return {
        "command": node,
        "args": [str(SERVERS_DIR / "skills_server.mjs"), str(skills)],
        "env": env,
    }


@pytest.fixture(name="config")
def _config(tmp_path: Path) -> Path:
    """The skills peer as it is ("skills"), with "dynamic" resources ("dynamic"), with FORMS.md
    grown by a line on the wire ("grown") or SKILL.md changed at one character ("swapped"),
    serving two skills named pdf-processing, one with a binary file ("twins"), and py_server
    ("plain"; "plain-modern" without server/discover, so its capabilities are not known)."""
    twins = tmp_path / "twins"
    for team in ("team-a", "team-b"):
        (twins / team / "pdf-processing").mkdir(parents=True)
        (twins / team / "pdf-processing" / "SKILL.md").write_bytes(SKILL_TEXT)
    (twins / "team-b" / "pdf-processing" / "assets").mkdir()
    (twins / "team-b" / "pdf-processing" / "assets" / "logo.bin").write_bytes(BLOB)
    py = py_server_argv()
    config = {
        "mcpServers": {
            "skills": peer(),
            "dynamic": peer(SKILLS_DYNAMIC="1"),
            "grown": peer(SKILLS_TAMPER=FORMS, SKILLS_TAMPER_MODE="append"),
            "swapped": peer(SKILLS_TAMPER=SKILL_MD, SKILLS_TAMPER_MODE="swap"),
            "twins": peer(twins),
            "plain": {"command": py[0], "args": py[1:]},
            # era "modern" asks nothing before the request: skills/list goes out, -32601.
            "plain-modern": {"command": py[0], "args": py[1:], "era": "modern"},
        }
    }
    path = tmp_path / ".mcp.json"
    path.write_text(json.dumps(config))
    return path


def skills(config: Path, *args: str) -> tuple[int, str, str]:
    done = run("skills", *args, "--config", str(config))
    return done.returncode, done.stdout, done.stderr


def test_the_listing_is_a_table_of_skills(config: Path) -> None:
    code, out, err = skills(config, "skills")
    assert code == 0, err
    (row,) = read_table(out, LIST_COLUMNS)
    assert row["name"] == ["pdf-processing"] and row["uri"] == [SKILL_MD]
    assert row["files"] == ["2"]
    assert " ".join(row["description"]) == (
        "Extract text and tables from PDF files; fill in PDF forms."
    )


def test_the_listing_as_json_is_what_the_server_sent(config: Path) -> None:
    code, out, err = skills(config, "skills", "--json")
    assert code == 0, err
    (entry,) = json.loads(out)
    assert entry["uri"] == SKILL_MD
    assert entry["frontmatter"]["metadata"] == {"version": "1.0", "reviewed": "yes"}
    assert entry["resources"] == [
        {"uri": SKILL_MD, "digest": digest(SKILL_TEXT), "size": len(SKILL_TEXT)},
        {"uri": FORMS, "digest": digest(FORMS_TEXT), "size": len(FORMS_TEXT)},
    ]


@pytest.mark.parametrize("skill", ["pdf-processing", SKILL_MD, "skill://pdf-processing"])
def test_a_skill_by_name_or_uri_shows_its_files(config: Path, skill: str) -> None:
    # A URI is asked for with skills/get; its directory stands for its SKILL.md.
    code, out, err = skills(config, "skills", skill)
    assert code == 0, err
    assert read_table(out, FILE_COLUMNS) == [
        {"uri": [SKILL_MD], "size": [str(len(SKILL_TEXT))], "digest": [digest(SKILL_TEXT)]},
        {"uri": [FORMS], "size": [str(len(FORMS_TEXT))], "digest": [digest(FORMS_TEXT)]},
    ]
    code, out, err = skills(config, "skills", skill, "--json")
    assert code == 0, err
    assert json.loads(out)["uri"] == SKILL_MD


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--read"], SKILL_TEXT),  # SKILL.md by default
        (["--read", "references/FORMS.md"], FORMS_TEXT),
        (["--read", FORMS], FORMS_TEXT),
    ],
)
def test_read_prints_a_verified_file_as_it_is(
    config: Path, args: list[str], expected: bytes
) -> None:
    code, out, err = skills(config, "skills", "pdf-processing", *args)
    assert code == 0, err
    assert out == expected.decode()


def test_read_as_json(config: Path) -> None:
    code, out, err = skills(config, "skills", "pdf-processing", "--read", "--json")
    assert code == 0, err
    assert json.loads(out) == {
        "uri": SKILL_MD,
        "size": len(SKILL_TEXT),
        "digest": digest(SKILL_TEXT),
        "text": SKILL_TEXT.decode(),
    }


def test_a_dynamic_skill_lists_no_files_and_reads_unchecked(config: Path) -> None:
    code, out, err = skills(config, "dynamic")
    assert code == 0, err
    assert read_table(out, LIST_COLUMNS)[0]["files"] == ["dynamic"]
    code, out, err = skills(config, "dynamic", "pdf-processing")
    assert (code, out) == (0, "")
    assert 'lists no files (its resources are "dynamic")' in err
    code, out, err = skills(config, "dynamic", "pdf-processing", "--read", "references/FORMS.md")
    assert (code, out) == (0, FORMS_TEXT.decode()), err
    code, out, err = skills(config, "dynamic", "pdf-processing", "--read", FORMS, "--json")
    assert code == 0, err
    assert json.loads(out) == {"uri": FORMS, "text": FORMS_TEXT.decode()}


@pytest.mark.parametrize(
    ("server", "path", "reason"),
    [("grown", "references/FORMS.md", "size"), ("swapped", "SKILL.md", "digest")],
)
def test_a_file_other_than_its_manifest_is_not_printed(
    config: Path, server: str, path: str, reason: str
) -> None:
    code, out, err = skills(config, server, "pdf-processing", "--read", path)
    assert (code, out) == (4, "")
    assert f"failed verification ({reason})" in err and "not printed" in err


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (
            ["plain"],
            2,
            "server 'plain' offers no skills: it does not declare the "
            "io.modelcontextprotocol/skills extension (SEP-2640)",
        ),
        (["plain", "pdf-processing", "--read"], 2, "server 'plain' offers no skills"),
        (["plain", SKILL_MD], 2, "server 'plain' offers no skills"),
        (["plain-modern"], 2, "server 'plain-modern' offers no skills: it does not declare"),
        (["plain-modern", SKILL_MD], 2, "server 'plain-modern' offers no skills"),
        (
            ["skills", "pdf-processing", "--read", "references/OTHER.md"],
            2,
            "'skill://pdf-processing/references/OTHER.md' failed verification (unlisted): not "
            "in the skill's manifest; not read (`mcp-client skills skills pdf-processing` "
            "lists its files)",
        ),
        (["skills", "nothing"], 2, "server 'skills' lists no skill named 'nothing'"),
        (["skills", "skill://nothing"], 2, "JSON-RPC error -32602"),
        (
            ["twins", "pdf-processing"],
            2,
            "2 skills of 'twins' are named 'pdf-processing': give one's URI "
            "(skill://team-a/pdf-processing/SKILL.md, skill://team-b/pdf-processing/SKILL.md)",
        ),
        (["nosuch"], 2, "unknown server 'nosuch'"),
        (["skills", "--read"], 2, "--read needs SKILL"),
    ],
)
def test_what_cannot_be_shown(config: Path, args: list[str], code: int, message: str) -> None:
    done, out, err = skills(config, *args)
    assert done == code, err
    assert message in err and out == ""


def test_twins_are_told_apart_by_uri(config: Path) -> None:
    code, out, err = skills(config, "twins", TEAM_B)
    assert code == 0, err
    assert [row["uri"] for row in read_table(out, FILE_COLUMNS)] == [
        ["skill://team-b/pdf-processing/SKILL.md"],
        ["skill://team-b/pdf-processing/assets/logo.bin"],
    ]


def test_a_binary_file_is_described_and_its_json_has_the_bytes(config: Path) -> None:
    code, out, err = skills(config, "twins", TEAM_B, "--read", "assets/logo.bin")
    assert (code, out) == (0, f"[binary file, {len(BLOB)} bytes: --json gives it in base64]\n"), err
    code, out, err = skills(config, "twins", TEAM_B, "--read", "assets/logo.bin", "--json")
    assert code == 0, err
    assert json.loads(out) == {
        "uri": "skill://team-b/pdf-processing/assets/logo.bin",
        "size": len(BLOB),
        "digest": digest(BLOB),
        "blob": base64.b64encode(BLOB).decode(),
    }

"""Skills (SEP-2640) against a real peer: the official TypeScript SDK's server with its skills
extension (tests/servers/skills_server.mjs, npm @modelcontextprotocol/server), each driver, each
era. Listing reads no file; read_skill reads and verifies one; a file changed on the wire (after
the server's own check) is caught by the client's. resources/directory/read goes out only to a
server whose skills settings say directoryRead: true."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

import mcp_core as core
from mcp_core.skills import DIRECTORY_MIME_TYPE, SKILLS_EXTENSION, Skill, SkillVerificationError
from tests.conftest import REPO_ROOT, SERVERS_DIR
from tests.drivers.facade import Facade

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

SKILLS = SERVERS_DIR / "skills"
SKILL_MD = "skill://pdf-processing/SKILL.md"
FORMS = "skill://pdf-processing/references/FORMS.md"


def peer(driver: str, era: str = "auto", **env: str) -> Facade:
    if not (REPO_ROOT / "node_modules" / "@modelcontextprotocol" / "server").is_dir():
        pytest.skip("npm @modelcontextprotocol/server is not installed: run `make node_modules`")
    node = shutil.which("node")
    assert node is not None
    script = str(SERVERS_DIR / "skills_server.mjs")
    return Facade(driver, command=node, args=[script, str(SKILLS)], env=env, era=era)


async def call(client: Facade, method: str, *args: Any, **kw: Any) -> Any:
    return await client._run(method, *args, **kw)


@pytest.mark.parametrize(("era", "spoken"), [("auto", "modern"), ("legacy", "legacy")])
async def test_list_get_and_read_verified(driver: str, era: str, spoken: str) -> None:
    # auto: server/discover tells the capabilities (era="modern" alone would not ask).
    async with peer(driver, era) as client:
        assert client.status().era == spoken
        extensions = client.status().capabilities["extensions"]  # type: ignore[index]
        assert SKILLS_EXTENSION in extensions
        skills: list[Skill] = await call(client, "list_skills")
        assert [(s.name, s.uri) for s in skills] == [("pdf-processing", SKILL_MD)]
        skill = skills[0]
        # YAML 1.2: `reviewed: yes` is the string "yes" in the server's listing and ours.
        assert skill.frontmatter["metadata"] == {"version": "1.0", "reviewed": "yes"}
        assert {r.uri for r in skill.resources} == {SKILL_MD, FORMS}  # type: ignore[union-attr]
        text = await call(client, "read_skill", skill)
        assert text == (SKILLS / "pdf-processing" / "SKILL.md").read_text()
        forms = await call(client, "read_skill", skill, "references/FORMS.md")
        assert forms == (SKILLS / "pdf-processing" / "references" / "FORMS.md").read_text()
        assert await call(client, "get_skill", SKILL_MD) == skill
        with pytest.raises(core.JsonRpcError):
            await call(client, "get_skill", "skill://nothing/SKILL.md")
        with pytest.raises(SkillVerificationError) as caught:
            await call(client, "read_skill", skill, "references/OTHER.md")
        assert caught.value.reason == "unlisted"


@pytest.mark.parametrize(
    ("uri", "mode", "reason"),
    [(FORMS, "append", "size"), (SKILL_MD, "swap", "digest")],
)
async def test_a_file_changed_on_the_wire_is_caught(
    driver: str, uri: str, mode: str, reason: str
) -> None:
    async with peer(driver, SKILLS_TAMPER=uri, SKILLS_TAMPER_MODE=mode) as client:
        (skill,) = await call(client, "list_skills")
        path = uri.removeprefix(skill.root)
        with pytest.raises(SkillVerificationError) as caught:
            await call(client, "read_skill", skill, path)
        assert (caught.value.reason, caught.value.uri) == (reason, uri)


async def test_a_server_without_the_extension_is_not_asked(driver: str) -> None:
    node = shutil.which("node")
    everything = REPO_ROOT / "node_modules" / ".bin" / "mcp-server-everything"
    if node is None or not everything.exists():
        pytest.skip("server-everything is not installed")
    async with Facade(driver, command=str(everything), args=[], era="legacy") as client:
        with pytest.raises(core.NotSupported, match=r"extensions\.io\.modelcontextprotocol/skills"):
            await call(client, "list_skills")


@pytest.mark.parametrize("era", ["auto", "legacy"])
async def test_a_directory_is_read_page_by_page(driver: str, era: str) -> None:
    # Pages of one entry: each directory's children come back whole only by following
    # nextCursor.
    async with peer(driver, era, SKILLS_PAGE_SIZE="1") as client:
        extensions = client.status().capabilities["extensions"]  # type: ignore[index]
        assert extensions[SKILLS_EXTENSION] == {"directoryRead": True}
        (skill,) = await call(client, "list_skills")
        children = await call(client, "read_skill_directory", skill)
        assert [(r.uri, r.name, r.mime_type) for r in children] == [
            (SKILL_MD, "SKILL.md", "text/markdown"),
            ("skill://pdf-processing/references", "references", DIRECTORY_MIME_TYPE),
        ]
        (forms,) = await call(client, "read_skill_directory", "skill://pdf-processing/references")
        assert (forms.uri, forms.size) == (
            FORMS,
            len((SKILLS / "pdf-processing" / "references" / "FORMS.md").read_bytes()),
        )
        with pytest.raises(core.JsonRpcError) as caught:
            await call(client, "read_skill_directory", SKILL_MD)  # a file, not a directory
        assert caught.value.code == -32602


async def test_directory_read_is_refused_without_directory_read(driver: str) -> None:
    # The same skills from a source without directory reads: settings {}, and no handler (a
    # request sent would come back -32601, not NotSupported).
    async with peer(driver, SKILLS_NO_DIRECTORY_READ="1") as client:
        extensions = client.status().capabilities["extensions"]  # type: ignore[index]
        assert extensions[SKILLS_EXTENSION] == {}
        (skill,) = await call(client, "list_skills")
        with pytest.raises(core.NotSupported, match=r"skills\.directoryRead") as caught:
            await call(client, "read_skill_directory", skill)
        assert caught.value.method == "resources/directory/read"
        assert (
            await call(client, "read_skill", skill)
            == (SKILLS / "pdf-processing" / "SKILL.md").read_text()
        )

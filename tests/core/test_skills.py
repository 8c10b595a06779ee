"""mcp_core.skills: reading a SEP-2640 listing and verifying what is read against it."""

from __future__ import annotations

import base64
import hashlib
from typing import Any

import pytest

from mcp_core import (
    InvalidResponse,
    ListTooLong,
    McpError,
    ReadResourceResult,
    Resource,
    ResourceContents,
)
from mcp_core.skills import (
    DIRECTORY_MIME_TYPE,
    MAX_SKILL_BYTES,
    MAX_SKILL_RESOURCES,
    SKILLS_EXTENSION,
    DirectoryListing,
    Skill,
    SkillResource,
    SkillsListing,
    SkillVerificationError,
    parse_frontmatter,
    read_skill_contents,
    skill_from_get,
    skill_from_wire,
    skills_page,
    verify_skill_file,
)

SKILL_MD = (
    b"---\nname: pdf-processing\ndescription: Extract text from PDFs.\n---\n\n# PDF\n"
    b"See [forms](references/FORMS.md).\n"
)
FORMS = b"# Forms\n\nFill them in.\n"
ROOT = "skill://pdf-processing/"


def digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def entry(**files: bytes) -> dict[str, Any]:
    files = files or {"SKILL.md": SKILL_MD, "references/FORMS.md": FORMS}
    return {
        "uri": ROOT + "SKILL.md",
        "frontmatter": {"name": "pdf-processing", "description": "Extract text from PDFs."},
        "resources": [
            {"uri": ROOT + path, "digest": digest(data), "size": len(data)}
            for path, data in files.items()
        ],
    }


def test_the_extension_id() -> None:
    assert SKILLS_EXTENSION == "io.modelcontextprotocol/skills"


def test_an_entry_is_read_into_a_skill() -> None:
    skill = skill_from_wire(entry())
    assert skill.uri == ROOT + "SKILL.md"
    assert skill.name == "pdf-processing"
    assert skill.description == "Extract text from PDFs."
    assert skill.root == ROOT
    assert skill.resources == (
        SkillResource(ROOT + "SKILL.md", digest(SKILL_MD), len(SKILL_MD)),
        SkillResource(ROOT + "references/FORMS.md", digest(FORMS), len(FORMS)),
    )
    assert skill.raw == entry()
    with pytest.raises(AttributeError):
        skill.uri = "x"  # type: ignore[misc]


def test_name_and_description_fall_back() -> None:
    skill = Skill(uri="skill://a/b/tool/SKILL.md", frontmatter={"name": 3}, resources="dynamic")
    assert skill.name == "tool"
    assert skill.description is None


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (lambda e: "not an object", "not an object"),
        (lambda e: {**e, "uri": ""}, "no uri"),
        (lambda e: {**e, "frontmatter": []}, "frontmatter is not an object"),
        (lambda e: {k: v for k, v in e.items() if k != "resources"}, "neither a list"),
        (lambda e: {**e, "resources": "static"}, "neither a list"),
        (lambda e: {**e, "resources": {}}, "neither a list"),
        (lambda e: {**e, "resources": ["x"]}, "manifest entry is not an object"),
        (lambda e: {**e, "resources": [{"digest": "sha256:" + "0" * 64}]}, "has no uri"),
        (lambda e: {**e, "resources": [{"uri": "u", "size": 1}]}, "no sha256 digest"),
        (
            lambda e: {**e, "resources": [{"uri": "u", "size": 1, "digest": "sha256:" + "A" * 64}]},
            "no sha256 digest",
        ),
        (lambda e: {**e, "resources": [{"uri": "u", "digest": "sha256:" + "0" * 64}]}, "no size"),
        (
            lambda e: {
                **e,
                "resources": [{"uri": "u", "digest": "sha256:" + "0" * 64, "size": -1}],
            },
            "no size",
        ),
        (
            lambda e: {
                **e,
                "resources": [{"uri": "u", "digest": "sha256:" + "0" * 64, "size": True}],
            },
            "no size",
        ),
        (
            lambda e: {**e, "resources": [e["resources"][0]] * (MAX_SKILL_RESOURCES + 1)},
            "513 files, more than 512",
        ),
        (
            lambda e: {
                **e,
                "resources": [
                    {"uri": f"u{n}", "digest": "sha256:" + "0" * 64, "size": MAX_SKILL_BYTES // 2}
                    for n in range(3)
                ],
            },
            "more than 16777216",
        ),
    ],
)
def test_entries_the_sep_refuses(change: Any, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        skill_from_wire(change(entry()))


def test_the_limits_themselves_are_accepted() -> None:
    zero = {"digest": "sha256:" + "0" * 64, "size": 0}
    many = [{"uri": f"u{n}", **zero} for n in range(MAX_SKILL_RESOURCES)]
    assert len(skill_from_wire({**entry(), "resources": many}).resources) == 512
    big = [{"uri": "u", "digest": zero["digest"], "size": MAX_SKILL_BYTES}]
    assert skill_from_wire({**entry(), "resources": big}).resources[0].size == MAX_SKILL_BYTES


def test_a_page_sets_refused_entries_aside() -> None:
    page = skills_page(
        {"skills": [entry(), {"uri": "skill://b/SKILL.md", "frontmatter": {}}], "nextCursor": "c"}
    )
    assert [s.name for s in page.skills] == ["pdf-processing"]
    assert page.refused == (
        "skill 'skill://b/SKILL.md': resources is neither a list nor 'dynamic'",
    )
    assert page.next_cursor == "c"
    assert skills_page({"skills": []}).next_cursor is None
    with pytest.raises(ValueError, match="skills is not a list"):
        skills_page({})
    with pytest.raises(ValueError, match="nextCursor"):
        skills_page({"skills": [], "nextCursor": 1})


def test_a_get_result() -> None:
    assert skill_from_get({"resultType": "complete", "skill": entry()}).name == "pdf-processing"
    for result in ({}, [], {"skill": {**entry(), "resources": None}}):
        with pytest.raises(InvalidResponse, match="skills/get"):
            skill_from_get(result)


def test_a_listing_follows_every_page() -> None:
    listing = SkillsListing()
    assert listing.params() == {}
    listing.add({"skills": [entry()], "nextCursor": "2"})
    assert listing.params() == {"cursor": "2"}
    listing.add({"skills": [{"uri": "skill://b/SKILL.md"}], "nextCursor": "3"})
    listing.add({"skills": [], "ttlMs": 0})
    assert listing.params() is None
    assert [s.name for s in listing.skills] == ["pdf-processing"]
    assert listing.refused == ["skill 'skill://b/SKILL.md': frontmatter is not an object"]


@pytest.mark.parametrize(
    ("pages", "why"),
    [
        ([[]], "not an object"),
        ([{"tools": []}], "skills is not a list"),
        ([{"skills": [], "nextCursor": "a"}, {"skills": [], "nextCursor": "a"}], "came back"),
    ],
)
def test_a_listing_refuses_a_bad_page(pages: list[Any], why: str) -> None:
    listing = SkillsListing()
    with pytest.raises(InvalidResponse, match=why):
        for page in pages:
            listing.add(page)


def test_a_listing_that_needs_too_many_pages_fails_rather_than_look_complete() -> None:
    listing = SkillsListing(max_pages=2)
    listing.add({"skills": [entry()], "nextCursor": "2"})
    with pytest.raises(ListTooLong):
        listing.add({"skills": [], "nextCursor": "3"})


def test_a_directory_listing_follows_every_page() -> None:
    # SEP-2640 resources/directory/read: {uri, cursor?} -> {resources, nextCursor?}; a
    # skill's directory is its root without the trailing slash.
    skill = skill_from_wire(entry())
    assert skill.directory == "skill://pdf-processing"
    listing = DirectoryListing(skill)
    assert listing.params() == {"uri": "skill://pdf-processing"}
    sub = {"uri": ROOT + "references", "name": "references", "mimeType": DIRECTORY_MIME_TYPE}
    listing.add({"resources": [sub], "nextCursor": "2"})
    assert listing.params() == {"uri": "skill://pdf-processing", "cursor": "2"}
    listing.add({"resources": [{"uri": ROOT + "SKILL.md", "name": "SKILL.md", "size": 9}]})
    assert listing.params() is None
    assert [(r.uri, r.mime_type) for r in listing.resources] == [
        (ROOT + "references", "inode/directory"),
        (ROOT + "SKILL.md", None),
    ]
    assert all(isinstance(r, Resource) for r in listing.resources)
    # What a directory holds never extends the manifest: an unlisted file stays unlisted.
    listing = DirectoryListing(ROOT + "references")
    listing.add({"resources": [{"uri": ROOT + "references/NEW.md", "name": "NEW.md"}]})
    with pytest.raises(SkillVerificationError, match="unlisted"):
        skill.resource("references/NEW.md")


@pytest.mark.parametrize(
    ("pages", "why"),
    [
        ([[]], "not an object"),
        ([{"skills": []}], "resources is not a list"),
        ([{"resources": [], "nextCursor": 3}], "nextCursor is not a string"),
        ([{"resources": [{"name": "no uri"}]}], "uri"),
        ([{"resources": [], "nextCursor": "a"}, {"resources": [], "nextCursor": "a"}], "came back"),
    ],
)
def test_a_directory_listing_refuses_a_bad_page(pages: list[Any], why: str) -> None:
    listing = DirectoryListing("skill://a")
    with pytest.raises(InvalidResponse, match=why) as caught:
        for page in pages:
            listing.add(page)
    assert caught.value.method == "resources/directory/read"


def test_a_directory_listing_stops_at_the_page_cap() -> None:
    listing = DirectoryListing("skill://a", max_pages=2)
    child = {"uri": "skill://a/x", "name": "x"}
    listing.add({"resources": [child], "nextCursor": "1"})
    with pytest.raises(ListTooLong) as caught:
        listing.add({"resources": [child], "nextCursor": "2"})
    assert (caught.value.method, caught.value.pages, caught.value.items) == (
        "resources/directory/read",
        2,
        2,
    )


def test_contents_are_picked_by_uri_and_verified() -> None:
    skill = skill_from_wire(entry())
    forms = {"uri": ROOT + "references/FORMS.md", "blob": base64.b64encode(FORMS).decode()}
    result = ReadResourceResult.from_wire(
        {
            "contents": [
                {"uri": ROOT + "other", "text": "x"},
                {"uri": ROOT + "SKILL.md", "text": SKILL_MD.decode()},
                forms,
            ]
        }
    )
    assert read_skill_contents(skill, "SKILL.md", result) == SKILL_MD.decode()
    assert read_skill_contents(skill, "references/FORMS.md", result) == FORMS
    with pytest.raises(InvalidResponse, match="no contents for"):
        read_skill_contents(skill, "SKILL.md", ReadResourceResult.from_wire({"contents": [forms]}))
    tampered = ReadResourceResult.from_wire({"contents": [{**forms, "blob": ""}]})
    with pytest.raises(SkillVerificationError, match="size"):
        read_skill_contents(skill, "references/FORMS.md", tampered)


def test_paths_resolve_against_the_root() -> None:
    skill = skill_from_wire(entry())
    assert skill.resource().uri == ROOT + "SKILL.md"
    assert skill.resource("./references/FORMS.md").size == len(FORMS)
    assert skill.resource("references/../references/FORMS.md").uri == ROOT + "references/FORMS.md"
    assert skill.resource(ROOT + "references/FORMS.md").digest == digest(FORMS)
    nested = Skill(uri="skill://a/b/c/SKILL.md", frontmatter={}, resources="dynamic")
    assert nested.resolve("d/e.md") == "skill://a/b/c/d/e.md"
    assert nested.resolve("../x.md") == "skill://a/b/x.md"
    assert nested.resolve("../../../../x.md") == "skill://x.md"
    files = Skill(uri="file:///srv/s/SKILL.md", frontmatter={}, resources="dynamic")
    assert files.resolve("a.md") == "file:///srv/s/a.md"
    opaque = Skill(uri="urn:s/SKILL.md", frontmatter={}, resources="dynamic")
    assert opaque.resolve("./a.md") == "urn:s/a.md"


@pytest.mark.parametrize("path", ["references/OTHER.md", "../other/SKILL.md", "skill://x/SKILL.md"])
def test_an_unlisted_path_is_refused(path: str) -> None:
    with pytest.raises(SkillVerificationError) as caught:
        skill_from_wire(entry()).resource(path)
    assert caught.value.reason == "unlisted"
    assert isinstance(caught.value, McpError)


def test_a_dynamic_skill_allows_any_path_inside_it() -> None:
    skill = skill_from_wire({**entry(), "resources": "dynamic"})
    assert skill.resource("scripts/run.py") == SkillResource(ROOT + "scripts/run.py", "", -1)
    with pytest.raises(SkillVerificationError, match="outside the skill"):
        skill.resource("../other/SKILL.md")
    # Nothing to check the bytes against, but SKILL.md's frontmatter still is.
    assert verify_skill_file(skill, "scripts/run.py", b"anything") == b"anything"
    assert verify_skill_file(skill, "SKILL.md", SKILL_MD) == SKILL_MD
    with pytest.raises(SkillVerificationError) as caught:
        verify_skill_file(skill, "SKILL.md", SKILL_MD.replace(b"Extract", b"Drop"))
    assert caught.value.reason == "frontmatter"


def test_what_is_read_passes_in_each_shape() -> None:
    skill = skill_from_wire(entry())
    assert verify_skill_file(skill, "SKILL.md", SKILL_MD) == SKILL_MD
    assert verify_skill_file(skill, "SKILL.md", SKILL_MD.decode()) == SKILL_MD
    text = ResourceContents(uri=ROOT + "SKILL.md", text=SKILL_MD.decode())
    assert verify_skill_file(skill, "SKILL.md", text) == SKILL_MD
    blob = ResourceContents.from_wire(
        {"uri": ROOT + "references/FORMS.md", "blob": base64.b64encode(FORMS).decode()}
    )
    assert verify_skill_file(skill, "references/FORMS.md", blob) == FORMS


def test_text_is_hashed_as_utf8() -> None:
    body = "---\nname: pdf-processing\ndescription: Extract text from PDFs.\n---\nÉté ☃\n"
    skill = skill_from_wire(entry(**{"SKILL.md": body.encode()}))
    assert verify_skill_file(skill, "SKILL.md", body) == body.encode()


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (SKILL_MD + b"appended\n", "size"),
        (SKILL_MD.replace(b"# PDF", b"# FDP"), "digest"),
    ],
)
def test_a_tampered_file_fails(data: bytes, reason: str) -> None:
    with pytest.raises(SkillVerificationError) as caught:
        verify_skill_file(skill_from_wire(entry()), "SKILL.md", data)
    assert caught.value.reason == reason
    assert caught.value.uri == ROOT + "SKILL.md"
    assert f"({reason})" in str(caught.value)


@pytest.mark.parametrize(
    ("data", "why"),
    [
        # Digest and size match the file (the server recomputed them), the frontmatter does not.
        (SKILL_MD.replace(b"Extract text", b"Exfiltrate"), "'description' differs"),
        (SKILL_MD.replace(b"description: Extract text from PDFs.\n", b""), "missing in the file"),
        (SKILL_MD.replace(b"---\n\n", b"license: MIT\n---\n\n"), "missing in the listing"),
        (b"# no frontmatter\n", "does not start with a --- line"),
        (b"---\nname: x\n", "no closing --- line"),
        (b"---\n- a\n---\n", "not a YAML mapping"),
        (b"---\nname: [\n---\n", "not YAML"),
        (b"---\nname: \xff\n---\n", "not UTF-8"),
    ],
)
def test_a_frontmatter_other_than_the_listing_fails(data: bytes, why: str) -> None:
    skill = skill_from_wire(entry(**{"SKILL.md": data}))
    with pytest.raises(SkillVerificationError, match=why) as caught:
        verify_skill_file(skill, "SKILL.md", data)
    assert caught.value.reason == "frontmatter"
    # Only SKILL.md's frontmatter is checked: another file with the same bytes is just bytes.
    other = skill_from_wire(entry(**{"SKILL.md": SKILL_MD, "x/SKILL.md": data}))
    assert verify_skill_file(other, "x/SKILL.md", data) == data


def test_bom_and_crlf_are_ignored() -> None:
    data = b"\xef\xbb\xbf" + SKILL_MD.replace(b"\n", b"\r\n")
    skill = skill_from_wire(entry(**{"SKILL.md": data}))
    assert verify_skill_file(skill, "SKILL.md", data) == data


def test_yaml_1_2_core_schema() -> None:
    text = (
        "---\nyes_: yes\non_: on\nbool: true\nBool: False\nint: 012\noct: 0o17\nhex: 0x1F\n"
        "neg: -3\npos: +4\nfloat: 1e3\ndot: .5\ninf: -.inf\nnull_: ~\nempty:\ndate: 2024-01-01\n"
        "sexagesimal: 1:30\n<<: merge\n2: int key\ntrue: bool key\n~: null key\n"
        "nested: {a: [1, {2: b}]}\n---\n"
    )
    assert parse_frontmatter(text) == {
        "yes_": "yes",
        "on_": "on",
        "bool": True,
        "Bool": False,
        "int": 12,
        "oct": 15,
        "hex": 31,
        "neg": -3,
        "pos": 4,
        "float": 1000.0,
        "dot": 0.5,
        "inf": float("-inf"),
        "null_": None,
        "empty": None,
        "date": "2024-01-01",
        "sexagesimal": "1:30",
        "<<": "merge",
        "2": "int key",
        "true": "bool key",
        "null": "null key",
        "nested": {"a": [1, {"2": "b"}]},
    }


@pytest.mark.parametrize(
    ("listed", "yaml", "same"),
    [
        (True, "true", True),
        (1, "true", False),
        (True, "1", False),
        (1000, "1e3", True),
        ("1", "1", False),
        (None, "~", True),
        (None, "''", False),
        ([1, "a"], "[1, a]", True),
        ([1, "a"], "[1]", False),
        ([1], "{a: 1}", False),
        ({"a": {"b": [True]}}, "{a: {b: [true]}}", True),
        ({"a": 1}, "{a: 1, b: 2}", False),
    ],
)
def test_fields_compare_as_json_values(listed: Any, yaml: str, same: bool) -> None:
    data = f"---\nname: n\nfield: {yaml}\n---\n".encode()
    skill = Skill(
        uri="skill://n/SKILL.md",
        frontmatter={"name": "n", "field": listed},
        resources=(SkillResource("skill://n/SKILL.md", digest(data), len(data)),),
    )
    if same:
        verify_skill_file(skill, "SKILL.md", data)
    else:
        with pytest.raises(SkillVerificationError, match="'field' differs"):
            verify_skill_file(skill, "SKILL.md", data)

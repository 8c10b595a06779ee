"""Pure stdio pieces: the inherited environment, the stderr ring, and backoff jitter."""

from __future__ import annotations

import pytest

from mcp_core._transport.jitter import Jitter, backoff_delay
from mcp_core._transport.stdio_parts import StderrRing
from mcp_core.driver import INHERITED_ENV, inherit_environment

# --- inherited environment -------------------------------------------------------------------


def test_inherited_env_is_minimal() -> None:
    # The official SDKs' POSIX list is included; nothing that usually holds a secret is.
    assert {"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"} <= set(INHERITED_ENV)
    assert {"LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT"} <= set(INHERITED_ENV)
    assert not any(word in name for name in INHERITED_ENV for word in ("KEY", "TOKEN", "SECRET"))
    assert len(set(INHERITED_ENV)) == len(INHERITED_ENV)


@pytest.mark.parametrize(
    ("source", "names", "inherited"),
    [
        ({"PATH": "/bin", "AWS_SECRET_ACCESS_KEY": "x"}, INHERITED_ENV, {"PATH": "/bin"}),
        ({"HOME": "/h", "TERM": "() { :; }; evil"}, INHERITED_ENV, {"HOME": "/h"}),  # shellshock
        ({}, INHERITED_ENV, {}),
        ({"A": "1", "B": "2"}, ("B",), {"B": "2"}),
    ],
)
def test_inherit_environment(
    source: dict[str, str], names: tuple[str, ...], inherited: dict[str, str]
) -> None:
    assert inherit_environment(source, names) == inherited


# --- stderr ring -----------------------------------------------------------------------------

# (limit, chunks fed, max_chars, tail)
RING: list[tuple[int, list[bytes], int, str]] = [
    (100, [], 2000, ""),
    (100, [b"starting\n", b"error: boom\n"], 2000, "starting\nerror: boom"),
    (100, [b"a\r\nb\r\n"], 2000, "a\r\nb"),
    (10, [b"first\nsecond\n"], 2000, "second"),  # the ring cut: drop the partial first line
    (10, [b"line one\nline two\n"], 2000, "line two"),  # the cut fell on a line start
    (10, [b"abcdefghijklmnop"], 2000, "ghijklmnop"),  # no newline: keep what there is
    (10, [b"12345678", b"abcdef"], 2000, "5678abcdef"),  # cut across feeds
    (100, [b"first line\nsecond line\n"], 15, "second line"),  # max_chars cut
    (100, [b"aaa\nbb\ncc\n"], 5, "bb\ncc"),  # max_chars cut exactly at a line start
    (100, [b"abcdef"], 3, "def"),
    (100, [b"abc"], 0, ""),
    (100, ["\u20ac\u20ac\n".encode()[2:]], 2000, "\ufffd\u20ac"),  # a cut character is replaced
    (100, [b"\xff\xfeoops\n"], 2000, "\ufffd\ufffdoops"),
    (100, [b"x" * 30 + b"\nend\n"], 3, "end"),  # cut in bytes before decoding
]


@pytest.mark.parametrize(("limit", "chunks", "max_chars", "tail"), RING)
def test_stderr_ring(limit: int, chunks: list[bytes], max_chars: int, tail: str) -> None:
    ring = StderrRing(limit)
    for chunk in chunks:
        ring.feed(chunk)
        assert ring.size <= limit
    assert ring.tail(max_chars) == tail


def test_stderr_ring_is_bounded_and_clears() -> None:
    ring = StderrRing()
    for _ in range(1000):
        ring.feed(b"x" * 1000 + b"\n")
    assert ring.size == 64 * 1024
    assert len(ring.tail()) <= 2000
    ring.clear()
    assert ring.size == 0 and ring.tail() == ""
    ring.feed(b"fresh\n")
    assert ring.tail() == "fresh"  # no cut remembered from before clear()


def test_stderr_ring_limit_must_be_positive() -> None:
    with pytest.raises(ValueError, match="limit"):
        StderrRing(0)


# --- jitter and backoff ----------------------------------------------------------------------


def test_splitmix64_reference_outputs() -> None:
    # The reference splitmix64 (Vigna's splitmix64.c) seeded with 0.
    jitter = Jitter(0)
    assert [jitter.next_u64() for _ in range(3)] == [
        0xE220A8397B1DCDAF,
        0x6E789E6AA1B965F4,
        0x06C45D188009454F,
    ]


def test_jitter_is_deterministic_and_in_range() -> None:
    first, second = Jitter(42), Jitter(42)
    values = [first.next_float() for _ in range(10_000)]
    assert values == [second.next_float() for _ in range(10_000)]
    assert all(0.0 <= v < 1.0 for v in values)
    assert 0.45 < sum(values) / len(values) < 0.55
    assert Jitter(-1).next_u64() == Jitter(2**64 - 1).next_u64()  # seeds are taken mod 2**64


@pytest.mark.parametrize(
    ("attempt", "first", "cap", "low", "high"),
    [
        (0, 1.0, 60.0, 0.8, 1.2),
        (1, 1.0, 60.0, 1.6, 2.4),
        (5, 1.0, 60.0, 25.6, 38.4),
        (6, 1.0, 60.0, 48.0, 72.0),  # 64 s capped at 60
        (10_000, 1.0, 60.0, 48.0, 72.0),  # no overflow for absurd attempts
        (3, 0.5, 2.0, 1.6, 2.4),
    ],
)
def test_backoff_delay(attempt: int, first: float, cap: float, low: float, high: float) -> None:
    jitter = Jitter(7)
    for _ in range(200):
        assert low <= backoff_delay(attempt, first, cap, jitter) < high


def test_backoff_delay_is_reproducible() -> None:
    delays = [backoff_delay(n, 1.0, 60.0, Jitter(3)) for n in range(8)]
    assert delays == [backoff_delay(n, 1.0, 60.0, Jitter(3)) for n in range(8)]


@pytest.mark.parametrize(("attempt", "first", "cap"), [(-1, 1.0, 2.0), (0, 0.0, 2.0), (0, 1, 0)])
def test_backoff_delay_refused(attempt: int, first: float, cap: float) -> None:
    with pytest.raises(ValueError):
        backoff_delay(attempt, first, cap, Jitter(0))

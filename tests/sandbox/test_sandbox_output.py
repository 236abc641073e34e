"""Output capping and host-path masking of streamed text (pure, no subprocesses)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fawn.sandbox.capture import OutputCapture, truncation_marker
from fawn.sandbox.masking import HostPathMasker

ROOTS = [("/srv/fawn/threads/t/user-data", "/mnt/user-data"), ("/opt/skills", "/mnt/skills")]


def captured(max_chars: int, pieces: list[str]) -> tuple[str, bool]:
    capture = OutputCapture(max_chars)
    for piece in pieces:
        capture.feed(piece)
    return capture.text(), capture.truncated


def test_short_output_is_kept_whole() -> None:
    assert captured(200, ["a" * 100, "b" * 100]) == ("a" * 100 + "b" * 100, False)


def test_long_output_keeps_head_and_tail() -> None:
    text = "".join(f"{i}\n" for i in range(10_000))
    # 200 chars: 64 reserved for the marker, 68 of head and 68 of tail.
    expected = text[:68] + truncation_marker(len(text) - 136) + text[-68:]
    assert captured(200, [text]) == (expected, True)
    assert len(expected) <= 200
    assert truncation_marker(5) == "\n... [5 characters truncated] ...\n"


@given(
    text=st.text(alphabet="ab\n", max_size=600),
    cuts=st.lists(st.integers(min_value=0, max_value=600), max_size=6),
)
def test_capture_does_not_depend_on_how_output_is_split(text: str, cuts: list[int]) -> None:
    bounds = sorted({0, len(text), *(c for c in cuts if c < len(text))})
    pieces = [text[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]
    output, truncated = captured(200, pieces)
    assert (output, truncated) == captured(200, [text])
    assert truncated == (len(text) > 200)
    assert len(output) <= 200
    if not truncated:
        assert output == text


def test_feed_line_starts_on_a_new_line() -> None:
    capture = OutputCapture(200)
    capture.feed_line("[first]")
    capture.feed("partial")
    capture.feed_line("[second]")
    assert capture.text() == "[first]\npartial\n[second]\n"


def test_capture_needs_room_for_the_marker() -> None:
    with pytest.raises(ValueError, match="at least 128"):
        OutputCapture(100)


def test_mask_is_one_pass_and_longest_first() -> None:
    masker = HostPathMasker([("/a", "/mnt/x"), ("/a/b", "/mnt/y"), ("/", "/never")])
    assert masker.mask("/a/b/c /a/c /mnt/x") == "/mnt/y/c /mnt/x/c /mnt/x"


@given(
    text=st.lists(
        st.sampled_from(["/srv/fawn/threads/t/user-data", "/opt/skills", "/srv", "x", "/", "\n"]),
        max_size=30,
    ).map("".join),
    cuts=st.lists(st.integers(min_value=0, max_value=300), max_size=8),
)
def test_stream_masking_matches_one_shot_masking(text: str, cuts: list[int]) -> None:
    """A host root split across two reads is still masked."""
    masker = HostPathMasker(ROOTS)
    bounds = sorted({0, len(text), *(c for c in cuts if c < len(text))})
    stream = masker.stream()
    out = "".join(stream.feed(text[a:b]) for a, b in zip(bounds, bounds[1:], strict=False))
    assert out + stream.finish() == masker.mask(text)


def test_stream_masking_across_single_characters() -> None:
    stream = HostPathMasker(ROOTS).stream()
    text = "see /srv/fawn/threads/t/user-data/workspace/a and /opt/skills\n"
    out = "".join(stream.feed(char) for char in text) + stream.finish()
    assert out == "see /mnt/user-data/workspace/a and /mnt/skills\n"

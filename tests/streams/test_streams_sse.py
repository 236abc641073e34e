"""SSE framing, cursors and the value types' wire shapes."""

from __future__ import annotations

import pytest

from fawn.streams import (
    HEARTBEAT_FRAME,
    MAX_EVENT_ID,
    SSE_HEADERS,
    Heartbeat,
    InvalidCursor,
    StreamClosed,
    StreamError,
    StreamEvent,
    StreamGap,
    StreamItem,
    StreamNotFound,
    StreamUnavailable,
    encode_event,
    encode_gap,
    encode_item,
    parse_last_event_id,
)

HINT = "reload durable state (threads.get_state / runs.get) and rejoin from the latest id"


@pytest.mark.parametrize(
    ("event", "frame"),
    [
        (
            StreamEvent(1, "metadata", {"run_id": "1ef-abc", "attempt": 1}),
            b'event: metadata\ndata: {"run_id":"1ef-abc","attempt":1}\nid: 1\n\n',
        ),
        (
            StreamEvent(7, "messages", [{"content": "héllo — 你好 👋\nbye"}, {"node": "m"}]),
            'event: messages\ndata: [{"content":"héllo — 你好 👋\\nbye"},{"node":"m"}]\nid: 7\n\n'.encode(),
        ),
        (
            StreamEvent(
                42,
                "updates|sub:1",
                {"agent": {"messages": [{"a": [1, 2.5, None, True, False]}], "empty": {}}},
            ),
            b'event: updates|sub:1\ndata: {"agent":{"messages":[{"a":[1,2.5,null,true,false]}],'
            b'"empty":{}}}\nid: 42\n\n',
        ),
        (StreamEvent(3, "end", None), b"event: end\ndata: null\nid: 3\n\n"),
        (
            StreamEvent(4, "error", {"error": "ValueError", "message": 'bad "x"'}),
            b'event: error\ndata: {"error":"ValueError","message":"bad \\"x\\""}\nid: 4\n\n',
        ),
    ],
)
def test_encode_event_is_byte_exact(event: StreamEvent, frame: bytes) -> None:
    assert encode_event(event) == frame


def test_encode_event_without_id() -> None:
    event = StreamEvent(9, "values", {"messages": []})

    assert encode_event(event, with_id=False) == b'event: values\ndata: {"messages":[]}\n\n'


def test_event_name_with_a_line_break_is_refused() -> None:
    with pytest.raises(StreamError):
        encode_event(StreamEvent(1, "values\ndata: forged", {}))


def test_gap_frame_and_data() -> None:
    gap = StreamGap(requested=2, earliest=8, latest=12)

    assert gap.as_event_data() == {"requested": 2, "earliest": 8, "latest": 12, "hint": HINT}
    assert (
        encode_gap(gap)
        == (b'event: gap\ndata: {"requested":2,"earliest":8,"latest":12,"hint":"' + HINT.encode())
        + b'"}\n\n'
    )
    assert encode_gap(StreamGap(0, None, None)) == (
        b'event: gap\ndata: {"requested":0,"earliest":null,"latest":null,"hint":"'
        + HINT.encode()
        + b'"}\n\n'
    )


def test_encode_item_frames_a_whole_subscription() -> None:
    items: list[StreamItem] = [
        StreamEvent(1, "metadata", {"run_id": "r", "attempt": 1}),
        Heartbeat(),
        StreamEvent(2, "values", {"n": 1}),
        StreamGap(2, 5, 9),
    ]

    body = b"".join(encode_item(item) for item in items)

    assert body == (
        b'event: metadata\ndata: {"run_id":"r","attempt":1}\nid: 1\n\n'
        b": heartbeat\n\n"
        b'event: values\ndata: {"n":1}\nid: 2\n\n'
        b'event: gap\ndata: {"requested":2,"earliest":5,"latest":9,"hint":"'
        + HINT.encode()
        + b'"}\n\n'
    )
    assert encode_item(items[0], with_id=False) == (
        b'event: metadata\ndata: {"run_id":"r","attempt":1}\n\n'
    )


def test_constants() -> None:
    assert HEARTBEAT_FRAME == b": heartbeat\n\n"
    assert SSE_HEADERS == {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}


@pytest.mark.parametrize(
    ("header", "cursor"),
    [
        (None, None),
        ("", None),
        ("   ", None),
        ("0", None),
        ("-1", None),  # the JS SDK's "replay the whole run"
        ("1", 1),
        ("42", 42),
        (" 17 ", 17),
        ("007", 7),
        (str(MAX_EVENT_ID), MAX_EVENT_ID),
    ],
)
def test_parse_last_event_id(header: str | None, cursor: int | None) -> None:
    assert parse_last_event_id(header) == cursor


@pytest.mark.parametrize(
    "header", ["abc", "-2", "+3", "1.5", "1_000", "1732000000000-0", "１２", str(MAX_EVENT_ID + 1)]
)
def test_parse_last_event_id_refuses_what_is_not_our_id(header: str) -> None:
    with pytest.raises(InvalidCursor) as raised:
        parse_last_event_id(header)

    assert (raised.value.code, raised.value.retryable) == ("invalid_cursor", False)
    assert "Last-Event-ID" in str(raised.value)


def test_error_tree_codes() -> None:
    tree = {
        cls.__name__: (issubclass(cls, StreamError), cls.code, cls.retryable)
        for cls in (StreamError, StreamNotFound, StreamClosed, InvalidCursor, StreamUnavailable)
    }

    assert tree == {
        "StreamError": (True, "stream_error", False),
        "StreamNotFound": (True, "stream_not_found", False),
        "StreamClosed": (True, "stream_closed", False),
        "InvalidCursor": (True, "invalid_cursor", False),
        "StreamUnavailable": (True, "stream_unavailable", True),
    }

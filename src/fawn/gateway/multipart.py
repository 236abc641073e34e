"""Streaming multipart/form-data: file parts yielded as they arrive, never spooled.

python-multipart's push parser fills a queue of events (part start, body bytes, part end)
that the async side drains, so a caller can write each file as its bytes come in.
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass

from python_multipart.exceptions import FormParserError
from python_multipart.multipart import MultipartParser, parse_options_header
from starlette.requests import Request

from fawn.runs.errors import InvalidInput


@dataclass(frozen=True)
class _PartStart:
    field: str
    filename: str | None


# A part's start, a piece of its body, or None for its end.
_Event = _PartStart | bytes | None

#: A part's header block is kept in memory while it is parsed: bounded, unlike its body.
MAX_PART_HEADER_BYTES = 16 * 1024


class _MultipartEvents:
    """python-multipart's callbacks collected, in order, for the async side to drain."""

    def __init__(self, boundary: bytes) -> None:
        self.pending: deque[_Event] = deque()
        self.complete = False
        self._disposition = b""
        self._header_bytes = 0
        self._name = bytearray()
        self._value = bytearray()
        self.parser = MultipartParser(
            boundary,
            {
                "on_part_begin": self._on_part_begin,
                "on_header_field": self._on_header_field,
                "on_header_value": self._on_header_value,
                "on_header_end": self._on_header_end,
                "on_headers_finished": self._on_headers_finished,
                "on_part_data": self._on_part_data,
                "on_part_end": self._on_part_end,
                "on_end": self._on_end,
            },
        )

    def _on_part_begin(self) -> None:
        self._disposition = b""
        self._header_bytes = 0

    def _on_header_field(self, data: bytes, start: int, end: int) -> None:
        self._count_header(end - start)
        self._name += data[start:end]

    def _on_header_value(self, data: bytes, start: int, end: int) -> None:
        self._count_header(end - start)
        self._value += data[start:end]

    def _count_header(self, size: int) -> None:
        self._header_bytes += size
        if self._header_bytes > MAX_PART_HEADER_BYTES:
            raise InvalidInput(f"a multipart part's headers exceed {MAX_PART_HEADER_BYTES} bytes")

    def _on_header_end(self) -> None:
        if self._name.lower() == b"content-disposition":
            self._disposition = bytes(self._value)
        self._name.clear()
        self._value.clear()

    def _on_headers_finished(self) -> None:
        # Header bytes arrive as latin-1; browsers put UTF-8 file names in them.
        _, options = parse_options_header(self._disposition.decode("latin-1"))
        field = options.get(b"name", b"").decode("utf-8", "replace")
        filename = options.get(b"filename")
        self.pending.append(
            _PartStart(field, None if filename is None else filename.decode("utf-8", "replace"))
        )

    def _on_part_data(self, data: bytes, start: int, end: int) -> None:
        self.pending.append(data[start:end])

    def _on_part_end(self) -> None:
        self.pending.append(None)

    def _on_end(self) -> None:
        self.complete = True

    async def feed(self, stream: AsyncIterator[bytes]) -> AsyncGenerator[_Event, None]:
        """Parse ``stream`` and yield its events; raise if the body is malformed or cut short."""
        try:
            async for chunk in stream:
                self.parser.write(chunk)
                while self.pending:
                    yield self.pending.popleft()
            self.parser.finalize()
        except FormParserError as exc:
            raise InvalidInput("the request body is not valid multipart/form-data") from exc
        while self.pending:
            yield self.pending.popleft()
        if not self.complete:
            raise InvalidInput("the multipart body ended before its closing boundary")


async def file_parts(
    request: Request, field_name: str
) -> AsyncGenerator[tuple[str, AsyncIterator[bytes]], None]:
    """``(filename, body)`` for each file part; consume each body before asking for the next."""
    media_type, options = parse_options_header(request.headers.get("content-type"))
    boundary = options.get(b"boundary")
    if media_type != b"multipart/form-data" or not boundary:
        raise InvalidInput(f"send the files as multipart/form-data, in parts named {field_name!r}")
    events = _MultipartEvents(boundary)
    async with aclosing(events.feed(request.stream())) as stream:
        async for event in stream:
            if not isinstance(event, _PartStart):
                continue
            if event.field != field_name or event.filename is None:
                raise InvalidInput(
                    f"unexpected form field {event.field!r}: only files, in parts named "
                    f"{field_name!r}, are accepted",
                    field=event.field,
                )
            yield event.filename, _part_body(stream)


async def _part_body(stream: AsyncIterator[_Event]) -> AsyncIterator[bytes]:
    async for event in stream:
        if event is None:
            return
        if isinstance(event, bytes):
            yield event

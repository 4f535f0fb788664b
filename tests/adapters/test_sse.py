"""Server-sent event data, however the network splits the stream."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable

import pytest

from adapters.sse import sse_data


async def _chunks(parts: Iterable[bytes]) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


async def _events(*parts: bytes) -> list[bytes]:
    return [data async for data in sse_data(_chunks(parts))]


async def test_each_event_data_in_order() -> None:
    assert await _events(b'data: {"a":1}\n\ndata: {"b":2}\n\ndata: [DONE]\n\n') == [
        b'{"a":1}',
        b'{"b":2}',
        b"[DONE]",
    ]


@pytest.mark.parametrize("size", [1, 2, 3, 7])
async def test_split_anywhere_even_inside_crlf(size: int) -> None:
    stream = b"data: one\r\n\r\ndata: two\r\n\r\n"
    parts = [stream[i : i + size] for i in range(0, len(stream), size)]
    assert await _events(*parts) == [b"one", b"two"]


async def test_fields_comments_and_multi_line_data() -> None:
    stream = b": keep-alive\n\nevent: message\nid: 7\ndata:first\ndata: second\nretry: 5\n\n"
    assert await _events(stream) == [b"first\nsecond"]


async def test_only_one_leading_space_is_removed() -> None:
    assert await _events(b"data:  indented\n\n") == [b" indented"]


async def test_an_event_without_its_closing_blank_line_is_dropped() -> None:
    assert await _events(b"data: complete\n\ndata: cut") == [b"complete"]


async def test_blank_lines_alone_dispatch_nothing() -> None:
    assert await _events(b"\n\n\r\n", b"\n") == []

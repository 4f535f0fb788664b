"""The one SSE framer: what it writes, read back by the event-stream reader the adapters use."""

from __future__ import annotations

from collections.abc import AsyncIterator

import orjson

from adapters.sse import sse_data
from gateway.sse import frame


async def _chunks(*chunks: bytes) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk


def test_json_data_alone_is_one_data_line() -> None:
    assert frame(b'{"a":1}') == b'data: {"a":1}\n\n'


def test_id_and_event_lines_come_before_the_data() -> None:
    assert frame(b"{}", "call", 7) == b"id: 7\nevent: call\ndata: {}\n\n"
    assert frame(b"{}", "gone") == b"event: gone\ndata: {}\n\n"


async def test_json_holding_newlines_is_still_one_data_line_and_reads_back_whole() -> None:
    note = {"html": "<li>\n  held\n</li>"}
    body = frame(orjson.dumps(note), "call") + frame(b"[DONE]")

    assert len(body.split(b"\n\n")[0].split(b"\n")) == 2  # the event line, one data line
    read = [data async for data in sse_data(_chunks(body[:9], body[9:]))]
    assert [orjson.loads(read[0]), read[1]] == [note, b"[DONE]"]

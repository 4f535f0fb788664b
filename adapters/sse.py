"""The ``data`` of server-sent events, as OpenAI-compatible servers stream them.

Follows the event-stream rules of the HTML standard for what these servers send: fields on
lines ended by ``\\n`` or ``\\r\\n``, an event ended by a blank line, several ``data`` lines of
one event joined by ``\\n``, comments and other fields ignored, an unfinished last event dropped.
Lines ended by a lone ``\\r`` are not split (no OpenAI-compatible server sends them).
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator


async def sse_data(chunks: AsyncIterable[bytes]) -> AsyncIterator[bytes]:
    """Each event's data, from the body's chunks however the network split them."""
    pending = b""
    data: list[bytes] = []
    async for chunk in chunks:
        lines = (pending + chunk).split(b"\n")
        pending = lines.pop()
        for raw in lines:
            line = raw[:-1] if raw.endswith(b"\r") else raw
            if not line:
                if data:
                    yield b"\n".join(data)
                    data = []
                continue
            field, _, value = line.partition(b":")
            if field == b"data":
                data.append(value[1:] if value.startswith(b" ") else value)

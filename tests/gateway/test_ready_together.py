"""A body's chunks that are ready together go out as one message; nothing is held back while
the body waits, and a failure to send reaches the body's wait in progress."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from starlette.types import Message

from gateway.ready_together import MAX_HELD_BYTES, send_ready_together


class Sent:
    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.arrived = asyncio.Event()

    async def __call__(self, message: Message) -> None:
        assert message["type"] == "http.response.body"
        assert message["more_body"] is True
        self.bodies.append(message["body"])
        self.arrived.set()


async def test_chunks_ready_together_are_one_message() -> None:
    async def body() -> AsyncIterator[bytes]:
        for chunk in (b"a", b"b", b"c"):
            yield chunk

    sent = Sent()
    await send_ready_together(body(), sent)

    assert sent.bodies == [b"abc"]


async def test_what_is_ready_goes_out_before_the_body_waits() -> None:
    go_on = asyncio.Event()

    async def body() -> AsyncIterator[bytes]:
        yield b"a"
        yield b"b"
        await go_on.wait()  # released only once "ab" was sent: held, it would never be
        yield b"c"
        yield b"d"

    sent = Sent()
    sending = asyncio.create_task(send_ready_together(body(), sent))
    await sent.arrived.wait()
    assert sent.bodies == [b"ab"]
    go_on.set()
    async with asyncio.timeout(5):
        await sending

    assert sent.bodies == [b"ab", b"cd"]


async def test_a_burst_goes_out_in_pieces_of_bounded_size() -> None:
    piece = b"x" * (MAX_HELD_BYTES // 4)

    async def body() -> AsyncIterator[bytes]:
        for _ in range(10):
            yield piece

    sent = Sent()
    await send_ready_together(body(), sent)

    assert b"".join(sent.bodies) == piece * 10
    assert [len(b) for b in sent.bodies] == [MAX_HELD_BYTES] * 2 + [MAX_HELD_BYTES // 2]


async def test_a_failed_send_reaches_the_bodys_wait_and_is_raised() -> None:
    seen: list[BaseException] = []
    never = asyncio.Event()

    async def body() -> AsyncIterator[bytes]:
        yield b"a"
        try:
            await never.wait()
        except BaseException as exc:
            seen.append(exc)
            raise
        yield b"never sent"

    async def broken(message: Message) -> None:
        raise ConnectionResetError("the caller went away")

    with pytest.raises(ConnectionResetError):
        await send_ready_together(body(), broken)
    assert [type(exc) for exc in seen] == [ConnectionResetError]


async def test_a_cancel_while_the_body_waits_reaches_its_wait() -> None:
    seen: list[BaseException] = []
    waiting = asyncio.Event()

    async def body() -> AsyncIterator[bytes]:
        yield b"a"
        waiting.set()
        try:
            await asyncio.Event().wait()
        except BaseException as exc:
            seen.append(exc)
            raise
        yield b"never sent"

    sent = Sent()
    sending = asyncio.create_task(send_ready_together(body(), sent))
    await waiting.wait()
    sending.cancel()
    with pytest.raises(asyncio.CancelledError):
        await sending

    assert sent.bodies == [b"a"]
    assert [type(exc) for exc in seen] == [asyncio.CancelledError]


async def test_a_body_that_ends_after_a_wait_sends_what_it_held() -> None:
    go_on = asyncio.Event()
    go_on.set()

    async def body() -> AsyncIterator[bytes]:
        await go_on.wait()
        await asyncio.sleep(0)  # a real suspension: the step is resumed, not ready at once
        yield b"late"
        yield b"last"

    sent = Sent()
    await send_ready_together(body(), sent)

    assert sent.bodies == [b"latelast"]


async def test_what_was_ready_before_a_body_fails_still_goes_out() -> None:
    async def body() -> AsyncIterator[bytes]:
        yield b"a"
        yield b"b"
        raise RuntimeError("broken body")

    sent = Sent()
    with pytest.raises(RuntimeError, match="broken body"):
        await send_ready_together(body(), sent)

    assert sent.bodies == [b"ab"]

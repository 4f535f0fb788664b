"""The property every format keeps: its own rendered output parses back to the same calls."""

from __future__ import annotations

import random

from adapters.text.base import ToolFormat
from llm_service.types import ToolCall
from tests.adapters.text.corpus import stream, whole
from tests.adapters.text.strategies import random_chunks


def assert_round_trip(fmt: ToolFormat, calls: list[ToolCall], rng: random.Random) -> None:
    tools = frozenset(c.name for c in calls)
    text = fmt.render_calls(calls)
    expected = [(c.name, c.arguments) for c in calls]
    reply = whole(fmt, text, tools)
    assert [(c.name, c.arguments) for c in reply.calls] == expected
    assert reply.content is None
    streamed = stream(fmt, random_chunks(text, rng), tools)
    assert streamed.calls == expected
    assert streamed.content is None

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.text.base import Call, Reasoning, Text, ToolFormat
from adapters.text.hermes import HermesFormat
from adapters.text.scan import ContentJoin, StreamParser
from adapters.text.select import FORMATS
from tests.adapters.text.corpus import stream, whole
from tests.adapters.text.strategies import random_chunks

TOOLS = frozenset({"get_time"})


def test_reasoning_and_content_stream_before_the_reply_ends() -> None:
    parser = StreamParser(HermesFormat(), TOOLS)

    assert parser.feed("<think>step one") == [Reasoning("step one")]
    assert parser.feed(", two</th") == [Reasoning(", two")]
    assert parser.feed("ink>The answer <tool") == [Text("The answer ")]
    assert parser.feed("_response> is") == [Text("<tool_response> is")]
    assert parser.finish() == []


def test_a_call_is_emitted_once_as_soon_as_its_block_closes() -> None:
    parser = StreamParser(HermesFormat(), TOOLS)

    assert parser.feed('<tool_call>{"name": "get_time", "arguments": {}}') == []
    assert parser.feed("</tool_call>") == [Call("get_time", {})]
    assert parser.feed(" after") == [Text(" after")]
    assert parser.finish() == []


def test_only_whitespace_spacing_out_blocks_is_dropped() -> None:
    join = ContentJoin()

    pieces = [join.text(" Hi"), join.text(" \n"), join.text("there\n")]
    join.block()  # a call: the whitespace before it goes
    pieces += [join.text("  after"), join.text("\n")]
    pieces.append(join.finish())

    assert pieces == [" Hi", "", " \nthere", "  after", "", "\n"]


def test_whitespace_after_a_block_that_opens_the_reply_is_dropped() -> None:
    join = ContentJoin()

    join.block()

    assert [join.text("\n\n"), join.text(" Answer "), join.finish()] == ["", "Answer", " "]


FRAGMENTS = st.sampled_from(
    [
        "Sure. ",
        " ",
        "\n",
        "é😀",
        "{",
        "}",
        "[",
        "]",
        '"',
        "\\",
        ";",
        "<think>",
        "</think>",
        "[THINK]",
        "[/THINK]",
        "```json\n",
        "\n```",
        '{"name": "get_time", "arguments": {}}',
        '{"name": "get_time", "parameters": {"tz": "}"}}',
        "get_time()",
        "[get_time(tz='UTC')]",
        '{"q": "x"}',
        # Shapes the recovery pass reads: prose around calls, markup, closers, fences.
        "Sure. ",
        "<tool_use>",
        "</tool_call>",
        "[TOOL_CALLS]",
        "get_time(tz='UTC')",
        "; ",
        "`",
        '```json\n{"name": "get_time", "arguments": {"tz": "x"}}\n```',
    ]
)


@pytest.mark.parametrize("fmt", list(FORMATS.values()), ids=lambda f: f.name)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_any_chunking_of_any_text_streams_like_the_whole(
    fmt: ToolFormat, data: st.DataObject
) -> None:
    pieces = st.one_of(FRAGMENTS, st.sampled_from(fmt.markers or ("<",)), st.text(max_size=4))
    text = "".join(data.draw(st.lists(pieces, max_size=10)))
    if fmt.markers:  # a marker cut anywhere, then the rest of the reply
        marker = data.draw(st.sampled_from(fmt.markers))
        text += marker[: data.draw(st.integers(0, len(marker)))]
    tools = frozenset({"get_time"})
    reply = whole(fmt, text, tools)
    streamed = stream(fmt, random_chunks(text, data.draw(st.randoms(use_true_random=False))), tools)
    assert (streamed.content, streamed.calls, streamed.reasoning) == (
        reply.content,
        [(c.name, c.arguments) for c in reply.calls],
        reply.reasoning,
    )
    one_char = stream(fmt, list(text), tools)
    assert (one_char.content, one_char.calls) == (streamed.content, streamed.calls)

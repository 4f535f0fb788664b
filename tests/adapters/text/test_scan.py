from __future__ import annotations

from adapters.text.base import Reasoning, Text
from adapters.text.hermes import HermesFormat
from adapters.text.scan import ContentTrim, StreamParser

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
    [call] = parser.feed("</tool_call>")
    assert call.name == "get_time"
    assert parser.feed(" after") == [Text(" after")]
    assert parser.finish() == []


def test_content_trim_holds_trailing_whitespace_until_more_content() -> None:
    trim = ContentTrim()

    assert [trim.push(t) for t in ["\n ", "Hi", " \n", "there", "  "]] == [
        "",
        "Hi",
        "",
        " \nthere",
        "",
    ]

"""`server_tools: true` on /v1/messages: the Anthropic SDK sees the final answer of the loop."""

from __future__ import annotations

import anthropic

from tests.chat_service.test_tool_loop import conversation
from tests.support.tool_loop import LoopStack


def client(stack: LoopStack) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=stack.gateway.url, api_key=stack.user_key, max_retries=0)


def test_server_side_tools_answer_a_message(loop_stack: LoopStack) -> None:
    raw = client(loop_stack).messages.with_raw_response.create(
        model="time-server",
        max_tokens=100,
        messages=[{"role": "user", "content": "What time is it?"}],
    )
    message = raw.parse()

    assert [(b.type, getattr(b, "text", None)) for b in message.content] == [
        ("text", "It is 12:00 UTC.")
    ]
    assert message.stop_reason == "end_turn"
    assert loop_stack.catalog.calls == [("get_time", {})]
    history = conversation(loop_stack, raw.headers["x-gateway-conversation-id"])
    assert [m["role"] for m in history["messages"]] == ["user", "assistant", "tool", "assistant"]


def test_server_side_tools_stream_the_final_message(loop_stack: LoopStack) -> None:
    with client(loop_stack).messages.stream(
        model="time-server", max_tokens=100, messages=[{"role": "user", "content": "time?"}]
    ) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()

    assert text == "It is 12:00 UTC."
    assert final.stop_reason == "end_turn"
    assert loop_stack.catalog.calls == [("get_time", {})]

"""`server_tools: true`: the OpenAI SDK sees only the final answer of a server-side tool loop."""

from __future__ import annotations

import openai

from tests.chat_service.test_tool_loop import conversation, decide, follow
from tests.support.tool_loop import LoopStack


def sdk(stack: LoopStack) -> openai.OpenAI:
    return openai.OpenAI(base_url=stack.gateway.v1, api_key=stack.user_key, max_retries=0)


def test_server_side_tools_return_the_final_answer(loop_stack: LoopStack) -> None:
    raw = sdk(loop_stack).chat.completions.with_raw_response.create(
        model="time-server", messages=[{"role": "user", "content": "What time is it?"}]
    )
    completion = raw.parse()

    assert completion.choices[0].message.content == "It is 12:00 UTC."
    assert completion.choices[0].message.tool_calls is None
    assert loop_stack.catalog.calls == [("get_time", {})]
    history = conversation(loop_stack, raw.headers["x-gateway-conversation-id"])
    assert [m["role"] for m in history["messages"]] == ["user", "assistant", "tool", "assistant"]


def test_server_side_tools_stream_the_final_answer(loop_stack: LoopStack) -> None:
    chunks = list(
        sdk(loop_stack).chat.completions.create(
            model="time-server", messages=[{"role": "user", "content": "time?"}], stream=True
        )
    )
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == "It is 12:00 UTC."


def test_a_call_awaiting_approval_answers_with_the_conversation_to_follow(
    loop_stack: LoopStack,
) -> None:
    raw = sdk(loop_stack).chat.completions.with_raw_response.create(
        model="loop-server", messages=[{"role": "user", "content": "pay"}]
    )
    conversation_id = raw.headers["x-gateway-conversation-id"]
    assert conversation_id in (raw.parse().choices[0].message.content or "")
    assert loop_stack.catalog.calls == []

    [call] = conversation(loop_stack, conversation_id)["tool_calls"]
    assert decide(loop_stack, call["record_id"], "approve").status_code == 200
    follow(loop_stack, conversation_id)

    assert (
        conversation(loop_stack, conversation_id)["messages"][-1]["content"] == "Done: transferred"
    )

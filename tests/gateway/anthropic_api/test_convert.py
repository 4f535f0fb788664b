"""Messages API requests to canonical requests, and canonical responses to Messages."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.anthropic_api.convert import message_json, to_chat_request
from gateway.anthropic_api.schemas import MessagesRequest
from llm_service.types import (
    AssistantMessage,
    ChatResponse,
    FinishReason,
    ImagePart,
    NamedToolChoice,
    Reasoning,
    SystemMessage,
    TextPart,
    Thinking,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)


def request(**fields: Any) -> MessagesRequest:
    body = {"model": "m", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}
    return MessagesRequest.model_validate({**body, **fields})


def test_history_with_thinking_tool_use_and_results_becomes_canonical() -> None:
    chat = to_chat_request(
        request(
            system="sys",
            messages=[
                {"role": "user", "content": "q"},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "thinking": "plan", "signature": "sig"},
                        {"type": "redacted_thinking", "data": "opaque"},
                        {"type": "text", "text": "ok"},
                        {"type": "tool_use", "id": "t1", "name": "f", "input": {"a": 1}},
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "after"},
                        {"type": "tool_result", "tool_use_id": "t1", "is_error": True},
                    ],
                },
            ],
        )
    )

    assert chat.messages == (
        SystemMessage("sys"),
        UserMessage("q"),
        AssistantMessage(
            content="ok",
            tool_calls=(ToolCall("t1", "f", {"a": 1}),),
            thinking=(Thinking("plan", "sig"), Thinking("opaque", redacted=True)),
        ),
        ToolResultMessage("t1", "", is_error=True),
        UserMessage((TextPart("after"),)),
    )


def test_sampling_and_tools() -> None:
    chat = to_chat_request(
        request(
            max_tokens=7,
            temperature=0.5,
            top_p=0.8,
            top_k=3,
            stop_sequences=["X"],
            metadata={"user_id": "u"},
            tools=[{"name": "f", "input_schema": {"type": "object", "properties": {}}}],
            tool_choice={"type": "tool", "name": "f", "disable_parallel_tool_use": True},
        )
    )

    params = chat.params
    assert (params.max_tokens, params.temperature, params.top_p) == (7, 0.5, 0.8)
    assert (params.stop, params.user) == (("X",), "u")
    assert [(t.name, t.description, t.parameters) for t in chat.tools] == [
        ("f", "", {"type": "object", "properties": {}})
    ]
    assert chat.tool_choice == NamedToolChoice("f")
    assert chat.parallel_tool_calls is False


def test_images_become_urls() -> None:
    content = [
        {"type": "image", "source": {"type": "base64", "media_type": "image/gif", "data": "R0lG"}}
    ]
    chat = to_chat_request(request(messages=[{"role": "user", "content": content}]))
    assert chat.messages == (UserMessage((ImagePart("data:image/gif;base64,R0lG"),)),)


def test_a_tool_result_keeps_its_images_text_and_error_flag() -> None:
    image = {"type": "image", "source": {"type": "url", "url": "https://e.com/a.png"}}
    text = {"type": "text", "text": "the chart"}
    block = {"type": "tool_result", "tool_use_id": "t", "content": [text, image], "is_error": True}
    chat = to_chat_request(request(messages=[{"role": "user", "content": [block]}]))
    assert chat.messages == (
        ToolResultMessage(
            "t", (TextPart("the chart"), ImagePart("https://e.com/a.png")), is_error=True
        ),
    )


@pytest.mark.parametrize(
    ("finish", "stop_reason"),
    [
        ("stop", "end_turn"),
        ("length", "max_tokens"),
        ("tool_calls", "tool_use"),
        ("content_filter", "refusal"),
    ],
)
def test_response_becomes_a_message(finish: FinishReason, stop_reason: str) -> None:
    response = ChatResponse(
        message=AssistantMessage(
            content="hi",
            tool_calls=(ToolCall("c", "f", {"x": 1}),),
            thinking=(Thinking("t", "s"),),
        ),
        finish_reason=finish,
        usage=Usage(3, 4),
        model="upstream",
    )

    assert message_json(response, "msg_1", "alias") == {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "alias",
        "content": [
            {"type": "thinking", "thinking": "t", "signature": "s"},
            {"type": "text", "text": "hi"},
            {"type": "tool_use", "id": "c", "name": "f", "input": {"x": 1}},
        ],
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {
            "input_tokens": 3,
            "output_tokens": 4,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
    }


def test_a_system_message_inside_messages_stays_in_its_place() -> None:
    chat = to_chat_request(
        request(
            system="first",
            messages=[
                {"role": "user", "content": "q"},
                {"role": "system", "content": [{"type": "text", "text": "now terse"}]},
                {"role": "user", "content": "again"},
            ],
        )
    )

    assert chat.messages == (
        SystemMessage("first"),
        UserMessage("q"),
        SystemMessage("now terse"),
        UserMessage("again"),
    )


@pytest.mark.parametrize(
    ("fields", "reasoning"),
    [
        ({"thinking": {"type": "adaptive"}}, Reasoning()),
        (
            {"thinking": {"type": "adaptive"}, "output_config": {"effort": "high"}},
            Reasoning("high"),
        ),
        ({"output_config": {"effort": "max"}}, Reasoning("xhigh")),
        (
            {
                "thinking": {"type": "enabled", "budget_tokens": 2048},
                "output_config": {"effort": "low"},
            },
            Reasoning("low", 2048),
        ),
        ({"thinking": {"type": "disabled"}, "output_config": {"effort": "high"}}, None),
        ({}, None),
    ],
)
def test_thinking_and_effort_become_one_reasoning_request(
    fields: dict[str, Any], reasoning: Reasoning | None
) -> None:
    assert to_chat_request(request(**fields)).params.reasoning == reasoning


def test_deferred_tools_are_not_offered_up_front() -> None:
    schema = {"type": "object"}
    chat = to_chat_request(
        request(
            tools=[
                {"name": "Read", "input_schema": schema},
                {"name": "Later", "input_schema": schema, "defer_loading": True},
            ]
        )
    )

    assert [tool.name for tool in chat.tools] == ["Read"]

"""The official openai SDK's Responses API against the gateway, over an OpenAI and an Anthropic
model (wire-faithful fakes), whole and streamed, with function tools and stored history."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import openai
import pytest
from sqlalchemy import select

from db.engine import create_engine, session_factory
from db.usage_models import UsageRecord
from tests.gateway.responses_api.conftest import WEATHER_TOOL, ResponsesStack
from tests.support.fake_anthropic import FakeThinking
from tests.support.fake_openai import FakeReply, FakeToolCall
from tests.support.waiting import eventually

PROVIDERS = ["gpt", "claude"]


def _upstream(stack: ResponsesStack, model: str) -> list[dict[str, Any]]:
    fake = stack.openai_fake if model == "gpt" else stack.anthropic_fake
    return fake.requests


def _queue(stack: ResponsesStack, model: str, *replies: FakeReply) -> None:
    fake = stack.openai_fake if model == "gpt" else stack.anthropic_fake
    fake.queue(*replies)


@pytest.mark.parametrize("model", PROVIDERS)
def test_whole_text_answer(fresh: ResponsesStack, model: str) -> None:
    _queue(fresh, model, FakeReply(text="Hello there", prompt_tokens=12, completion_tokens=3))

    response = fresh.client().responses.create(
        model=model,
        input="Hi",
        instructions="Be brief.",
        max_output_tokens=50,
        temperature=0.2,
        metadata={"team": "a"},
    )

    assert response.object == "response"
    assert response.id.startswith("resp_")
    assert response.status == "completed"
    assert response.model == model
    assert response.output_text == "Hello there"
    assert [item.type for item in response.output] == ["message"]
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (12, 3)
    assert response.usage.total_tokens == 15
    assert response.metadata == {"team": "a"}
    assert response.instructions == "Be brief."
    sent = _upstream(fresh, model)[0]
    assert sent["max_tokens"] == 50
    assert sent["temperature"] == 0.2
    if model == "gpt":
        assert sent["messages"] == [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hi"},
        ]
    else:
        assert sent["system"] in ("Be brief.", [{"type": "text", "text": "Be brief."}])
        assert sent["messages"] == [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}]


@pytest.mark.parametrize("model", PROVIDERS)
def test_function_tool_turn_continues_with_previous_response_id(
    fresh: ResponsesStack, model: str
) -> None:
    _queue(
        fresh,
        model,
        FakeReply(tool_calls=[FakeToolCall("get_weather", {"city": "Oslo"}, id="call_1")]),
        FakeReply(text="Oslo is sunny."),
    )
    client = fresh.client()

    first = client.responses.create(
        model=model,
        input=[{"role": "user", "content": "Weather in Oslo?"}],
        instructions="You are a weather bot.",
        tools=[WEATHER_TOOL],  # type: ignore[list-item]
        tool_choice="auto",
        parallel_tool_calls=False,
    )
    calls = [item for item in first.output if item.type == "function_call"]
    assert len(calls) == 1
    assert calls[0].name == "get_weather"
    assert json.loads(calls[0].arguments) == {"city": "Oslo"}
    assert calls[0].call_id == "call_1"
    assert first.parallel_tool_calls is False

    second = client.responses.create(
        model=model,
        previous_response_id=first.id,
        input=[
            {"type": "function_call_output", "call_id": calls[0].call_id, "output": "sunny, 21C"}
        ],
        tools=[WEATHER_TOOL],  # type: ignore[list-item]
    )

    assert second.output_text == "Oslo is sunny."
    assert second.previous_response_id == first.id
    sent = _upstream(fresh, model)
    if model == "gpt":
        assert [m["role"] for m in sent[0]["messages"]] == ["system", "user"]
        assert sent[0]["parallel_tool_calls"] is False
        assert sent[0]["tools"][0]["function"]["name"] == "get_weather"
        # Instructions do not carry over to the follow-up; the stored history does.
        history = sent[1]["messages"]
        assert [m["role"] for m in history] == ["user", "assistant", "tool"]
        assert history[1]["tool_calls"][0]["id"] == "call_1"
        assert history[2] == {"role": "tool", "tool_call_id": "call_1", "content": "sunny, 21C"}
    else:
        assert sent[0]["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}
        assert "system" not in sent[1]
        history = sent[1]["messages"]
        assert [m["role"] for m in history] == ["user", "assistant", "user"]
        assert history[1]["content"][-1]["type"] == "tool_use"
        result = history[2]["content"][0]
        assert result["type"] == "tool_result"
        assert result["tool_use_id"] == history[1]["content"][-1]["id"]


PIXEL = "data:image/png;base64,iVBORw0KGgo="


@pytest.mark.parametrize("model", PROVIDERS)
def test_a_function_output_of_text_and_image_reaches_each_provider(
    fresh: ResponsesStack, model: str
) -> None:
    _queue(fresh, model, FakeReply(text="Clear skies."))
    output = [
        {"type": "input_text", "text": "radar:"},
        {"type": "input_image", "image_url": PIXEL, "detail": "auto"},
    ]

    answer = fresh.client().responses.create(
        model=model,
        input=[
            {"role": "user", "content": "Radar over Oslo?"},
            {
                "type": "function_call",
                "call_id": "call_1",
                "name": "get_weather",
                "arguments": '{"city": "Oslo"}',
            },
            {"type": "function_call_output", "call_id": "call_1", "output": output},
        ],
        tools=[WEATHER_TOOL],  # type: ignore[list-item]
    )

    assert answer.output_text == "Clear skies."
    history = _upstream(fresh, model)[0]["messages"]
    if model == "gpt":  # no images in a tool message: they follow it in a user message
        assert [m["role"] for m in history] == ["user", "assistant", "tool", "user"]
        assert history[2]["content"] == "radar:\n[1 image in the next user message]"
        assert history[3]["content"][-1]["image_url"]["url"] == PIXEL
    else:
        image = {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}
        assert history[2]["content"][0]["content"] == [
            {"type": "text", "text": "radar:"},
            {"type": "image", "source": image},
        ]


@pytest.mark.parametrize("model", PROVIDERS)
def test_streamed_text_assembles_in_the_sdk(fresh: ResponsesStack, model: str) -> None:
    _queue(
        fresh, model, FakeReply(text="streaming works fine", prompt_tokens=9, completion_tokens=4)
    )

    with fresh.client().responses.stream(model=model, input="Hi") as stream:
        events = list(stream)
        final = stream.get_final_response()

    types = [event.type for event in events]
    assert types[:4] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
    ]
    assert types[-4:] == [
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    deltas = [e.delta for e in events if e.type == "response.output_text.delta"]
    assert len(deltas) > 1
    assert "".join(deltas) == "streaming works fine"
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert final.output_text == "streaming works fine"
    assert final.status == "completed"
    assert final.usage is not None
    assert (final.usage.input_tokens, final.usage.output_tokens) == (9, 4)
    # The stored response is the one the stream completed with.
    assert fresh.client().responses.retrieve(final.id).output_text == "streaming works fine"


@pytest.mark.parametrize("model", PROVIDERS)
def test_streamed_function_call_then_streamed_follow_up(fresh: ResponsesStack, model: str) -> None:
    _queue(
        fresh,
        model,
        FakeReply(
            text="Let me check.",
            tool_calls=[FakeToolCall("get_weather", {"city": "Oslo"}, id="call_7")],
        ),
        FakeReply(text="Sunny in Oslo."),
    )
    client = fresh.client()

    with client.responses.stream(
        model=model,
        input="Weather in Oslo?",
        tools=[WEATHER_TOOL],  # type: ignore[list-item]
    ) as stream:
        events = list(stream)
        first = stream.get_final_response()

    types = [event.type for event in events]
    assert "response.function_call_arguments.delta" in types
    assert types.index("response.function_call_arguments.done") < types.index("response.completed")
    arguments_done = next(e for e in events if e.type == "response.function_call_arguments.done")
    assert arguments_done.name == "get_weather"
    # Byte for byte what the deltas made, not a re-serialization (strict clients compare them).
    deltas = "".join(e.delta for e in events if e.type == "response.function_call_arguments.delta")
    assert arguments_done.arguments == deltas
    assert json.loads(deltas) == {"city": "Oslo"}
    assert [item.type for item in first.output] == ["message", "function_call"]
    call = first.output[1]
    assert call.type == "function_call"
    assert call.arguments == deltas
    added = [e.item.id for e in events if e.type == "response.output_item.added"]
    assert added == [item.id for item in first.output]

    with client.responses.stream(
        model=model,
        previous_response_id=first.id,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}],
    ) as stream:
        text = "".join(e.delta for e in stream if e.type == "response.output_text.delta")
    assert text == "Sunny in Oslo."
    history = _upstream(fresh, model)[1]["messages"]
    assert len(history) == 3


def test_retrieve_and_delete_are_the_owners_alone(fresh: ResponsesStack) -> None:
    owner, other = fresh.client(), fresh.client(fresh.other_key)
    response = owner.responses.create(model="mock", input="remember me")

    assert owner.responses.retrieve(response.id).output_text == "Echo: remember me"
    with pytest.raises(openai.NotFoundError):
        other.responses.retrieve(response.id)
    with pytest.raises(openai.NotFoundError):
        other.responses.delete(response.id)
    with pytest.raises(openai.NotFoundError) as refused:
        other.responses.create(model="mock", input="hi", previous_response_id=response.id)
    assert refused.value.body["param"] == "previous_response_id"  # type: ignore[index]

    owner.responses.delete(response.id)
    with pytest.raises(openai.NotFoundError):
        owner.responses.retrieve(response.id)


def test_store_false_keeps_nothing(fresh: ResponsesStack) -> None:
    client = fresh.client()
    response = client.responses.create(model="mock", input="forget me", store=False)

    assert response.output_text == "Echo: forget me"
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(response.id)


@pytest.mark.parametrize(
    "tool",
    [{"type": "computer_use_preview"}, {"type": "file_search", "vector_store_ids": ["vs_1"]}],
)
def test_unmapped_built_in_tools_are_not_offered(
    fresh: ResponsesStack, tool: dict[str, Any]
) -> None:
    fresh.openai_fake.queue(FakeReply(text="No tools needed."))

    response = fresh.client().responses.create(
        model="gpt",
        input="hi",
        tools=[tool, WEATHER_TOOL],  # type: ignore[list-item]
    )

    assert response.output_text == "No tools needed."
    assert response.tools[0].type == tool["type"]  # echoed as sent
    sent = fresh.openai_fake.requests[0]["tools"]
    assert [t["function"]["name"] for t in sent] == ["get_weather"]


def test_bad_input_items_and_roles_get_clear_errors(fresh: ResponsesStack) -> None:
    client = fresh.client()
    with pytest.raises(openai.BadRequestError) as refused:
        client.responses.create(model="mock", input=[{"type": "item_reference", "id": "x"}])
    assert "item_reference" in refused.value.message
    with pytest.raises(openai.PermissionDeniedError):
        client.responses.create(model="analyst-only", input="hi")
    with pytest.raises(openai.NotFoundError):
        client.responses.create(model="no-such-model", input="hi")
    with pytest.raises(openai.AuthenticationError):
        fresh.client("gw-not-a-key").responses.create(model="mock", input="hi")


def test_usage_is_recorded_per_request(fresh: ResponsesStack) -> None:
    fresh.openai_fake.queue(FakeReply(text="counted", prompt_tokens=21, completion_tokens=2))
    response = fresh.client().responses.create(model="gpt", input="count me")
    assert response.output_text == "counted"

    async def rows() -> list[UsageRecord]:
        engine = create_engine(fresh.gateway.database_url)
        try:
            async with session_factory(engine)() as session:
                found = await session.scalars(
                    select(UsageRecord).where(UsageRecord.prompt_tokens == 21)
                )
                return list(found)
        finally:
            await engine.dispose()

    recorded: list[UsageRecord] = []

    def found() -> bool:
        recorded[:] = asyncio.run(rows())
        return bool(recorded)

    eventually(found, "the usage row")
    assert [(r.route, r.model, r.provider, r.completion_tokens) for r in recorded] == [
        ("/v1/responses", "gpt", "openai", 2)
    ]


def test_a_stream_that_fails_after_it_started_ends_with_an_error_event(
    fresh: ResponsesStack,
) -> None:
    events = list(fresh.client().responses.create(model="gpt-cut", input="Hi", stream=True))

    assert [e.type for e in events[:2]] == ["response.created", "response.in_progress"]
    assert "response.output_text.delta" in [e.type for e in events]
    last = events[-1]
    assert last.type == "error"
    assert last.code == "upstream_server_error"
    assert "crashed" in last.message
    assert "response.completed" not in [e.type for e in events]


def test_follow_ups_see_the_history_but_not_the_old_instructions(fresh: ResponsesStack) -> None:
    client = fresh.client()
    first = client.responses.create(model="gpt", input="Hi", instructions="Be brief.")
    follow_up = client.responses.create(model="gpt", input="And?", previous_response_id=first.id)

    assert follow_up.output_text == "fake says: And?"
    assert fresh.openai_fake.requests[1]["messages"] == [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "fake says: Hi"},
        {"role": "user", "content": "And?"},
    ]


def test_too_many_messages_counts_the_stored_history(fresh: ResponsesStack) -> None:
    client = fresh.client()
    first = client.responses.create(
        model="mock", input=[{"role": "user", "content": str(n)} for n in range(4)]
    )  # 4 messages in, 1 out: the limit of 5

    with pytest.raises(openai.APIStatusError) as refused:
        client.responses.create(model="mock", input="one more", previous_response_id=first.id)
    assert refused.value.status_code == 413
    assert refused.value.body["code"] == "too_many_messages"  # type: ignore[index]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_anthropic_thinking_comes_back_as_reasoning_and_replays(
    fresh: ResponsesStack, stream: bool
) -> None:
    fake = fresh.anthropic_fake
    # Extended thinking on: the fake refuses a tool round whose assistant turn lacks its
    # signed thinking block, as Anthropic does.
    fake.thinking = [FakeThinking("Weather needs the tool.", "sig-w")]
    fake.queue(
        FakeReply(tool_calls=[FakeToolCall("get_weather", {"city": "Oslo"}, id="call_1")]),
        FakeReply(text="Oslo is sunny."),
    )
    client = fresh.client()
    asked: list[Any] = [{"role": "user", "content": "Weather in Oslo?"}]
    try:
        if stream:
            events = list(
                client.responses.create(
                    model="claude", input=asked, tools=[WEATHER_TOOL], store=False, stream=True
                )
            )
            deltas = [e.delta for e in events if e.type == "response.reasoning_text.delta"]
            assert "".join(deltas) == "Weather needs the tool."
            first = next(e.response for e in events if e.type == "response.completed")
        else:
            first = client.responses.create(
                model="claude", input=asked, tools=[WEATHER_TOOL], store=False
            )
        assert [i.type for i in first.output] == ["reasoning", "function_call"]
        reasoning = first.output[0]
        assert reasoning.type == "reasoning"
        assert [c.text for c in reasoning.content or ()] == ["Weather needs the tool."]
        assert reasoning.encrypted_content
        call = first.output[1]
        assert call.type == "function_call"

        replayed = [
            *asked,
            *(item.model_dump(exclude_none=True) for item in first.output),
            {"type": "function_call_output", "call_id": call.call_id, "output": "sunny"},
        ]
        second = client.responses.create(
            model="claude", input=replayed, tools=[WEATHER_TOOL], store=False
        )
    finally:
        fake.thinking = []

    assert second.output_text == "Oslo is sunny."
    assistant = fake.requests[-1]["messages"][1]
    assert assistant["content"][0] == {
        "type": "thinking",
        "thinking": "Weather needs the tool.",
        "signature": "sig-w",
    }

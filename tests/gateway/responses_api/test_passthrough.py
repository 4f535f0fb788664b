"""An OpenAI model's Responses requests go to OpenAI's own Responses API (the fake's wire-faithful
``/v1/responses``), whole and streamed: reasoning items come back and go back, usage keeps its
reasoning and cached tokens, and the gateway's keys, history, retries and fallbacks still hold."""

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
from tests.support.fake_openai import FakeReply, FakeToolCall
from tests.support.waiting import eventually

THINKING = "The user wants Oslo's weather; call the tool."


def _tool_turn(stack: ResponsesStack) -> None:
    stack.openai_fake.queue(
        FakeReply(
            reasoning=THINKING,
            tool_calls=[FakeToolCall("get_weather", {"city": "Oslo"}, id="call_1")],
            prompt_tokens=40,
            cached_tokens=32,
            completion_tokens=20,
            reasoning_tokens=12,
        ),
        FakeReply(reasoning="Now answer.", text="Oslo is sunny."),
    )


def test_reasoning_items_come_back_and_go_back_with_previous_response_id(
    fresh: ResponsesStack,
) -> None:
    _tool_turn(fresh)
    client = fresh.client()

    first = client.responses.create(
        model="gpt-native",
        input="Weather in Oslo?",
        instructions="You are a weather bot.",
        tools=[WEATHER_TOOL],  # type: ignore[list-item]
        reasoning={"effort": "low", "summary": "auto"},
    )

    assert [item.type for item in first.output] == ["reasoning", "function_call"]
    reasoning = first.output[0]
    assert reasoning.type == "reasoning"
    assert reasoning.summary[0].text == THINKING
    assert reasoning.encrypted_content  # asked for by the gateway, so the caller may replay it
    assert first.id.startswith("resp_")
    assert first.model == "gpt-native"
    assert first.store is True
    assert first.usage is not None
    assert first.usage.output_tokens_details.reasoning_tokens == 12
    assert first.usage.input_tokens_details.cached_tokens == 32
    sent = fresh.openai_fake.requests[0]
    assert fresh.openai_fake.paths == ["/v1/responses"]
    assert sent["model"] == "gpt-upstream"
    assert sent["store"] is False
    assert "reasoning.encrypted_content" in sent["include"]
    assert sent["reasoning"] == {"effort": "low", "summary": "auto"}
    assert sent["instructions"] == "You are a weather bot."
    assert "previous_response_id" not in sent

    call = first.output[1]
    assert call.type == "function_call"
    second = client.responses.create(
        model="gpt-native",
        previous_response_id=first.id,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}],
        tools=[WEATHER_TOOL],  # type: ignore[list-item]
    )

    assert second.output_text == "Oslo is sunny."
    assert second.previous_response_id == first.id
    replayed = fresh.openai_fake.requests[1]["input"]
    # The fake refuses a function call without its reasoning item, or reasoning it did not issue.
    assert [item.get("type") for item in replayed] == [
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
    ]
    assert replayed[1]["encrypted_content"] == reasoning.encrypted_content
    assert "instructions" not in fresh.openai_fake.requests[1]


def test_a_caller_that_keeps_its_own_history_sends_the_reasoning_back(
    fresh: ResponsesStack,
) -> None:
    _tool_turn(fresh)
    client = fresh.client()
    first = client.responses.create(
        model="gpt-native", input="Weather in Oslo?", tools=[WEATHER_TOOL], store=False
    )  # type: ignore[list-item]
    call = next(item for item in first.output if item.type == "function_call")
    history: list[Any] = [
        {"role": "user", "content": "Weather in Oslo?"},
        *[item.model_dump(exclude_none=True) for item in first.output],
        {"type": "function_call_output", "call_id": call.call_id, "output": "sunny"},
    ]

    second = client.responses.create(model="gpt-native", input=history, store=False)

    assert second.output_text == "Oslo is sunny."
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(first.id)


def test_streamed_events_are_relayed_in_order_and_the_response_is_stored(
    fresh: ResponsesStack,
) -> None:
    _tool_turn(fresh)
    client = fresh.client()

    with client.responses.stream(
        model="gpt-native",
        input="Weather in Oslo?",
        tools=[WEATHER_TOOL],  # type: ignore[list-item]
    ) as stream:
        events = list(stream)
        first = stream.get_final_response()

    types = [event.type for event in events]
    assert types[:3] == ["response.created", "response.in_progress", "response.output_item.added"]
    assert types.index("response.reasoning_summary_text.delta") < types.index(
        "response.function_call_arguments.delta"
    )
    summary = "".join(e.delta for e in events if e.type == "response.reasoning_summary_text.delta")
    assert summary == THINKING
    assert types[-1] == "response.completed"
    assert [e.sequence_number for e in events] == list(range(len(events)))
    created = events[0]
    assert created.type == "response.created"
    assert created.response.id == first.id
    assert created.response.model == "gpt-native"
    assert [item.type for item in first.output] == ["reasoning", "function_call"]
    assert first.usage is not None
    assert first.usage.output_tokens_details.reasoning_tokens == 12
    stored = client.responses.retrieve(first.id)
    assert stored.output[0].type == "reasoning"

    call = first.output[1]
    assert call.type == "function_call"
    with client.responses.stream(
        model="gpt-native",
        previous_response_id=first.id,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}],
    ) as stream:
        text = "".join(e.delta for e in stream if e.type == "response.output_text.delta")
    assert text == "Oslo is sunny."
    assert fresh.openai_fake.requests[1]["stream"] is True


def test_reasoning_and_cached_tokens_are_recorded(fresh: ResponsesStack) -> None:
    fresh.openai_fake.queue(
        FakeReply(
            reasoning="hm",
            text="counted",
            prompt_tokens=77,
            cached_tokens=64,
            completion_tokens=9,
            reasoning_tokens=5,
        )
    )
    fresh.client().responses.create(model="gpt-native", input="count me")

    async def rows() -> list[UsageRecord]:
        engine = create_engine(fresh.gateway.database_url)
        try:
            async with session_factory(engine)() as session:
                found = await session.scalars(
                    select(UsageRecord).where(UsageRecord.prompt_tokens == 77)
                )
                return list(found)
        finally:
            await engine.dispose()

    recorded: list[UsageRecord] = []

    def found() -> bool:
        recorded[:] = asyncio.run(rows())
        return bool(recorded)

    eventually(found, "the usage row")
    row = recorded[0]
    assert (row.route, row.model, row.provider) == ("/v1/responses", "gpt-native", "openai")
    assert (row.cached_tokens, row.reasoning_tokens, row.completion_tokens) == (64, 5, 9)


def test_a_dead_deployment_falls_back_and_still_passes_through(fresh: ResponsesStack) -> None:
    response = fresh.client().responses.create(model="gpt-native-behind-a-dead-one", input="Hi")

    assert response.output_text == "fake says: Hi"
    assert response.model == "gpt-native-behind-a-dead-one"
    assert fresh.openai_fake.paths == ["/v1/responses"]


def test_an_alias_that_may_fall_back_to_another_provider_is_translated(
    fresh: ResponsesStack,
) -> None:
    response = fresh.client().responses.create(model="gpt-native-or-claude", input="Hi")

    assert response.output_text == "fake says: Hi"
    assert fresh.openai_fake.paths == ["/v1/chat/completions"]


def test_a_stream_that_fails_upstream_ends_with_an_error_event(fresh: ResponsesStack) -> None:
    failure = {"message": "the model crashed", "type": "server_error", "code": "server_error"}
    fresh.openai_fake.queue(FakeReply(text="Hello there", stream_error=failure, error_after=4))

    events = list(fresh.client().responses.create(model="gpt-native", input="Hi", stream=True))

    assert events[-1].type == "error"
    assert "crashed" in events[-1].message
    assert "response.completed" not in [e.type for e in events]


def test_upstream_refusals_keep_their_status(fresh: ResponsesStack) -> None:
    error = {"message": "bad reasoning effort", "type": "invalid_request_error"}
    fresh.openai_fake.queue(FakeReply(status=400, error=error))

    with pytest.raises(openai.BadRequestError) as refused:
        fresh.client().responses.create(model="gpt-native", input="Hi")
    assert "bad reasoning effort" in refused.value.message


def test_input_items_are_listed_page_by_page(fresh: ResponsesStack) -> None:
    client = fresh.client()
    first = client.responses.create(model="gpt-native", input="Hi")
    response = client.responses.create(
        model="gpt-native",
        previous_response_id=first.id,
        input=[
            {"role": "user", "content": "one"},
            {"role": "user", "content": [{"type": "input_text", "text": "two"}]},
            {"role": "user", "content": "three"},
        ],
    )

    newest_first = client.responses.input_items.list(response.id)
    assert [item.content[0].text for item in newest_first.data] == ["three", "two", "one"]  # type: ignore[union-attr]
    assert all(item.id for item in newest_first.data)  # type: ignore[union-attr]
    page = client.responses.input_items.list(response.id, limit=2, order="asc")
    assert page.has_more is True
    everything = [item.content[0].text for item in page]  # type: ignore[union-attr]
    assert everything == ["one", "two", "three"]  # the SDK followed `after` to the next page
    with pytest.raises(openai.NotFoundError):
        fresh.client(fresh.other_key).responses.input_items.list(response.id)
    only = client.responses.input_items.list(first.id).data
    assert [item.type for item in only] == ["message"]


@pytest.mark.parametrize("model", ["gpt", "gpt-native"])
def test_json_schema_text_format_reaches_the_model(fresh: ResponsesStack, model: str) -> None:
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    }
    fresh.openai_fake.queue(FakeReply(text='{"city": "Oslo"}'))
    text = {"format": {"type": "json_schema", "name": "place", "schema": schema, "strict": True}}

    response = fresh.client().responses.create(model=model, input="Where?", text=text)  # type: ignore[arg-type]

    assert json.loads(response.output_text) == {"city": "Oslo"}
    assert response.text is not None
    assert response.text.format is not None
    assert response.text.format.type == "json_schema"
    sent = fresh.openai_fake.requests[0]
    if model == "gpt":
        assert sent["response_format"] == {
            "type": "json_schema",
            "json_schema": {"name": "place", "schema": schema, "strict": True},
        }
    else:
        assert sent["text"] == text


def test_json_object_format_is_refused_for_a_provider_that_cannot_hold_to_it(
    fresh: ResponsesStack,
) -> None:
    client = fresh.client()
    fresh.openai_fake.queue(FakeReply(text="{}"))
    client.responses.create(model="gpt", input="json", text={"format": {"type": "json_object"}})
    assert fresh.openai_fake.requests[0]["response_format"] == {"type": "json_object"}

    with pytest.raises(openai.BadRequestError) as refused:
        client.responses.create(
            model="claude", input="json", text={"format": {"type": "json_object"}}
        )
    assert refused.value.body["param"] == "text.format"  # type: ignore[index]
    assert "anthropic" in refused.value.message
    assert fresh.anthropic_fake.requests == []


@pytest.mark.parametrize("model", ["gpt-native", "claude"])
def test_a_mapped_built_in_tool_is_offered_as_its_mcp_tool(
    fresh: ResponsesStack, model: str
) -> None:
    fake = fresh.openai_fake if model == "gpt-native" else fresh.anthropic_fake
    fake.queue(FakeReply(tool_calls=[FakeToolCall("echo", {"text": "news"}, id="call_s")]))

    response = fresh.client().responses.create(
        model=model,
        input="Search the news",
        tools=[{"type": "web_search"}, WEATHER_TOOL],  # type: ignore[list-item]
    )

    call = next(item for item in response.output if item.type == "function_call")
    assert (call.name, json.loads(call.arguments)) == ("echo", {"text": "news"})
    assert response.tools[0].type == "web_search"  # echoed as the caller sent it
    sent = fake.requests[0]["tools"]
    if model == "gpt-native":
        assert sent[0]["type"] == "function"
        assert sent[0]["name"] == "echo"
        assert sent[0]["parameters"]["required"] == ["text"]
        assert sent[1] == WEATHER_TOOL
    else:
        assert [tool["name"] for tool in sent] == ["echo", "get_weather"]


def test_a_built_in_tool_mapped_to_a_tool_the_key_may_not_use_is_refused(
    fresh: ResponsesStack,
) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        fresh.client().responses.create(
            model="gpt-native",
            input="run code",
            tools=[{"type": "code_interpreter", "container": {"type": "auto"}}],
        )

    assert "`code_interpreter`" in refused.value.message
    assert "`fail`" in refused.value.message
    assert fresh.openai_fake.requests == []


def test_reasoning_without_encrypted_content_is_not_replayed(fresh: ResponsesStack) -> None:
    """A model that refuses encrypted reasoning returns reasoning that cannot be sent back with
    ``store: false`` (the fake refuses it, as OpenAI does): the follow-up leaves it out."""
    fresh.plain_fake.queue(FakeReply(reasoning="hm", text="first"), FakeReply(text="second"))
    client = fresh.client()

    first = client.responses.create(model="gpt-plain", input="Hi")
    assert first.output[0].type == "reasoning"
    second = client.responses.create(model="gpt-plain", input="And?", previous_response_id=first.id)

    assert second.output_text == "second"
    replayed = fresh.plain_fake.requests[-1]["input"]
    assert [item.get("type") for item in replayed] == ["message", "message", "message"]

"""OpenAI's own Responses API through the adapter: read as the official SDK reads it (the fake
checked against the SDK's typed stream), usage with its details, failures mapped by type."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import openai
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from adapters.openai_responses import OpenAIResponsesAdapter
from llm_service.config import ModelConfig
from llm_service.errors import (
    UpstreamProtocolError,
    UpstreamRateLimited,
    UpstreamServerError,
)
from llm_service.types import ResponsesCall, ResponsesDone, ResponsesEvent
from tests.support.fake_openai import FakeOpenAI, FakeReply, FakeToolCall
from tests.support.servers import serve

CALL = ResponsesCall({"input": "ping", "include": ["reasoning.encrypted_content"]})


def _adapter(base_url: str, **values: Any) -> OpenAIResponsesAdapter:
    config = ModelConfig.model_validate(
        {"name": "gpt", "provider": "openai", "model": "gpt-up", "base_url": base_url, **values}
    )
    return OpenAIResponsesAdapter(config, api_key="sk-test")


async def test_the_sdk_and_the_adapter_read_the_fake_alike() -> None:
    fake = FakeOpenAI()
    reply = FakeReply(
        reasoning="think",
        text="pong",
        tool_calls=[FakeToolCall("lookup", {"q": "x"}, id="call_1")],
        prompt_tokens=30,
        cached_tokens=20,
        completion_tokens=8,
        reasoning_tokens=3,
    )
    with serve(fake.app()) as url:
        sdk = openai.AsyncOpenAI(api_key="sk-test", base_url=f"{url}/v1", max_retries=0)
        adapter = _adapter(f"{url}/v1", max_tokens=99)
        try:
            fake.queue(reply, reply)
            async with sdk.responses.stream(model="gpt-up", input="ping") as stream:
                sdk_types = [event.type async for event in stream]
                by_sdk = await stream.get_final_response()
            events = [event async for event in adapter.respond_stream(CALL)]
            fake.queue(reply)
            whole = await adapter.respond(CALL)
        finally:
            await adapter.aclose()
            await sdk.close()

    ours = [e.data["type"] for e in events if isinstance(e, ResponsesEvent)]
    done = events[-1]
    assert isinstance(done, ResponsesDone)
    assert [*ours, done.data["type"]] == sdk_types
    assert [item.type for item in by_sdk.output] == ["reasoning", "message", "function_call"]
    assert [item["type"] for item in done.answer.response["output"]] == [
        "reasoning",
        "message",
        "function_call",
    ]
    for answer in (done.answer, whole):
        assert answer.usage.prompt_tokens == 30
        assert answer.usage.cached_tokens == 20
        assert answer.usage.reasoning_tokens == 3
        assert answer.model == "gpt-up"
    sent = fake.requests[-1]
    assert (sent["model"], sent["stream"], sent["max_output_tokens"]) == ("gpt-up", False, 99)
    assert fake.requests[1]["stream"] is True


async def test_a_status_error_is_mapped_by_status() -> None:
    fake = FakeOpenAI()
    fake.queue(FakeReply(status=429, error={"message": "slow down", "type": "rate_limit"}))
    with serve(fake.app()) as url:
        adapter = _adapter(f"{url}/v1")
        try:
            with pytest.raises(UpstreamRateLimited):
                await adapter.respond(CALL)
        finally:
            await adapter.aclose()


def _scripted(*events: dict[str, Any], whole: Any = None) -> Starlette:
    async def respond(request: Request) -> Response:
        if not (await request.json()).get("stream"):
            return Response(json.dumps(whole), media_type="application/json")

        async def body() -> AsyncIterator[str]:
            for event in events:
                yield f"event: {event['type']}\ndata: {json.dumps(event)}\n\n"

        return StreamingResponse(body(), media_type="text/event-stream")

    return Starlette(routes=[Route("/v1/responses", respond, methods=["POST"])])


@pytest.mark.parametrize(
    ("events", "error"),
    [
        # The provider's own failure, in the stream
        (
            [
                {
                    "type": "response.failed",
                    "response": {"status": "failed", "error": {"message": "boom"}},
                }
            ],
            UpstreamServerError,
        ),
        ([{"type": "error", "code": "server_error", "message": "boom"}], UpstreamServerError),
        # The connection ends before the response does
        (
            [{"type": "response.created", "response": {"status": "in_progress"}}],
            UpstreamProtocolError,
        ),
    ],
)
async def test_a_stream_that_does_not_complete_is_an_error(
    events: list[dict[str, Any]], error: type[Exception]
) -> None:
    with serve(_scripted(*events)) as url:
        adapter = _adapter(f"{url}/v1")
        try:
            with pytest.raises(error):
                [event async for event in adapter.respond_stream(CALL)]
        finally:
            await adapter.aclose()


@pytest.mark.parametrize(
    "whole",
    [["not", "an", "object"], {"object": "chat.completion"}, {"status": "failed"}],
)
async def test_a_whole_answer_that_is_not_a_response_is_an_error(whole: Any) -> None:
    with serve(_scripted(whole=whole)) as url:
        adapter = _adapter(f"{url}/v1")
        try:
            with pytest.raises((UpstreamProtocolError, UpstreamServerError)):
                await adapter.respond(CALL)
        finally:
            await adapter.aclose()


def test_native_responses_is_chosen_for_openai_itself_or_when_configured() -> None:
    def native(**values: Any) -> bool:
        return ModelConfig.model_validate(
            {"name": "m", "provider": "openai", **values}
        ).native_responses

    assert native()
    assert native(base_url="https://api.openai.com/v1")
    assert not native(base_url="http://vllm:8000/v1")
    assert native(base_url="http://vllm:8000/v1", responses_api="native")
    assert not native(responses_api="translate")


@pytest.mark.parametrize("stream", [False, True])
async def test_a_model_that_refuses_encrypted_reasoning_is_asked_again_without(
    stream: bool,
) -> None:
    fake = FakeOpenAI(refuses_encrypted_reasoning=True)
    plain = ResponsesCall({"input": "ping"})
    with serve(fake.app()) as url:
        adapter = _adapter(f"{url}/v1")
        try:
            for _ in range(2):
                if stream:
                    events = [event async for event in adapter.respond_stream(plain)]
                    answer = events[-1].answer  # type: ignore[union-attr]
                else:
                    answer = await adapter.respond(plain)
                assert answer.response["output"][0]["type"] == "message"
        finally:
            await adapter.aclose()

    asked = ["include" in body for body in fake.requests]
    assert asked == [True, False, False]  # refused once, then never asked again

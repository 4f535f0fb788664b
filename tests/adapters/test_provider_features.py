"""Provider features on the way: what each adapter sends for caching, reasoning, output formats
and seeds, as the wire-faithful fakes received it, and what comes back in usage.

docs/providers.md has the table these tests hold each adapter to.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import httpx
import pytest

from llm_service.errors import InvalidRequest
from llm_service.types import (
    AssistantMessage,
    CacheControl,
    ChatRequest,
    ImagePart,
    NamedToolChoice,
    Reasoning,
    ResponseFormat,
    SamplingParams,
    SystemMessage,
    TextPart,
    Thinking,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    Usage,
    UserMessage,
)
from tests.adapters.conformance import MODES, Target, run
from tests.support.fake_openai import FakeReply, FakeToolCall

pytestmark = pytest.mark.asyncio(loop_scope="session")

EPHEMERAL = CacheControl()
HOUR = CacheControl(ttl="1h")
CLOCK = ToolSpec("get_time", "The time", {"type": "object", "properties": {}}, HOUR)
PIXEL = "data:image/png;base64,iVBORw0KGgo="
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "integer"}},
    "required": ["answer"],
    "additionalProperties": False,
}
ANSWER = ResponseFormat("json_schema", schema=SCHEMA, name="answer", strict=True)


def _ask(**params: Any) -> ChatRequest:
    return ChatRequest((UserMessage("What is 6 x 7?"),), params=SamplingParams(**params))


CACHED_HISTORY = ChatRequest(
    messages=(
        SystemMessage("You are terse.", cache_control=HOUR),
        SystemMessage("Answer in English."),
        UserMessage((TextPart("A long document", cache_control=EPHEMERAL), ImagePart(PIXEL))),
        AssistantMessage(
            content="Let me check.",
            tool_calls=(ToolCall("toolu_1", "get_time", {}, cache_control=EPHEMERAL),),
        ),
        ToolResultMessage("toolu_1", "noon"),
    ),
    tools=(CLOCK,),
)


@pytest.mark.parametrize("mode", MODES)
async def test_cache_breakpoints_reach_anthropic_where_the_caller_put_them(
    anthropic: Target, mode: str
) -> None:
    anthropic.queue(FakeReply(text="Noon.", prompt_tokens=100, cached_tokens=60))
    response, _ = await run(anthropic.adapter(), CACHED_HISTORY, mode)

    sent = anthropic.sent
    assert sent["system"] == [
        {
            "type": "text",
            "text": "You are terse.",
            "cache_control": {"type": "ephemeral", "ttl": "1h"},
        },
        {"type": "text", "text": "Answer in English."},
    ]
    assert sent["tools"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    user, assistant, _ = sent["messages"]
    assert user["content"][0]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in user["content"][1]
    assert assistant["content"][1]["cache_control"] == {"type": "ephemeral"}
    assert response.usage == Usage(100, 7, cached_tokens=60)


async def test_a_cached_tool_result_and_top_level_caching_reach_anthropic(
    anthropic: Target,
) -> None:
    history = (
        *CACHED_HISTORY.messages[:3],
        AssistantMessage(tool_calls=(ToolCall("toolu_1", "get_time", {}),)),
        ToolResultMessage("toolu_1", "noon", cache_control=EPHEMERAL),
    )
    request = replace(CACHED_HISTORY, messages=history, cache_control=EPHEMERAL)
    anthropic.queue(FakeReply(text="Noon.", prompt_tokens=100, cache_write_tokens=90))
    response = await anthropic.adapter().complete(request)

    assert anthropic.sent["messages"][2]["content"][0]["cache_control"] == {"type": "ephemeral"}
    assert anthropic.sent["cache_control"] == {"type": "ephemeral"}
    assert response.usage == Usage(100, 7, cache_write_tokens=90)


async def test_too_many_breakpoints_are_refused_as_anthropic_refuses_them(
    anthropic: Target,
) -> None:
    """The fake is only as good as its checks: Anthropic takes at most four breakpoints."""
    parts = tuple(TextPart(f"part {n}", cache_control=EPHEMERAL) for n in range(5))
    anthropic.queue()
    with pytest.raises(Exception, match="maximum of 4 blocks"):
        await anthropic.adapter().complete(ChatRequest((UserMessage(parts),)))


@pytest.mark.parametrize("provider", ["openai", "litellm", "ollama"])
async def test_other_providers_cache_on_their_own_and_get_no_breakpoints(
    all_targets: dict[str, Target], provider: str
) -> None:
    target = all_targets[provider]
    target.queue(FakeReply(text="Noon."))
    await target.adapter().complete(replace(CACHED_HISTORY, cache_control=EPHEMERAL))
    assert "cache_control" not in str(target.sent)


@pytest.mark.parametrize(
    ("reasoning", "max_tokens", "thinking"),
    [
        (Reasoning(budget_tokens=2000), 4000, {"type": "enabled", "budget_tokens": 2000}),
        (Reasoning(), 4000, {"type": "adaptive"}),
        (Reasoning(effort="low"), 4000, {"type": "enabled", "budget_tokens": 2048}),
        # An effort's budget counts within max_tokens, as OpenAI's reasoning tokens do.
        (Reasoning(effort="high"), 4000, {"type": "enabled", "budget_tokens": 3999}),
        (Reasoning(effort="none"), 4000, None),
    ],
)
async def test_reasoning_becomes_anthropic_thinking(
    anthropic: Target, reasoning: Reasoning, max_tokens: int, thinking: dict[str, Any] | None
) -> None:
    anthropic.queue(FakeReply(text="42"))
    response = await anthropic.adapter().complete(_ask(reasoning=reasoning, max_tokens=max_tokens))
    assert anthropic.sent.get("thinking") == thinking
    assert bool(response.message.thinking) == (thinking is not None)


@pytest.mark.parametrize(
    ("request_", "param"),
    [
        (_ask(reasoning=Reasoning(effort="low"), max_tokens=1000), "max_tokens"),
        (_ask(seed=7), "seed"),
        (_ask(response_format=ResponseFormat("json_object")), "response_format"),
        (
            ChatRequest(
                (UserMessage("time?"),),
                tools=(CLOCK,),
                tool_choice=NamedToolChoice("get_time"),
                params=SamplingParams(reasoning=Reasoning(budget_tokens=2000)),
            ),
            "tool_choice",
        ),
    ],
)
@pytest.mark.parametrize("mode", MODES)
async def test_what_anthropic_cannot_do_is_refused_before_sending(
    anthropic: Target, request_: ChatRequest, param: str, mode: str
) -> None:
    anthropic.queue()
    with pytest.raises(InvalidRequest) as refused:
        await run(anthropic.adapter(), request_, mode)
    assert refused.value.param == param
    assert not anthropic.fake.requests


async def test_json_schema_becomes_anthropic_structured_output(anthropic: Target) -> None:
    anthropic.queue(FakeReply(text='{"answer": 42}'))
    await anthropic.adapter().complete(_ask(response_format=ANSWER))
    assert anthropic.sent["output_config"] == {"format": {"type": "json_schema", "schema": SCHEMA}}


async def test_a_prompt_cache_key_turns_anthropic_caching_on(anthropic: Target) -> None:
    anthropic.queue(FakeReply(text="42"))
    await anthropic.adapter().complete(_ask(prompt_cache_key="team-a"))
    assert anthropic.sent["cache_control"] == {"type": "ephemeral"}


@pytest.mark.parametrize("provider", ["openai", "litellm"])
async def test_openai_options_pass_through_to_openai_compatible_models(
    all_targets: dict[str, Target], provider: str
) -> None:
    target = all_targets[provider]
    target.queue(FakeReply(text='{"answer": 42}'))
    await target.adapter().complete(
        _ask(
            reasoning=Reasoning(effort="high"),
            prompt_cache_key="team-a",
            response_format=ANSWER,
            seed=7,
        )
    )
    sent = target.sent
    assert sent["reasoning_effort"] == "high"
    assert sent["prompt_cache_key"] == "team-a"
    assert sent["seed"] == 7
    assert sent["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "answer", "schema": SCHEMA, "strict": True},
    }


@pytest.mark.parametrize(("budget", "effort"), [(1024, "low"), (8192, "medium"), (20000, "high")])
async def test_an_anthropic_budget_becomes_the_nearest_openai_effort(
    all_targets: dict[str, Target], budget: int, effort: str
) -> None:
    target = all_targets["openai"]
    target.queue(FakeReply(text="42"))
    await target.adapter().complete(_ask(reasoning=Reasoning(budget_tokens=budget)))
    assert target.sent["reasoning_effort"] == effort


@pytest.mark.parametrize(
    ("model", "reasoning", "think"),
    [
        ("llama3.2", Reasoning(budget_tokens=4000), True),
        ("llama3.2", Reasoning(effort="none"), False),
        ("gpt-oss:20b", Reasoning(effort="high"), "high"),
        ("gpt-oss:20b", Reasoning(effort="minimal"), "low"),
    ],
)
async def test_reasoning_becomes_ollama_think(
    ollama: Target, model: str, reasoning: Reasoning, think: bool | str
) -> None:
    adapter = type(ollama.adapter())(replace_model(ollama, model), None)
    ollama.fake.models.append(model)  # type: ignore[attr-defined]
    try:
        ollama.queue(FakeReply(text="42"))
        await adapter.complete(_ask(reasoning=reasoning, seed=7, response_format=ANSWER))
    finally:
        ollama.fake.models.remove(model)  # type: ignore[attr-defined]
        await adapter.aclose()
    assert ollama.sent["think"] == think
    assert ollama.sent["format"] == SCHEMA
    assert ollama.sent["options"]["seed"] == 7


def replace_model(target: Target, model: str) -> Any:
    return target.config.model_copy(update={"model": model})


async def test_json_object_is_ollama_json(ollama: Target) -> None:
    ollama.queue(FakeReply(text="{}"))
    await ollama.adapter().complete(_ask(response_format=ResponseFormat("json_object")))
    assert ollama.sent["format"] == "json"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("provider", ["openai", "litellm"])
async def test_cached_and_reasoning_tokens_come_back_from_openai_compatible_models(
    all_targets: dict[str, Target], provider: str, mode: str
) -> None:
    target = all_targets[provider]
    target.queue(FakeReply(text="42", prompt_tokens=50, cached_tokens=32, reasoning_tokens=5))
    response, _ = await run(target.adapter(), _ask(), mode)
    assert response.usage == Usage(50, 7, cached_tokens=32, reasoning_tokens=5)


async def test_signed_thinking_goes_only_to_the_model_that_signed_it(anthropic: Target) -> None:
    history = (
        UserMessage("time?"),
        AssistantMessage(
            content="Noon.",
            thinking=(
                Thinking("mine", signature="sig-a", model="claude-x"),
                Thinking("theirs", signature="sig-b", model="claude-other"),
                Thinking("the caller's, model unknown", signature="sig-c"),
            ),
        ),
        UserMessage("thanks"),
    )
    anthropic.queue(FakeReply(text="You're welcome."))
    await anthropic.adapter().complete(ChatRequest(history))
    kept = [b["signature"] for b in anthropic.sent["messages"][1]["content"] if "signature" in b]
    assert kept == ["sig-a", "sig-c"]


async def test_a_tool_loop_begun_without_thinking_continues_without_it(
    anthropic: Target,
) -> None:
    """Anthropic requires the turn a tool loop continues to open with its own signed thinking;
    a loop another model began has none, so that one answer is given without thinking."""
    history = (
        UserMessage("time?"),
        AssistantMessage(tool_calls=(ToolCall("call_1", "get_time", {}),)),
        ToolResultMessage("call_1", "noon"),
    )
    request = ChatRequest(
        history, tools=(CLOCK,), params=SamplingParams(reasoning=Reasoning(budget_tokens=2000))
    )
    anthropic.queue(FakeReply(text="Noon."))
    response = await anthropic.adapter().complete(request)
    assert "thinking" not in anthropic.sent
    assert response.message.content == "Noon."


async def test_the_fake_refuses_a_forced_tool_with_thinking_as_anthropic_does(
    anthropic: Target,
) -> None:

    url = anthropic.config.base_url
    body = {
        "model": "claude-x",
        "max_tokens": 4000,
        "messages": [{"role": "user", "content": "time?"}],
        "tools": [{"name": "get_time", "input_schema": {"type": "object"}}],
        "tool_choice": {"type": "any"},
        "thinking": {"type": "enabled", "budget_tokens": 2000},
    }
    async with httpx.AsyncClient() as client:
        answer = await client.post(f"{url}/v1/messages", json=body)
    assert answer.status_code == 400
    assert "tool_choice forces tool use" in answer.json()["error"]["message"]
    anthropic.queue(FakeReply(tool_calls=[FakeToolCall("get_time", {})]))

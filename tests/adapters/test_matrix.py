"""The cross-provider matrix: every adapter (OpenAI, Anthropic, Ollama, LiteLLM and each raw-text
format over the OpenAI-compatible one) against the wire-faithful fakes, whole and streamed.

- ``tool_choice`` auto / none / required / named reaches each provider in its own terms; where a
  provider cannot force a call (Ollama, raw-text models) the choice is asked for in words, and
  ``none`` offers no tools: never silently dropped (docs/providers.md).
- One call, parallel calls and a call without arguments come back as the same canonical calls.
- A history with tool results (an error, an empty one) followed by an image is accepted, and
  results that hold images reach each provider where it takes them: inside the result
  (Anthropic), on the tool message (Ollama), in a user message after the results (OpenAI,
  LiteLLM, raw text); an error is flagged (Anthropic) or prefixed ``Error:`` (the rest).
- One conversation hops OpenAI -> Anthropic (extended thinking) -> Ollama -> a raw-text model ->
  OpenAI -> another Anthropic model, each hop's fake refusing what its API refuses: ids are
  rewritten where a provider rejects them, signed thinking goes back only to the model that
  signed it, and a tool loop another model began is continued without thinking.

Fakes and adapters are shared by the whole session (tests/adapters/conftest.py); each case is one
request, so the matrix stays fast.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import pytest_asyncio

from adapters.text.adapter import TextToolsAdapter
from adapters.text.select import FORMATS
from llm_service.types import (
    AssistantMessage,
    ChatAdapter,
    ChatRequest,
    ImagePart,
    Message,
    NamedToolChoice,
    Reasoning,
    SamplingParams,
    TextPart,
    ToolCall,
    ToolChoice,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)
from tests.adapters.conformance import MODES, Fake, Target, run
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.fake_openai import FakeReply, FakeToolCall

pytestmark = pytest.mark.asyncio(loop_scope="session")

NATIVE = ("openai", "anthropic", "ollama", "litellm")
SUBJECTS = (*NATIVE, *(f"text:{name}" for name in FORMATS))
WEATHER = ToolSpec(
    "get_weather",
    "Weather for a city",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
CLOCK = ToolSpec("get_time", "The time now", {"type": "object", "properties": {}})
CHOICES: dict[str, ToolChoice] = {
    "auto": "auto",
    "none": "none",
    "required": "required",
    "named": NamedToolChoice("get_time"),
}
CALLS: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "one": [("get_weather", {"city": "Oslo"})],
    "parallel": [("get_weather", {"city": "Oslo"}), ("get_weather", {"city": "Lima"})],
    "no_arguments": [("get_time", {})],
}
PIXEL = "data:image/png;base64,iVBORw0KGgo="


@dataclass
class Subject:
    """One adapter under test and the fake behind it."""

    name: str
    adapter: ChatAdapter
    fake: Fake

    @property
    def text_format(self) -> str | None:
        return self.name.removeprefix("text:") if self.name.startswith("text:") else None

    def queue(self, text: str | None, calls: list[tuple[str, dict[str, Any]]]) -> None:
        """The model's answer as this provider sends it: native calls, or calls as text."""
        self.fake.replies.clear()  # type: ignore[attr-defined]
        self.fake.requests.clear()
        fmt = self.text_format
        if fmt is None:
            tool_calls = [FakeToolCall(name, arguments) for name, arguments in calls]
            self.fake.queue(FakeReply(text=text, tool_calls=tool_calls))
            return
        written = calls and FORMATS[fmt].render_calls(
            [ToolCall(f"call_{n}", name, arguments) for n, (name, arguments) in enumerate(calls)]
        )
        self.fake.queue(FakeReply(text="\n".join(p for p in (text, written) if p)))

    @property
    def sent(self) -> dict[str, Any]:
        return self.fake.requests[-1]


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def subjects(all_targets: dict[str, Target]) -> AsyncIterator[dict[str, Subject]]:
    found = {name: Subject(name, t.adapter(), t.fake) for name, t in all_targets.items()}
    openai = all_targets["openai"]
    for name, fmt in FORMATS.items():
        # Raw-text models are served OpenAI-compatible (vLLM, llama.cpp, TGI): the wrapper
        # shares the OpenAI target's adapter and fake, and is not closed on its own.
        found[f"text:{name}"] = Subject(
            f"text:{name}", TextToolsAdapter(openai.adapter(), fmt), openai.fake
        )
    yield found


@pytest.fixture(params=SUBJECTS)
def subject(request: pytest.FixtureRequest, subjects: dict[str, Subject]) -> Subject:
    return subjects[request.param]


def _ask(choice: ToolChoice | None = None, *history: Message) -> ChatRequest:
    messages = history or (UserMessage("Weather in Oslo, and the time?"),)
    return ChatRequest(messages, tools=(WEATHER, CLOCK), tool_choice=choice)


def _system_text(sent: dict[str, Any]) -> str:
    return "\n".join(
        m["content"] for m in sent["messages"] if m["role"] == "system" and m.get("content")
    )


def _assert_choice_on_wire(subject: Subject, choice: str) -> None:
    sent = subject.sent
    if subject.name in ("openai", "litellm"):
        wire = {"named": {"type": "function", "function": {"name": "get_time"}}}
        assert sent["tool_choice"] == wire.get(choice, choice)
        return
    if subject.name == "anthropic":
        wire = {"required": {"type": "any"}, "named": {"type": "tool", "name": "get_time"}}
        assert sent["tool_choice"] == wire.get(choice, {"type": choice})
        return
    offered = [t["function"]["name"] for t in sent.get("tools") or ()]
    if subject.name == "ollama":
        # No tool_choice in Ollama's API: none offers nothing, named only that tool, and a
        # forced call is asked for in words.
        expected = {"none": [], "named": ["get_time"]}.get(choice, ["get_weather", "get_time"])
        assert offered == expected
        words = {"required": "You must call at least one", "named": "You must call the tool"}
        if choice in words:
            assert words[choice] in _system_text(sent)
        else:
            assert "You must call" not in _system_text(sent)
        return
    # Raw text: the tools are in the prompt, none natively; a forced call is asked in words.
    assert offered == []
    assert "tool_choice" not in sent
    prompt = _system_text(sent)
    if choice == "none":
        assert "get_weather" not in prompt
        return
    assert "get_time" in prompt
    words = {"required": "You must call at least one", "named": "You must call the function"}
    if choice in words:
        assert words[choice] in prompt


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("choice", CHOICES)
async def test_tool_choice_reaches_every_provider_in_its_terms(
    subject: Subject, choice: str, mode: str
) -> None:
    calls = [] if choice == "none" else [("get_time", {})]
    subject.queue("As you asked." if choice == "none" else None, calls)

    response, _ = await run(subject.adapter, _ask(CHOICES[choice]), mode)

    _assert_choice_on_wire(subject, choice)
    assert [(c.name, c.arguments) for c in response.message.tool_calls] == calls
    assert response.finish_reason == ("stop" if choice == "none" else "tool_calls")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", CALLS)
async def test_calls_come_back_alike_from_every_provider(
    subject: Subject, kind: str, mode: str
) -> None:
    subject.queue(None, CALLS[kind])

    response, deltas = await run(subject.adapter, _ask("auto"), mode)

    calls = response.message.tool_calls
    assert [(c.name, c.arguments) for c in calls] == CALLS[kind]
    assert all(c.raw_arguments is None for c in calls)
    assert len({c.id for c in calls}) == len(calls)
    assert all(c.id for c in calls)
    assert response.finish_reason == "tool_calls"
    if mode == "stream":
        pieces: dict[int, str] = {}
        for delta in deltas:
            index = getattr(delta, "index", None)
            if index is not None:
                pieces[index] = pieces.get(index, "") + delta.arguments  # type: ignore[attr-defined]
        # Joined, each call's pieces are its arguments; none at all stands for {} (the APIs'
        # stream writers send "{}" for it: tests/gateway/openai_api/test_streamed_tool_arguments).
        joined = [json.loads(text) if text else {} for _, text in sorted(pieces.items())]
        assert joined == [arguments for _, arguments in CALLS[kind]]


RESULTS_HISTORY: tuple[Message, ...] = (
    UserMessage("Weather in Oslo, and the time?"),
    AssistantMessage(
        content="Looking.",
        tool_calls=(
            ToolCall("call_w1", "get_weather", {"city": "Oslo"}),
            ToolCall("call_t1", "get_time", {}),
        ),
    ),
    ToolResultMessage("call_w1", "weather service unavailable", is_error=True),
    ToolResultMessage("call_t1", ""),
    UserMessage((TextPart("And what is in this picture?"), ImagePart(PIXEL))),
)


@pytest.mark.parametrize("mode", MODES)
async def test_tool_results_errors_empty_and_an_image_after_them_are_accepted(
    subject: Subject, mode: str
) -> None:
    """A caller's image in the user turn after the results travels as any user image."""
    subject.queue("A red pixel; the weather service is down.", [])

    response, _ = await run(subject.adapter, _ask("auto", *RESULTS_HISTORY), mode)

    assert response.message.content == "A red pixel; the weather service is down."
    sent = subject.sent
    if subject.name == "anthropic":
        results = sent["messages"][2]["content"]
        assert results[0] == {
            "type": "tool_result",
            "tool_use_id": "call_w1",
            "content": "weather service unavailable",
            "is_error": True,
        }
        assert results[1] == {"type": "tool_result", "tool_use_id": "call_t1"}
        assert [b["type"] for b in results[2:]] == ["text", "image"]
    elif subject.name in ("openai", "litellm"):
        tools = [m for m in sent["messages"] if m["role"] == "tool"]
        assert [(m["tool_call_id"], m["content"]) for m in tools] == [
            ("call_w1", "Error: weather service unavailable"),
            ("call_t1", ""),
        ]
        assert sent["messages"][-1]["content"][1]["type"] == "image_url"
    elif subject.name == "ollama":
        tools = [m for m in sent["messages"] if m["role"] == "tool"]
        assert [m["tool_name"] for m in tools] == ["get_weather", "get_time"]
        assert sent["messages"][-1]["images"] == ["iVBORw0KGgo="]
    else:
        text = json.dumps(sent["messages"])
        assert "weather service unavailable" in text
        assert "get_time" in text  # the call, written as the model writes it
        assert sent["messages"][-1]["content"][1]["type"] == "image_url"


IMAGE_RESULTS: tuple[Message, ...] = (
    UserMessage("Radar over Oslo, and the time?"),
    AssistantMessage(
        tool_calls=(
            ToolCall("call_w1", "get_weather", {"city": "Oslo"}),
            ToolCall("call_t1", "get_time", {}),
        ),
    ),
    ToolResultMessage("call_w1", (TextPart("Radar:"), ImagePart(PIXEL))),
    ToolResultMessage("call_t1", "clock offline", is_error=True),
)
IMAGE_LABEL = "Images from the get_weather result (call call_w1):"
MOVED_NOTE = "[1 image in the next user message]"


def _assert_moved_image(message: dict[str, Any]) -> None:
    """The user message after the results: the image, introduced by the call it answers."""
    assert message["role"] == "user"
    assert message["content"][-2:] == [
        {"type": "text", "text": IMAGE_LABEL},
        {"type": "image_url", "image_url": {"url": PIXEL}},
    ]


@pytest.mark.parametrize("mode", MODES)
async def test_tool_results_holding_images_and_errors_reach_every_provider(
    subject: Subject, mode: str
) -> None:
    subject.queue("Clear skies; the clock is down.", [])

    response, _ = await run(subject.adapter, _ask("auto", *IMAGE_RESULTS), mode)

    assert response.message.content == "Clear skies; the clock is down."
    sent = subject.sent
    if subject.name == "anthropic":
        image = {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}
        assert sent["messages"][2]["content"] == [
            {
                "type": "tool_result",
                "tool_use_id": "call_w1",
                "content": [{"type": "text", "text": "Radar:"}, {"type": "image", "source": image}],
            },
            {
                "type": "tool_result",
                "tool_use_id": "call_t1",
                "content": "clock offline",
                "is_error": True,
            },
        ]
    elif subject.name in ("openai", "litellm"):
        assert [m["role"] for m in sent["messages"]] == [
            "user",
            "assistant",
            "tool",
            "tool",
            "user",
        ]
        tools = sent["messages"][2:4]
        assert [m["content"] for m in tools] == [f"Radar:\n{MOVED_NOTE}", "Error: clock offline"]
        _assert_moved_image(sent["messages"][-1])
    elif subject.name == "ollama":
        tools = [m for m in sent["messages"] if m["role"] == "tool"]
        assert tools == [
            {
                "role": "tool",
                "content": "Radar:",
                "images": ["iVBORw0KGgo="],
                "tool_name": "get_weather",
            },
            {"role": "tool", "content": "Error: clock offline", "tool_name": "get_time"},
        ]
    else:
        text = json.dumps(sent["messages"])
        assert "Radar:" in text
        assert MOVED_NOTE in text
        assert "Error: clock offline" in text
        assert "iVBORw0KGgo" not in text.split(IMAGE_LABEL)[0]  # the image only after the results
        _assert_moved_image(sent["messages"][-1])


# Legal for OpenAI, refused by Anthropic: rewritten on the way there, consistently.
OPENAI_STYLE_ID = "call|weather.1"


@pytest.mark.parametrize("mode", MODES)
async def test_one_conversation_hops_across_every_kind_of_provider(
    subjects: dict[str, Subject], all_targets: dict[str, Target], mode: str
) -> None:
    openai, claude, ollama = subjects["openai"], subjects["anthropic"], subjects["ollama"]
    hermes = subjects["text:hermes"]
    other_config = all_targets["anthropic"].config.model_copy(update={"model": "claude-y"})
    other_claude = type(claude.adapter)(other_config, "sk-upstream")  # type: ignore[call-arg]
    thinking = SamplingParams(reasoning=Reasoning(budget_tokens=2000))
    history: list[Message] = [UserMessage("Weather in Oslo?")]

    async def hop(
        subject: Subject | ChatAdapter,
        reply: FakeReply | tuple[str | None, list[tuple[str, dict[str, Any]]]],
        fake: Fake | None = None,
        params: SamplingParams | None = None,
    ) -> AssistantMessage:
        adapter = subject.adapter if isinstance(subject, Subject) else subject
        target = fake or (subject.fake if isinstance(subject, Subject) else None)
        assert target is not None
        if isinstance(reply, FakeReply):
            target.replies.clear()  # type: ignore[attr-defined]
            target.requests.clear()
            target.queue(reply)
        else:
            assert isinstance(subject, Subject)
            subject.queue(*reply)
        request = ChatRequest(
            tuple(history), tools=(WEATHER, CLOCK), params=params or SamplingParams()
        )
        response, _ = await run(adapter, request, mode)
        history.append(response.message)
        return response.message

    def answer(message: AssistantMessage, content: str) -> None:
        history.extend(ToolResultMessage(call.id, content) for call in message.tool_calls)

    try:
        # 1. OpenAI calls a tool with an id Anthropic would refuse.
        first = await hop(
            openai,
            FakeReply(tool_calls=[FakeToolCall("get_weather", {"city": "Oslo"}, OPENAI_STYLE_ID)]),
        )
        assert first.tool_calls[0].id == OPENAI_STYLE_ID
        answer(first, "sunny")

        # 2. Anthropic, thinking asked for, continues the loop OpenAI began: ids rewritten,
        #    and no thinking this once (the turn it continues has no signed thinking).
        await hop(claude, ("Sunny in Oslo.", []), params=thinking)
        sent = claude.sent
        assert "thinking" not in sent
        [call_block] = [b for b in sent["messages"][1]["content"] if b["type"] == "tool_use"]
        assert call_block["id"] != OPENAI_STYLE_ID
        assert sent["messages"][2]["content"][0]["tool_use_id"] == call_block["id"]

        # 3. Anthropic again, thinking: a new question, so it thinks, and calls a tool.
        history.append(UserMessage("And the time?"))
        third = await hop(claude, (None, [("get_time", {})]), params=thinking)
        assert claude.sent["thinking"] == {"type": "enabled", "budget_tokens": 2000}
        assert third.thinking
        assert third.thinking[0].signature
        answer(third, "noon")

        # 4. The same model continues its loop: its signed thinking goes back, first.
        await hop(claude, ("It is noon.", []), params=thinking)
        continued = claude.sent["messages"][-2]["content"]
        assert continued[0]["type"] == "thinking"
        assert continued[0]["signature"] == third.thinking[0].signature

        # 5. Ollama: no ids on its wire, results name their tool; reasoning becomes `think`.
        history.append(UserMessage("Weather in Lima?"))
        fifth = await hop(ollama, (None, [("get_weather", {"city": "Lima"})]), params=thinking)
        assert ollama.sent["think"] is True
        assert any(m.get("thinking") for m in ollama.sent["messages"])
        answer(fifth, "rainy")

        # 6. A raw-text model reads the whole tool history as text and writes a call.
        sixth = await hop(hermes, (None, [("get_time", {})]))
        assert "tools" not in hermes.sent
        answer(sixth, "1 pm")

        # 7. Back to OpenAI: every call answered, every id OpenAI accepts.
        await hop(openai, ("Lima is rainy; it is 1 pm.", []))
        assert len([m for m in openai.sent["messages"] if m["role"] == "tool"]) == 4

        # 8. Another Anthropic model, thinking: claude-x's signatures stay home.
        history.append(UserMessage("Thanks!"))
        eighth = await hop(other_claude, FakeReply(text="You're welcome."), claude.fake, thinking)
        sent = claude.sent
        assert sent["model"] == "claude-y"
        assert sent["thinking"] == {"type": "enabled", "budget_tokens": 2000}
        assert "thinking" not in json.dumps([m["content"] for m in sent["messages"][:-1]])
        assert eighth.content == "You're welcome."
    finally:
        await other_claude.aclose()
        assert isinstance(claude.fake, FakeAnthropic)
        claude.fake.issued.clear()


# The matrix is only as good as the fakes: they refuse what the real APIs refuse.
REFUSED_BY_OPENAI: dict[str, list[dict[str, Any]]] = {
    "an id over 40 characters": [
        {"role": "user", "content": "time?"},
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "call_" + "x" * 36,
                    "type": "function",
                    "function": {"name": "get_time", "arguments": "{}"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_" + "x" * 36, "content": "noon"},
    ],
    "a call left unanswered": [
        {"role": "user", "content": "time?"},
        {
            "role": "assistant",
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "t", "arguments": "{}"}}
            ],
        },
        {"role": "user", "content": "well?"},
    ],
    "a result answering no call": [
        {"role": "user", "content": "time?"},
        {
            "role": "assistant",
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "t", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_2", "content": "noon"},
    ],
    "an image in a tool message": [
        {"role": "user", "content": "radar?"},
        {
            "role": "assistant",
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "t", "arguments": "{}"}}
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "call_1",
            "content": [{"type": "image_url", "image_url": {"url": PIXEL}}],
        },
    ],
}


@pytest.mark.parametrize("case", REFUSED_BY_OPENAI)
async def test_the_openai_fake_refuses_a_history_openai_refuses(
    all_targets: dict[str, Target], case: str
) -> None:
    url = all_targets["openai"].config.base_url
    body = {"model": "gpt-x", "messages": REFUSED_BY_OPENAI[case]}
    async with httpx.AsyncClient() as client:
        answer = await client.post(f"{url}/chat/completions", json=body)
    assert answer.status_code == 400
    assert answer.json()["error"]["type"] == "invalid_request_error"


async def test_the_anthropic_fake_refuses_thinking_another_model_signed(
    all_targets: dict[str, Target],
) -> None:
    target = all_targets["anthropic"]
    fake = target.fake
    assert isinstance(fake, FakeAnthropic)
    block = {"type": "thinking", "thinking": "plan", "signature": "sig-claude-y-0"}
    fake.issued.append(("claude-y", block))
    body = {
        "model": "claude-x",
        "max_tokens": 4000,
        "thinking": {"type": "enabled", "budget_tokens": 2000},
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [block, {"type": "text", "text": "hello"}]},
            {"role": "user", "content": "again"},
        ],
    }
    try:
        async with httpx.AsyncClient() as client:
            answer = await client.post(f"{target.config.base_url}/v1/messages", json=body)
    finally:
        fake.issued.clear()
    assert answer.status_code == 400
    assert "signature" in answer.json()["error"]["message"]


async def test_the_anthropic_fake_refuses_a_tool_result_image_anthropic_refuses(
    all_targets: dict[str, Target],
) -> None:
    bad = {"type": "image", "source": {"type": "base64", "media_type": "image/bmp", "data": "Qk0="}}
    body = {
        "model": "claude-x",
        "max_tokens": 10,
        "messages": [
            {"role": "user", "content": "radar?"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "t", "input": {}}],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [bad]}],
            },
        ],
    }
    url = all_targets["anthropic"].config.base_url
    async with httpx.AsyncClient() as client:
        answer = await client.post(f"{url}/v1/messages", json=body)
    assert answer.status_code == 400
    assert "tool_result image" in answer.json()["error"]["message"]


async def test_the_ollama_fake_refuses_an_image_that_is_not_bare_base64(
    all_targets: dict[str, Target],
) -> None:
    message = {"role": "tool", "content": "radar", "tool_name": "t", "images": [PIXEL]}
    body = {"model": "llama3.2", "messages": [message], "stream": False}
    url = all_targets["ollama"].config.base_url
    async with httpx.AsyncClient() as client:
        answer = await client.post(f"{url}/api/chat", json=body)
    assert answer.status_code == 400
    assert "base64" in answer.json()["error"]

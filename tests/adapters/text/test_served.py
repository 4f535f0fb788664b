"""``tool_format: auto`` asks the server: llama.cpp's ``/props`` chat template, vLLM's model root.

The upstream is the wire-faithful OpenAI fake, with ``/props`` and ``/v1/models`` as llama.cpp
and vLLM serve them. The templates are excerpts (the lines that matter) of the models' own.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from adapters.openai import OpenAIAdapter
from adapters.text.adapter import ReplyEvents, TextToolsAdapter, new_call_id, with_text_tools
from adapters.text.deepseek import CALL_BEGIN, CALLS_BEGIN, SEP
from adapters.text.select import FORMATS, format_for_template, opens_reasoning
from gateway.providers import ADAPTER_FACTORIES
from llm_service.config import ModelConfig
from llm_service.types import (
    ChatRequest,
    StreamDone,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    ToolSpec,
    UserMessage,
)
from tests.support.fake_openai import FakeOpenAI, FakeReply
from tests.support.servers import serve

# huggingface.co/Qwen/QwQ-32B tokenizer_config.json chat_template (generation prompt and calls).
QWQ_TEMPLATE = (
    '{%- for tool_call in message.tool_calls %}{{- \'<tool_call>\\n{"name": "\' }}{%- endfor %}\n'
    "{%- if add_generation_prompt %}\n"
    "    {{- '<|im_start|>assistant\\n<think>\\n' }}\n{%- endif %}\n"
)
# huggingface.co/Qwen/Qwen3-8B: thinking is the model's choice; only "no thinking" is templated.
QWEN3_TEMPLATE = (
    '{{- \'<tool_call>\\n{"name": "\' }}\n{%- if add_generation_prompt %}\n'
    "    {{- '<|im_start|>assistant\\n' }}\n"
    "    {%- if enable_thinking is defined and enable_thinking is false %}\n"
    "        {{- '<think>\\n\\n</think>\\n\\n' }}\n    {%- endif %}\n{%- endif %}\n"
)
ASSISTANT = "<\uff5cAssistant\uff5c>"
# llama.cpp models/templates/deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja
R1_TEMPLATE = (
    f"{{{{'{ASSISTANT}{CALLS_BEGIN}{CALL_BEGIN}' + tool['type'] + '{SEP}'}}}}"
    f"{{%- if add_generation_prompt and not ns.is_tool -%}}{{{{'{ASSISTANT}<think>\\n'}}}}\n"
    "{%- endif %}"
)
# llama.cpp models/templates/deepseek-ai-DeepSeek-V3.1.jinja: thinking only when asked for.
V31_TEMPLATE = (
    f"{{{{'{CALLS_BEGIN}{CALL_BEGIN}'+ tool['function']['name']}}}}"
    "{%- if add_generation_prompt and ns.is_last_user and not ns.is_tool -%}"
    f"{{{{'{ASSISTANT}'}}}}\n"
    "  {%- if not thinking -%}{{'</think>'}}\n    {%- else -%}{{'<think>'}}\n  {%- endif -%}"
)
# llama.cpp models/templates/mistralai-Mistral-Small-3.1-24B-Instruct-2503.jinja
MISTRAL_TEMPLATE = '{{- "[TOOL_CALLS][" }}{%- for tool in message.tool_calls %}'
# huggingface.co/ibm-granite/granite-4.0-h-tiny: Hermes-style tags inside Granite's roles.
GRANITE4_TEMPLATE = "{{- '<|start_of_role|>assistant<|end_of_role|>' }}{{- '<tool_call>\\n' }}"
# huggingface.co/meta-llama/Llama-3.1-8B-Instruct
LLAMA31_TEMPLATE = (
    "{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{{- '<|python_tag|>' }}"
)
# huggingface.co/meta-llama/Llama-4-Scout-17B-16E-Instruct
LLAMA4_TEMPLATE = "{{- '<|header_start|>assistant<|header_end|>\\n\\n' }}"

WEATHER = ToolSpec("get_weather", "Weather for a city", {"type": "object"})
HERMES_CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'


@pytest.mark.parametrize(
    ("template", "fmt", "opens"),
    [
        (QWQ_TEMPLATE, "hermes", True),
        (QWEN3_TEMPLATE, "hermes", False),
        (R1_TEMPLATE, "deepseek", True),
        (V31_TEMPLATE, "deepseek", False),
        (MISTRAL_TEMPLATE, "mistral", False),
        (GRANITE4_TEMPLATE, "granite", False),
        (LLAMA31_TEMPLATE, "llama3", False),
        (LLAMA4_TEMPLATE, "pythonic", False),
        ("{{ messages[0]['content'] }}", None, False),
    ],
)
def test_templates_tell_the_format_and_whether_reasoning_is_opened(
    template: str, fmt: str | None, opens: bool
) -> None:
    assert format_for_template(template) == fmt
    assert opens_reasoning(template) is opens


@dataclass
class Served:
    """What the server tells: llama.cpp's /props, vLLM's /v1/models (None: 404)."""

    props: dict[str, Any] | None = None
    models: dict[str, Any] | None = None
    gets: list[str] = field(default_factory=list)
    key: str | None = None  # set: a server behind an API key, 401 without it

    def routes(self) -> list[Route]:
        return [Route("/props", self._props), Route("/v1/models", self._models)]

    async def _props(self, request: Request) -> Response:
        return self._answer(request, self.props)

    async def _models(self, request: Request) -> Response:
        return self._answer(request, self.models)

    def _answer(self, request: Request, body: dict[str, Any] | None) -> Response:
        self.gets.append(request.url.path)
        if self.key is not None and request.headers.get("authorization") != f"Bearer {self.key}":
            return JSONResponse({"error": {"message": "Invalid API key"}}, 401)
        return JSONResponse(body) if body is not None else Response(status_code=404)


@dataclass
class Upstream:
    fake: FakeOpenAI
    served: Served
    url: str


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    fake, served = FakeOpenAI(), Served()
    app = Starlette(routes=[*served.routes(), *fake.app().routes])
    with serve(app) as url:
        yield Upstream(fake, served, f"{url}/v1")


@pytest.fixture
async def auto(upstream: Upstream) -> AsyncIterator[TextToolsAdapter]:
    config = ModelConfig(
        name="local",
        provider="openai",
        model="my-model",
        base_url=upstream.url,
        tool_format="auto",
    )
    inner = OpenAIAdapter(config, None)
    wrapped = with_text_tools(config, inner)
    assert isinstance(wrapped, TextToolsAdapter)
    yield wrapped
    await inner.aclose()


def ask() -> ChatRequest:
    return ChatRequest(messages=(UserMessage("Weather in Oslo?"),), tools=(WEATHER,))


async def test_the_served_template_decides_once(upstream: Upstream, auto: TextToolsAdapter) -> None:
    upstream.served.props = {"chat_template": QWEN3_TEMPLATE, "model_path": "/m/model.gguf"}
    upstream.fake.queue(FakeReply(text=HERMES_CALL), FakeReply(text="Sunny."))
    assert auto.format.name == "generic"  # the names alone tell nothing

    first = await auto.complete(ask())
    await auto.complete(ask())

    assert auto.format.name == "hermes"
    assert [(c.name, c.arguments) for c in first.message.tool_calls] == [
        ("get_weather", {"city": "Oslo"})
    ]
    assert "<tool_call>" in upstream.fake.requests[0]["messages"][0]["content"]
    assert upstream.served.gets == ["/props", "/v1/models"]  # asked once, not per request


async def test_the_server_is_asked_with_the_models_api_key(upstream: Upstream) -> None:
    """A server behind a key (vLLM's --api-key) answers the probe only with it."""
    upstream.served.key = "sk-local"
    upstream.served.props = {"chat_template": QWEN3_TEMPLATE}
    upstream.fake.queue(FakeReply(text=HERMES_CALL))
    config = ModelConfig(
        name="local", provider="openai", model="m", base_url=upstream.url, tool_format="auto"
    )
    adapter = ADAPTER_FACTORIES["openai"](config, "sk-local")  # as the gateway builds it
    try:
        response = await adapter.complete(ask())
    finally:
        await adapter.aclose()

    assert isinstance(adapter, TextToolsAdapter)
    assert adapter.format.name == "hermes"
    assert [(c.name, c.arguments) for c in response.message.tool_calls] == [
        ("get_weather", {"city": "Oslo"})
    ]


async def test_a_served_alias_is_resolved_by_the_model_root(
    upstream: Upstream, auto: TextToolsAdapter
) -> None:
    upstream.served.models = {
        "object": "list",
        "data": [
            {"id": "other", "object": "model", "root": "Qwen/Qwen2.5-7B-Instruct"},
            {"id": "my-model", "object": "model", "root": "mistralai/Mistral-7B-Instruct-v0.3"},
        ],
    }
    upstream.fake.queue(FakeReply(text='[TOOL_CALLS] [{"name": "get_weather", "arguments": {}}]'))

    response = await auto.complete(ask())

    assert auto.format.name == "mistral"
    assert [c.name for c in response.message.tool_calls] == ["get_weather"]


async def test_a_server_that_tells_nothing_leaves_the_names(
    upstream: Upstream, auto: TextToolsAdapter
) -> None:
    upstream.fake.queue(FakeReply(text='{"name": "get_weather", "arguments": {"city": "Oslo"}}'))

    response = await auto.complete(ask())

    assert auto.format.name == "generic"
    assert [c.name for c in response.message.tool_calls] == ["get_weather"]
    assert upstream.served.gets == ["/props", "/v1/models"]


async def test_a_template_that_opens_reasoning_streams_it_as_thinking(
    upstream: Upstream, auto: TextToolsAdapter
) -> None:
    upstream.served.props = {"chat_template": QWQ_TEMPLATE}
    text = f"The user wants Oslo.\n</think>\n\n{HERMES_CALL}"
    upstream.fake.queue(FakeReply(text=text), FakeReply(text=text))

    events = [e async for e in auto.stream(ask())]
    whole = await auto.complete(ask())

    done = events[-1]
    assert isinstance(done, StreamDone)
    thinking = "".join(e.text for e in events if isinstance(e, ThinkingDelta))
    assert thinking == "The user wants Oslo.\n"
    assert not [e for e in events if isinstance(e, TextDelta)]
    assert [e.name for e in events if isinstance(e, ToolCallDelta)] == ["get_weather"]
    for response in (done.response, whole):
        assert response.message.content is None
        assert [t.text for t in response.message.thinking] == ["The user wants Oslo.\n"]


async def test_a_reply_without_the_closing_tag_stays_content(
    upstream: Upstream, auto: TextToolsAdapter
) -> None:
    """A server whose reasoning parser took the reasoning sends the answer alone."""
    upstream.served.props = {"chat_template": QWQ_TEMPLATE}
    upstream.fake.queue(FakeReply(text="It is sunny."), FakeReply(text="It is sunny."))

    whole = await auto.complete(ask())
    events = [e async for e in auto.stream(ask())]

    done = events[-1]
    assert isinstance(done, StreamDone)
    for response in (whole, done.response):
        assert response.message.content == "It is sunny."
        assert response.message.thinking == ()


def test_reasoning_sent_apart_means_the_text_is_not_held() -> None:
    """Reasoning arriving as its own events first: the server split it off, the text that
    follows is the answer and streams at once."""
    events = ReplyEvents(FORMATS["hermes"], {"get_weather"}, new_call_id, reasoning_open=True)

    thinking = list(events.feed(ThinkingDelta("The user wants Oslo.")))
    answer = list(events.feed(TextDelta("It is sunny. ")))

    assert thinking == [ThinkingDelta("The user wants Oslo.")]
    assert answer == [TextDelta("It is sunny.")]

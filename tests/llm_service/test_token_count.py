"""Input tokens counted with Claude's tokenizer: text, tools and images all count."""

from __future__ import annotations

from llm_service.token_count import IMAGE_TOKENS, input_tokens
from llm_service.types import (
    AssistantMessage,
    ChatRequest,
    ImagePart,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)


def test_every_part_of_the_request_counts() -> None:
    hello = ChatRequest(messages=(UserMessage("Hello there"),))
    system = ChatRequest(messages=(SystemMessage("Be brief."), UserMessage("Hello there")))
    tooled = ChatRequest(
        messages=(UserMessage("Hello there"),),
        tools=(ToolSpec("get_weather", "Weather for a city", {"type": "object"}),),
    )
    called = ChatRequest(
        messages=(
            UserMessage("Hello there"),
            AssistantMessage(tool_calls=(ToolCall("c1", "get_weather", {"city": "Oslo"}),)),
            ToolResultMessage("c1", (TextPart("sunny"), ImagePart("data:image/png;base64,AA=="))),
        )
    )

    assert 0 < input_tokens(hello) < input_tokens(system)
    assert input_tokens(hello) < input_tokens(tooled)
    assert input_tokens(called) > input_tokens(hello) + IMAGE_TOKENS

"""How many input tokens a request holds, counted without calling a model.

Anthropic's ``/v1/messages/count_tokens`` is what agents (Claude Code's ``/context``) call to size
a conversation; most providers publish no such endpoint, and each counts with its own tokenizer.
The gateway counts with Claude's published tokenizer (the copy litellm ships, so nothing is
downloaded): close for Claude models, an estimate for the others (docs/clients.md).
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from llm_service.types import (
    AssistantMessage,
    ChatRequest,
    ImagePart,
    Message,
    TextPart,
    ToolResultMessage,
    UserMessage,
)

if TYPE_CHECKING:
    from tokenizers import Tokenizer

# Anthropic counts an image by its pixels (about width * height / 750); the gateway does not
# decode images, so each counts as a large one would.
IMAGE_TOKENS = 1600
# Each message's role and framing.
MESSAGE_OVERHEAD = 4


@cache
def _tokenizer() -> Tokenizer:
    """Loaded once, on the first count: most gateways never count (nor import it)."""
    from tokenizers import Tokenizer

    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        raise LookupError("litellm is not installed: its copy of Claude's tokenizer is needed")
    folder = Path(spec.submodule_search_locations[0], "litellm_core_utils", "tokenizers")
    return Tokenizer.from_file(str(folder / "anthropic_tokenizer.json"))


def input_tokens(request: ChatRequest) -> int:
    texts = list(_texts(request))
    tokenizer = _tokenizer()
    counted = sum(len(encoding.ids) for encoding in tokenizer.encode_batch(texts)) if texts else 0
    images = sum(_images(message) for message in request.messages)
    return counted + images * IMAGE_TOKENS + MESSAGE_OVERHEAD * len(request.messages)


def _texts(request: ChatRequest) -> Iterator[str]:
    for tool in request.tools:
        yield json.dumps(
            {"name": tool.name, "description": tool.description, "input_schema": tool.parameters}
        )
    for message in request.messages:
        yield from _message_texts(message)


def _message_texts(message: Message) -> Iterator[str]:
    if isinstance(message, AssistantMessage):
        yield from (thinking.text for thinking in message.thinking)
        if message.content:
            yield message.content
        for call in message.tool_calls:
            yield call.name + json.dumps(call.arguments)
        return
    content = message.content
    if isinstance(content, str):
        yield content
        return
    yield from (part.text for part in content if isinstance(part, TextPart))


def _images(message: Message) -> int:
    if isinstance(message, UserMessage | ToolResultMessage) and not isinstance(
        message.content, str
    ):
        return sum(isinstance(part, ImagePart) for part in message.content)
    return 0

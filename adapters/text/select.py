"""Which text format a model uses: configured, or picked for ``auto`` from the chat template
the server shows, else from the model names (the server's, then the configured ones)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from adapters.text.base import ToolFormat
from adapters.text.deepseek import DeepSeekFormat
from adapters.text.generic import GenericFormat
from adapters.text.granite import GraniteFormat
from adapters.text.hermes import HermesFormat
from adapters.text.llama3 import Llama3Format
from adapters.text.mistral import MistralFormat
from adapters.text.pythonic import PythonicFormat

FORMATS: dict[str, ToolFormat] = {
    f.name: f
    for f in (
        HermesFormat(),
        Llama3Format(),
        PythonicFormat(),
        MistralFormat(),
        GraniteFormat(),
        DeepSeekFormat(),
        GenericFormat(),
    )
}

# First match wins: fine-tunes carry their base family in the name after their own
# (Hermes-3-Llama-3.1 is Hermes; DeepSeek-R1-Distill-Qwen speaks DeepSeek's format).
_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"deepseek"), "deepseek"),
    (re.compile(r"qwen|hermes"), "hermes"),
    (re.compile(r"granite"), "granite"),
    (re.compile(r"mistral|mixtral|magistral|devstral|ministral|codestral"), "mistral"),
    (re.compile(r"llama[-_ .]?4"), "pythonic"),
    (re.compile(r"llama[-_ .]?3"), "llama3"),
)


# What a chat template writes for tool calls, most specific first: Granite 4 and the Hermes
# fine-tunes of Llama write <tool_call> too, so the family's own header tokens decide first.
_TEMPLATE_MARKERS: tuple[tuple[str, str], ...] = (
    ("tool\u2581calls\u2581begin", "deepseek"),
    ("[TOOL_CALLS]", "mistral"),
    ("<|start_of_role|>", "granite"),
    ("<|tool_call|>", "granite"),
    ("<|header_start|>", "pythonic"),  # Llama 4
    ("<tool_call>", "hermes"),
    ("<|python_tag|>", "llama3"),
    ("<|start_header_id|>", "llama3"),
)
# The generation prompt ends inside reasoning: an assistant header directly followed by an
# opening tag that is not closed at once (QwQ, Qwen3 thinking models, DeepSeek-R1).
_OPENS_REASONING = re.compile(
    r"(?:<\|im_start\|>assistant(?:\\n|\n)|<\uff5cAssistant\uff5c>)<think>(?!(?:\\n|\s)*</think>)"
)


def format_for_model(model: str) -> str:
    """The ``tool_format`` that ``auto`` means for this model name; ``generic`` when unknown."""
    lowered = model.lower()
    for pattern, name in _PATTERNS:
        if pattern.search(lowered):
            return name
    return "generic"


def format_for_template(template: str) -> str | None:
    """The format a chat template writes calls in; None when it shows no tool calling."""
    return next((name for marker, name in _TEMPLATE_MARKERS if marker in template), None)


def opens_reasoning(template: str) -> bool:
    return _OPENS_REASONING.search(template) is not None


def choose(template: str | None, names: Sequence[str]) -> tuple[ToolFormat, bool]:
    """``auto``: the format the served chat template writes calls in, else the first name that
    is recognised; and whether the template opens reasoning."""
    by_template = format_for_template(template) if template else None
    fmt = FORMATS[by_template] if by_template else resolve("auto", *names)
    return fmt, bool(template and opens_reasoning(template))


def resolve(tool_format: str, *model_names: str) -> ToolFormat:
    """The format for a configured ``tool_format`` (not ``native``)."""
    if tool_format == "auto":
        names = [format_for_model(m) for m in model_names]
        tool_format = next((n for n in names if n != "generic"), "generic")
    return FORMATS[tool_format]

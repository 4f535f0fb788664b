"""Which text format a model uses: configured, or picked by model name (``auto``)."""

from __future__ import annotations

import re

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


def format_for_model(model: str) -> str:
    """The ``tool_format`` that ``auto`` means for this model name; ``generic`` when unknown."""
    lowered = model.lower()
    for pattern, name in _PATTERNS:
        if pattern.search(lowered):
            return name
    return "generic"


def resolve(tool_format: str, *model_names: str) -> ToolFormat:
    """The format for a configured ``tool_format`` (not ``native``)."""
    if tool_format == "auto":
        names = [format_for_model(m) for m in model_names]
        tool_format = next((n for n in names if n != "generic"), "generic")
    return FORMATS[tool_format]

"""Replies that are, as a whole, a call written without the family's call marker.

Models often drop or never learnt their marker: Qwen2.5-Coder answers with a fenced ``json`` block
or bare JSON, a detokenizer that skips special tokens removes Mistral's ``[TOOL_CALLS]`` and
Granite's ``<|tool_call|>``. Such a reply is a call only when nothing but whitespace, reasoning
before it and the family's end-of-turn token surround it; with text around it, it is prose.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection

from adapters.text.base import Call, calls_from_any
from adapters.text.jsonscan import Verdict, read_value

# A fence around the whole reply, any language tag; greedy, so a fence inside a JSON string is
# data (the body must still read as a whole).
FENCE = re.compile(r"```[A-Za-z0-9_+\-]*[ \t]*\n(?P<body>.*)\n?[ \t]*```", re.DOTALL)
FENCE_OPENER = "```"

Body = Callable[[str], tuple[Call, ...] | None]


def strip_end_tokens(text: str, end_tokens: tuple[str, ...]) -> str:
    text = text.strip()
    stripped = True
    while stripped:
        stripped = False
        for token in end_tokens:
            if text.endswith(token):
                text = text.removesuffix(token).rstrip()
                stripped = True
    return text


def whole_reply(text: str, end_tokens: tuple[str, ...], body: Body) -> tuple[Call, ...] | None:
    """The calls a whole reply holds, fenced or not, or None when it is anything else."""
    text = strip_end_tokens(text, end_tokens)
    fenced = FENCE.fullmatch(text)
    if fenced:
        text = fenced.group("body").strip()
    return body(text) if text else None


def json_calls(text: str, tools: Collection[str]) -> tuple[Call, ...] | None:
    """The text as one JSON value in any whole-reply call shape."""
    read = read_value(text, 0)
    if isinstance(read, Verdict) or read[1] != len(text):
        return None
    return calls_from_any(read[0], tools)

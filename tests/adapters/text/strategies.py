"""Hypothesis strategies for tool calls: names, and arguments that are any JSON object."""

from __future__ import annotations

import keyword
import random
from typing import Any

from hypothesis import strategies as st

from llm_service.types import ToolCall

# Strings stress the scanners: quotes, backslashes, braces and every format's markup.
_NASTY = st.sampled_from(
    ['"', "\\", "{", "}", "[", "]", "</tool_call>", "[ARGS]", "<|python_end|>", ";", "\n", "é😀"]
)
_STRINGS = st.text(max_size=12) | st.lists(_NASTY, max_size=4).map("".join)
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(10**12), 10**12)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _STRINGS
)
IDENTIFIERS = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,12}", fullmatch=True).filter(
    lambda name: not keyword.iskeyword(name)
)


def json_values(keys: st.SearchStrategy[str]) -> st.SearchStrategy[Any]:
    return st.recursive(
        _SCALARS,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3),
        max_leaves=6,
    )


def calls(identifier_keys: bool = False) -> st.SearchStrategy[list[ToolCall]]:
    keys = IDENTIFIERS if identifier_keys else _STRINGS
    one = st.builds(
        lambda name, arguments: ToolCall("call_x", name, arguments),
        IDENTIFIERS,
        st.dictionaries(keys, json_values(_STRINGS), max_size=4),
    )
    return st.lists(one, min_size=1, max_size=3)


def random_chunks(text: str, rng: random.Random) -> list[str]:
    chunks, pos = [], 0
    while pos < len(text):
        size = rng.randint(1, 12)
        chunks.append(text[pos : pos + size])
        pos += size
    return chunks

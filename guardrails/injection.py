"""Instructions aimed at the model inside data (a tool result, a fetched page): a heuristic.

A documented phrase and token set, named heuristic on purpose: it catches the common, literal
forms (override the instructions, reassign the role, leak the prompt, chat-template tokens,
conceal from the user, send data away, call a tool) and no paraphrase. An external classifier
(``guardrails.classifier.HttpClassifier``) can be added for more.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from guardrails.anchors import Text, around, literal_hits, search

Match = tuple[str, int, int]

_PREVIOUS = r"(?:all\s+|any\s+|the\s+|your\s+)*(?:previous|prior|above|earlier|preceding|original)"
_ORDERS = r"(?:instructions?|prompts?|messages?|rules|directions|guidelines|context)"
# kind -> (pattern, the literals (lower case) one of which every match contains)
_HEURISTICS: dict[str, tuple[str, tuple[str, ...]]] = {
    "override_instructions": (
        rf"\b(?:ignore|disregard|forget|override|skip)\s+{_PREVIOUS}\s+{_ORDERS}"
        r"|\b(?:new|updated|real)\s+(?:system\s+)?instructions?\s*:",
        ("ignore", "disregard", "forget", "override", "skip", "instruction"),
    ),
    "role_reassignment": (
        r"\byou\s+are\s+now\s+(?:a|an|the|in|my|DAN)\b"
        r"|\bfrom\s+now\s+on,?\s+you\s+(?:are|will|must)\b",
        ("you are now", "from now on"),
    ),
    "prompt_leak": (
        r"\b(?:reveal|print|repeat|show|output)\s+(?:your|the)\s+"
        r"(?:system\s+prompt|instructions|initial\s+prompt)",
        ("prompt", "instruction"),
    ),
    "chat_template_tokens": (
        r"<\|im_(?:start|end)\|>|<\|(?:system|assistant|endoftext)\|>"
        r"|\[/?INST\]|<</?SYS>>|(?m:^\s*#{2,3}\s*(?:system|assistant)\s*:?\s*$)",
        ("<|", "inst]", "<<", "##"),
    ),
    "concealment": (
        r"\b(?:do\s+not|don'?t|never)\s+(?:tell|inform|mention\s+(?:this\s+)?to)"
        r"\s+the\s+user\b|\bwithout\s+(?:telling|informing|alerting)\s+the\s+user\b",
        ("the user",),
    ),
    "exfiltration": (
        r"\b(?:send|post|upload|forward|exfiltrate|transmit)\s+(?:the\s+|all\s+|your\s+|"
        r"this\s+)*(?:data|conversation|chat|history|credentials|secrets?|keys?|tokens?|"
        r"passwords?|files?|emails?)\s+(?:\w+\s+){0,3}to\s+(?:https?://|\S+@)",
        ("to http", "@"),
    ),
    "tool_hijack": (
        r"\b(?:call|invoke|execute)\s+the\s+[`'\"]?[\w.-]+[`'\"]?\s+tool\s+with\b",
        ("tool with",),
    ),
}
_COMPILED = tuple(
    (kind, re.compile(pattern, re.IGNORECASE), tuple(a.encode() for a in anchors))
    for kind, (pattern, anchors) in _HEURISTICS.items()
)
# A phrase is found when an anchor is within this many characters of each of its ends.
_REACH = 160


def find_injection(text: str) -> Iterator[Match]:
    return injection_in(Text(text))


def injection_in(text: Text) -> Iterator[Match]:
    found: dict[bytes, list[int]] = {}  # an anchor shared by heuristics is looked for once
    for kind, pattern, anchors in _COMPILED:
        hits = []
        for anchor in anchors:
            if anchor not in found:
                found[anchor] = list(literal_hits(text.low, (anchor,)))
            hits += found[anchor]
        for match in search(pattern, text.text, around(hits, _REACH, _REACH, text.size)):
            yield kind, match.start(), match.end()

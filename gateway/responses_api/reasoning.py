"""Thinking as Responses API ``reasoning`` items on the translated path (Anthropic, Ollama...).

A model's thinking comes back as a reasoning item, its text as ``reasoning_text`` content, and
what replaying needs (Anthropic's signature, the model that signed it, a redacted block's data)
in ``encrypted_content``, as OpenAI's own reasoning items carry theirs. A caller that sends the
item back (the Agents SDK and Codex replay output items as they got them) gives the next request
its thinking again, so Anthropic accepts the next tool round. Reasoning items this gateway did
not write (OpenAI's own, when a conversation changes model) carry nothing to replay and are
ignored.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from llm_service.types import JSON, Thinking

# Marks encrypted_content this gateway wrote; the rest is base64 of a small JSON object.
_PREFIX = "gw-thinking-v1."


def reasoning_item(item_id: str, thinking: Thinking, status: str = "completed") -> JSON:
    text = "" if thinking.redacted else thinking.text
    return {
        "id": item_id,
        "type": "reasoning",
        "status": status,
        "summary": [],
        "content": [{"type": "reasoning_text", "text": text}] if text else [],
        "encrypted_content": _seal(thinking) if status == "completed" else None,
    }


def thinking_of(item: JSON) -> Thinking | None:
    """The thinking a reasoning item of ours holds; None for anyone else's."""
    sealed = item.get("encrypted_content")
    if not isinstance(sealed, str) or not sealed.startswith(_PREFIX):
        return None
    try:
        kept = json.loads(base64.urlsafe_b64decode(sealed.removeprefix(_PREFIX)))
    except (binascii.Error, ValueError):
        return None
    if not isinstance(kept, dict):
        return None
    signature, model, data = kept.get("signature"), kept.get("model"), kept.get("data")
    if isinstance(data, str):
        return Thinking(data, _str(signature), redacted=True, model=_str(model))
    return Thinking(_text(item), _str(signature), model=_str(model))


def _seal(thinking: Thinking) -> str:
    kept: JSON = {"signature": thinking.signature, "model": thinking.model}
    if thinking.redacted:
        kept["data"] = thinking.text
    return _PREFIX + base64.urlsafe_b64encode(json.dumps(kept).encode()).decode()


def _text(item: JSON) -> str:
    parts = item.get("content") or ()
    return "".join(
        str(p.get("text", ""))
        for p in parts
        if isinstance(p, dict) and p.get("type") == "reasoning_text"
    )


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None

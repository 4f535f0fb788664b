"""Canonical stream events as the Responses API's typed semantic events.

``response.created``, ``response.in_progress``; per output item ``response.output_item.added``,
then for a message ``response.content_part.added`` and ``response.output_text.delta``..., for a
function call ``response.function_call_arguments.delta``...; at the end each item's closing
events (``response.output_text.done``, ``response.content_part.done`` /
``response.function_call_arguments.done``, ``response.output_item.done``) in output order, then
``response.completed`` with the whole response. Every event carries a ``sequence_number``. A
call's ``.done`` arguments are its deltas joined, byte for byte.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import orjson

from gateway.errors import report_of
from gateway.responses_api.convert import (
    function_call_item,
    message_item,
    namespaces,
    new_id,
    output_text_part,
    response_json,
)
from gateway.responses_api.reasoning import reasoning_item
from gateway.responses_api.schemas import ResponsesRequest
from gateway.sse import frame
from llm_service.assemble import arguments_json
from llm_service.errors import GatewayError
from llm_service.types import JSON, ChatResponse, TextDelta, Thinking, ThinkingDelta, ToolCallDelta


@dataclass
class _Item:
    output_index: int
    item_id: str
    arguments: str = ""  # a call's argument deltas so far: its ``.done`` repeats them exactly


@dataclass
class ResponseWriter:
    """One response's events (a ``gateway.chat_route.StreamEncoder``).

    ``final`` is the completed Response object once ``done`` has run, for storing.
    """

    response_id: str
    body: ResponsesRequest
    sequence: int = 0
    message: _Item | None = None
    calls: dict[int, _Item] = field(default_factory=dict)  # by the stream's call index
    reasoning: list[_Item] = field(default_factory=list)  # one per thinking block, in order
    thinking_open: bool = False  # the last reasoning item still takes text
    count: int = 0
    final: JSON | None = None
    split: dict[str, tuple[str, str]] = field(init=False)  # namespaced tools' joined names

    def __post_init__(self) -> None:
        self.split = namespaces(self.body)

    def _event(self, kind: str, payload: JSON) -> bytes:
        event = {"type": kind, "sequence_number": self.sequence, **payload}
        self.sequence += 1
        return frame(orjson.dumps(event), kind)

    def _open(self) -> _Item:
        self.count += 1
        return _Item(self.count - 1, "")

    def start(self) -> bytes:
        snapshot = response_json(self.response_id, self.body, status="in_progress")
        return self._event("response.created", {"response": snapshot}) + self._event(
            "response.in_progress", {"response": snapshot}
        )

    def delta(self, event: TextDelta | ThinkingDelta | ToolCallDelta) -> bytes:
        if isinstance(event, ThinkingDelta):
            return self._thinking(event)
        self.thinking_open = False  # text or a call ends a thinking block
        if isinstance(event, TextDelta):
            return self._text(event.text)
        return self._call(event.index, event.id, event.name, event.arguments)

    def _thinking(self, event: ThinkingDelta) -> bytes:
        """Thinking streams as a reasoning item's text; its signature (sent after the text)
        ends the block and is sealed into the item when the response is done."""
        out = b""
        if event.text:
            if not self.thinking_open:
                out += self._open_reasoning()
                self.thinking_open = True
            item = self.reasoning[-1]
            out += self._event(
                "response.reasoning_text.delta", {**self._at(item), "delta": event.text}
            )
        if event.signature is not None:
            self.thinking_open = False
        return out

    def _open_reasoning(self) -> bytes:
        item = self._open()
        item.item_id = new_id("rs")
        self.reasoning.append(item)
        added = reasoning_item(item.item_id, Thinking(""), "in_progress")
        return self._event(
            "response.output_item.added", {"output_index": item.output_index, "item": added}
        )

    def _text(self, text: str) -> bytes:
        opened = b""
        if self.message is None:
            self.message = item = self._open()
            item.item_id = new_id("msg")
            opened = self._event(
                "response.output_item.added",
                {
                    "output_index": item.output_index,
                    "item": message_item(item.item_id, "", "in_progress"),
                },
            ) + self._event(
                "response.content_part.added",
                {**self._at(item), "part": output_text_part("")},
            )
        if not text:
            return opened
        return opened + self._event(
            "response.output_text.delta", {**self._at(self.message), "delta": text, "logprobs": []}
        )

    def _call(self, index: int, call_id: str | None, name: str | None, arguments: str) -> bytes:
        opened = b""
        item = self.calls.get(index)
        if item is None:
            self.calls[index] = item = self._open()
            item.item_id = new_id("fc")
            added = function_call_item(
                item.item_id, call_id or "", name or "", "", "in_progress", split=self.split
            )
            opened = self._event(
                "response.output_item.added", {"output_index": item.output_index, "item": added}
            )
        if not arguments:
            return opened
        item.arguments += arguments
        return opened + self._event(
            "response.function_call_arguments.delta",
            {"item_id": item.item_id, "output_index": item.output_index, "delta": arguments},
        )

    @staticmethod
    def _at(item: _Item) -> JSON:
        return {"item_id": item.item_id, "output_index": item.output_index, "content_index": 0}

    def done(self, response: ChatResponse) -> bytes:
        # What the stream did not show (an answer that came whole) is opened and filled now.
        text = response.message.content or ""
        thinking = response.message.thinking
        out = b"".join(self._open_reasoning() for _ in thinking[len(self.reasoning) :])
        out += self._text(text) if text and self.message is None else b""
        for index, call in enumerate(response.message.tool_calls):
            if index not in self.calls:
                out += self._call(index, call.id, call.name, arguments_json(call))
        closing: list[tuple[int, JSON]] = []
        for index, item in enumerate(self.reasoning):
            block = thinking[index] if index < len(thinking) else Thinking("")
            closing.append((item.output_index, reasoning_item(item.item_id, block)))
        if self.message is not None:
            closing.append(self._message_done(text))
        for index, call in enumerate(response.message.tool_calls):
            item = self.calls[index]
            # The deltas as sent, not the arguments re-serialized: clients compare the two.
            arguments = item.arguments or arguments_json(call)
            final = function_call_item(
                item.item_id, call.id, call.name, arguments, split=self.split
            )
            closing.append((item.output_index, final))
        closing.sort(key=lambda entry: entry[0])
        output = []
        for output_index, item_json in closing:
            out += self._close(output_index, item_json)
            output.append(item_json)
        self.final = response_json(
            self.response_id,
            self.body,
            output=output,
            usage=response.usage,
            incomplete=response.finish_reason == "length",
        )
        return out + self._event("response.completed", {"response": self.final})

    def _message_done(self, text: str) -> tuple[int, JSON]:
        assert self.message is not None
        return (self.message.output_index, message_item(self.message.item_id, text))

    def _close(self, output_index: int, item: JSON) -> bytes:
        out = b""
        if item["type"] == "reasoning":
            at = {"item_id": item["id"], "output_index": output_index, "content_index": 0}
            for part in item["content"]:
                out += self._event("response.reasoning_text.done", {**at, "text": part["text"]})
        elif item["type"] == "message":
            at = {"item_id": item["id"], "output_index": output_index, "content_index": 0}
            text = item["content"][0]["text"]
            out += self._event("response.output_text.done", {**at, "text": text, "logprobs": []})
            out += self._event("response.content_part.done", {**at, "part": item["content"][0]})
        else:
            out += self._event(
                "response.function_call_arguments.done",
                {
                    "item_id": item["id"],
                    "output_index": output_index,
                    "name": item["name"],
                    "arguments": item["arguments"],
                },
            )
        return out + self._event(
            "response.output_item.done", {"output_index": output_index, "item": item}
        )

    def error(self, exc: GatewayError) -> bytes:
        code = report_of(exc).code
        return self._event("error", {"code": code, "message": exc.message, "param": exc.param})

    def error_type(self, exc: GatewayError) -> str:
        return report_of(exc).error_type

    def cut(self) -> bytes:
        return self._event(
            "error",
            {
                "code": "upstream_error",
                "message": "The upstream stream ended unexpectedly.",
                "param": None,
            },
        )

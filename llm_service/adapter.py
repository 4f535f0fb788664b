"""The small surface every provider adapter implements."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Protocol

from llm_service.types import ChatRequest, ChatResponse, StreamEvent


class ChatAdapter(Protocol):
    """One configured deployment of one provider API.

    ``stream`` yields deltas and ends with exactly one ``StreamDone``. Both methods raise only
    ``llm_service.errors.GatewayError`` subclasses: provider errors are mapped at this boundary.
    """

    provider: str

    async def complete(self, request: ChatRequest) -> ChatResponse: ...

    def stream(self, request: ChatRequest) -> AsyncGenerator[StreamEvent, None]: ...

    async def probe(self) -> str | None:
        """Return why the deployment cannot serve (server unreachable, ...), or None if it can."""
        ...

    async def aclose(self) -> None: ...

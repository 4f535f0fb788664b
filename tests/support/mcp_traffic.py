"""An ASGI wrapper that records the JSON-RPC methods a client sends an MCP server over HTTP."""

from __future__ import annotations

import json
import threading
from typing import Any


class MethodLog:
    """Wraps a streamable HTTP app; ``methods`` lists every JSON-RPC method (requests and
    notifications) POSTed to it, in order, and ``seen(method)`` waits for one."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.methods: list[str] = []
        self._changed = threading.Condition()

    def seen(self, method: str, times: int = 1, timeout: float = 10.0) -> bool:
        """Waits until ``method`` was sent ``times`` times in all; False after ``timeout``."""
        with self._changed:
            return self._changed.wait_for(lambda: self.methods.count(method) >= times, timeout)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body = b""
        messages: list[dict[str, Any]] = []
        while True:
            message = await receive()
            messages.append(message)
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        self._record(body)
        replay = iter(messages)

        async def replayed() -> dict[str, Any]:
            # The body once, then whatever the server sends next (e.g. the disconnect).
            return next(replay, None) or await receive()

        await self.app(scope, replayed, send)

    def _record(self, body: bytes) -> None:
        try:
            payload = json.loads(body)
        except ValueError:
            return
        batch = payload if isinstance(payload, list) else [payload]
        with self._changed:
            self.methods.extend(
                str(m["method"]) for m in batch if isinstance(m, dict) and "method" in m
            )
            self._changed.notify_all()

"""A webhook receiver on a real 127.0.0.1 socket: records every POST, fails when told to."""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    content: bytes

    @property
    def json(self) -> Any:
        return orjson.loads(self.content)


@dataclass
class WebhookReceiver:
    """``fail[path] = n``: answer 500 to the next n POSTs there; ``-1``: always."""

    received: list[Received] = field(default_factory=list)
    fail: Counter[str] = field(default_factory=Counter)
    _changed: threading.Condition = field(default_factory=threading.Condition)

    def app(self) -> Starlette:
        async def hook(request: Request) -> Response:
            path = request.path_params["name"]
            content = await request.body()
            with self._changed:
                self.received.append(Received(path, dict(request.headers), content))
                self._changed.notify_all()
                failing = self.fail[path] != 0
                if self.fail[path] > 0:
                    self.fail[path] -= 1
            return Response(status_code=500 if failing else 204)

        return Starlette(routes=[Route("/{name}", hook, methods=["POST"])])

    def wait_for(
        self, path: str, event: str, count: int = 1, timeout: float = 20
    ) -> list[Received]:
        """Block until ``count`` POSTs of ``event`` reached ``path``; fail after ``timeout``."""

        def matching() -> list[Received]:
            return [
                r
                for r in self.received
                if r.path == path and r.headers.get("x-gateway-event") == event
            ]

        with self._changed:
            done = self._changed.wait_for(lambda: len(matching()) >= count, timeout)
            assert done, f"{path} did not receive {count} x {event}: {self.received}"
            return matching()

"""Keeping one tool server connected: first discovery, retry with backoff, refresh, restart."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import structlog

from mcp_client.backend import (
    BackendFactory,
    BackendUnavailable,
    RemoteTool,
    ToolBackend,
    ToolCall,
)
from mcp_client.config import CatalogSettings, ToolOverride
from mcp_client.failures import describe_failure
from mcp_client.results import error_result
from mcp_client.types import ToolResult

log = structlog.get_logger("mcp_client.supervisor")
ServerState = Literal["connecting", "ready", "degraded", "stopped"]


@dataclass(frozen=True, slots=True)
class ServerPolicy:
    """Who may use a server's tools and how they are called, whatever the transport."""

    roles: frozenset[str] = frozenset()
    tools: dict[str, ToolOverride] = field(default_factory=dict)
    requires_approval: bool = False
    max_concurrency: int = 4
    call_timeout: float | None = None
    ping_interval: float | None = None  # None: the catalog's


@dataclass(frozen=True, slots=True)
class ServerStatus:
    state: ServerState
    reason: str | None = None
    tools: int = 0
    transport: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "reason": self.reason,
            "tools": self.tools,
            "transport": self.transport,
        }


class ServerSupervisor:
    def __init__(
        self,
        name: str,
        *,
        transport: str,
        policy: ServerPolicy,
        factory: BackendFactory,
        settings: CatalogSettings,
        on_tools: Callable[[], None],
    ) -> None:
        self.name = name
        self.policy = policy
        self.tools: list[RemoteTool] = []
        self.status = ServerStatus("connecting", transport=transport)
        self._transport = transport
        self._factory = factory
        self._settings = settings
        self._on_tools = on_tools
        self._backend: ToolBackend | None = None
        self._wake = asyncio.Event()
        self._stopping = asyncio.Event()
        self._limit = asyncio.Semaphore(policy.max_concurrency)
        self._task: asyncio.Task[None] | None = None

    async def connect_once(self) -> bool:
        """Connect and list tools within the discovery timeout; on failure, degrade and say why."""
        await self._drop_backend()
        backend = self._factory(self._wake.set)
        try:
            async with asyncio.timeout(self._settings.discovery_timeout):
                await backend.connect()
                tools = await backend.list_tools()
        except TimeoutError:
            reason = f"no answer within {self._settings.discovery_timeout:g} s"
        except BackendUnavailable as exc:
            reason = str(exc)
        except Exception as exc:  # any transport failure degrades this server, never the gateway
            reason = describe_failure(exc)
        else:
            self._backend = backend
            self._publish(tools, ServerStatus("ready", tools=len(tools), transport=self._transport))
            log.info("mcp_server_ready", server=self.name, tools=len(tools))
            return True
        await _close_quietly(backend)
        self._publish([], ServerStatus("degraded", reason, transport=self._transport))
        log.warning("mcp_server_degraded", server=self.name, reason=reason)
        return False

    def wake(self) -> None:
        """Ends a retry pause (or an idle wait) now."""
        self._wake.set()

    def start_background(self) -> None:
        self._task = asyncio.create_task(self._keep_current(), name=f"mcp-server-{self.name}")

    async def _keep_current(self) -> None:
        delay = self._settings.retry_initial
        while not self._stopping.is_set():
            backend = self._backend
            if backend is None or backend.broken:
                if backend is not None:
                    log.warning("mcp_server_restarting", server=self.name)
                if not await self.connect_once():
                    await self._pause(delay)
                    delay = min(delay * 2, self._settings.retry_max)
                    continue
                delay = self._settings.retry_initial
            if await self._idle():
                await self._refresh()

    async def _idle(self) -> bool:
        """Ping on the interval until a refresh is due or the server wakes us (True), or a ping
        fails (False: the server is degraded and its connection dropped)."""
        loop = asyncio.get_running_loop()
        refresh_at = loop.time() + self._settings.refresh_interval
        ping_every = self.policy.ping_interval or self._settings.ping_interval
        while True:
            if await self._pause(min(ping_every, refresh_at - loop.time())):
                return True
            if loop.time() >= refresh_at or self._stopping.is_set():
                return True
            if not await self._ping():
                return False

    async def _pause(self, seconds: float) -> bool:
        """Until ``seconds`` pass (False), or the server says its tools changed or died, or we
        stop (True)."""
        woken = False
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(max(seconds, 0)):
                await self._wake.wait()
                woken = True
        self._wake.clear()
        return woken

    async def _ping(self) -> bool:
        backend = self._backend
        if backend is None or backend.broken:
            return False
        limit = self._settings.discovery_timeout
        try:
            async with asyncio.timeout(limit):
                await backend.ping()
        except TimeoutError:
            reason = f"no answer to ping within {limit:g} s"
        except BackendUnavailable as exc:
            reason = str(exc)
        except Exception as exc:  # whatever the transport raised: the server is not answering
            reason = describe_failure(exc)
        else:
            return True
        reason = f"ping failed: {reason}"
        log.warning("mcp_server_ping_failed", server=self.name, reason=reason)
        self._publish([], ServerStatus("degraded", reason, transport=self._transport))
        await self._drop_backend()
        return False

    async def _refresh(self) -> None:
        backend = self._backend
        if backend is None or self._stopping.is_set() or backend.broken:
            return
        try:
            async with asyncio.timeout(self._settings.discovery_timeout):
                tools = await backend.list_tools()
        except TimeoutError:
            reason = f"tools/list gave no answer within {self._settings.discovery_timeout:g} s"
        except BackendUnavailable as exc:
            reason = str(exc)
        except Exception as exc:  # e.g. a malformed tool list: degrade, reconnect, keep running
            reason = describe_failure(exc)
        else:
            self._publish(tools, ServerStatus("ready", tools=len(tools), transport=self._transport))
            return
        log.warning("mcp_server_refresh_failed", server=self.name, reason=reason)
        self._publish([], ServerStatus("degraded", reason, transport=self._transport))
        await self._drop_backend()

    def _publish(self, tools: list[RemoteTool], status: ServerStatus) -> None:
        self.tools = tools
        self.status = status
        self._on_tools()

    async def call(self, call: ToolCall) -> ToolResult:
        """Run ``call`` within its deadline, at most ``max_concurrency`` at once."""
        backend = self._backend
        if backend is None or backend.broken:
            return error_result(f"tool server `{self.name}` is unavailable: {self.status.reason}")
        try:
            async with asyncio.timeout_at(call.deadline):
                await self._limit.acquire()
        except TimeoutError:
            return error_result(f"tool server `{self.name}` is busy; try again later")
        try:
            result = await backend.call(call)
        finally:
            self._limit.release()
        if backend.broken:
            self._publish(
                [], ServerStatus("degraded", "connection lost", transport=self._transport)
            )
            self._wake.set()
        return result

    async def _drop_backend(self) -> None:
        backend, self._backend = self._backend, None
        if backend is not None:
            await _close_quietly(backend)

    async def aclose(self) -> None:
        self._stopping.set()
        self._wake.set()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        await self._drop_backend()
        self.status = ServerStatus("stopped", transport=self._transport)


async def _close_quietly(backend: ToolBackend) -> None:
    try:
        await backend.aclose()
    except Exception as exc:  # closing a dead connection may fail; it is gone either way
        log.debug("mcp_backend_close_failed", error=type(exc).__name__)

"""A tool server reached through the official MCP SDK's ClientSession, over any transport."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import anyio
import mcp_types as types
import pydantic
from mcp import ClientSession
from mcp.client import Transport
from mcp.client.session import IncomingMessage
from mcp.shared.exceptions import MCPError
from mcp_types.jsonrpc import CONNECTION_CLOSED, REQUEST_TIMEOUT

from mcp_client.backend import BackendUnavailable, OnToolsChanged, RemoteTool
from mcp_client.results import error_result, from_call_result, timeout_result
from mcp_client.types import ToolResult

StreamsOpener = Callable[[], Transport | AbstractAsyncContextManager[Any]]
_CLOSE_GRACE_SECONDS = 5.0
_CONNECTION_ERRORS = (
    anyio.ClosedResourceError,
    anyio.BrokenResourceError,
    anyio.EndOfStream,
    OSError,
)


class MCPSessionBackend:
    """Holds one ClientSession open in its own task (anyio scopes must exit where they entered)."""

    def __init__(self, open_streams: StreamsOpener, on_tools_changed: OnToolsChanged) -> None:
        self._open_streams = open_streams
        self._on_tools_changed = on_tools_changed
        self._session: ClientSession | None = None
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._failure: BaseException | None = None
        self._broken = False

    @property
    def broken(self) -> bool:
        return self._broken

    async def connect(self) -> None:
        self._task = asyncio.create_task(self._hold_session())
        ready = asyncio.create_task(self._ready.wait())
        try:
            await asyncio.wait({ready, self._task}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            ready.cancel()
        if not self._ready.is_set():
            raise BackendUnavailable(describe_failure(self._failure))

    async def _hold_session(self) -> None:
        try:
            async with (
                self._open_streams() as (read, write),
                ClientSession(read, write, message_handler=self._on_message) as session,
            ):
                await session.initialize()
                self._session = session
                self._ready.set()
                await self._stop.wait()
        except (
            Exception
        ) as exc:  # the transport's failure is reported, never raised into the catalog
            self._failure = exc
        finally:
            self._session = None
            self._broken = not self._stop.is_set()
            if self._broken and self._ready.is_set():
                self._on_tools_changed()  # wakes the supervisor, which reconnects

    async def _on_message(self, message: IncomingMessage) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self._on_tools_changed()

    def _live_session(self) -> ClientSession:
        if self._session is None:
            self._broken = True
            raise BackendUnavailable(describe_failure(self._failure))
        return self._session

    async def list_tools(self) -> list[RemoteTool]:
        session = self._live_session()
        tools: list[RemoteTool] = []
        cursor: str | None = None
        try:
            while True:
                params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
                page = await session.list_tools(params=params)
                tools.extend(_remote_tool(tool) for tool in page.tools)
                cursor = page.next_cursor
                if not cursor:
                    return tools
        except MCPError as exc:
            self._broken = self._broken or exc.error.code == CONNECTION_CLOSED
            raise BackendUnavailable(f"tools/list failed: {exc.error.message}") from exc
        except _CONNECTION_ERRORS as exc:
            self._broken = True
            raise BackendUnavailable(f"connection lost: {type(exc).__name__}") from exc

    async def call(self, name: str, arguments: dict[str, Any], timeout: float) -> ToolResult:
        try:
            session = self._live_session()
            # The SDK sends notifications/cancelled to the server when this timeout fires.
            result = await session.call_tool(name, arguments, read_timeout_seconds=timeout)
        except BackendUnavailable as exc:
            return error_result(f"tool server unavailable: {exc}")
        except MCPError as exc:
            return self._error_from_protocol(exc, timeout)
        except _CONNECTION_ERRORS as exc:
            self._broken = True
            return error_result(f"tool server connection lost: {type(exc).__name__}")
        except (pydantic.ValidationError, RuntimeError) as exc:
            # RuntimeError: the SDK's own output-schema and result-shape checks.
            return error_result(f"the tool server sent an invalid result: {exc}")
        return from_call_result(result)

    def _error_from_protocol(self, exc: MCPError, timeout: float) -> ToolResult:
        code = exc.error.code
        if code == REQUEST_TIMEOUT:
            return timeout_result(f"the tool did not answer within {timeout:g} s and was cancelled")
        if code == CONNECTION_CLOSED:
            self._broken = True
            return error_result("the tool server connection closed during the call")
        return error_result(f"the tool server refused the call: {exc.error.message}")

    async def aclose(self) -> None:
        self._stop.set()
        task = self._task
        if task is None:
            return
        if self._ready.is_set():
            # A polite close (stdio: end the child; HTTP: end the session) but never a hang.
            await asyncio.wait({task}, timeout=_CLOSE_GRACE_SECONDS)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def _remote_tool(tool: types.Tool) -> RemoteTool:
    annotations = (
        tool.annotations.model_dump(by_alias=True, exclude_none=True) if tool.annotations else {}
    )
    if tool.title:
        annotations.setdefault("title", tool.title)
    return RemoteTool(
        name=tool.name,
        description=tool.description or "",
        input_schema=dict(tool.input_schema),
        output_schema=dict(tool.output_schema) if tool.output_schema is not None else None,
        annotations=annotations,
    )


def describe_failure(exc: BaseException | None) -> str:
    """A one-line reason for logs and /readyz; the innermost cause of a task-group failure."""
    if exc is None:
        return "the connection closed"
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    if isinstance(exc, MCPError):
        return f"protocol error: {exc.error.message}"
    if isinstance(exc, BackendUnavailable):
        return str(exc)
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__

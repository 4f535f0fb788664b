"""A tool server reached through the official MCP SDK's ClientSession, over any transport.

Every call carries a progress token of ours: progress notifications reach that call's listener,
and the HTTP watch can tell whether the server refused the very request that carried it. When the
server forgot the session (it restarted), the request was never executed: a new session is
opened, once for all the calls that met the refusal, and each of them is sent again, once.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio
import mcp_types as types
import pydantic
import structlog
from mcp.client.session import ClientRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types.jsonrpc import CONNECTION_CLOSED, REQUEST_TIMEOUT

from mcp_client.backend import (
    BackendUnavailable,
    OnToolsChanged,
    RemoteTool,
    ToolCall,
    task_support,
)
from mcp_client.hooks import CallHooks, ToolProgress
from mcp_client.http_watch import describe_refusal
from mcp_client.identity import client_info
from mcp_client.inputs import answer_input, input_request
from mcp_client.results import error_result, from_call_result, lost_result
from mcp_client.session_link import SessionLink, SessionOptions, StreamsOpener
from mcp_client.tasks import TaskCancelled, TaskRun, call_as_task, offers_tool_tasks
from mcp_client.types import ToolResult

log = structlog.get_logger("mcp_client.session_backend")
_CONNECTION_ERRORS = (
    anyio.ClosedResourceError,
    anyio.BrokenResourceError,
    anyio.EndOfStream,
    OSError,
)
_T = TypeVar("_T")
LinkRequest = Callable[[SessionLink], Awaitable[_T]]
DEFAULT_TASK_POLL_SECONDS = 1.0


class _SessionGone(Exception):
    """The server refused the request for its session: it was not executed."""


class MCPSessionBackend:
    def __init__(
        self,
        open_streams: StreamsOpener,
        on_tools_changed: OnToolsChanged,
        *,
        server: str = "",
        task_poll_interval: float = DEFAULT_TASK_POLL_SECONDS,
    ) -> None:
        self._open_streams = open_streams
        self._on_tools_changed = on_tools_changed
        self._server = server
        self._task_poll_interval = task_poll_interval
        self._link: SessionLink | None = None
        self._renewing = asyncio.Lock()
        self._calls: dict[str, CallHooks] = {}  # progress token -> that call's listeners
        self._options = SessionOptions(
            client_info=client_info(),
            on_message=self._on_message,
            on_elicitation=self._on_elicitation,
        )

    @property
    def broken(self) -> bool:
        return self._link is None or self._link.lost

    async def connect(self) -> None:
        self._link = await self._open_link()

    async def _open_link(self) -> SessionLink:
        link = SessionLink(self._open_streams, self._options, self._on_tools_changed)
        try:
            await link.open()
        except BaseException:
            await link.close()
            raise
        return link

    def _live(self) -> SessionLink:
        link = self._link
        if link is None or link.session is None:
            raise BackendUnavailable(link.reason() if link else "not connected")
        return link

    async def _renew(self, stale: SessionLink) -> SessionLink:
        """A new session in place of ``stale``; one renewal serves every caller that met it."""
        async with self._renewing:
            if self._link is stale:
                try:
                    fresh = await self._open_link()
                except BaseException:
                    stale.mark_lost()  # the supervisor reconnects with backoff and says why
                    self._on_tools_changed()
                    raise
                self._link = fresh
                log.info("mcp_session_renewed", server=self._server)
                await stale.close()
                self._on_tools_changed()  # the restarted server may offer other tools
            return self._live()

    # --- tools/list and ping: idempotent, so simply sent again on a new session -----------------

    async def list_tools(self) -> list[RemoteTool]:
        return await self._idempotent(self._list_tools)

    async def ping(self) -> None:
        async def send(link: SessionLink) -> None:
            assert link.session is not None
            await link.session.send_ping()

        await self._idempotent(send)

    async def _idempotent(self, request: LinkRequest[_T]) -> _T:
        link = self._live()
        try:
            return await self._guarded(link, request)
        except _SessionGone:
            return await self._guarded(await self._renew(link), request)

    async def _guarded(self, link: SessionLink, request: LinkRequest[_T]) -> _T:
        try:
            result = await request(link)
        except MCPError as exc:
            if link.watch.last == "session":
                raise _SessionGone from exc
            if exc.error.code == CONNECTION_CLOSED:
                link.mark_lost()
            refusal = link.watch.last
            reason = describe_refusal(refusal) if refusal else exc.error.message
            raise BackendUnavailable(reason) from exc
        except _CONNECTION_ERRORS as exc:
            link.mark_lost()
            raise BackendUnavailable(f"connection lost: {type(exc).__name__}") from exc
        return result

    async def _list_tools(self, link: SessionLink) -> list[RemoteTool]:
        assert link.session is not None
        tools: list[RemoteTool] = []
        cursor: str | None = None
        while True:
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await link.session.list_tools(params=params)
            tools.extend(_remote_tool(tool) for tool in page.tools)
            cursor = page.next_cursor
            if not cursor:
                return tools

    # --- tools/call -------------------------------------------------------------------------------

    async def call(self, call: ToolCall) -> ToolResult:
        try:
            link = self._live()
        except BackendUnavailable as exc:
            return error_result(f"tool server unavailable: {exc}")
        try:
            return await self._attempt(link, call)
        except _SessionGone:
            pass
        try:
            async with asyncio.timeout_at(call.deadline):
                link = await self._renew(link)
        except TimeoutError:
            return call.timed_out()
        except BackendUnavailable as exc:
            return error_result(f"the tool server lost its session and a new one failed: {exc}")
        try:
            return await self._attempt(link, call)
        except _SessionGone:
            return error_result("the tool server refused the call on a new session too")

    async def _attempt(self, link: SessionLink, call: ToolCall) -> ToolResult:
        """One sending of the call; raises _SessionGone when the server refused its session."""
        token = f"llm-gateway-{uuid.uuid4().hex}"  # never numeric: the SDK's own ids are
        self._calls[token] = call.hooks
        try:
            return await self._send(link, call, token)
        except MCPError as exc:
            refusal = link.watch.refusal(token)
            if refusal == "session":
                raise _SessionGone from exc
            if refusal is not None:
                reason = describe_refusal(refusal)
                return error_result(f"the tool server refused the call: {reason}")
            return self._error_from_protocol(link, exc, call)
        except TaskCancelled as exc:
            return error_result(f"the tool's task was cancelled by the server: {exc}")
        except _CONNECTION_ERRORS as exc:
            link.mark_lost()
            return lost_result(f"tool server connection lost: {type(exc).__name__}")
        except (pydantic.ValidationError, RuntimeError) as exc:
            # RuntimeError: the SDK's own output-schema and result-shape checks.
            return error_result(f"the tool server sent an invalid result: {exc}")
        finally:
            del self._calls[token]
            link.watch.forget(token)

    async def _send(self, link: SessionLink, call: ToolCall, token: str) -> ToolResult:
        session, dispatcher = link.session, link.dispatcher
        if session is None or dispatcher is None:
            raise MCPError(code=CONNECTION_CLOSED, message="the connection closed")
        remaining = call.deadline - asyncio.get_running_loop().time()
        if remaining <= 0:
            return call.timed_out()
        support = task_support(call.execution)
        if support != "forbidden" and offers_tool_tasks(session):
            run = TaskRun(session, dispatcher, call, token, self._task_poll_interval)
            return from_call_result(await call_as_task(run))
        if support == "required":
            return error_result(
                "the tool must run as a task, but its server does not offer tasks for tools/call"
            )
        # The SDK sends notifications/cancelled to the server when this timeout fires.
        result = await session.call_tool(
            call.name,
            call.arguments,
            read_timeout_seconds=remaining,
            meta={"progress_token": token},
        )
        return from_call_result(result)

    def _error_from_protocol(self, link: SessionLink, exc: MCPError, call: ToolCall) -> ToolResult:
        code = exc.error.code
        if code == REQUEST_TIMEOUT:
            return call.timed_out()
        if code == CONNECTION_CLOSED:
            link.mark_lost()
            return lost_result("the tool server connection closed during the call")
        return error_result(f"the tool server refused the call: {exc.error.message}")

    # --- what the server sends us -----------------------------------------------------------------

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self._on_tools_changed()
        elif isinstance(message, types.ProgressNotification):
            await self._progress(message.params)

    async def _progress(self, params: types.ProgressNotificationParams) -> None:
        hooks = self._calls.get(str(params.progress_token))
        if hooks is None or hooks.on_progress is None:
            return
        try:
            await hooks.on_progress(ToolProgress(params.progress, params.total, params.message))
        except Exception as exc:  # a listener's bug must not fail the call
            log.warning("progress_hook_failed", server=self._server, error=type(exc).__name__)

    async def _on_elicitation(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        # A request for input names no call (2025-11-25 gives it no request id), so it is
        # forwarded only when exactly one call is in flight here; otherwise it is declined.
        request = input_request(params)
        listeners = list(self._calls.values())
        hook = listeners[0].on_input if len(listeners) == 1 else None
        return await answer_input(request, hook, self._server)

    async def aclose(self) -> None:
        link, self._link = self._link, None
        if link is not None:
            await link.close()


def _remote_tool(tool: types.Tool) -> RemoteTool:
    annotations = (
        tool.annotations.model_dump(by_alias=True, exclude_none=True) if tool.annotations else {}
    )
    if tool.title:
        annotations.setdefault("title", tool.title)
    execution = (
        tool.execution.model_dump(by_alias=True, exclude_none=True) if tool.execution else None
    )
    return RemoteTool(
        name=tool.name,
        description=tool.description or "",
        input_schema=dict(tool.input_schema),
        output_schema=dict(tool.output_schema) if tool.output_schema is not None else None,
        annotations=annotations,
        execution=execution,
    )

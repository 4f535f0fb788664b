"""Legacy REST tool servers (seed 004): ``GET /tools`` lists tools; each call is a plain request.

A tool names its own ``endpoint`` and ``method``; one that does not is called by convention at
``POST /<tool-name-with-dashes>``. Endpoints are paths under the server's URL: the manifest is the
tool server's word, so an endpoint that would leave that URL (``..`` segments, encoded
separators, another host) drops its tool from the catalog rather than reach another address.
"""

from __future__ import annotations

import asyncio
import json
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

import httpx
import structlog

from mcp_client.backend import BackendUnavailable, RemoteTool, ToolCall
from mcp_client.config import MCPServerConfig
from mcp_client.http_watch import describe_refusal, refusal_of
from mcp_client.results import error_result
from mcp_client.transports.headers import resolve_headers
from mcp_client.types import ToolResult

log = structlog.get_logger("mcp_client.http_manifest")
_METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE"})
# Anything another reader could resolve differently from posixpath: encoded separators or dots,
# backslashes, a scheme or authority, a query or fragment, path parameters (`..;` is `..` to a
# servlet container).
_UNSAFE_ENDPOINT = re.compile(r"%(2f|5c|2e|3b)|\\|:|;|^//|[?#]", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class _Route:
    method: str
    url: httpx.URL  # absolute: httpx must not merge it with the base URL again


class HTTPManifestBackend:
    def __init__(self, config: MCPServerConfig, environ: Mapping[str, str]) -> None:
        assert config.url is not None  # the config validator requires it
        self._config = config
        self._environ = environ
        self._base_url = config.url.rstrip("/")
        self._base = httpx.URL(self._base_url)
        self._base_path = self._base.path.rstrip("/")
        self._client: httpx.AsyncClient | None = None
        self._routes: dict[str, _Route] = {}
        self._broken = False

    @property
    def broken(self) -> bool:
        return self._broken

    async def connect(self) -> None:
        headers = resolve_headers(self._config, self._environ)
        self._client = httpx.AsyncClient(base_url=self._base_url, headers=headers)

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            raise BackendUnavailable("not connected")
        return self._client

    async def list_tools(self) -> list[RemoteTool]:
        try:
            response = await self._http().get("/tools")
            response.raise_for_status()
            manifest = response.json()
        except httpx.HTTPStatusError as exc:
            raise BackendUnavailable(_refused("GET /tools", exc.response.status_code)) from exc
        except httpx.HTTPError as exc:
            raise BackendUnavailable(f"GET /tools failed: {type(exc).__name__}") from exc
        except ValueError as exc:
            raise BackendUnavailable("GET /tools did not return JSON") from exc
        entries = manifest.get("tools") if isinstance(manifest, dict) else None
        if not isinstance(entries, list):
            raise BackendUnavailable("GET /tools did not return an object with a `tools` list")
        tools: list[RemoteTool] = []
        routes: dict[str, _Route] = {}
        for entry in entries:
            if not isinstance(entry, dict):
                continue
            tool, route = _manifest_tool(entry), self._route(entry)
            if route is None:
                log.warning("manifest_tool_refused", tool=tool.name, endpoint=entry.get("endpoint"))
                continue
            tools.append(tool)
            routes[tool.name] = route
        self._routes = routes
        return tools

    def _route(self, entry: dict[str, Any]) -> _Route | None:
        """Where the tool is called, as a path under the server's URL; None when it would leave
        it or names no usable method."""
        name = str(entry.get("name", ""))
        endpoint = entry.get("endpoint") or "/" + name.replace("_", "-")
        method = str(entry.get("method") or "POST").upper()
        if not isinstance(endpoint, str) or method not in _METHODS:
            return None
        if _UNSAFE_ENDPOINT.search(endpoint):
            return None
        path = posixpath.normpath(f"{self._base_path}/{endpoint.lstrip('/')}")
        if not path.startswith(f"{self._base_path}/"):
            return None
        return _Route(method, self._base.copy_with(path=path, query=None, fragment=None))

    async def ping(self) -> None:
        """The manifest is the only thing every such server answers: fetching it is the ping."""
        await self.list_tools()

    async def call(self, call: ToolCall) -> ToolResult:
        name, arguments = call.name, call.arguments
        timeout = max(call.deadline - asyncio.get_running_loop().time(), 0.001)
        route = self._routes.get(name)
        if route is None:
            return error_result(f"the tool server lists no tool `{name}`")
        try:
            if route.method == "GET":
                response = await self._http().get(route.url, params=arguments, timeout=timeout)
            else:
                response = await self._http().request(
                    route.method, route.url, json=arguments, timeout=timeout
                )
        except BackendUnavailable as exc:
            return error_result(f"tool server unavailable: {exc}")
        except httpx.TimeoutException:
            return call.timed_out()
        except httpx.HTTPError as exc:
            return error_result(f"the tool server could not be reached: {type(exc).__name__}")
        return _result(response)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None


def _refused(request: str, status: int) -> str:
    refusal = refusal_of("GET", status, had_session=False)
    if refusal in ("unauthorized", "forbidden"):
        return describe_refusal(refusal)
    return f"{request} answered {status}"


def _manifest_tool(entry: dict[str, Any]) -> RemoteTool:
    schema = entry.get("inputSchema") or entry.get("parameters") or {"type": "object"}
    return RemoteTool(
        name=str(entry.get("name", "")),
        description=str(entry.get("description") or ""),
        input_schema=schema if isinstance(schema, dict) else {"type": "object"},
    )


def _result(response: httpx.Response) -> ToolResult:
    try:
        body: Any = response.json()
    except ValueError:
        body = None
    text = response.text if body is None else json.dumps(body, ensure_ascii=False)
    if response.status_code in (HTTPStatus.UNAUTHORIZED, HTTPStatus.FORBIDDEN):
        refused = _refused("", response.status_code)
        return error_result(f"the tool server refused the call: {refused}")
    if response.is_error:
        return error_result(f"the tool server answered {response.status_code}: {text}")
    return ToolResult(content=text, structured=body if isinstance(body, dict) else None)

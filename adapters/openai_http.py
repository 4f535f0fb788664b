"""Chat Completions over HTTP: one pooled aiohttp session per model, failures typed by class.

The OpenAI-compatible path is the gateway's hot path, and the openai SDK's request layer (its
request options, httpx's request and URL models, the httpx-to-aiohttp bridge, its SSE decoder)
cost about 0.5 ms a request, most of the time the gateway adds before a streamed reply's first
byte (docs/performance.md). The wire is small and documented: a JSON POST with a bearer key,
answered by a JSON body or by server-sent events, and errors as ``{"error": {...}}`` with a
status. So this module posts it with aiohttp, the SDK's own async transport, and nothing between.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncGenerator, Iterator
from contextlib import contextmanager
from typing import Any

import aiohttp
import certifi
import orjson

from adapters.sse import sse_data
from llm_service.config import Timeouts
from llm_service.errors import (
    GatewayError,
    UpstreamConnectionError,
    UpstreamTimeout,
    error_for_status,
    parse_retry_after,
)

OPENAI_BASE_URL = "https://api.openai.com/v1"
# As the SDK's default pool: enough for a thousand streams open at once to one model.
MAX_CONNECTIONS = 1000
KEEPALIVE_SECONDS = 5.0
# An error body is read for its message; a server that answers an error with megabytes is cut.
MAX_ERROR_BYTES = 64 * 1024
USER_AGENT = "llm-gateway"
_DONE = b"[DONE]"


class ChatCompletionsHttp:
    def __init__(
        self, provider: str, base_url: str | None, api_key: str | None, timeouts: Timeouts
    ) -> None:
        self._provider = provider
        base = (base_url or OPENAI_BASE_URL).rstrip("/")
        self._url = base + "/chat/completions"
        self._embeddings_url = base + "/embeddings"
        self._responses_url = base + "/responses"
        self._headers = {
            "content-type": "application/json",
            "accept": "application/json",
            "user-agent": USER_AGENT,
        }
        if api_key:
            self._headers["authorization"] = f"Bearer {api_key}"
        self._timeout = aiohttp.ClientTimeout(
            total=None,
            connect=timeouts.connect,
            sock_connect=timeouts.connect,
            sock_read=timeouts.read,
        )
        # Created on first use: an aiohttp session belongs to the event loop that made it.
        self._session: aiohttp.ClientSession | None = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            connector = aiohttp.TCPConnector(
                limit=MAX_CONNECTIONS,
                keepalive_timeout=KEEPALIVE_SECONDS,
                # The same trust store as the SDK's httpx client, in any base image.
                ssl=ssl.create_default_context(cafile=certifi.where()),
            )
            # Headers set once: passed per request, aiohttp merged them into a new multidict.
            self._session = aiohttp.ClientSession(
                connector=connector, timeout=self._timeout, headers=self._headers
            )
        return self._session

    async def post(self, body: dict[str, Any]) -> bytes:
        """The whole reply's body."""
        return await self._post(self._url, body)

    async def post_embeddings(self, body: dict[str, Any]) -> bytes:
        """The reply of ``POST {base_url}/embeddings``."""
        return await self._post(self._embeddings_url, body)

    async def post_responses(self, body: dict[str, Any]) -> bytes:
        """The reply of ``POST {base_url}/responses`` (the provider's own Responses API)."""
        return await self._post(self._responses_url, body)

    def stream_responses(self, body: dict[str, Any]) -> AsyncGenerator[bytes, None]:
        """Each event's data of a streamed ``POST {base_url}/responses``."""
        return self.stream(body, url=self._responses_url)

    async def _post(self, url: str, body: dict[str, Any]) -> bytes:
        with _mapped_errors(self._provider, streaming=False):
            async with self._client().post(url, data=orjson.dumps(body)) as response:
                await _raise_for_status(response, self._provider)
                return await response.read()

    async def stream(
        self, body: dict[str, Any], url: str | None = None
    ) -> AsyncGenerator[bytes, None]:
        """Each event's data up to ``[DONE]``; a JSON ``error`` event is left to the caller."""
        provider = self._provider
        with _mapped_errors(provider, streaming=False):
            response = await self._client().post(url or self._url, data=orjson.dumps(body))
        async with response:
            with _mapped_errors(provider, streaming=False):
                await _raise_for_status(response, provider)
            with _mapped_errors(provider, streaming=True):
                events = sse_data(response.content.iter_any())
                async for data in events:
                    if data.startswith(_DONE):
                        break
                    yield data
                # Read to the end, as the SDK does, so the connection goes back to the pool.
                async for _ in events:
                    pass

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


async def _raise_for_status(response: aiohttp.ClientResponse, provider: str) -> None:
    if response.status < 400:
        return
    text = (await _read_at_most(response.content, MAX_ERROR_BYTES)).decode("utf-8", "replace")
    error = _error_object(text)
    message = error.get("message")
    code = error.get("code")
    raise error_for_status(
        response.status,
        message if isinstance(message, str) and message else text[:500] or response.reason or "",
        provider=provider,
        retry_after=parse_retry_after(response.headers.get("retry-after")),
        code=code if isinstance(code, str) else None,
    )


async def _read_at_most(content: aiohttp.StreamReader, limit: int) -> bytes:
    """The body up to ``limit`` bytes, however many pieces it comes in (``read(n)`` returns
    after the first)."""
    received = bytearray()
    async for chunk in content.iter_any():
        received += chunk
        if len(received) >= limit:
            break
    return bytes(received[:limit])


def _error_object(text: str) -> dict[str, Any]:
    """``{"error": {...}}`` as OpenAI sends it, or a bare object as some servers do."""
    try:
        document = orjson.loads(text)
    except orjson.JSONDecodeError:
        return {}
    if not isinstance(document, dict):
        return {}
    inner = document.get("error")
    if isinstance(inner, dict):
        return inner
    return document


@contextmanager
def _mapped_errors(provider: str, *, streaming: bool) -> Iterator[None]:
    """aiohttp's failures as the gateway's, told apart by exception class."""
    try:
        yield
    except GatewayError:
        raise
    except TimeoutError as exc:  # aiohttp's connect and read timeouts are TimeoutErrors
        what = "stopped sending mid-stream" if streaming else "did not answer in time"
        raise UpstreamTimeout(f"{provider} {what}", provider=provider) from exc
    except aiohttp.ClientError as exc:
        message = f"{provider}'s stream broke" if streaming else f"cannot reach {provider}"
        raise UpstreamConnectionError(f"{message}: {exc}", provider=provider) from exc

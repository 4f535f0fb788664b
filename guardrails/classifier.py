"""An external classifier for injected instructions, asked over HTTP about each tool result the
injection detector runs on: the hook for a model-based detector beside the heuristic.

The service gets ``POST {url}`` with ``{"text": ..., "server": ..., "tool": ...}`` (the text cut
to ``max_chars``) and answers ``{"injection": true|false, "spans": [[start, end], ...]}``
(spans optional: without them the whole text is the finding). Its findings are the
``injection`` detector's, kind ``classifier``, under that detector's action for the tool. A
classifier that fails or is slow (``timeout_seconds``) adds nothing and is logged: the
heuristic still runs (fail-open, so a classifier outage never stops tool calls).
"""

from __future__ import annotations

from typing import Any

import httpx
import structlog
from pydantic import BaseModel, ConfigDict, Field, HttpUrl

from guardrails.findings import Detector, Finding

log = structlog.get_logger("guardrails.classifier")


class ClassifierSettings(BaseModel):
    """The `guardrails.classifier` section (unset: no classifier)."""

    model_config = ConfigDict(extra="forbid")

    url: HttpUrl
    timeout_seconds: float = Field(2.0, gt=0, le=30)
    max_chars: int = Field(16384, ge=256, le=1_048_576, description="characters sent per text")


class HttpClassifier:
    def __init__(self, settings: ClassifierSettings, client: httpx.AsyncClient) -> None:
        self._url = str(settings.url)
        self._timeout = settings.timeout_seconds
        self._max_chars = settings.max_chars
        self._client = client

    async def findings(self, text: str, server: str, tool: str) -> tuple[Finding, ...]:
        sent = text[: self._max_chars]
        try:
            response = await self._client.post(
                self._url,
                json={"text": sent, "server": server, "tool": tool},
                timeout=self._timeout,
            )
            response.raise_for_status()
            answer = response.json()
        except (httpx.HTTPError, ValueError) as exc:
            log.warning("injection_classifier_failed", error=type(exc).__name__, tool=tool)
            return ()
        return _findings(answer, len(sent))

    async def aclose(self) -> None:
        await self._client.aclose()


def _findings(answer: Any, size: int) -> tuple[Finding, ...]:
    if not isinstance(answer, dict) or answer.get("injection") is not True:
        return ()
    spans = answer.get("spans")
    if not isinstance(spans, list) or not spans:
        return (Finding(Detector.INJECTION, "classifier", "", 0, size),)
    found = []
    for span in spans:
        if (
            isinstance(span, list)
            and len(span) == 2
            and all(isinstance(n, int) for n in span)
            and 0 <= span[0] < span[1] <= size
        ):
            found.append(Finding(Detector.INJECTION, "classifier", "", span[0], span[1]))
    return tuple(found) or (Finding(Detector.INJECTION, "classifier", "", 0, size),)

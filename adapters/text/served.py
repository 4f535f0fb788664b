"""What an OpenAI-compatible server says about the model it serves, for ``tool_format: auto``.

llama.cpp's ``GET /props`` shows the chat template (and the model file); vLLM's
``GET /v1/models`` names the model a served alias stands for (``root``). Both are read once, on
the model's first request; a server that has neither, refuses, or does not answer in time
leaves the choice to the configured names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson

PROBE_SECONDS = 2.0


@dataclass(frozen=True)
class ServedModel:
    names: tuple[str, ...] = ()
    template: str | None = None


async def served_model(base_url: str, model: str | None, api_key: str | None = None) -> ServedModel:
    base = base_url.rstrip("/")
    root = base.removesuffix("/v1")
    timeout = aiohttp.ClientTimeout(total=PROBE_SECONDS)
    headers = {"accept": "application/json"}
    if api_key:
        headers["authorization"] = f"Bearer {api_key}"  # as the chat requests send it
    async with aiohttp.ClientSession(timeout=timeout, headers=headers) as session:
        props = await _get_json(session, f"{root}/props")
        models = await _get_json(session, f"{base}/models")
    names = [*_props_names(props), *_model_names(models, model)]
    template = props.get("chat_template") if isinstance(props, dict) else None
    return ServedModel(
        tuple(dict.fromkeys(n for n in names if n)),
        template if isinstance(template, str) and template else None,
    )


async def _get_json(session: aiohttp.ClientSession, url: str) -> Any:
    try:
        async with session.get(url) as response:
            if response.status != 200:
                return None
            return orjson.loads(await response.read())
    except (aiohttp.ClientError, TimeoutError, orjson.JSONDecodeError):
        return None


def _props_names(props: Any) -> list[str]:
    if not isinstance(props, dict):
        return []
    return [v for k in ("model_alias", "model_path") if isinstance(v := props.get(k), str)]


def _model_names(models: Any, model: str | None) -> list[str]:
    """The served entry for ``model`` (or the only one): its id and, on vLLM, its root."""
    entries = models.get("data") if isinstance(models, dict) else None
    if not isinstance(entries, list):
        return []
    entries = [e for e in entries if isinstance(e, dict)]
    chosen = [e for e in entries if e.get("id") == model] or (entries if len(entries) == 1 else [])
    return [v for e in chosen for k in ("root", "id") if isinstance(v := e.get(k), str)]

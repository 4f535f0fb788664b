"""Turning what a tool returned into text a model can read, capped in size."""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

import mcp_types as types

from mcp_client.types import ToolImage, ToolResult

# Images kept whole per result, and the largest one (Anthropic's limit per image); others stay
# described in the text only. A tool cannot make a conversation grow past these.
MAX_IMAGES = 8
MAX_IMAGE_BYTES = 5 * 1024 * 1024


def error_result(message: str) -> ToolResult:
    return ToolResult(content=message, is_error=True)


def lost_result(message: str) -> ToolResult:
    """The connection died while the call was out: it may have run, so it is never reported as
    a plain failure (which says it did not, and invites running it again)."""
    return ToolResult(content=message, is_error=True, outcome_unknown=True)


def truncate(result: ToolResult, max_chars: int) -> ToolResult:
    """Cut the text to ``max_chars`` and say so, so the model knows it saw only part."""
    text = result.content
    if len(text) <= max_chars:
        return result
    marker = f"\n[truncated: showing {max_chars} of {len(text)} characters]"
    return ToolResult(
        content=text[:max_chars] + marker,
        is_error=result.is_error,
        structured=None,  # a cut-down structure would be misleading; the text says what is left
        truncated=True,
        timed_out=result.timed_out,
        outcome_unknown=result.outcome_unknown,
        images=result.images,
    )


def from_call_result(result: types.CallToolResult) -> ToolResult:
    parts = [describe_content(block) for block in result.content]
    structured = result.structured_content
    if structured is not None and not any(isinstance(b, types.TextContent) for b in result.content):
        parts.append(json.dumps(structured, ensure_ascii=False, default=str))
    text = "\n".join(parts) if parts else ("(the tool returned no content)")
    return ToolResult(
        content=text,
        is_error=bool(result.is_error),
        structured=structured,
        images=_images(result.content),
    )


def _images(blocks: list[types.ContentBlock]) -> tuple[ToolImage, ...]:
    """Image content and embedded image resources, whole, within the limits."""
    images: list[ToolImage] = []
    for block in blocks:
        image = _image(block)
        if image is not None and _decoded_size(image.data) <= MAX_IMAGE_BYTES:
            images.append(image)
    return tuple(images[:MAX_IMAGES])


def _image(block: types.ContentBlock) -> ToolImage | None:
    if isinstance(block, types.ImageContent):
        return ToolImage(block.mime_type, block.data)
    if isinstance(block, types.EmbeddedResource) and isinstance(
        block.resource, types.BlobResourceContents
    ):
        mime = block.resource.mime_type or ""
        if mime.startswith("image/"):
            return ToolImage(mime, block.resource.blob)
    return None


def describe_content(block: types.ContentBlock) -> str:
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.ImageContent | types.AudioContent):
        kind = "image" if isinstance(block, types.ImageContent) else "audio"
        return f"[{kind}: {block.mime_type}, {_decoded_size(block.data)} bytes]"
    if isinstance(block, types.ResourceLink):
        about = f" - {block.description}" if block.description else ""
        return f"[resource link: {block.name} <{block.uri}>{about}]"
    if isinstance(block, types.EmbeddedResource):
        return _describe_resource(block.resource)
    return f"[unsupported content: {_content_type(block)}]"


def _describe_resource(resource: types.TextResourceContents | types.BlobResourceContents) -> str:
    if isinstance(resource, types.TextResourceContents):
        return f"[resource <{resource.uri}>]\n{resource.text}"
    mime = resource.mime_type or "application/octet-stream"
    return f"[resource <{resource.uri}>: {mime}, {_decoded_size(resource.blob)} bytes]"


def _decoded_size(data: str) -> int:
    try:
        return len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        return len(data)


def _content_type(block: Any) -> str:
    return str(getattr(block, "type", type(block).__name__))

"""Every MCP content kind becomes text a model can read."""

from __future__ import annotations

import base64

import mcp_types as types

from mcp_client.results import MAX_IMAGE_BYTES, MAX_IMAGES, from_call_result, truncate
from mcp_client.types import ToolResult


def test_blobs_links_audio_and_structured_content_are_described() -> None:
    result = from_call_result(
        types.CallToolResult(
            content=[
                types.AudioContent(
                    type="audio", data=base64.b64encode(b"abc").decode(), mime_type="audio/wav"
                ),
                types.ResourceLink(
                    type="resource_link", name="report", uri="file:///r.pdf", description="Q3"
                ),
                types.EmbeddedResource(
                    type="resource",
                    resource=types.BlobResourceContents(
                        uri="file:///b.bin", blob=base64.b64encode(b"12345").decode()
                    ),
                ),
            ],
            structured_content={"total": 3},
            is_error=False,
        )
    )
    assert result.content.splitlines() == [
        "[audio: audio/wav, 3 bytes]",
        "[resource link: report <file:///r.pdf> - Q3]",
        "[resource <file:///b.bin>: application/octet-stream, 5 bytes]",
        '{"total": 3}',
    ]
    assert result.structured == {"total": 3}


def test_an_empty_error_result_still_says_something() -> None:
    result = from_call_result(types.CallToolResult(content=[], is_error=True))
    assert result.is_error
    assert result.content == "(the tool returned no content)"


def test_short_results_are_untouched_and_long_ones_marked() -> None:
    short = ToolResult(content="fine")
    assert truncate(short, 100) is short
    cut = truncate(ToolResult(content="y" * 250, structured={"a": 1}), 200)
    assert cut.truncated
    assert cut.structured is None
    assert cut.content == "y" * 200 + "\n[truncated: showing 200 of 250 characters]"


def test_images_and_image_resources_come_whole_within_the_limits() -> None:
    png = base64.b64encode(b"\x89PNG").decode()
    huge = base64.b64encode(b"x" * (MAX_IMAGE_BYTES + 1)).decode()
    result = from_call_result(
        types.CallToolResult(
            content=[
                types.ImageContent(type="image", data=png, mime_type="image/png"),
                types.EmbeddedResource(
                    type="resource",
                    resource=types.BlobResourceContents(
                        uri="file:///c.jpg", blob=png, mime_type="image/jpeg"
                    ),
                ),
                types.EmbeddedResource(
                    type="resource",
                    resource=types.BlobResourceContents(
                        uri="file:///d.pdf", blob=png, mime_type="application/pdf"
                    ),
                ),
                types.ImageContent(type="image", data=huge, mime_type="image/png"),
                *[
                    types.ImageContent(type="image", data=png, mime_type="image/gif")
                    for _ in range(MAX_IMAGES)
                ],
            ],
            is_error=False,
        )
    )

    assert [i.mime_type for i in result.images[:2]] == ["image/png", "image/jpeg"]
    assert len(result.images) == MAX_IMAGES  # the oversized one and the surplus stay text
    assert result.images[0].data_url == f"data:image/png;base64,{png}"
    assert "[resource <file:///d.pdf>: application/pdf, 4 bytes]" in result.content
    assert truncate(result, 5).images == result.images

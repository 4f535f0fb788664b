"""URL prefixes are compared on the parts a request goes to, never as text."""

from __future__ import annotations

import pytest

from mcp_client.url_prefixes import BadURL, allowed, parse

PREFIXES = [
    parse("https://tools.example.com"),
    parse("http://127.0.0.1:9000/mcp/"),
    parse("http://[::1]:8080/team-a"),
]


@pytest.mark.parametrize(
    "url",
    [
        "https://tools.example.com/mcp",
        "HTTPS://Tools.Example.COM:443/sse",  # scheme and host case, the default port
        "https://tools.example.com./mcp",  # the fully qualified form of the same name
        "http://127.0.0.1:9000/mcp",
        "http://127.0.0.1:9000/mcp/",
        "http://127.0.0.1:9000/mcp/v2?session=1",
        "http://[0:0:0:0:0:0:0:1]:8080/team-a/mcp",  # another spelling of ::1
    ],
)
def test_urls_under_a_prefix_are_allowed(url: str) -> None:
    assert allowed(url, PREFIXES)


@pytest.mark.parametrize(
    "url",
    [
        "https://tools.example.com.evil.net/mcp",
        "https://eviltools.example.com/mcp",
        "http://tools.example.com/mcp",  # another scheme
        "https://tools.example.com:8443/mcp",  # another port
        "http://127.0.0.1:9000/mcpx",  # a path prefix is whole segments
        "http://127.0.0.1:9000/",
        "http://127.0.0.1:9000/mcp/../admin",  # httpx sends /admin
        "http://127.0.0.2:9000/mcp",
        "http://localhost:9000/mcp",  # names are not resolved: only what is listed
        "http://[::1]:8080/team-b",
    ],
)
def test_urls_outside_every_prefix_are_refused(url: str) -> None:
    assert not allowed(url, PREFIXES)


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("https://tools.example.com@169.254.169.254/", "user name or password"),
        ("https://tools.example.com\\@169.254.169.254/", "user name or password"),
        ("http://127.0.0.1:9000/mcp/%2e%2e/admin", "encoded"),
        ("http://127.0.0.1:9000/mcp%2Fadmin", "encoded"),
        ("file:///etc/passwd", "scheme"),
        ("http:///mcp", "no host"),
        ("http://127.0.0.1:port/", "not a valid URL"),
        ("http://xn--a.xn--/mcp", "not a valid URL"),  # malformed IDNA: the codec refuses it
        ("http://xn--.example.com/mcp", "not a valid URL"),
    ],
)
def test_urls_two_readers_could_disagree_on_are_refused(url: str, why: str) -> None:
    with pytest.raises(BadURL, match=why):
        allowed(url, PREFIXES)


def test_no_prefixes_allow_nothing() -> None:
    assert not allowed("https://tools.example.com/mcp", [])

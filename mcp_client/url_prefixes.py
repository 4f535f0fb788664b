"""Matching tool server URLs against allowed prefixes (``tool_catalog.http_allow_list``).

A prefix is an origin (scheme, host, port) and optionally a path: ``https://tools.example.com``
or ``http://127.0.0.1:9000/mcp``. Both sides are parsed by httpx, the library that later makes
the requests, so the check reads a URL exactly as the client will. The comparison is on parts,
never on text: ``http://good.example.com.evil.net`` is not under ``http://good.example.com``,
``http://good.example.com@evil.net`` goes to ``evil.net``, and a path prefix ``/mcp`` covers
``/mcp`` and ``/mcp/...`` but not ``/mcpx``.

Anything that could make two readers disagree on where a request goes is refused rather than
normalised: user info, ``.``/``..`` path segments, and percent-encoded ``/``, ``\\`` or ``.``.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass

import httpx

_DEFAULT_PORTS = {"http": 80, "https": 443}
_ENCODED_SEPARATOR = re.compile(r"%(2f|5c|2e)", re.IGNORECASE)


class BadURL(ValueError):
    """The URL cannot be compared safely; the message says why."""


@dataclass(frozen=True, slots=True)
class URLPrefix:
    scheme: str
    host: str
    port: int
    segments: tuple[str, ...]

    def covers(self, other: URLPrefix) -> bool:
        return (self.scheme, self.host, self.port) == (
            other.scheme,
            other.host,
            other.port,
        ) and other.segments[: len(self.segments)] == self.segments


def parse(url: str) -> URLPrefix:
    """The comparable parts of an absolute http(s) URL; ``BadURL`` when it has none."""
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError, UnicodeError) as exc:
        # UnicodeError: the idna codec refuses a malformed host (an `xn--` label that is not
        # Punycode) with its own error type, not httpx's.
        raise BadURL(f"not a valid URL ({exc})") from None
    if parsed.scheme not in _DEFAULT_PORTS:
        raise BadURL("the scheme must be http or https")
    if not parsed.raw_host:
        raise BadURL("the URL has no host")
    try:
        parsed.host  # noqa: B018  decodes the IDNA form, which a malformed `xn--` label fails
    except UnicodeError:
        raise BadURL("not a valid URL (the host is not a valid domain name)") from None
    if parsed.userinfo:
        raise BadURL("the URL must not carry a user name or password")
    raw_path = parsed.raw_path.decode("ascii").split("?", 1)[0]
    if _ENCODED_SEPARATOR.search(raw_path) or "\\" in parsed.path:
        raise BadURL("the path must not hold encoded `/`, `\\` or `.`")
    segments = tuple(segment for segment in parsed.path.split("/") if segment)
    if any(segment in {".", ".."} for segment in segments):
        raise BadURL("the path must not hold `.` or `..` segments")
    return URLPrefix(
        scheme=parsed.scheme,
        host=_host(parsed),
        port=parsed.port or _DEFAULT_PORTS[parsed.scheme],
        segments=segments,
    )


def _host(parsed: httpx.URL) -> str:
    # raw_host is the IDNA (ASCII) form; a trailing dot names the same DNS host.
    host = parsed.raw_host.decode("ascii").lower().rstrip(".")
    try:
        return ipaddress.ip_address(host).compressed
    except ValueError:
        return host


def allowed(url: str, prefixes: Iterable[URLPrefix]) -> bool:
    """Whether ``url`` lies under one of ``prefixes``; raises ``BadURL`` when it is unreadable."""
    target = parse(url)
    return any(prefix.covers(target) for prefix in prefixes)

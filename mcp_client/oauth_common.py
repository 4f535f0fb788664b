"""What every OAuth flow of ours needs: secrets from named variables, refusals in one line."""

from __future__ import annotations

from collections.abc import Mapping

import httpx2

from mcp_client.backend import BackendUnavailable


def secret_of(environ: Mapping[str, str], variable: str, what: str) -> str:
    value = environ.get(variable)
    if not value:
        raise BackendUnavailable(f"environment variable {variable} ({what}) is not set")
    return value


def oauth_error(response: httpx2.Response) -> str:
    """An authorization server's refusal in one line: its ``error`` code and description (RFC
    6749 5.2), never the rest of the body."""
    try:
        body = response.json()
    except ValueError:
        body = None
    code = body.get("error") if isinstance(body, dict) else None
    if not isinstance(code, str):
        return f"HTTP {response.status_code}"
    description = body.get("error_description") if isinstance(body, dict) else None
    text = f"{code} (HTTP {response.status_code})"
    return f"{text}: {description}" if isinstance(description, str) and description else text

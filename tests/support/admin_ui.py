"""Driving the admin web UI over plain HTTP: sign in, read a page's CSRF token."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

import httpx

CSRF_FIELD = re.compile(r'name="csrf_token" value="([^"]+)"')


def csrf_token(html: str) -> str:
    match = CSRF_FIELD.search(html)
    assert match, "the page has no CSRF field"
    return match.group(1)


def sign_in(
    client: httpx.Client, key: str, headers: dict[str, str] | None = None
) -> httpx.Response:
    """Posts the sign-in form the way a browser would (its cookie and hidden token);
    ``headers``: what a proxy in front adds (X-Forwarded-For...)."""
    form = client.get("/admin/login", headers=headers)
    data = {"api_key": key, "csrf_token": csrf_token(form.text)}
    return client.post("/admin/login", data=data, headers=headers)


@contextmanager
def signed_in_client(base_url: str, key: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=base_url, timeout=30) as client:
        response = sign_in(client, key)
        assert response.status_code == 303, response.text
        yield client

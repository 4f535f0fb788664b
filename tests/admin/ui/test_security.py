"""Cookie attributes over TLS, and admin sessions' expiry by their own clock."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from starlette.requests import Request
from starlette.responses import Response

from accounts.keys import KeyStore
from admin.ui.security import SESSION_COOKIE, set_cookie
from admin.ui.sessions import AdminSessions
from db.engine import create_engine, session_factory
from migrations.commands import upgrade


def request_over(scheme: str) -> Request:
    return Request(
        {"type": "http", "scheme": scheme, "headers": [], "path": "/", "server": ("gw", 443)}
    )


def test_over_tls_the_cookie_is_host_prefixed_and_secure() -> None:
    response = Response()
    set_cookie(request_over("https"), response, SESSION_COOKIE, "token", 60)
    cookie = response.headers["set-cookie"]
    assert cookie.startswith("__Host-gw_admin_session=token")
    assert "Secure" in cookie
    assert "HttpOnly" in cookie
    assert "SameSite=strict" in cookie
    assert "Path=/" in cookie
    assert "Domain" not in cookie


def test_a_session_ends_when_its_lifetime_is_over(database_url: str) -> None:
    upgrade(database_url)
    asyncio.run(check_lifetime(database_url))


async def check_lifetime(database_url: str) -> None:
    engine = create_engine(database_url)
    try:
        sessions = session_factory(engine)
        _, info = await KeyStore(sessions, 0).create("admin", ["admin"])
        now = datetime(2026, 1, 1, tzinfo=UTC)
        clock = [now]
        store = AdminSessions(sessions, 60, clock=lambda: clock[0])
        token = await store.open(info.id, "127.0.0.1")
        found = await store.find(token)
        assert found is not None
        assert found.key_name == "admin"
        clock[0] = now + timedelta(seconds=59)
        assert await store.find(token) is not None
        clock[0] = now + timedelta(seconds=60)
        assert await store.find(token) is None
        assert await store.find("not-a-token") is None
    finally:
        await engine.dispose()

"""Every route with a path parameter, API and admin UI, given what the database or the router may
choke on (NUL, overlong, non-UTF-8, numbers past 64 bits, `..`, an encoded `/`, line breaks,
anything hypothesis makes up), on SQLite and PostgreSQL: never a 5xx, never a traceback or the
database's words, and on `/v1` an OpenAI-style error body.

Requests carry an admin key, and on the admin UI's forms a signed-in session and its CSRF token,
so each one reaches its handler rather than stopping at authentication.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.routing import Route

from gateway.hot_routes import flat_routes
from server.app import create_app
from tests.support.admin_ui import csrf_token, sign_in
from tests.support.databases import fresh_database
from tests.support.gateway import RunningGateway, running_gateway

# What a database driver, SQLAlchemy or a traceback would put in a body.
LEAKS = re.compile(
    r"Traceback|sqlalchemy|asyncpg|aiosqlite|sqlite3|psycopg|OperationalError|IntegrityError|"
    r"DataError|ProgrammingError|character varying|invalid input syntax|out of range|"
    r"violates|\[SQL:|SELECT |INSERT INTO|UPDATE \w+ SET|DELETE FROM",
)
# Percent-encoded as they go on the wire.
HOSTILE = (
    "%00",
    "a%00b",
    "x" * 5000,
    "%C3%A9%F0%9F%98%80",  # é and an emoji
    "%E2%80%AE",  # a right-to-left override
    "%FF%FE",  # not UTF-8
    "%ED%A0%80",  # an encoded surrogate
    "%2e%2e",
    "..%2F..%2Fetc%2Fpasswd",
    "%2F",
    "a%0D%0ASet-Cookie:%20x=1",
    "%20",
    "-1",
    "0",
    "99999999999999999999999",
    "1e309",
    "%27%3B%20DROP%20TABLE%20api_keys%3B--",
)
# Sent byte for byte (httpx would resolve `..` itself).
RAW = (b"..", b".", b"\xc3\xa9", b"%")


@dataclass
class Fuzzed:
    gateway: RunningGateway
    admin_key: str
    session: httpx.Client  # signed in to the admin UI
    csrf: str

    def send(self, method: str, path: str) -> httpx.Response:
        headers = {"authorization": f"Bearer {self.admin_key}"}
        if path.startswith("/admin/"):
            return self.session.request(
                method, path, headers=headers, data={"csrf_token": self.csrf}
            )
        return self.session.request(method, path, headers=headers, json={})


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def fuzzed(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Fuzzed]:
    directory = tmp_path_factory.mktemp("db")
    with (
        fresh_database(request.param, directory) as database_url,
        running_gateway(database_url, models=[{"name": "mock", "provider": "mock"}]) as gateway,
    ):
        admin_key = gateway.create_key("fuzz-admin", ["admin"])
        with httpx.Client(base_url=gateway.url, timeout=30) as session:
            assert sign_in(session, admin_key).status_code == 303
            csrf = csrf_token(session.get("/admin").text)
            yield Fuzzed(gateway, admin_key, session, csrf)


def templated_routes(gateway: RunningGateway) -> list[tuple[str, str]]:
    """(method, path template) of every route with a path parameter, read from an app built
    from the same settings (building one starts nothing)."""
    app = create_app(gateway.settings, {})
    found = []
    for route in flat_routes(app.router.routes):
        if isinstance(route, Route) and "{" in route.path:
            found.extend((method, route.path) for method in sorted(route.methods or ()))
    return found


def filled(template: str, value: str) -> str:
    return re.sub(r"\{[^}]+\}", lambda _: value, template)


def assert_clean(response: httpx.Response, method: str, path: str) -> None:
    where = f"{method} {path[:200]}"
    assert response.status_code < 500, (where, response.status_code, response.text[:500])
    assert not LEAKS.search(response.text), (where, response.text[:500])
    shaped = response.headers.get("content-type", "").startswith("application/json")
    if path.startswith("/v1/") and response.status_code >= 400 and shaped:
        assert "error" in response.json(), (where, response.text[:500])


def test_hostile_path_parameters_on_every_route(fuzzed: Fuzzed) -> None:
    routes = templated_routes(fuzzed.gateway)
    assert len(routes) >= 30
    for method, template in routes:
        for value in HOSTILE:
            path = filled(template, value)
            assert_clean(fuzzed.send(method, path), method, path)


def raw_request(url: str, method: str, path: bytes, key: str) -> tuple[int, str]:
    """One HTTP/1.1 request written byte for byte: the path exactly as given."""
    parts = urlsplit(url)
    head = (
        f"{method} ".encode()
        + path
        + f" HTTP/1.1\r\nHost: {parts.netloc}\r\nAuthorization: Bearer {key}\r\n".encode()
        + b"Content-Length: 0\r\nConnection: close\r\n\r\n"
    )
    with socket.create_connection((parts.hostname or "", parts.port or 80), timeout=30) as sock:
        sock.sendall(head)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    status_line, _, rest = answer.partition(b"\r\n")
    return int(status_line.split()[1]), rest.decode("utf-8", "replace")


def test_raw_path_segments_on_every_route(fuzzed: Fuzzed) -> None:
    for method, template in templated_routes(fuzzed.gateway):
        for value in RAW:
            path = filled(template, "\x00").encode("ascii").replace(b"\x00", value)
            status, body = raw_request(fuzzed.gateway.url, method, path, fuzzed.admin_key)
            where = f"{method} {path!r}"
            assert status < 500, (where, status, body[:500])
            assert not LEAKS.search(body), (where, body[:500])


def test_made_up_path_parameters_on_every_route(fuzzed: Fuzzed) -> None:
    routes = templated_routes(fuzzed.gateway)

    @given(route=st.sampled_from(routes), value=st.text(max_size=300))
    @settings(
        max_examples=150,
        deadline=None,
        derandomize=True,  # the same cases every run: `make test` must not flake
        suppress_health_check=list(HealthCheck),
    )
    def exercise(route: tuple[str, str], value: str) -> None:
        method, template = route
        path = filled(template, quote(value, safe=""))
        assert_clean(fuzzed.send(method, path), method, path)

    exercise()

"""Sign-in throttling per client address and per key prefix, and whose X-Forwarded-For names the
client (``forwarded_allow_ips``): an attacker cannot lock other admins out, nor get a fresh
bucket by writing the header itself.

A limit's window is the clock's minute, which may turn during a test: each check makes more than
twice a limit's attempts, so one window always holds more than the limit."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from tests.support.admin_ui import sign_in
from tests.support.gateway import RunningGateway, running_gateway


@contextmanager
def gateway_with(tmp_path: Path, **settings: Any) -> Iterator[tuple[RunningGateway, str, str]]:
    """A gateway on SQLite with two admins' keys."""
    with running_gateway(f"sqlite+aiosqlite:///{tmp_path / 'gw.db'}", **settings) as gateway:
        yield gateway, gateway.create_key("ops", ["admin"]), gateway.create_key("ops-2", ["admin"])


def from_address(address: str) -> dict[str, str]:
    return {"x-forwarded-for": address}


def refusals(gateway: RunningGateway, key: str) -> list[dict[str, Any]]:
    headers = {"authorization": f"Bearer {key}"}
    params = {"action": "admin.sign_in_refused", "limit": 200}
    with httpx.Client(base_url=gateway.v1, headers=headers) as api:
        events: list[dict[str, Any]] = api.get("/admin/audit", params=params).json()["data"]
    return [event["detail"] for event in events]


def test_one_address_is_throttled(tmp_path: Path) -> None:
    limits = {"sign_in_attempts_per_client": 3, "sign_in_attempts_per_key": 100}
    with (
        gateway_with(tmp_path, admin_ui=limits) as (gateway, admin_key, _),
        httpx.Client(base_url=gateway.url) as client,
    ):
        answers = [sign_in(client, f"gw-guess{n}") for n in range(7)]
        audited = refusals(gateway, admin_key)

    throttled = [answer for answer in answers if answer.status_code == 429]
    assert throttled
    assert 1 <= int(throttled[0].headers["retry-after"]) <= 60
    assert "Too many sign-in attempts" in throttled[0].text
    assert [event["reason"] for event in audited].count("throttled") == len(throttled)


def test_a_forwarded_for_written_by_the_client_gets_no_fresh_bucket(tmp_path: Path) -> None:
    # No proxy is trusted (the default): the header is the client's own word.
    limits = {"sign_in_attempts_per_client": 3, "sign_in_attempts_per_key": 100}
    with (
        gateway_with(tmp_path, admin_ui=limits) as (gateway, admin_key, _),
        httpx.Client(base_url=gateway.url) as client,
    ):
        answers = [
            sign_in(client, f"gw-guess{n}", from_address(f"198.51.100.{n}")) for n in range(7)
        ]
        audited = refusals(gateway, admin_key)

    assert 429 in [answer.status_code for answer in answers]
    assert {event["client"] for event in audited} == {"127.0.0.1"}


def test_attempts_from_rotating_addresses_lock_no_other_admin_out(tmp_path: Path) -> None:
    # Behind a trusted proxy, every attempt from another address, under the default limits.
    settings: dict[str, Any] = {"admin_ui": {}, "forwarded_allow_ips": ["127.0.0.1"]}
    with (
        gateway_with(tmp_path, **settings) as (gateway, admin_key, _),
        httpx.Client(base_url=gateway.url) as attacker,
        httpx.Client(base_url=gateway.url) as admin,
    ):
        for n in range(120):
            guess = f"gw-{secrets.token_urlsafe(32)}"
            assert sign_in(attacker, guess, from_address(f"203.0.113.{n}")).status_code == 401
        signed_in = sign_in(admin, admin_key, from_address("192.0.2.10"))
        audited = refusals(gateway, admin_key)

    assert signed_in.status_code == 303, signed_in.text
    assert {event["client"] for event in audited} == {f"203.0.113.{n}" for n in range(120)}


def test_guessing_one_key_from_many_addresses_is_braked_for_that_key_only(
    tmp_path: Path,
) -> None:
    limits = {"sign_in_attempts_per_client": 100, "sign_in_attempts_per_key": 3}
    settings = {"admin_ui": limits, "forwarded_allow_ips": ["127.0.0.1"]}
    with (
        gateway_with(tmp_path, **settings) as (gateway, admin_key, other_key),
        httpx.Client(base_url=gateway.url) as attacker,
        httpx.Client(base_url=gateway.url) as other_admin,
    ):
        # The first characters of a key are public (lists show them); the rest is guessed.
        guesses = [admin_key[:9] + secrets.token_urlsafe(32)[:34] for _ in range(7)]
        answers = [
            sign_in(attacker, guess, from_address(f"203.0.113.{n}"))
            for n, guess in enumerate(guesses)
        ]
        other = sign_in(other_admin, other_key, from_address("203.0.113.200"))

    assert 429 in [answer.status_code for answer in answers]
    assert other.status_code == 303, other.text


def test_the_client_is_the_rightmost_address_no_trusted_proxy_added(tmp_path: Path) -> None:
    # The client wrote the first address itself; the load balancer (10.1.2.3) added its own.
    chain = {"x-forwarded-for": "198.51.100.1, 203.0.113.7, 10.1.2.3"}
    settings = {"forwarded_allow_ips": ["127.0.0.1", "10.0.0.0/8"]}
    with (
        gateway_with(tmp_path, **settings) as (gateway, admin_key, _),
        httpx.Client(base_url=gateway.url) as client,
    ):
        refused = sign_in(client, "gw-guess", chain)
        # The proxy terminated TLS: the cookies are the Secure, __Host- ones.
        form = client.get("/admin/login", headers={"x-forwarded-proto": "https"})
        audited = refusals(gateway, admin_key)

    assert refused.status_code == 401
    assert audited[0]["client"] == "203.0.113.7"
    cookie = form.headers["set-cookie"]
    assert cookie.startswith("__Host-gw_admin_login=")
    assert "secure" in cookie.lower()


def test_forwarded_headers_from_a_peer_not_configured_are_ignored(tmp_path: Path) -> None:
    with (
        gateway_with(tmp_path, forwarded_allow_ips=["10.0.0.0/8"]) as (gateway, admin_key, _),
        httpx.Client(base_url=gateway.url) as client,
    ):
        sign_in(client, "gw-guess", from_address("203.0.113.7"))
        form = client.get("/admin/login", headers={"x-forwarded-proto": "https"})
        audited = refusals(gateway, admin_key)

    assert audited[0]["client"] == "127.0.0.1"
    assert form.headers["set-cookie"].startswith("gw_admin_login=")

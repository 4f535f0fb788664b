"""Signing in to the admin UI: cookies, CSRF, headers, expiry, revocation."""

from __future__ import annotations

import asyncio

import httpx
from sqlalchemy import update

from db.base import utcnow
from db.engine import create_engine, session_factory
from db.models import AdminSession
from tests.support.admin_ui import csrf_token, sign_in, signed_in_client
from tests.support.tool_loop import LoopStack


def expire_sessions(database_url: str) -> None:
    async def run() -> None:
        engine = create_engine(database_url)
        try:
            async with session_factory(engine).begin() as session:
                await session.execute(update(AdminSession).values(expires_at=utcnow()))
        finally:
            await engine.dispose()

    asyncio.run(run())


def test_pages_carry_a_strict_csp_and_refuse_framing(ui_stack: LoopStack) -> None:
    with httpx.Client(base_url=ui_stack.gateway.url) as client:
        page = client.get("/admin/login")
    assert page.status_code == 200
    csp = page.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in csp
    assert "script-src 'self'" in csp
    assert "unsafe-inline" not in csp
    assert page.headers["x-frame-options"] == "DENY"
    assert "<script>" not in page.text
    assert " style=" not in page.text


def test_an_admin_key_signs_in_with_a_strict_httponly_cookie(ui_stack: LoopStack) -> None:
    with httpx.Client(base_url=ui_stack.gateway.url) as client:
        response = sign_in(client, ui_stack.admin_key)
        assert response.status_code == 303
        assert response.headers["location"] == "/admin"
        cookie = next(
            h for h in response.headers.get_list("set-cookie") if h.startswith("gw_admin_session=")
        ).lower()
        assert "httponly" in cookie
        assert "samesite=strict" in cookie
        assert "secure" not in cookie  # plain HTTP here; over TLS it is __Host- and Secure
        queue = client.get("/admin")
    assert queue.status_code == 200
    assert "Approval queue" in queue.text
    assert "reviewer" in queue.text


def test_pages_without_a_session_redirect_to_sign_in(ui_stack: LoopStack) -> None:
    with httpx.Client(base_url=ui_stack.gateway.url) as client:
        pages = ["/admin", "/admin/keys", "/admin/audit", "/admin/usage", "/admin/tools"]
        for path in [*pages, "/admin/reviews", "/admin/servers"]:
            response = client.get(path)
            assert response.status_code == 303, path
            assert response.headers["location"] == "/admin/login"


def test_a_non_admin_key_cannot_sign_in(ui_stack: LoopStack) -> None:
    with httpx.Client(base_url=ui_stack.gateway.url) as client:
        refused = sign_in(client, ui_stack.user_key)
        assert refused.status_code == 403
        assert "does not have the admin role" in refused.text
        assert client.get("/admin").status_code == 303
        invalid = sign_in(client, "gw-made-up")
    assert invalid.status_code == 401


def test_sign_in_without_the_form_token_is_refused(ui_stack: LoopStack) -> None:
    with httpx.Client(base_url=ui_stack.gateway.url) as client:
        client.get("/admin/login")
        forged = [
            client.post("/admin/login", data={"api_key": ui_stack.admin_key, "csrf_token": t})
            for t in ("guess", "é")  # compared as bytes: a str compare raises on non-ASCII
        ]
    for response in forged:
        assert response.status_code == 403
        assert "gw_admin_session" not in response.headers.get("set-cookie", "")


def test_forms_without_the_session_csrf_token_are_refused(ui_stack: LoopStack) -> None:
    with signed_in_client(ui_stack.gateway.url, ui_stack.admin_key) as client:
        token = csrf_token(client.get("/admin/keys").text)
        forged = [
            client.post("/admin/keys", data={"name": "x", "roles": "admin"}),
            client.post("/admin/keys", data={"name": "x", "roles": "admin", "csrf_token": "no"}),
            client.post("/admin/keys", data={"name": "x", "roles": "admin", "csrf_token": "ü"}),
            client.post("/admin/keys/1/revoke", data={}),
            client.post("/admin/calls/any/approve", data={"csrf_token": token[:-1]}),
            client.post("/admin/calls/any/reject", data={"reason": "r"}),
            client.post("/admin/reviews/1/approve", data={"csrf_token": ""}),
            client.post("/admin/tools/get_time/policy", data={"requires_approval": "true"}),
            client.post("/admin/tools/get_time/policy/reset", data={}),
            client.post("/admin/servers", data={"name": "x", "transport": "sse"}),
            client.post("/admin/servers/x", data={"transport": "sse", "csrf_token": "no"}),
            client.post("/admin/servers/x/delete", data={}),
            client.post("/admin/logout", data={}),
        ]
        assert [r.status_code for r in forged] == [403] * len(forged)
        keys = client.get("/admin/keys").text
    assert '<td data-label="Name">x</td>' not in keys


def test_an_expired_session_sends_the_reviewer_back_to_sign_in(ui_stack: LoopStack) -> None:
    with signed_in_client(ui_stack.gateway.url, ui_stack.admin_key) as client:
        assert client.get("/admin").status_code == 200
        expire_sessions(ui_stack.gateway.database_url)
        response = client.get("/admin")
        assert response.status_code == 303
        assert response.headers["location"] == "/admin/login?expired=1"
        login = client.get(response.headers["location"])
    assert "Your session expired" in login.text


def test_signing_out_ends_the_session(ui_stack: LoopStack) -> None:
    with signed_in_client(ui_stack.gateway.url, ui_stack.admin_key) as client:
        cookie = client.cookies["gw_admin_session"]
        token = csrf_token(client.get("/admin").text)
        assert client.post("/admin/logout", data={"csrf_token": token}).status_code == 303
        client.cookies.set("gw_admin_session", cookie)  # a copied cookie is dead too
        assert client.get("/admin").status_code == 303


def test_revoking_the_key_ends_its_sessions(ui_stack: LoopStack) -> None:
    key = ui_stack.gateway.create_key("short-lived-admin", ["admin"])
    with (
        signed_in_client(ui_stack.gateway.url, key) as client,
        ui_stack.client(ui_stack.admin_key) as api,
    ):
        assert client.get("/admin").status_code == 200
        [info] = [
            k for k in api.get("/v1/admin/keys").json()["data"] if k["name"] == "short-lived-admin"
        ]
        assert api.post(f"/v1/admin/keys/{info['id']}/revoke").status_code == 200
        assert client.get("/admin").status_code == 303


def test_sign_ins_are_audited_with_their_outcome(ui_stack: LoopStack) -> None:
    with httpx.Client(base_url=ui_stack.gateway.url) as client:
        assert sign_in(client, "gw-wrong").status_code == 401
        assert sign_in(client, ui_stack.user_key).status_code == 403
        assert sign_in(client, ui_stack.admin_key).status_code == 303
    with ui_stack.client(ui_stack.admin_key) as api:
        refused = api.get("/v1/admin/audit", params={"action": "admin.sign_in_refused"}).json()
        signed = api.get("/v1/admin/audit", params={"action": "admin.signed_in"}).json()
    reasons = {event["detail"]["reason"] for event in refused["data"]}
    assert {"invalid_key", "not_admin"} <= reasons
    assert all(event["detail"]["client"] == "127.0.0.1" for event in refused["data"])
    assert any(event["actor_owner"] == "reviewer" for event in signed["data"])

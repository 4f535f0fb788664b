"""Admin sign-in with OpenID Connect against a real provider (oidc-provider on 127.0.0.1): the
authorization code flow with PKCE, groups mapped to roles, the person named in the audit log,
a person outside the admin group refused, a made-up code refused by the provider, and API-key
sign-in turned off."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from gateway.settings import ConfigError, load_settings
from server.app import create_app
from tests.support.browser import chromium, new_page, screenshot_path
from tests.support.databases import fresh_database
from tests.support.gateway import TEST_ADMIN_UI, RunningGateway, running_gateway, settings_for
from tests.support.oidc_provider import oidc_provider

ACCOUNTS = {
    "alice": {
        "email": "alice@example.com",
        "email_verified": True,
        "groups": ["gateway-admins", "staff"],
    },
    "bob": {"email": "bob@example.com", "email_verified": True, "groups": ["staff"]},
    # In the admin group, but the provider never verified the address she typed.
    "mallory": {
        "email": "alice@example.com ",
        "email_verified": False,
        "groups": ["gateway-admins"],
    },
}
SECRET = "test-client-secret"


@dataclass
class SsoStack:
    gateway: RunningGateway
    issuer: str


@contextmanager
def sso_stack(tmp_path: Path, **admin_ui: Any) -> Iterator[SsoStack]:
    with oidc_provider(ACCOUNTS) as provider, fresh_database("sqlite", tmp_path) as url:
        oidc = {
            "issuer": provider.issuer,
            "client_id": "gateway",
            "client_secret_env": "OIDC_CLIENT_SECRET",
            "roles_by_group": {"gateway-admins": ["admin"], "staff": ["user"]},
            "display_name": "Example SSO",
        }
        with running_gateway(
            url,
            environ={"OIDC_CLIENT_SECRET": SECRET},
            admin_ui={**TEST_ADMIN_UI, "oidc": oidc, **admin_ui},
        ) as gateway:
            provider.register("gateway", SECRET, f"{gateway.url}/admin/sso/callback")
            yield SsoStack(gateway, provider.issuer)


def _sign_in_as(client: httpx.Client, login: str) -> httpx.Response:
    """What a browser does: to the provider, its sign-in form, and back to the gateway."""
    form = client.get("/admin/sso/start")
    assert form.status_code == 200, form.text
    assert 'id="login"' in form.text
    return client.post(str(form.url), data={"login": login})


def test_a_person_in_the_admin_group_signs_in_and_is_named_in_the_audit(tmp_path: Path) -> None:
    with sso_stack(tmp_path) as stack:
        gateway = stack.gateway
        admin_key = gateway.create_key("ops", ["admin"])
        with httpx.Client(base_url=gateway.url, follow_redirects=True) as browser:
            login_page = browser.get("/admin/login")
            back = _sign_in_as(browser, "alice")
            queue = browser.get("/admin")
        api = httpx.Client(base_url=gateway.v1, headers={"authorization": f"Bearer {admin_key}"})
        with api:
            signed_in = api.get("/admin/audit", params={"action": "admin.signed_in"}).json()
            keys = api.get("/admin/keys").json()["data"]

    assert "Sign in with Example SSO" in login_page.text
    assert back.status_code == 200, back.text
    assert back.url.path == "/admin/sso/callback"
    assert "Continue to the admin UI" in back.text
    assert queue.status_code == 200
    assert queue.url.path == "/admin"
    [person] = [key for key in keys if key["owner"] == "alice@example.com"]
    assert person["name"] == "sso:alice@example.com"
    assert person["roles"] == ["admin", "user"]
    assert signed_in["data"][0]["actor_key_id"] == person["id"]


def test_a_person_outside_the_admin_group_is_refused(tmp_path: Path) -> None:
    with sso_stack(tmp_path) as stack:
        admin_key = stack.gateway.create_key("ops", ["admin"])
        with httpx.Client(base_url=stack.gateway.url, follow_redirects=True) as browser:
            refused = _sign_in_as(browser, "bob")
            after = browser.get("/admin")
        headers = {"authorization": f"Bearer {admin_key}"}
        with httpx.Client(base_url=stack.gateway.v1, headers=headers) as api:
            audit = api.get("/admin/audit", params={"action": "admin.sign_in_refused"}).json()

    assert refused.status_code == 403
    assert "bob@example.com is not in a group that may administer" in refused.text
    assert after.url.path == "/admin/login"  # no session was opened
    assert audit["data"][0]["detail"]["reason"] == "not_admin:bob@example.com"


def test_an_unverified_email_does_not_sign_in(tmp_path: Path) -> None:
    with (
        sso_stack(tmp_path) as stack,
        httpx.Client(base_url=stack.gateway.url, follow_redirects=True) as browser,
    ):
        refused = _sign_in_as(browser, "mallory")
        after = browser.get("/admin")
    assert refused.status_code >= 400
    assert "has not verified the email" in refused.text
    assert after.url.path == "/admin/login"


def test_a_forged_or_stale_callback_is_refused(tmp_path: Path) -> None:
    with sso_stack(tmp_path) as stack, httpx.Client(base_url=stack.gateway.url) as client:
        forged = client.get("/admin/sso/callback", params={"code": "x", "state": "guess"})
        client.get("/admin/sso/start")  # a real pending sign-in; its state is not "guess"
        mismatched = client.get("/admin/sso/callback", params={"code": "x", "state": "guess"})
    assert forged.status_code == 400
    assert mismatched.status_code == 400
    assert "start again" in mismatched.text


def test_a_made_up_or_repeated_code_is_the_sign_in_page_with_the_reason(tmp_path: Path) -> None:
    with sso_stack(tmp_path) as stack, httpx.Client(base_url=stack.gateway.url) as client:
        pages = []
        for codes in (["made-up"], ["made-up", "another"]):
            redirect = client.get("/admin/sso/start")
            [state] = parse_qs(urlsplit(redirect.headers["location"]).query)["state"]
            params = [("state", state), *(("code", code) for code in codes)]
            pages.append(client.get("/admin/sso/callback", params=params))
    bogus, repeated = pages
    assert bogus.status_code == 401  # the provider answered 400 invalid_grant
    assert "refused the code (<code>invalid_grant</code>)" in bogus.text
    assert repeated.status_code == 400
    assert "repeats <code>code</code>" in repeated.text
    for page in pages:
        assert "<h1>Sign in</h1>" in page.text


def test_api_key_sign_in_can_be_turned_off(tmp_path: Path) -> None:
    with sso_stack(tmp_path, api_key_sign_in=False) as stack:
        admin_key = stack.gateway.create_key("ops", ["admin"])
        with httpx.Client(base_url=stack.gateway.url) as client:
            page = client.get("/admin/login")
            token = client.cookies.get("gw_admin_login")
            refused = client.post(
                "/admin/login", data={"api_key": admin_key, "csrf_token": token or ""}
            )
    assert 'id="api_key"' not in page.text
    assert refused.status_code == 403
    assert "turned off" in refused.text


def test_sso_config_mistakes_are_one_clear_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    oidc = {"issuer": "http://127.0.0.1:9", "client_id": "g", "client_secret_env": "NOPE"}
    database = f"sqlite+aiosqlite:///{tmp_path / 'gw.db'}"
    with pytest.raises(ConfigError) as missing_secret:
        create_app(settings_for(database, admin_ui={"oidc": oidc}), {})
    monkeypatch.setenv("GATEWAY_ADMIN_UI", '{"api_key_sign_in": false}')
    with pytest.raises(ConfigError) as nobody:
        load_settings(None, {"GATEWAY_ADMIN_UI": '{"api_key_sign_in": false}'})
    assert str(missing_secret.value) == (
        "admin_ui.oidc.client_secret_env: the variable NOPE is not set"
    )
    assert len(str(nobody.value).splitlines()) == 1
    assert "needs admin_ui.oidc" in str(nobody.value)


def test_signing_in_with_sso_in_chromium(tmp_path: Path) -> None:
    with (
        sso_stack(tmp_path) as stack,
        chromium() as browser,
        new_page(browser, stack.gateway.url) as page,
    ):
        page.goto("/admin/login")
        page.click("#sso")
        page.fill("#login", "alice")
        page.click("#idp-submit")
        page.wait_for_url(f"{stack.gateway.url}/admin")
        page.screenshot(path=screenshot_path("admin-sso-signed-in"))
        signed_in_as = page.text_content("header")
    assert signed_in_as is not None
    assert "alice@example.com" in signed_in_as

"""Every way the SSO callback can go wrong ends on the sign-in page with the reason, never a
500: the provider's error answers and broken tokens (a scripted provider on 127.0.0.1 whose token
endpoint answers as each case says) and what the browser brings back (repeated, missing, long
or non-ASCII parameters)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from joserfc.jwk import ECKey
from starlette.responses import JSONResponse, Response

from tests.support.databases import fresh_database
from tests.support.gateway import TEST_ADMIN_UI, RunningGateway, running_gateway
from tests.support.scripted_oidc import CLIENT_ID, UNREACHABLE, ScriptedOidc, scripted_oidc

SECRET = "test-client-secret"


@dataclass
class Stack:
    provider: ScriptedOidc
    gateway: RunningGateway

    def audited_reasons(self) -> list[str]:
        key = self.gateway.create_key("auditor", ["admin"])
        headers = {"authorization": f"Bearer {key}"}
        params = {"action": "admin.sign_in_refused", "limit": 200}
        with httpx.Client(base_url=self.gateway.v1, headers=headers) as api:
            events = api.get("/admin/audit", params=params).json()["data"]
        return [event["detail"]["reason"] for event in events]


@contextmanager
def stack_with(
    directory: Path, token_endpoint: str = "", backend: str = "sqlite"
) -> Iterator[Stack]:
    with scripted_oidc(token_endpoint) as provider, fresh_database(backend, directory) as url:
        oidc = {
            "issuer": provider.issuer,
            "client_id": CLIENT_ID,
            "client_secret_env": "OIDC_CLIENT_SECRET",
            "roles_by_group": {"gateway-admins": ["admin"]},
        }
        with running_gateway(
            url, environ={"OIDC_CLIENT_SECRET": SECRET}, admin_ui={**TEST_ADMIN_UI, "oidc": oidc}
        ) as gateway:
            yield Stack(provider, gateway)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with stack_with(tmp_path_factory.mktemp("sso")) as running:
        yield running


def started(stack: Stack, browser: httpx.Client) -> str:
    """Starts a sign-in the way a browser does; the state the provider would send back."""
    redirect = browser.get("/admin/sso/start")
    assert redirect.status_code == 303, redirect.text
    query = parse_qs(urlsplit(redirect.headers["location"]).query)
    stack.provider.nonce = query["nonce"][0]
    return query["state"][0]


def assert_sign_in_page(page: httpx.Response, status: int, reason: str) -> None:
    assert page.status_code == status, page.text
    assert page.headers["content-type"].startswith("text/html")
    assert "<h1>Sign in</h1>" in page.text
    assert reason in page.text
    assert "Traceback" not in page.text
    # The pending sign-in is used up: the same answer cannot be tried again.
    assert any(h.startswith("gw_admin_sso=") for h in page.headers.get_list("set-cookie"))


def answered(body: object, status: int = 200) -> Callable[[ScriptedOidc], Response]:
    return lambda provider: JSONResponse(body, status_code=status)


def token(**claims: object) -> Callable[[ScriptedOidc], Response]:
    def answer(provider: ScriptedOidc) -> Response:
        id_token = provider.id_token(**claims)
        return JSONResponse({"access_token": "a", "token_type": "Bearer", "id_token": id_token})

    return answer


def signed_by_another_key(provider: ScriptedOidc) -> Response:
    stranger = ECKey.generate_key("P-256", {"kid": "k1"})
    id_token = provider.id_token(key=stranger)
    return JSONResponse({"access_token": "a", "token_type": "Bearer", "id_token": id_token})


TOKEN_ENDPOINT_ANSWERS = {
    "invalid_grant": (
        answered({"error": "invalid_grant", "error_description": "grant request is invalid"}, 400),
        401,
        "refused the code (<code>invalid_grant</code>)",
        "sso_token_refused",
    ),
    "an error code that is not one": (
        answered({"error": "<script>alert(1)</script>"}, 400),
        401,
        "refused the code (<code>unknown</code>)",
        "sso_token_refused",
    ),
    "a proxy's error page": (
        lambda provider: Response("<html>Bad gateway</html>", 502, media_type="text/html"),
        502,
        "token endpoint failed (HTTPStatusError)",
        "sso_provider_unavailable",
    ),
    "a page that is not JSON": (
        lambda provider: Response("<html>Sign in</html>", 200, media_type="text/html"),
        502,
        "token endpoint failed (ValueError)",
        "sso_provider_unavailable",
    ),
    "JSON that is no object": (
        answered([1, 2, 3]),
        502,
        "token endpoint failed (ValueError)",
        "sso_provider_unavailable",
    ),
    "no ID token": (
        answered({"access_token": "a", "token_type": "Bearer"}),
        401,
        "sent no ID token",
        "sso_token_refused",
    ),
    "an ID token that is no JWT": (
        answered({"access_token": "a", "token_type": "Bearer", "id_token": "not-a-jwt"}),
        401,
        "signature is not valid",
        "sso_token_refused",
    ),
    "an ID token signed by another key": (
        signed_by_another_key,
        401,
        "signature is not valid",
        "sso_token_refused",
    ),
    "another sign-in's nonce": (
        token(nonce="another"),
        401,
        "ID token was refused",
        "sso_token_refused",
    ),
    "an expired ID token": (
        token(exp=int(time.time()) - 3600),
        401,
        "ID token was refused",
        "sso_token_refused",
    ),
    "an expiry that is no number": (
        token(exp="tomorrow"),
        401,
        "ID token was refused",
        "sso_token_refused",
    ),
    "another audience": (
        token(aud="someone-else"),
        401,
        "ID token was refused",
        "sso_token_refused",
    ),
    "a person too long to store": (
        token(email="a" * 300 + "@example.com"),
        401,
        "too many characters",
        "sso_token_refused",
    ),
}


@pytest.mark.parametrize("case", sorted(TOKEN_ENDPOINT_ANSWERS))
def test_every_token_endpoint_failure_is_the_sign_in_page(stack: Stack, case: str) -> None:
    answer, status, reason, audited = TOKEN_ENDPOINT_ANSWERS[case]
    stack.provider.answer = answer
    with httpx.Client(base_url=stack.gateway.url) as browser:
        state = started(stack, browser)
        page = browser.get("/admin/sso/callback", params={"code": "c-1", "state": state})
        after = browser.get("/admin")

    assert_sign_in_page(page, status, reason)
    assert after.headers["location"].startswith("/admin/login")  # no session was opened
    assert stack.provider.codes[-1] == "c-1"
    assert stack.audited_reasons()[0] == audited


def test_a_good_answer_still_signs_in(stack: Stack) -> None:
    stack.provider.answer = token()
    with httpx.Client(base_url=stack.gateway.url) as browser:
        state = started(stack, browser)
        page = browser.get("/admin/sso/callback", params={"code": "c-2", "state": state})
        queue = browser.get("/admin")
    assert page.status_code == 200, page.text
    assert "Continue to the admin UI" in page.text
    assert queue.status_code == 200


def query(state: str) -> dict[str, list[tuple[str, str]]]:
    return {
        "two codes": [("code", "c-1"), ("code", "c-2"), ("state", state)],
        "two states": [("code", "c-1"), ("state", state), ("state", state)],
        "a code too long": [("code", "c" * 5000), ("state", state)],
        "no code": [("state", state)],
        "the provider's error": [
            ("error", "access_denied"),
            ("error_description", "The user said no"),
            ("state", state),
        ],
        "an error code that is not one": [("error", "<b>x</b>"), ("state", state)],
        "a state that is not ASCII": [("code", "c-1"), ("state", "é" + state)],
        "no state": [("code", "c-1")],
    }


BROWSER_ANSWERS = {
    "two codes": (400, "repeats <code>code</code>", "sso_repeated_parameter"),
    "two states": (400, "repeats <code>state</code>", "sso_repeated_parameter"),
    "a code too long": (400, "longer than 4096 characters", "sso_parameter_too_long"),
    "no code": (401, "did not sign you in (<code>no_code</code>)", "sso_provider_error:no_code"),
    "the provider's error": (
        401,
        "did not sign you in (<code>access_denied</code>): The user said no.",
        "sso_provider_error:access_denied",
    ),
    "an error code that is not one": (
        401,
        "did not sign you in (<code>unknown</code>)",
        "sso_provider_error:unknown",
    ),
    "a state that is not ASCII": (400, "start again", "sso_state_mismatch"),
    "no state": (400, "start again", "sso_state_mismatch"),
}


@pytest.mark.parametrize("case", sorted(BROWSER_ANSWERS))
def test_every_odd_answer_brought_back_is_the_sign_in_page(stack: Stack, case: str) -> None:
    status, reason, audited = BROWSER_ANSWERS[case]
    exchanged = len(stack.provider.codes)
    with httpx.Client(base_url=stack.gateway.url) as browser:
        page = browser.get("/admin/sso/callback", params=query(started(stack, browser))[case])

    assert_sign_in_page(page, status, reason)
    assert len(stack.provider.codes) == exchanged  # refused before asking the provider
    assert stack.audited_reasons()[0] == audited


def test_an_unreachable_token_endpoint_is_the_sign_in_page(tmp_path: Path) -> None:
    with stack_with(tmp_path, token_endpoint=UNREACHABLE) as unreachable:
        with httpx.Client(base_url=unreachable.gateway.url) as browser:
            state = started(unreachable, browser)
            page = browser.get("/admin/sso/callback", params={"code": "c", "state": state})
        assert_sign_in_page(page, 502, "token endpoint failed (ConnectError)")
        assert unreachable.audited_reasons() == ["sso_provider_unavailable"]

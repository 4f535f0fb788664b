"""The Servers page's forms over HTTP: CSRF, the runtime-server service's refusals shown on the
page, changes that keep what the form does not show, config servers untouchable."""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.support.admin_ui import csrf_token, signed_in_client
from tests.support.databases import fresh_database
from tests.support.gateway import RunningGateway, running_gateway
from tests.support.mcp_servers import crashy_stdio_command, manifest_app
from tests.support.servers import serve

# A small SDK stdio server of the tests' own: the one command line runtime servers may run here.
COMMAND, ARGS = crashy_stdio_command()
ALLOWED = [COMMAND, *ARGS]
# Nothing listens on port 9: the prefix only has to be on the list, never reached.
ALLOWED_URL_PREFIX = "http://127.0.0.1:9/mcp"


@dataclass
class ServersStack:
    gateway: RunningGateway
    admin_key: str

    def api(self) -> httpx.Client:
        return httpx.Client(
            base_url=self.gateway.url,
            headers={"authorization": f"Bearer {self.admin_key}"},
            timeout=30,
        )

    def servers(self) -> dict[str, dict[str, Any]]:
        with self.api() as admin:
            return {s["name"]: s for s in admin.get("/v1/admin/servers").json()["data"]}


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def stack(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServersStack]:
    with (
        fresh_database(request.param, tmp_path_factory.mktemp("db")) as database_url,
        serve(manifest_app([])) as manifest_url,
        running_gateway(
            database_url,
            mcp_servers=[
                {"name": "config-weather", "transport": "http_manifest", "url": manifest_url}
            ],
            tool_catalog={
                "stdio_allow_list": [ALLOWED],
                "http_allow_list": [ALLOWED_URL_PREFIX],
                "discovery_timeout": 20,
            },
        ) as gateway,
    ):
        yield ServersStack(gateway, gateway.create_key("ops", ["admin"]))


def form(name: str, token: str, **fields: str) -> dict[str, str]:
    return {
        "name": name,
        "transport": "stdio",
        "command_line": shlex.join(ALLOWED),
        "roles": "user",
        "requires_approval": "false",
        "csrf_token": token,
        **fields,
    }


def test_server_forms_without_the_csrf_token_change_nothing(stack: ServersStack) -> None:
    with signed_in_client(stack.gateway.url, stack.admin_key) as client:
        token = csrf_token(client.get("/admin/servers").text)
        assert client.post("/admin/servers", data=form("kept", token)).status_code == 303
        forged = [
            client.post("/admin/servers", data=form("forged", "")),
            client.post("/admin/servers/kept", data=form("kept", "wrong", roles="ops")),
            client.post("/admin/servers/kept/delete", data={}),
            client.post("/admin/servers/kept/delete", data={"csrf_token": token[:-2]}),
        ]
        assert [r.status_code for r in forged] == [403] * len(forged)
        servers = stack.servers()
        assert "forged" not in servers
        assert servers["kept"]["state"] == "ready"
        with stack.api() as admin:
            tools = admin.get("/v1/admin/tools").json()["data"]
        assert "ops" not in {role for tool in tools for role in tool["policy"]["roles"]}
        client.post("/admin/servers/kept/delete", data={"csrf_token": token})
    assert "kept" not in stack.servers()


def test_a_change_keeps_the_settings_the_form_does_not_show(stack: ServersStack) -> None:
    with stack.api() as admin:
        added = admin.post(
            "/v1/admin/servers",
            json={
                "name": "tuned",
                "transport": "stdio",
                "command": COMMAND,
                "args": ARGS,
                "roles": ["user"],
                "tools": {"crash": {"enabled": False}},
                "max_concurrency": 2,
            },
        )
        assert added.status_code == 201, added.text
    with signed_in_client(stack.gateway.url, stack.admin_key) as client:
        page = client.get("/admin/servers").text
        assert 'action="/admin/servers/tuned"' in page  # a runtime server: editable
        assert 'action="/admin/servers/config-weather"' not in page  # config: read-only
        assert "config file (read-only)" in page
        token = csrf_token(page)
        changed = client.post(
            "/admin/servers/tuned",
            data=form("ignored", token, roles="user, ops", requires_approval="true"),
        )
        assert changed.headers["location"] == "/admin/servers?done=changed"
        with stack.api() as admin:
            audit = admin.get("/v1/admin/audit", params={"action": "server.saved"}).json()
        [latest, *_] = [e for e in audit["data"] if e["detail"]["server"] == "tuned"]
        assert latest["detail"]["roles"] == ["ops", "user"]
        assert latest["detail"]["requires_approval"] is True
        assert latest["detail"]["tools"] == {
            "crash": {
                "roles": None,
                "requires_approval": None,
                "auto_approved": None,
                "enabled": False,
            }
        }
        assert latest["detail"]["max_concurrency"] == 2
        assert latest["actor_key_id"] is not None
        client.post("/admin/servers/tuned/delete", data={"csrf_token": token})


REFUSALS = [
    (
        {"name": "shell", "transport": "stdio", "command_line": "/bin/sh -c id"},
        400,
        "stdio_allow_list",
    ),
    (
        {"name": "quote", "transport": "stdio", "command_line": "mcp-server-time 'UTC"},
        400,
        "cannot be read",
    ),
    (
        {"name": "elsewhere", "transport": "streamable_http", "url": "http://127.0.0.1:9/admin"},
        400,
        "http_allow_list",
    ),
    (
        {"name": "idna", "transport": "streamable_http", "url": "http://xn--a.xn--/mcp"},
        400,
        "not a valid domain name",
    ),
    ({"name": "bad name!"}, 400, "Name must be 1-48 letters"),
    ({"name": "nourl", "transport": "sse", "url": ""}, 400, "needs <code>url</code>"),
    ({"name": "norole", "roles": ""}, 400, "Roles must be lowercase words"),
    ({"name": "config-weather"}, 409, "defined in the config file"),
]


@pytest.mark.parametrize(("fields", "status", "message"), REFUSALS)
def test_refused_servers_are_shown_with_the_reason(
    stack: ServersStack, fields: dict[str, str], status: int, message: str
) -> None:
    with signed_in_client(stack.gateway.url, stack.admin_key) as client:
        token = csrf_token(client.get("/admin/servers").text)
        refused = client.post("/admin/servers", data={**form("", token), **fields})
    assert refused.status_code == status
    assert message in refused.text
    assert '<p class="banner error" role="alert">' in refused.text
    assert f'value="{fields["name"]}"' in refused.text  # the form comes back as typed
    assert set(stack.servers()) == {"config-weather"}


def test_changing_or_removing_what_is_not_a_runtime_server_is_refused(stack: ServersStack) -> None:
    with signed_in_client(stack.gateway.url, stack.admin_key) as client:
        token = csrf_token(client.get("/admin/servers").text)
        config = client.post("/admin/servers/config-weather/delete", data={"csrf_token": token})
        missing = client.post("/admin/servers/ghost", data=form("ghost", token))
    assert config.status_code == 409
    assert "change it there" in config.text
    assert missing.status_code == 404
    assert "No runtime server named <code>ghost</code>" in missing.text
    assert stack.servers()["config-weather"]["state"] == "ready"


def test_the_page_lists_both_allow_lists(stack: ServersStack) -> None:
    with signed_in_client(stack.gateway.url, stack.admin_key) as client:
        page = client.get("/admin/servers").text
    assert f"<li><code>{shlex.join(ALLOWED)}</code></li>" in page
    assert f"<li><code>{ALLOWED_URL_PREFIX}</code></li>" in page

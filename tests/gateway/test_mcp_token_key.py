"""The MCP token key (GATEWAY_MCP_TOKEN_KEY): a server that needs it refuses to start without it,
a malformed one is named without its value, and runtime servers needing it are refused."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from cryptography.fernet import Fernet

from server.cli import main
from tests.support.databases import sqlite_database
from tests.support.gateway import running_gateway

CONSENT_SERVER = """\
mcp_servers:
  - name: crm
    transport: streamable_http
    url: https://crm.example.com/mcp
    auth: {type: authorization_code}
"""


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err.strip()


def test_an_authorization_code_server_without_the_key_stops_the_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "gateway.yaml"
    config.write_text(CONSENT_SERVER)

    code, err = _run(["serve", "--config", str(config)], capsys)

    assert code == 2
    assert "mcp_servers: Value error, server `crm` uses the authorization_code flow" in err
    assert "GATEWAY_MCP_TOKEN_KEY" in err


def test_a_malformed_key_is_named_never_shown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "gateway.yaml"
    config.write_text(CONSENT_SERVER)
    good = Fernet.generate_key().decode()
    monkeypatch.setenv("GATEWAY_MCP_TOKEN_KEY", f"{good},not-a-key-at-all")

    code, err = _run(["serve", "--config", str(config)], capsys)

    assert code == 2
    assert "GATEWAY_MCP_TOKEN_KEY" in err
    assert "key 2 is not a Fernet key" in err
    assert "not-a-key-at-all" not in err
    assert good not in err


def test_without_the_key_a_runtime_server_needing_it_is_refused(tmp_path: Path) -> None:
    with (
        sqlite_database(tmp_path) as database_url,
        running_gateway(
            database_url, tool_catalog={"http_allow_list": ["https://crm.example.com/"]}
        ) as gateway,
    ):
        admin = gateway.create_key("ops", ["admin"])
        server = {
            "name": "crm",
            "transport": "streamable_http",
            "url": "https://crm.example.com/mcp",
            "auth": {"type": "authorization_code"},
        }
        answer = httpx.post(
            f"{gateway.url}/v1/admin/servers",
            json=server,
            headers={"authorization": f"Bearer {admin}"},
        )
    assert answer.status_code == 400
    assert answer.json()["error"]["param"] == "auth"
    assert "GATEWAY_MCP_TOKEN_KEY" in answer.json()["error"]["message"]

"""Server configuration is validated with messages that name the problem."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from gateway.settings import ConfigError, load_settings
from mcp_client.config import IdentityAssertionAuth, MCPServerConfig

SHIPPED = Path(__file__).parents[2] / "config" / "gateway.yaml"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"transport": "stdio"}, "a stdio server needs `command`"),
        ({"transport": "sse"}, "a sse server needs `url`"),
        ({"transport": "stdio", "command": "x", "name": "a__b"}, "must not contain `__`"),
        ({"transport": "carrier-pigeon", "command": "x"}, "Input should be 'stdio'"),
        ({"transport": "stdio", "command": "x", "tools": {"t": {"rolez": []}}}, "rolez"),
    ],
)
def test_bad_server_configs_are_refused(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        MCPServerConfig.model_validate({"name": "srv", **fields})


_ENTERPRISE = {
    "type": "identity_assertion",
    "issuer": "https://mcp-auth.example.com",
    "client_id": "gateway",
    "client_secret_env": "MCP_AS_SECRET",
    "idp_token_endpoint": "https://idp.example.com/token",
}


def test_enterprise_managed_auth_reads_its_id_token_from_one_source() -> None:
    config = MCPServerConfig.model_validate(
        {
            "name": "srv",
            "transport": "streamable_http",
            "url": "https://mcp.example.com/mcp",
            "auth": {**_ENTERPRISE, "id_token_file": "/var/run/idp/token"},
        }
    )
    assert isinstance(config.auth, IdentityAssertionAuth)
    assert config.auth.client_auth == "client_secret_basic"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({}, "exactly one of `id_token_env` and `id_token_file`"),
        ({"id_token_env": "T", "id_token_file": "/t"}, "exactly one of `id_token_env`"),
        ({"id_token_env": "T", "idp_client_secret_env": "S"}, "needs `idp_client_id`"),
        ({"id_token_env": "T", "issuer": None}, "issuer"),
    ],
)
def test_bad_enterprise_managed_auth_is_refused(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        MCPServerConfig.model_validate(
            {
                "name": "srv",
                "transport": "streamable_http",
                "url": "https://mcp.example.com/mcp",
                "auth": {**_ENTERPRISE, **fields},
            }
        )


def test_duplicate_server_names_are_refused(tmp_path: Path) -> None:
    config = tmp_path / "gateway.yaml"
    config.write_text(
        "mcp_servers:\n"
        "  - {name: t, transport: stdio, command: a}\n"
        "  - {name: t, transport: stdio, command: b}\n"
    )
    with pytest.raises(ConfigError, match="MCP server name `t` appears twice"):
        load_settings(config)


def test_the_shipped_config_connects_mcp_server_time() -> None:
    settings = load_settings(SHIPPED)
    (time,) = settings.mcp_servers
    assert (time.name, time.transport, time.command) == ("time", "stdio", "mcp-server-time")
    assert time.roles == ["user", "admin"]
    assert time.tools["convert_time"].requires_approval is True
    # Pinning is on as shipped; the demo's server ships with the gateway, so it skips review.
    assert settings.tool_pinning.enabled is True
    assert time.trusted is True


@pytest.mark.parametrize(
    ("prefix", "message"),
    [
        ("ftp://files.example.com", "the scheme must be http or https"),
        ("tools.example.com", "the scheme must be http or https"),
        ("https://user:pw@tools.example.com", "user name or password"),
        ("https://tools.example.com/mcp?token=1", "no query or fragment"),
        ("https://tools.example.com/#part", "no query or fragment"),
    ],
)
def test_unreadable_http_allow_list_entries_are_refused_at_start(
    tmp_path: Path, prefix: str, message: str
) -> None:
    config = tmp_path / "gateway.yaml"
    config.write_text(f"tool_catalog:\n  http_allow_list: ['{prefix}']\n")
    with pytest.raises(ConfigError, match=r"tool_catalog\.http_allow_list") as refused:
        load_settings(config)
    assert message in str(refused.value)

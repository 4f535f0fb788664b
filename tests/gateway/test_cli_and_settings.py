"""The command line and the configuration file."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from accounts.keys import KeyStore
from db.engine import create_engine, session_factory
from gateway.settings import ConfigError, load_settings
from server.cli import main

REPO = Path(__file__).resolve().parents[2]


def _authenticate(database_url: str, key: str) -> frozenset[str] | None:
    async def run() -> frozenset[str] | None:
        engine = create_engine(database_url)
        try:
            principal = await KeyStore(session_factory(engine), 0).authenticate(key)
            return principal.roles if principal else None
        finally:
            await engine.dispose()

    return asyncio.run(run())


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "gateway.yaml"
    path.write_text(text)
    return path


def test_keys_create_prints_the_key_last(
    database_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GATEWAY_DATABASE_URL", database_url)
    config = _config(tmp_path, "models: []\n")
    assert main(["migrate", "--config", str(config)]) == 0

    code = main(
        [
            "keys",
            "create",
            "--config",
            str(config),
            "--name",
            "svc",
            "--role",
            "user",
            "--role",
            "analyst",
        ]
    )

    assert code == 0
    key = capsys.readouterr().out.strip().splitlines()[-1]
    assert _authenticate(database_url, key) == frozenset({"user", "analyst"})
    assert main(["keys", "list", "--config", str(config)]) == 0
    listing = capsys.readouterr().out
    assert "svc\tsvc\t" in listing  # the owner defaults to the name
    assert key not in listing
    owned = ["keys", "create", "--config", str(config), "--name", "bot", "--role", "user"]
    assert main([*owned, "--owner", "payments-team"]) == 0
    assert "of payments-team" in capsys.readouterr().out
    assert main(["keys", "revoke", "--config", str(config), "1"]) == 0
    assert _authenticate(database_url, key) is None


def test_shipped_config_is_valid() -> None:
    settings = load_settings(REPO / "config" / "gateway.yaml")
    names = {m.name for m in settings.models}
    assert "mock" in names
    assert {m.provider for m in settings.models} >= {"openai", "anthropic", "ollama", "mock"}


def test_bad_config_names_the_bad_key(tmp_path: Path) -> None:
    config = _config(tmp_path, "models:\n  - name: x\n    provider: skynet\n")
    with pytest.raises(ConfigError) as caught:
        load_settings(config)
    assert "models.0.provider" in str(caught.value)


def test_unknown_key_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings(_config(tmp_path, "modles: []\n"))
    assert "modles" in str(caught.value)


@pytest.mark.parametrize(
    ("value", "message"),
    [("spool", "absolute path"), ("{tmp}/gateway.yaml", "not a directory")],
)
def test_a_usage_spool_dir_must_be_an_absolute_directory(
    tmp_path: Path, value: str, message: str
) -> None:
    config = _config(tmp_path, f"usage_spool_dir: {value.format(tmp=tmp_path)}\n")
    with pytest.raises(ConfigError) as caught:
        load_settings(config)
    assert "usage_spool_dir" in str(caught.value)
    assert message in str(caught.value)


def test_environment_overrides_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GATEWAY_DATABASE_URL", "sqlite+aiosqlite:///elsewhere.db")
    config = _config(tmp_path, "database_url: sqlite+aiosqlite:///file.db\n")
    assert load_settings(config).database_url == "sqlite+aiosqlite:///elsewhere.db"


def test_cli_reports_config_errors_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _config(tmp_path, "models: [{name: x, provider: openai, timeouts: {read: -1}}]\n")
    assert main(["migrate", "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert "models.0.timeouts.read" in err
    assert "Traceback" not in err


def test_admin_key_bootstrap(database_url: str) -> None:
    from tests.support.gateway import running_gateway

    with running_gateway(database_url, admin_key="gw-bootstrap-admin-key-for-tests"):
        pass
    assert _authenticate(database_url, "gw-bootstrap-admin-key-for-tests") == frozenset({"admin"})


def test_keys_on_an_unmigrated_database_say_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GATEWAY_DATABASE_URL", f"sqlite+aiosqlite:///{tmp_path / 'empty.db'}")
    config = _config(tmp_path, "models: []\n")
    assert main(["keys", "create", "--config", str(config), "--name", "x", "--role", "user"]) == 1
    err = capsys.readouterr().err
    assert "llm-gateway migrate" in err
    assert "Traceback" not in err

"""Every configuration mistake an operator makes is one line that names the culprit and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.settings import load_settings
from server.cli import main


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    code = main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err.strip().splitlines()


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "gateway.yaml"
    path.write_text("models: []\n")
    return path


def test_a_bad_override_names_the_variable_not_the_file(
    config: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GATEWAY_LOG_LEVEL", "verbose")
    monkeypatch.setenv("GATEWAY_DATABASE_POOL__SIZE", "0")

    code, lines = _run(["keys", "list", "--config", str(config)], capsys)

    assert code == 2
    assert len(lines) == 2
    assert lines[0].startswith("invalid configuration: environment variable GATEWAY_DATABASE_POOL")
    assert "GATEWAY_LOG_LEVEL: Input should be 'debug'" in lines[1]
    assert str(config) not in "\n".join(lines)


def test_a_bad_value_in_a_json_override_names_the_variable_and_the_key(
    config: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GATEWAY_MODELS", '[{"name": "x", "provider": "skynet"}]')

    code, lines = _run(["keys", "list", "--config", str(config)], capsys)

    assert code == 2
    assert lines[0].startswith(
        "invalid configuration: environment variable GATEWAY_MODELS (models.0.provider):"
    )


def test_a_bad_value_in_the_file_names_the_file_and_the_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "gateway.yaml"
    config.write_text("log_level: verbose\n")

    code, lines = _run(["keys", "list", "--config", str(config)], capsys)

    assert code == 2
    assert lines == [
        f"invalid configuration: {config}: log_level: "
        "Input should be 'debug', 'info', 'warning' or 'error'"
    ]


def test_an_unknown_gateway_variable_is_reported_with_a_suggestion(
    config: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GATEWAY_LOG_LEVLE", "debug")

    code, lines = _run(["migrate", "--config", str(config)], capsys)

    assert code == 2
    assert lines == [
        "unknown environment variable GATEWAY_LOG_LEVLE (did you mean GATEWAY_LOG_LEVEL?)"
    ]


@pytest.mark.parametrize("scheme", ["postgres", "postgresql", "postgresql+psycopg2"])
def test_a_postgres_url_without_the_async_driver_says_which_to_write(
    scheme: str,
    config: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GATEWAY_DATABASE_URL", f"{scheme}://gateway:s3cret@db.internal/gateway")

    code, lines = _run(["migrate", "--config", str(config)], capsys)

    assert code == 2
    assert len(lines) == 1
    assert "GATEWAY_DATABASE_URL" in lines[0]
    assert "write postgresql+asyncpg://" in lines[0]
    assert "s3cret" not in lines[0]


@pytest.mark.parametrize("command", [["migrate"], ["keys", "list"], ["serve"]])
def test_an_unreachable_database_is_one_line_with_the_fix(
    command: list[str],
    config: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Port 9 (discard) is closed on the test machine: the connection is refused at once.
    monkeypatch.setenv("GATEWAY_DATABASE_URL", "postgresql+asyncpg://gateway:s3cret@127.0.0.1:9/gw")

    code, lines = _run([*command, "--config", str(config)], capsys)

    assert code == 1
    assert len(lines) == 1
    assert lines[0].startswith(
        "cannot connect to the database at postgresql+asyncpg://gateway:***@127.0.0.1:9/gw:"
    )
    assert "GATEWAY_DATABASE_URL" in lines[0]
    assert "s3cret" not in lines[0]


def test_a_missing_database_on_a_live_server_is_named(
    config: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.support.databases import POSTGRES_URL, require_postgres

    require_postgres()
    base, _, _ = POSTGRES_URL.rpartition("/")
    monkeypatch.setenv("GATEWAY_DATABASE_URL", f"{base}/no_such_gateway_db")

    code, lines = _run(["migrate", "--config", str(config)], capsys)

    assert code == 1
    assert len(lines) == 1
    assert 'database "no_such_gateway_db" does not exist' in lines[0]


def test_serve_without_a_config_file_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)

    code, lines = _run(["serve"], capsys)

    assert code == 2
    assert lines == [
        f"no config file: pass --config PATH (config/gateway.yaml does not exist in {tmp_path})"
    ]


def test_gateway_variables_the_config_names_are_not_unknown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "gateway.yaml"
    config.write_text(
        "models: [{name: gpt, provider: openai, api_key_env: GATEWAY_OPENAI_KEY}]\n"
        "notifications:\n"
        "  webhooks: [{name: hook, url: 'http://127.0.0.1:9/', events: [approval.requested],"
        " secret_env: GATEWAY_HOOK_SECRET}]\n"
    )
    monkeypatch.setenv("GATEWAY_OPENAI_KEY", "sk-test")
    monkeypatch.setenv("GATEWAY_HOOK_SECRET", "whsec")
    monkeypatch.setenv("GATEWAY_DATABASE_URL", f"sqlite+aiosqlite:///{tmp_path / 'gw.db'}")

    code, lines = _run(["migrate", "--config", str(config)], capsys)

    assert code == 0
    assert lines == []


@pytest.mark.parametrize(
    ("webhook", "message"),
    [
        ("{name: a, events: [approval.requested]}", "give exactly one of url and url_env"),
        (
            "{name: a, url: 'http://x/', url_env: X, events: [approval.requested]}",
            "give exactly one of url and url_env",
        ),
        ("{name: a, url: 'ftp://x/', events: [approval.requested]}", "http:// or https://"),
        ("{name: a, url: 'http://x/', events: [approval.sent]}", "notifications.webhooks.0"),
    ],
)
def test_a_bad_webhook_is_named(
    webhook: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "gateway.yaml"
    config.write_text(f"notifications:\n  webhooks: [{webhook}]\n")

    code, lines = _run(["migrate", "--config", str(config)], capsys)

    assert code == 2
    assert lines
    assert all(line.startswith(f"invalid configuration: {config}: notifications") for line in lines)
    assert message in "\n".join(lines)


def test_trusted_proxies_are_addresses_or_networks_never_everyone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "gateway.yaml"
    config.write_text("forwarded_allow_ips: ['*']\nadmin_ui: {sign_in_attempts_total: 100}\n")

    code, lines = _run(["keys", "list", "--config", str(config)], capsys)
    monkeypatch.setenv("GATEWAY_FORWARDED_ALLOW_IPS", '["10.0.0.0/8", "ingress.local"]')
    named_code, named = _run(["keys", "list"], capsys)
    monkeypatch.setenv("GATEWAY_FORWARDED_ALLOW_IPS", '["10.1.2.3/8", " fd00::1 "]')
    parsed = load_settings(None)

    assert (code, named_code) == (2, 2)
    assert f"{config}: forwarded_allow_ips: Value error, `*` is not an IP address" in lines[0]
    assert "a `*` is refused: any client could then name its own address" in lines[0]
    assert "sign_in_attempts_total is gone" in lines[1]
    assert named[0].startswith(
        "invalid configuration: environment variable GATEWAY_FORWARDED_ALLOW_IPS"
    )
    assert "`ingress.local` is not an IP address or a CIDR network" in named[0]
    assert parsed.forwarded_allow_ips == ["10.0.0.0/8", "fd00::1"]
